import { useCallback } from 'react';
import { call, type ApiClient } from '../api/client';
import { useResource } from '../api/use-resource';
import { DateTime } from '../components/date-time';
import { useSession } from '../session/session';
import { AlertStateBadge } from './alert-badges';
import type { AlertChange } from './alert-types';

/** Users listed to name who changed an alert; beyond them the id shows. */
const USERS_NAMED = 1000;

/** Who changed alerts, by the ids the history holds: the caller, and the account's users when the token may list them. */
function useNames(api: ApiClient): ReadonlyMap<string, string> {
  const load = useCallback(async () => {
    const names = new Map<string, string>();
    const me = await call(api.GET('/auth/whoami'));
    names.set(me.tokenId, 'you (this token)');
    // An app token may not list users (403): it names only itself.
    if (me.type !== 'app') {
      const users = await call(api.GET('/users', { params: { query: { limit: USERS_NAMED } } })).catch(() => undefined);
      for (const user of users?.items ?? []) names.set(user.id, user.id === me.userId ? `you (${user.email})` : user.email);
    }
    if (me.userId !== null && !names.has(me.userId)) names.set(me.userId, 'you');
    return names;
  }, [api]);
  return useResource(load).data ?? new Map();
}

function ByWhom({ by, names }: { readonly by: string; readonly names: ReadonlyMap<string, string> }) {
  if (by === 'rule') return <span>the rule</span>;
  if (by === 'script') return <span>a script</span>;
  const name = names.get(by);
  return name === undefined ? <span className="mono">{by}</span> : <span title={by}>{name}</span>;
}

/** The alert's changes, oldest first: state, when, by whom (the rule, a script, a user or token) and the note. */
export function AlertHistory({ history }: { readonly history: readonly AlertChange[] }) {
  const { api } = useSession();
  const names = useNames(api);
  return (
    <div className="table-scroll">
      <table className="table alt-history" aria-label="History">
        <thead>
          <tr>
            <th scope="col">State</th>
            <th scope="col">When</th>
            <th scope="col">By</th>
            <th scope="col">Note</th>
          </tr>
        </thead>
        <tbody>
          {history.map((change, index) => (
            <tr key={`${change.at}-${index}`}>
              <td>
                <AlertStateBadge state={change.state} />
              </td>
              <td className="nowrap">
                <DateTime value={change.at} />
              </td>
              <td className="alt-by">
                <ByWhom by={change.by} names={names} />
              </td>
              <td className="alt-note">{change.note ?? <span className="muted">—</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
