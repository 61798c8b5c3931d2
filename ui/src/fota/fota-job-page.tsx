import { useCallback, useEffect, useId, useState } from 'react';
import { call, messageOf, type ApiClient } from '../api/client';
import { useResource } from '../api/use-resource';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { Loading } from '../components/loading';
import { usePageTitle } from '../components/page-title';
import { Pager } from '../components/pager';
import { formatBytes } from '../files/file-api';
import { href, navigate, useHashLocation } from '../router/hash-location';
import { endpointPath, filePath, fotaJobPath } from '../router/routes';
import { useSession } from '../session/session';
import { DEVICES_PAGE_SIZE, STEPS, selectorText, updateResultText, type FotaDevice, type FotaJob, type FotaStep } from './fota-types';
import { JobProgress } from './job-progress';
import { DeviceOutcome, JobState } from './job-state';
import '../files/files.css';
import './fota.css';

/** How often a running campaign is asked again. */
const REFRESH_MS = 2000;

function isStep(value: string | null): value is FotaStep {
  return STEPS.some((step) => step === value);
}

/** The page of devices and the step filter, from the fragment's query (`#/fota/<id>?step=done&offset=25`). */
function useDeviceQuery(): { readonly offset: number; readonly step: FotaStep | undefined } {
  const { query } = useHashLocation();
  const offset = Number(query.get('offset') ?? 0);
  const step = query.get('step');
  return { offset: Number.isInteger(offset) && offset > 0 ? offset : 0, step: isStep(step) ? step : undefined };
}

/** One campaign: what it updates with how, its devices' progress (asked again while it runs), and cancel. */
export function FotaJobPage({ id }: { readonly id: string }) {
  usePageTitle('FOTA campaign');
  const { api } = useSession();
  const { offset, step } = useDeviceQuery();
  const loadJob = useCallback(() => call(api.GET('/fota/jobs/{id}', { params: { path: { id } } })), [api, id]);
  const loadDevices = useCallback(
    () => call(api.GET('/fota/jobs/{id}/devices', { params: { path: { id }, query: { limit: DEVICES_PAGE_SIZE, offset, step } } })),
    [api, id, offset, step],
  );
  const job = useResource(loadJob);
  const devices = useResource(loadDevices);
  const [cancelled, setCancelled] = useState<FotaJob | undefined>(undefined);
  // The cancel's answer shows until a load newer than it has the campaign no longer running.
  const current = cancelled !== undefined && (job.data === undefined || job.data.state === 'running') ? cancelled : job.data;
  const running = current?.state === 'running';
  // A cancelled campaign still has devices being reset: follow them until every one is done.
  const moving = current !== undefined && (running || current.counts.running + current.counts.pending > 0);
  const { reload: reloadJob } = job;
  const { reload: reloadDevices } = devices;

  useEffect(() => {
    if (!moving) return undefined;
    const timer = window.setInterval(() => {
      reloadJob();
      reloadDevices();
    }, REFRESH_MS);
    return () => window.clearInterval(timer);
  }, [moving, reloadJob, reloadDevices]);

  const onCancelled = (next: FotaJob) => {
    setCancelled(next);
    reloadJob();
    reloadDevices();
  };

  return (
    <section aria-labelledby="job-title">
      <p className="breadcrumb">
        <a href={href('/fota')}>FOTA</a>
      </p>
      <h1 id="job-title">Campaign {current === undefined ? null : <span className="mono job-file">{current.file.name}</span>}</h1>
      <ErrorMessage message={job.error} />
      {current === undefined ? (
        job.error === undefined ? <Loading what="the campaign" /> : null
      ) : (
        <>
          <div className="job-head">
            <JobState state={current.state} />
            {moving ? <span className="muted small">refreshing every {REFRESH_MS / 1000} s</span> : null}
          </div>
          <JobProgress job={current} />
          {running ? <CancelJob api={api} job={current} onCancelled={onCancelled} /> : null}
          <JobFields job={current} />
          <h2>Devices</h2>
          <StepFilter id={id} step={step} />
          <ErrorMessage message={devices.error} />
          {devices.data === undefined ? (
            devices.error === undefined ? <Loading what="devices" /> : null
          ) : (
            <div aria-busy={devices.loading}>
              <Pager
                total={devices.data.total}
                offset={devices.data.offset}
                limit={DEVICES_PAGE_SIZE}
                noun="devices"
                hrefAt={(at) => href(fotaJobPath(id), { step, offset: at === 0 ? undefined : at })}
              />
              {devices.data.items.length === 0 ? <p className="muted">No device {step === undefined ? '' : `at step ${step}`}.</p> : <DeviceTable api={api} devices={devices.data.items} />}
            </div>
          )}
        </>
      )}
    </section>
  );
}

function JobFields({ job }: { readonly job: FotaJob }) {
  const { options } = job;
  return (
    <dl className="fields">
      <dt>File</dt>
      <dd>
        <a className="mono" href={href(filePath(job.file.name))}>
          {job.file.name}
        </a>
        {job.file.version === null ? '' : ` ${job.file.version}`}, {formatBytes(job.file.size)}
      </dd>
      <dt>SHA-256</dt>
      <dd className="mono sha256">{job.file.sha256}</dd>
      <dt>Devices</dt>
      <dd>{selectorText(job)}</dd>
      <dt>Mode</dt>
      <dd>
        {options.mode}
        {options.mode === 'push' ? '' : `${options.protocol === undefined ? '' : `, ${options.protocol}`}${options.appendFileName ? ', file name in the URL' : ''}${options.includePortInUrl ? ', port in the URL' : ''}`}
      </dd>
      <dt>Step timeout</dt>
      <dd>{options.stepTimeoutMs / 1000} s</dd>
      <dt>Devices at once</dt>
      <dd>
        {job.concurrency}
        {job.ratePerMinute === null ? '' : `, at most ${job.ratePerMinute} started a minute`}
      </dd>
      <dt>ID</dt>
      <dd className="mono">{job.id}</dd>
      <dt>Created</dt>
      <dd>
        <DateTime value={job.createdAt} />
        {job.createdBy === null ? null : (
          <>
            {' '}
            by <span className="mono">{job.createdBy}</span>
          </>
        )}
      </dd>
      <dt>Finished</dt>
      <dd>
        <DateTime value={job.finishedAt} />
      </dd>
    </dl>
  );
}

/** Cancel, after a confirmation: devices not started end at once, the others are reset (best effort). */
function CancelJob({ api, job, onCancelled }: { readonly api: ApiClient; readonly job: FotaJob; readonly onCancelled: (job: FotaJob) => void }) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);

  const cancel = async () => {
    setBusy(true);
    setError(undefined);
    try {
      onCancelled(await call(api.POST('/fota/jobs/{id}/cancel', { params: { path: { id: job.id } } })));
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(false);
      setConfirming(false);
    }
  };

  return (
    <div className="job-cancel">
      {confirming ? (
        <div className="confirm" role="group" aria-label="Confirm cancellation">
          <p>Cancel this campaign? Devices not done end aborted; a device already installing cannot be stopped.</p>
          <div className="button-row">
            <button type="button" className="button button-danger" onClick={() => void cancel()} disabled={busy}>
              {busy ? 'Cancelling…' : 'Cancel campaign'}
            </button>
            <button type="button" className="button button-quiet" onClick={() => setConfirming(false)} disabled={busy}>
              Keep it running
            </button>
          </div>
        </div>
      ) : (
        <button type="button" className="button button-danger" onClick={() => setConfirming(true)}>
          Cancel…
        </button>
      )}
      <ErrorMessage message={error} />
    </div>
  );
}

function StepFilter({ id, step }: { readonly id: string; readonly step: FotaStep | undefined }) {
  const fieldId = useId();
  return (
    <div className="filter-form">
      <div className="field step-field">
        <label htmlFor={fieldId}>Step</label>
        <select id={fieldId} value={step ?? ''} onChange={(event) => navigate(href(fotaJobPath(id), { step: event.target.value }))}>
          <option value="">All steps</option>
          {STEPS.map((value) => (
            <option key={value} value={value}>
              {value}
            </option>
          ))}
        </select>
      </div>
    </div>
  );
}

/** The keys of the endpoints on this page of devices (the devices list carries their ids only). */
function useEndpointKeys(api: ApiClient, ids: readonly string[]): ReadonlyMap<string, string> {
  const joined = ids.join('\n');
  const load = useCallback(async () => {
    const list = joined === '' ? [] : joined.split('\n');
    const found = await Promise.all(
      list.map((ref) =>
        call(api.GET('/endpoints/{ref}', { params: { path: { ref } } })).then(
          (endpoint) => [ref, endpoint.key] as const,
          () => undefined,
        ),
      ),
    );
    return new Map(found.filter((entry) => entry !== undefined));
  }, [api, joined]);
  return useResource(load).data ?? new Map<string, string>();
}

function DeviceTable({ api, devices }: { readonly api: ApiClient; readonly devices: readonly FotaDevice[] }) {
  const keys = useEndpointKeys(
    api,
    devices.map((device) => device.endpointId),
  );
  return (
    <div className="table-scroll">
      <table className="table" aria-label="Devices">
        <thead>
          <tr>
            <th scope="col">Endpoint</th>
            <th scope="col">Step</th>
            <th scope="col">Outcome</th>
            <th scope="col">Mode</th>
            <th scope="col">Update Result</th>
            <th scope="col">Version</th>
            <th scope="col">Error</th>
            <th scope="col">Finished</th>
          </tr>
        </thead>
        <tbody>
          {devices.map((device) => (
            <tr key={device.endpointId}>
              <td className="mono nowrap">
                <a href={href(endpointPath(device.endpointId))}>{keys.get(device.endpointId) ?? device.endpointId}</a>
              </td>
              <td>{device.step}</td>
              <td>
                <DeviceOutcome device={device} />
              </td>
              <td>{device.mode ?? ''}</td>
              <td>{updateResultText(device.updateResult)}</td>
              <td className="nowrap">
                {device.previousVersion ?? ''}
                {device.version === null || device.version === device.previousVersion ? '' : ` → ${device.version}`}
              </td>
              <td>
                {device.reason ?? ''}
                {device.failedStep === null ? '' : ` (while ${device.failedStep})`}
              </td>
              <td>
                {device.finishedAt === null ? '' : <DateTime value={device.finishedAt} />}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
