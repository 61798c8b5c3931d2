import { DateTime } from '../components/date-time';
import type { MappingView } from './oidc-mapping-types';

const SOURCE_TEXT: Record<MappingView['source'], string> = {
  file: 'the file IOTBRIDGE_OIDC_MAPPING (read-only here)',
  api: 'set here (PUT /auth/oidc/mapping)',
  none: 'none yet: nobody can sign in externally',
};

/** The mapping as a table: each domain or organization, the account it leads to, and the role people get. */
export function OidcMappingTable({ view }: { readonly view: MappingView }) {
  const { mapping } = view;
  const organization = mapping?.mode === 'organization' || (mapping?.organizations !== undefined && mapping.domains === undefined);
  const entries = Object.entries((organization ? mapping?.organizations : mapping?.domains) ?? {});
  return (
    <>
      <dl className="fields" aria-label="Mapping">
        <dt>Source</dt>
        <dd data-testid="mapping-source">{SOURCE_TEXT[view.source]}</dd>
        <dt>Mode</dt>
        <dd>{mapping === null ? <span className="muted">none</span> : (mapping.mode ?? <span className="muted">IOTBRIDGE_OIDC_MODE</span>)}</dd>
        {organization ? (
          <>
            <dt>Claim</dt>
            <dd className="mono">{mapping?.claim ?? 'groups'}</dd>
          </>
        ) : null}
        <dt>Updated</dt>
        <dd>
          <DateTime value={view.updatedAt} />
        </dd>
      </dl>
      {entries.length === 0 ? (
        <p className="muted">No {organization ? 'organization' : 'domain'} is mapped.</p>
      ) : (
        <div className="table-scroll">
          <table className="table" aria-label="Mapped accounts">
            <thead>
              <tr>
                <th scope="col">{organization ? 'Organization' : 'E-mail domain'}</th>
                <th scope="col">Account ID</th>
                <th scope="col">Role</th>
              </tr>
            </thead>
            <tbody>
              {entries.map(([name, target]) => (
                <tr key={name}>
                  <td className="mono">{name}</td>
                  <td className="mono nowrap">{target.accountId}</td>
                  <td>{target.superAdmin === true ? 'Super-Admin' : 'user'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
