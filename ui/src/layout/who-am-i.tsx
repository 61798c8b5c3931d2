import type { Identity } from './identity';

const TOKEN_KINDS: Readonly<Record<string, string>> = { user: 'user', api: 'API token', app: 'app token' };

/** Who is signed in: the user's email (or the kind of token) and whether they are a Super-Admin. */
export function WhoAmI({ identity }: { readonly identity: Identity }) {
  const { whoAmI, user } = identity;
  const who = user === undefined ? (TOKEN_KINDS[whoAmI.type] ?? whoAmI.type) : user.email;
  return (
    <p className="who-am-i" title={`token ${whoAmI.tokenId} of account ${whoAmI.tokenAccountId}`}>
      <span className="visually-hidden">Signed in as </span>
      <span data-testid="who-am-i">{who}</span>
      {whoAmI.superAdmin ? <span className="badge">Super-Admin</span> : null}
    </p>
  );
}
