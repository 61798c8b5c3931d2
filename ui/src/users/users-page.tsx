import { useCallback, useState } from 'react';
import { call } from '../api/client';
import { useResource } from '../api/use-resource';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { Pager } from '../components/pager';
import { useIdentity } from '../layout/identity';
import { href, navigate } from '../router/hash-location';
import { useSession } from '../session/session';
import { NewTokenForm, type IssuedToken } from './token-form';
import { TokenSecret } from './token-secret';
import { TokenTable, type Token } from './token-table';
import { offsetParam } from './use-paged';
import { EditUserForm, NewUserForm } from './user-form';
import { UserTable, type AccountUser } from './user-table';
import './users.css';

const PAGE_SIZE = 25;

/** `#/users`: the users and the tokens of the acting account, each list paged in the URL. */
export function UsersPage({ search }: { readonly search: URLSearchParams }) {
  usePageTitle('Users & tokens');
  const session = useSession();
  const { api } = session;
  const identity = useIdentity(session);
  const whoAmI = identity.data?.whoAmI;
  const superAdmin = whoAmI?.superAdmin === true;

  const usersOffset = offsetParam(search, 'usersOffset');
  const tokensOffset = offsetParam(search, 'tokensOffset');
  const sessions = search.get('sessions') === '1';
  const here = (changes: Readonly<Record<string, number | string | undefined>>) =>
    href('/users', { usersOffset: usersOffset || undefined, tokensOffset: tokensOffset || undefined, sessions: sessions ? '1' : undefined, ...changes });

  return (
    <section aria-labelledby="users-title">
      <h1 id="users-title">Users & tokens</h1>
      <UsersPart api={api} offset={usersOffset} selfId={whoAmI?.userId ?? undefined} superAdmin={superAdmin} hrefAt={(at) => here({ usersOffset: at || undefined })} />
      <TokensPart
        api={api}
        offset={tokensOffset}
        sessions={sessions}
        currentId={whoAmI?.tokenId}
        superAdmin={superAdmin}
        hrefAt={(at) => here({ tokensOffset: at || undefined })}
        onSessions={(shown) => navigate(here({ sessions: shown ? '1' : undefined, tokensOffset: undefined }))}
      />
    </section>
  );
}

interface PartProps {
  readonly api: ReturnType<typeof useSession>['api'];
  readonly offset: number;
  readonly superAdmin: boolean;
  readonly hrefAt: (offset: number) => string;
}

function UsersPart({ api, offset, selfId, superAdmin, hrefAt }: PartProps & { readonly selfId: string | undefined }) {
  const load = useCallback(() => call(api.GET('/users', { params: { query: { limit: PAGE_SIZE, offset } } })), [api, offset]);
  const users = useResource(load);
  const { reload } = users;
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const [editing, setEditing] = useState<AccountUser | undefined>(undefined);

  const remove = async (user: AccountUser) => {
    await call(api.DELETE('/users/{id}', { params: { path: { id: user.id } } }));
    if (editing?.id === user.id) setEditing(undefined);
    setNotice(`Deleted user ${user.email}.`);
    reload();
  };

  return (
    <div className="split admin-part" aria-labelledby="users-heading" role="region">
      <div className="split-main">
        <h2 id="users-heading">Users</h2>
        <ErrorMessage message={users.error} />
        {notice === undefined ? null : (
          <p className="notice" role="status">
            {notice}
          </p>
        )}
        {users.data === undefined ? (
          users.error === undefined ? <Loading what="users" /> : null
        ) : (
          <>
            <Pager total={users.data.total} offset={users.data.offset} limit={PAGE_SIZE} noun="users" hrefAt={hrefAt} />
            {users.data.items.length === 0 ? (
              <p className="muted">No users in this account: create one so someone can sign in with email and password.</p>
            ) : (
              <UserTable users={users.data.items} selfId={selfId} onEdit={setEditing} onDelete={remove} />
            )}
          </>
        )}
      </div>
      <div className="split-side">
        {editing === undefined ? (
          <NewUserForm
            api={api}
            superAdmin={superAdmin}
            onCreated={(user) => {
              setNotice(`Created user ${user.email}.`);
              reload();
            }}
          />
        ) : (
          <EditUserForm
            key={editing.id}
            api={api}
            user={editing}
            onCancel={() => setEditing(undefined)}
            onSaved={(user) => {
              setEditing(undefined);
              setNotice(`Saved user ${user.email}.`);
              reload();
            }}
          />
        )}
      </div>
    </div>
  );
}

interface TokensPartProps extends PartProps {
  readonly sessions: boolean;
  readonly currentId: string | undefined;
  readonly onSessions: (shown: boolean) => void;
}

function TokensPart({ api, offset, sessions, currentId, superAdmin, hrefAt, onSessions }: TokensPartProps) {
  const load = useCallback(
    () => call(api.GET('/tokens', { params: { query: { limit: PAGE_SIZE, offset, ...(sessions ? { type: ['api', 'app', 'user'] as ('api' | 'app' | 'user')[] } : {}) } } })),
    [api, offset, sessions],
  );
  const tokens = useResource(load);
  const { reload } = tokens;
  const [issued, setIssued] = useState<IssuedToken | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);

  const revoke = async (token: Token) => {
    await call(api.DELETE('/tokens/{id}', { params: { path: { id: token.id } } }));
    if (issued?.id === token.id) setIssued(undefined);
    setNotice(`Revoked token “${token.name}”.`);
    reload();
  };

  return (
    <div className="split admin-part" aria-labelledby="tokens-heading" role="region">
      <div className="split-main">
        <h2 id="tokens-heading">API tokens</h2>
        {issued === undefined ? null : <TokenSecret token={issued} onDone={() => setIssued(undefined)} />}
        <ErrorMessage message={tokens.error} />
        {notice === undefined ? null : (
          <p className="notice" role="status">
            {notice}
          </p>
        )}
        <label className="admin-checkbox">
          <input type="checkbox" checked={sessions} onChange={(event) => onSessions(event.target.checked)} />
          Also show sign-in sessions (user tokens)
        </label>
        {tokens.data === undefined ? (
          tokens.error === undefined ? <Loading what="tokens" /> : null
        ) : (
          <>
            <Pager total={tokens.data.total} offset={tokens.data.offset} limit={PAGE_SIZE} noun="tokens" hrefAt={hrefAt} />
            {tokens.data.items.length === 0 ? <p className="muted">No tokens in this account.</p> : <TokenTable tokens={tokens.data.items} currentId={currentId} onRevoke={revoke} />}
          </>
        )}
      </div>
      <div className="split-side">
        <NewTokenForm
          api={api}
          superAdmin={superAdmin}
          onIssued={(token) => {
            setIssued(token);
            setNotice(undefined);
            reload();
          }}
        />
      </div>
    </div>
  );
}
