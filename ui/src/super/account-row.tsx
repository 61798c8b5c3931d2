import { useState } from 'react';
import { call, type ApiData } from '../api/client';
import { ConfirmButton } from '../components/confirm-button';
import { DateTime } from '../components/date-time';
import { useSession } from '../session/session';
import { limitsText, type AccountStatus, type StatusOf } from './account-status';
import { ImpersonationPanel } from './impersonation-panel';
import { LimitsForm } from './limits-form';
import { SuspendForm } from './suspend-form';

export type Account = ApiData<'/super/accounts'>['items'][number];
type Panel = 'suspend' | 'limits' | 'impersonate';

export const ACCOUNT_COLUMNS = 8;

export interface AccountRowProps {
  readonly account: Account;
  /** The parent's name when it is on this page. */
  readonly parentName: string | undefined;
  readonly status: StatusOf | undefined;
  readonly onStatus: (status: AccountStatus) => void;
}

function StateCell({ status }: { readonly status: StatusOf | undefined }) {
  if (status === undefined) return <span className="muted">…</span>;
  if ('error' in status) return <span className="muted">{status.error}</span>;
  if (status.suspension === null) return <span className="super-state super-state-active">active</span>;
  return (
    <>
      <span className="super-state super-state-suspended">suspended</span>
      <span className="super-reason">
        {status.suspension.reason}{' '}
        <span className="muted">
          (by {status.suspension.by}, <DateTime value={status.suspension.at} />)
        </span>
      </span>
    </>
  );
}

/** One account of the platform and what the Super-Admin may do with it; each action opens below the row. */
export function AccountRow({ account, parentName, status, onStatus }: AccountRowProps) {
  const { api } = useSession();
  const [panel, setPanel] = useState<Panel | undefined>(undefined);
  const known = status !== undefined && !('error' in status) ? status : undefined;
  const toggle = (next: Panel) => setPanel(panel === next ? undefined : next);
  const toggleProps = (next: Panel, label: string) => ({
    type: 'button' as const,
    className: 'button button-quiet',
    'aria-expanded': panel === next,
    'aria-label': `${label} ${account.name}`,
    onClick: () => toggle(next),
  });

  return (
    <>
      <tr>
        <td>{account.name}</td>
        <td className="mono nowrap">{account.accountId}</td>
        <td>{account.parentId === null ? <span className="muted">none (root)</span> : (parentName ?? <span className="mono">{account.parentId}</span>)}</td>
        <td data-testid="account-state">
          <StateCell status={status} />
        </td>
        <td>{known === undefined ? null : limitsText(known.limits)}</td>
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
        <td>
          <div className="super-actions">
            {known?.suspended === true ? (
              <ConfirmButton
                label="Resume"
                name={`Resume ${account.name}`}
                busyLabel="Resuming…"
                question={`Resume ${account.name}? Its devices and triggers work again.`}
                onConfirm={async () => onStatus(await call(api.POST('/super/accounts/{id}/resume', { params: { path: { id: account.accountId } } })))}
              />
            ) : (
              <button {...toggleProps('suspend', 'Suspend')}>Suspend…</button>
            )}
            <button {...toggleProps('limits', 'Limits of')} disabled={known === undefined}>
              Limits…
            </button>
            <button {...toggleProps('impersonate', 'Impersonate')}>Impersonate…</button>
          </div>
        </td>
      </tr>
      {panel === undefined ? null : (
        <tr className="super-panel-row">
          <td colSpan={ACCOUNT_COLUMNS}>
            {panel === 'suspend' ? (
              <SuspendForm
                accountId={account.accountId}
                name={account.name}
                onDone={(next) => {
                  setPanel(undefined);
                  onStatus(next);
                }}
              />
            ) : panel === 'limits' && known !== undefined ? (
              <LimitsForm status={known} onDone={onStatus} />
            ) : (
              <ImpersonationPanel accountId={account.accountId} name={account.name} />
            )}
          </td>
        </tr>
      )}
    </>
  );
}
