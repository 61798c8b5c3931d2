import { useCallback, useId } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { href, navigate } from '../router/hash-location';
import { useSession } from '../session/session';
import { accountTree } from './accounts';

/** The sub-accounts one switcher lists (GET /accounts takes at most 1000 a page). */
const ACCOUNTS_LISTED = 1000;

/**
 * Chooses the account the UI acts in: the token's own or one of its sub-accounts (the `:<accountId>` suffix).
 * A token that may not list sub-accounts (an app token) sees its own account only.
 */
export function AccountSwitcher({ homeAccountId, path }: { readonly homeAccountId: string; readonly path: string }) {
  const { homeApi, credentials, switchAccount } = useSession();
  const id = useId();
  const load = useCallback(async () => {
    const home = await call(homeApi.GET('/accounts/{accountId}', { params: { path: { accountId: homeAccountId } } }));
    const below = await call(homeApi.GET('/accounts', { params: { query: { descendants: true, limit: ACCOUNTS_LISTED } } })).catch(() => undefined);
    return accountTree(home, below?.items ?? []);
  }, [homeApi, homeAccountId]);
  const { data: choices } = useResource(load);
  const current = credentials.accountId ?? homeAccountId;

  const choose = (accountId: string) => {
    switchAccount(accountId === homeAccountId ? undefined : accountId);
    // A detail page belongs to the account it was opened in: go back to its section's list.
    const section = path.split('/').filter((part) => part !== '')[0];
    navigate(href(section === undefined ? '/' : `/${section}`));
  };

  return (
    <div className="account-switcher">
      <label htmlFor={id}>Account</label>
      <select id={id} value={current} onChange={(event) => choose(event.target.value)} disabled={choices === undefined}>
        {choices === undefined ? (
          <option value={current}>{current}</option>
        ) : (
          choices.map(({ account, depth }) => (
            <option key={account.accountId} value={account.accountId}>
              {`${'\u2003'.repeat(depth)}${account.name}`}
            </option>
          ))
        )}
      </select>
    </div>
  );
}
