import type { ApiData } from '../api/client';

export type Account = ApiData<'/accounts/{accountId}'>;

export interface AccountChoice {
  readonly account: Account;
  /** 0 for the token's own account, 1 for its children, … */
  readonly depth: number;
}

/** The token's own account, then its descendants depth first, siblings by name. */
export function accountTree(home: Account, descendants: readonly Account[]): AccountChoice[] {
  const children = new Map<string, Account[]>();
  for (const account of descendants) {
    const siblings = children.get(account.parentId ?? '') ?? [];
    siblings.push(account);
    children.set(account.parentId ?? '', siblings);
  }
  const ordered: AccountChoice[] = [];
  const visit = (account: Account, depth: number) => {
    ordered.push({ account, depth });
    const below = [...(children.get(account.accountId) ?? [])].sort((a, b) => a.name.localeCompare(b.name));
    for (const child of below) visit(child, depth + 1);
  };
  visit(home, 0);
  return ordered;
}
