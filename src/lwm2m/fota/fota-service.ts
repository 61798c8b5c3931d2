import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import type { Endpoint, EndpointFilter } from '../../domain/endpoints.js';
import type { Domain } from '../../domain/domain.js';
import { pageRequest, type Page } from '../../domain/pagination.js';
import type { Scope } from '../../domain/scope.js';
import { nowIso } from '../../domain/time.js';
import { AppError } from '../../errors.js';
import type { DeviceManagement } from '../device-management.js';
import type { Lwm2mChannel } from '../lwm2m-channel.js';
import type { FotaChannel, FotaInput, JobView } from './fota-channel.js';
import { FirmwareUpdateRun, STOPPING, type RunContext, type RunEnd } from './firmware-update-run.js';
import { UPDATE_RESULTS, type DeviceStep, type FotaDevice, type FotaJob, type FotaSelector, type FotaStore, type PullScheme } from './model.js';

/** Download URLs of repository files for devices (domain.fileLinks and downloadUrl, src/domain/file-links.ts). */
export interface PackageLinks {
  create(accountId: string, name: string, options: { ttlSeconds: number; createdBy?: string | null }): Promise<{ token: string; name: string; sha256: string }>;
  url(link: { token: string; name: string }, target: { scheme: PullScheme; host: string; port: number; appendFileName?: boolean; includePortInUrl?: boolean }): string;
}

export interface FotaServiceOptions {
  readonly store: FotaStore;
  readonly domain: Pick<Domain, 'endpoints' | 'files' | 'services'>;
  readonly management: DeviceManagement;
  /**
   * Where a run's device requests go, read at each call: in a cluster the routed channel (the node that holds the
   * device's registration, src/devices/device-routing.ts); `management` by default.
   */
  readonly devices?: () => Lwm2mChannel;
  readonly links: PackageLinks;
  /** The service's own ports devices pull from (known once the servers listen). */
  readonly ports: () => { http?: number | undefined; coap?: number | undefined; coaps?: number | undefined };
  /** IOTBRIDGE_PUBLIC_HOST; a service's `publicHost` option comes first. */
  readonly publicHost: string | undefined;
  readonly emit: (endpoint: Endpoint, type: string, data: unknown) => Promise<void>;
  readonly logger: Logger;
  /** Cluster mode: this node's id; it drives the jobs made here, and takes up those of a node that died. */
  readonly node?: string | undefined;
}

export const FOTA_DEFAULT_STEP_TIMEOUT_S = 600;
export const FOTA_MAX_STEP_TIMEOUT_S = 7 * 24 * 3600;
export const FOTA_MAX_DEVICES = 100_000;
export const FOTA_MAX_CONCURRENCY = 10_000;

/** A job being driven in this process. */
interface ActiveJob {
  readonly job: FotaJob;
  readonly cancel: AbortController;
  readonly runs: Map<string, FirmwareUpdateRun>;
  done: Promise<void>;
}

/**
 * FOTA campaigns (docs/fota.md): a job updates a set of endpoints with one repository file, at most
 * `concurrency` at once and `ratePerMinute` started per minute, each through a {@link FirmwareUpdateRun}. Every
 * device of a job ends with exactly one `lwm2m-fota-complete` event (success, failed, or aborted: cancelled,
 * timed out, de-registered, file changed). Jobs and device steps are stored; a restart takes running jobs up
 * where they were.
 */
export class FotaService implements FotaChannel {
  readonly #options: FotaServiceOptions;
  readonly #active = new Map<string, ActiveJob>();
  /** Push packages by SHA-256, read once for every device of the jobs using them. */
  readonly #packages = new Map<string, { bytes: Promise<Uint8Array>; jobs: Set<string> }>();
  readonly #stopping = new AbortController();

  constructor(options: FotaServiceOptions) {
    this.#options = options;
    options.management.onValues((endpoint, values) => this.#runOf(endpoint.id)?.notified(values));
    options.management.onRegistrationChange((endpointId, registration) => this.#runOf(endpointId)?.registrationChanged(registration));
  }

  /** Takes up the jobs that were running when the process stopped (in a cluster, this node's, and any nobody drives). */
  async start(): Promise<void> {
    const { store, node } = this.#options;
    const jobs = node === undefined ? await store.runningJobs() : [...(await store.runningJobs(node)), ...(await store.takeJobsOf(null, node))];
    for (const job of jobs) this.#drive(job);
  }

  /** Cluster mode: `lost` died; the running jobs it drove go on here (each once, whichever survivor asks first). */
  async nodeLost(lost: string): Promise<void> {
    if (this.#options.node === undefined) return;
    const jobs = await this.#options.store.takeJobsOf(lost, this.#options.node);
    if (jobs.length > 0) this.#options.logger.warn({ node: lost, jobs: jobs.map((job) => job.id) }, 'FOTA jobs of a lost node taken up');
    for (const job of jobs) this.#drive(job);
  }

  /** Stops driving jobs; they stay `running` and are taken up at the next start (no device is told anything). */
  async stop(): Promise<void> {
    this.#stopping.abort(STOPPING);
    for (const active of this.#active.values()) active.cancel.abort(STOPPING);
    await Promise.allSettled([...this.#active.values()].map((active) => active.done));
  }

  /** A campaign over the endpoints `selector` picks. */
  async create(scope: Scope, input: FotaInput, selector: FotaSelector): Promise<JobView> {
    const endpoints = await this.#select(scope, selector);
    if (endpoints.length === 0) throw invalid('selector', 'the selection names no endpoint');
    return this.#create(scope, input, selector, endpoints);
  }

  /** `POST /endpoints/{ref}/fota`: a job of one device. */
  async createFor(scope: Scope, ref: string, input: FotaInput): Promise<JobView> {
    const endpoint = await this.#options.domain.endpoints.get(scope, ref);
    return this.#create(scope, input, { endpoints: [endpoint.id] }, [endpoint]);
  }

  async job(scope: Scope, id: string): Promise<JobView> {
    const job = await this.#options.store.job(scope.accountId, id);
    if (!job) throw new AppError('IOTB_FOTA_JOB_NOT_FOUND');
    return { ...job, counts: await this.#options.store.counts(id) };
  }

  async jobs(scope: Scope, page: { offset?: number; limit?: number }): Promise<Page<JobView>> {
    const found = await this.#options.store.jobs(scope.accountId, pageRequest(page.limit, page.offset));
    const items = await Promise.all(found.items.map(async (job) => ({ ...job, counts: await this.#options.store.counts(job.id) })));
    return { ...found, items };
  }

  async devices(scope: Scope, id: string, page: { offset?: number; limit?: number; step?: DeviceStep }): Promise<Page<FotaDevice>> {
    await this.job(scope, id);
    return this.#options.store.devices(scope.accountId, id, pageRequest(page.limit, page.offset), page.step);
  }

  /** The endpoint's current or last FOTA, with its job. */
  async latestFor(scope: Scope, ref: string): Promise<{ device: FotaDevice; job: JobView }> {
    const endpoint = await this.#options.domain.endpoints.get(scope, ref);
    const device = await this.#options.store.latestFor(scope.accountId, endpoint.id);
    if (!device) throw new AppError('IOTB_FOTA_JOB_NOT_FOUND', 'The endpoint has had no FOTA');
    return { device, job: await this.job(scope, device.jobId) };
  }

  /** Cancels a running job: devices not started end at once, those under way as soon as they can (docs/fota.md). */
  async cancel(scope: Scope, id: string): Promise<JobView> {
    const job = await this.job(scope, id);
    if (job.state !== 'running') return job;
    await this.#options.store.setJobState(id, 'cancelled', nowIso());
    const active = this.#active.get(id);
    if (active) {
      active.cancel.abort('cancelled');
      await active.done;
    } else {
      await this.#finishPending(job, 'cancelled');
    }
    return this.job(scope, id);
  }

  async #create(scope: Scope, input: FotaInput, selector: FotaSelector, endpoints: readonly Endpoint[]): Promise<JobView> {
    const options = checkedOptions(input);
    const file = await this.#options.domain.files.info(scope.accountId, input.file);
    if (options.mode !== 'push' && !this.#options.publicHost && !(await this.#servicesHavePublicHost(scope, endpoints))) {
      throw new AppError('IOTB_FOTA_NO_PUBLIC_HOST');
    }
    const busy = await this.#options.store.busy(endpoints.map((e) => e.id));
    if (busy.size > 0) throw new AppError('IOTB_FOTA_DEVICE_BUSY', undefined, { endpoints: [...busy].slice(0, 20) });
    const concurrency = input.concurrency ?? 10;
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > FOTA_MAX_CONCURRENCY) throw invalid('concurrency', `concurrency is 1 to ${FOTA_MAX_CONCURRENCY}`);
    const rate = input.ratePerMinute ?? null;
    if (rate !== null && (!Number.isInteger(rate) || rate < 1 || rate > 1_000_000)) throw invalid('ratePerMinute', 'ratePerMinute is 1 to 1000000, or null for no limit');
    const now = nowIso();
    const job: FotaJob = {
      id: randomUUID(),
      accountId: scope.accountId,
      file: { name: file.name, sha256: file.sha256, size: file.size, version: file.version },
      options,
      selector,
      concurrency,
      ratePerMinute: rate,
      state: 'running',
      createdBy: scope.principal.userId ?? scope.principal.tokenId,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
    };
    await this.#options.store.insertJob(job, endpoints.map((e) => e.id), this.#options.node);
    this.#drive(job);
    return { ...job, counts: await this.#options.store.counts(job.id) };
  }

  async #select(scope: Scope, selector: FotaSelector): Promise<Endpoint[]> {
    const { endpoints } = this.#options.domain;
    if (selector.endpoints !== undefined) {
      if (selector.tags || selector.keyPrefix || selector.serviceId) throw invalid('selector', 'select endpoints by their ids or keys, or by tags, serviceId and keyPrefix, not both');
      if (selector.endpoints.length > FOTA_MAX_DEVICES) throw invalid('endpoints', `a job updates at most ${FOTA_MAX_DEVICES} endpoints`);
      const found = new Map<string, Endpoint>();
      for (const ref of selector.endpoints) {
        const endpoint = await endpoints.get(scope, ref);
        found.set(endpoint.id, endpoint);
      }
      return [...found.values()];
    }
    if (!selector.tags?.length && !selector.keyPrefix && !selector.serviceId) throw invalid('selector', 'name endpoints, or select them by tags, serviceId or keyPrefix');
    const filter: EndpointFilter = { tags: selector.tags, keyPrefix: selector.keyPrefix, serviceId: selector.serviceId };
    const all: Endpoint[] = [];
    for (let offset = 0; ; offset += 1000) {
      const page = await endpoints.list(scope, filter, { offset, limit: 1000 });
      all.push(...page.items);
      if (all.length > FOTA_MAX_DEVICES) throw invalid('selector', `a job updates at most ${FOTA_MAX_DEVICES} endpoints`);
      if (page.items.length < 1000) return all;
    }
  }

  async #servicesHavePublicHost(scope: Scope, endpoints: readonly Endpoint[]): Promise<boolean> {
    for (const serviceId of new Set(endpoints.map((e) => e.serviceId))) {
      const service = await this.#options.domain.services.get(scope, serviceId).catch(() => undefined);
      if (typeof service?.options.publicHost !== 'string') return false;
    }
    return true;
  }

  /** Runs the job's devices not done, within its concurrency and rate, then marks it finished. */
  #drive(job: FotaJob): void {
    const active: ActiveJob = { job, cancel: new AbortController(), runs: new Map(), done: Promise.resolve() };
    // Every device under way listens to the job's cancellation.
    setMaxListeners(0, active.cancel.signal);
    this.#active.set(job.id, active);
    active.done = this.#driveAll(active)
      .catch((error: unknown) => this.#options.logger.error({ err: error, jobId: job.id }, 'FOTA job stopped on an error'))
      .finally(() => {
        this.#active.delete(job.id);
        this.#releasePackage(job);
      });
  }

  async #driveAll(active: ActiveJob): Promise<void> {
    const { job, cancel } = active;
    const devices = await this.#options.store.unfinished(job.id);
    const running = new Set<Promise<void>>();
    const interval = job.ratePerMinute ? 60_000 / job.ratePerMinute : 0;
    let nextStart = Date.now();
    for (const device of devices) {
      while (running.size >= job.concurrency && !cancel.signal.aborted) await Promise.race(running);
      // Devices under way when the process stopped are taken up at once; new ones keep to the rate.
      if (device.step === 'pending' && interval > 0) {
        await sleep(nextStart - Date.now(), cancel.signal);
        nextStart = Math.max(nextStart, Date.now()) + interval;
      }
      if (cancel.signal.aborted) break;
      const run = this.#runDevice(active, device).finally(() => running.delete(run));
      running.add(run);
    }
    await Promise.allSettled(running);
    if (cancel.signal.reason === STOPPING) return;
    if (cancel.signal.aborted) {
      await this.#finishPending(job, 'cancelled');
      return;
    }
    await this.#options.store.setJobState(job.id, 'finished', nowIso());
  }

  async #runDevice(active: ActiveJob, device: FotaDevice): Promise<void> {
    const { job } = active;
    const endpoint = await this.#options.domain.endpoints.byId(job.accountId, device.endpointId);
    if (!endpoint) {
      await this.#options.store.finishDevice(job.id, device.endpointId, { outcome: 'aborted', reason: 'the endpoint was deleted', failedStep: device.step, updateResult: null, version: null, at: nowIso() });
      return;
    }
    const started = Date.now();
    const devices = (): Lwm2mChannel => this.#options.devices?.() ?? this.#options.management;
    const context: RunContext = {
      perform: (target, request, signal) => devices().perform(target, request, signal === undefined ? {} : { signal }),
      registrationOf: async (target) => devices().registrationOf(target),
      packageBytes: (target) => this.#package(target),
      packageUri: (target, device, scheme) => this.#packageUri(target, device, scheme),
      fileUnchanged: async (target) => (await this.#options.domain.files.info(target.accountId, target.file.name).catch(() => undefined))?.sha256 === target.file.sha256,
      save: (change) => this.#options.store.updateDevice(job.id, device.endpointId, change),
    };
    const run = new FirmwareUpdateRun(endpoint, job, device, context, active.cancel.signal);
    active.runs.set(endpoint.id, run);
    let end: RunEnd | undefined;
    try {
      end = await run.run();
    } finally {
      active.runs.delete(endpoint.id);
    }
    if (end) await this.#finish(job, endpoint, device, end, Date.now() - started);
  }

  /** Ends a device's FOTA once, and says so in its one `lwm2m-fota-complete` event. */
  async #finish(job: FotaJob, endpoint: Endpoint, device: FotaDevice, end: RunEnd, durationMs: number): Promise<void> {
    if (!(await this.#options.store.finishDevice(job.id, endpoint.id, { ...end, at: nowIso() }))) return;
    const stored = (await this.#options.store.latestFor(job.accountId, endpoint.id)) ?? device;
    await this.#options.emit(endpoint, 'lwm2m-fota-complete', {
      jobId: job.id,
      file: job.file,
      mode: stored.mode,
      outcome: end.outcome,
      step: end.failedStep,
      updateResult: end.updateResult,
      ...(end.updateResult !== null && { updateResultText: UPDATE_RESULTS[end.updateResult] ?? null }),
      reason: end.reason,
      previousVersion: stored.previousVersion,
      version: end.version,
      durationMs,
    });
  }

  /** Devices of a cancelled job that never started: aborted, each with its event. */
  async #finishPending(job: FotaJob, reason: string): Promise<void> {
    for (const device of await this.#options.store.unfinished(job.id)) {
      const endpoint = await this.#options.domain.endpoints.byId(job.accountId, device.endpointId);
      const end: RunEnd = { outcome: 'aborted', reason, failedStep: device.step, updateResult: null, version: null };
      if (endpoint) await this.#finish(job, endpoint, device, end, 0);
      else await this.#options.store.finishDevice(job.id, device.endpointId, { ...end, at: nowIso() });
    }
  }

  #runOf(endpointId: string): FirmwareUpdateRun | undefined {
    for (const active of this.#active.values()) {
      const run = active.runs.get(endpointId);
      if (run) return run;
    }
    return undefined;
  }

  /** The job's file, read once per content for every job pushing it. */
  #package(job: FotaJob): Promise<Uint8Array> {
    let entry = this.#packages.get(job.file.sha256);
    if (!entry) {
      entry = { bytes: this.#readPackage(job), jobs: new Set() };
      this.#packages.set(job.file.sha256, entry);
      entry.bytes.catch(() => this.#packages.delete(job.file.sha256));
    }
    entry.jobs.add(job.id);
    return entry.bytes;
  }

  async #readPackage(job: FotaJob): Promise<Uint8Array> {
    const read = await this.#options.domain.files.read(job.accountId, job.file.name);
    const chunks: Buffer[] = [];
    for await (const chunk of read.stream) chunks.push(chunk as Buffer);
    if (read.file.sha256 !== job.file.sha256) throw new AppError('IOTB_FILE_NOT_FOUND', 'The file was replaced since the job was made', { name: job.file.name });
    return Buffer.concat(chunks);
  }

  #releasePackage(job: FotaJob): void {
    const entry = this.#packages.get(job.file.sha256);
    if (entry?.jobs.delete(job.id) && entry.jobs.size === 0) this.#packages.delete(job.file.sha256);
  }

  async #packageUri(job: FotaJob, endpoint: Endpoint, scheme: PullScheme): Promise<string> {
    const service = await this.#options.domain.services.get({ accountId: job.accountId } as Scope, endpoint.serviceId).catch(() => undefined);
    const host = (typeof service?.options.publicHost === 'string' ? service.options.publicHost : undefined) ?? this.#options.publicHost;
    if (!host) throw new AppError('IOTB_FOTA_NO_PUBLIC_HOST');
    const ports = this.#options.ports();
    const port = scheme === 'coaps' ? ports.coaps : scheme === 'coap' ? ports.coap : ports.http;
    if (port === undefined) throw new AppError('IOTB_REQUEST_VALIDATION', `This service has no ${scheme} port for devices to download from`, { field: 'protocol' });
    // The link lives as long as the device may take to download: the step's time, and an hour at least.
    const link = await this.#options.links.create(job.accountId, job.file.name, { ttlSeconds: Math.max(3600, Math.ceil((job.options.stepTimeoutMs * 2) / 1000)), createdBy: `fota:${job.id}` });
    if (link.sha256 !== job.file.sha256) throw new AppError('IOTB_FILE_NOT_FOUND', 'The file was replaced since the job was made', { name: job.file.name });
    return this.#options.links.url(link, { scheme: scheme === 'https' ? 'http' : scheme, host, port, appendFileName: job.options.appendFileName, includePortInUrl: job.options.includePortInUrl });
  }
}

function checkedOptions(input: FotaInput): FotaJob['options'] {
  const mode = input.mode ?? 'auto';
  if (!['push', 'pull', 'auto'].includes(mode)) throw invalid('mode', 'mode is push, pull or auto');
  const timeout = input.timeout ?? FOTA_DEFAULT_STEP_TIMEOUT_S;
  if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout < 1 || timeout > FOTA_MAX_STEP_TIMEOUT_S) throw invalid('timeout', `timeout is 1 to ${FOTA_MAX_STEP_TIMEOUT_S} seconds per step`);
  if (input.protocol !== undefined && !['coap', 'coaps', 'http'].includes(input.protocol)) throw invalid('protocol', 'protocol is coap, coaps or http');
  return { mode, appendFileName: input.appendFileName ?? false, includePortInUrl: input.includePortInUrl ?? false, protocol: input.protocol, stepTimeoutMs: Math.round(timeout * 1000) };
}

function invalid(field: string, message: string): AppError {
  return new AppError('IOTB_REQUEST_VALIDATION', message, { field });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
