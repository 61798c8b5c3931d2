import type { ApiData } from '../api/client';
import { ConfirmButton } from '../components/confirm-button';
import { DateTime } from '../components/date-time';

export type Token = ApiData<'/tokens/{id}'>;

const KINDS: Readonly<Record<Token['type'], string>> = { api: 'API', app: 'app', user: 'user session' };

export interface TokenTableProps {
  readonly tokens: readonly Token[];
  /** The token this UI signed in with, marked "this session". */
  readonly currentId: string | undefined;
  readonly onRevoke: (token: Token) => Promise<void>;
}

/** The tokens of the account, without secrets; revoke (with a confirmation) per row. */
export function TokenTable({ tokens, currentId, onRevoke }: TokenTableProps) {
  return (
    <div className="table-scroll">
      <table className="table" aria-label="API tokens">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Kind</th>
            <th scope="col">Created</th>
            <th scope="col">Expires</th>
            <th scope="col">ID</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {tokens.map((token) => (
            <tr key={token.id}>
              <td>
                {token.name}
                {token.id === currentId ? <span className="muted"> (this session)</span> : null}
              </td>
              <td>
                {KINDS[token.type]}
                {token.superAdmin ? (
                  <>
                    {' '}
                    <span className="badge">Super-Admin</span>
                  </>
                ) : null}
              </td>
              <td>
                <DateTime value={token.createdAt} />
              </td>
              <td>{token.expiresAt === null ? <span className="muted">never</span> : <DateTime value={token.expiresAt} />}</td>
              <td className="mono nowrap">{token.id}</td>
              <td>
                <div className="admin-row-actions">
                  <ConfirmButton
                    label="Revoke"
                    name={`Revoke token ${token.name}`}
                    busyLabel="Revoking…"
                    question={token.id === currentId ? `Revoke “${token.name}”? It is the token of this session: you will be signed out.` : `Revoke “${token.name}”? Whoever uses it is refused at once.`}
                    onConfirm={() => onRevoke(token)}
                  />
                </div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
