import { useSession } from '../session/session';
import { AccountRow, type Account } from './account-row';
import { useAccountStatuses } from './account-status';

/**
 * The accounts of the platform: name, id, parent (by name when it is on this page), state and limits, external
 * references; per row Suspend / Resume, Limits and Impersonate.
 */
export function AccountTable({ accounts }: { readonly accounts: readonly Account[] }) {
  const { api } = useSession();
  const names = new Map(accounts.map((account) => [account.accountId, account.name]));
  const { statuses, update } = useAccountStatuses(
    api,
    accounts.map((account) => account.accountId),
  );
  return (
    <div className="table-scroll">
      <table className="table" aria-label="Accounts">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Account ID</th>
            <th scope="col">Parent</th>
            <th scope="col">State</th>
            <th scope="col">Limits</th>
            <th scope="col">External references</th>
            <th scope="col">Created</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {accounts.map((account) => (
            <AccountRow
              key={account.accountId}
              account={account}
              parentName={account.parentId === null ? undefined : names.get(account.parentId)}
              status={statuses.get(account.accountId)}
              onStatus={update}
            />
          ))}
        </tbody>
      </table>
    </div>
  );
}
