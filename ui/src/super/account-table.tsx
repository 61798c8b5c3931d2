import type { ApiData } from '../api/client';
import { DateTime } from '../components/date-time';

type Account = ApiData<'/super/accounts'>['items'][number];

/** The accounts of the platform: name, id, parent (by name when it is on this page), external references. */
export function AccountTable({ accounts }: { readonly accounts: readonly Account[] }) {
  const names = new Map(accounts.map((account) => [account.accountId, account.name]));
  return (
    <div className="table-scroll">
      <table className="table" aria-label="Accounts">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Account ID</th>
            <th scope="col">Parent</th>
            <th scope="col">External references</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {accounts.map((account) => (
            <tr key={account.accountId}>
              <td>{account.name}</td>
              <td className="mono nowrap">{account.accountId}</td>
              <td>{account.parentId === null ? <span className="muted">none (root)</span> : (names.get(account.parentId) ?? <span className="mono">{account.parentId}</span>)}</td>
              <td>
                {Object.keys(account.externalRefs).length === 0 ? (
                  <span className="muted">none</span>
                ) : (
                  <ul className="super-refs">
                    {Object.entries(account.externalRefs).map(([name, ref]) => (
                      <li key={name}>
                        {name}: <span className="mono">{ref}</span>
                      </li>
                    ))}
                  </ul>
                )}
              </td>
              <td>
                <DateTime value={account.createdAt} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
