import type { Endpoint } from '../../domain/endpoints.js';
import { AppError } from '../../errors.js';
import type { JsonRecord } from '../json-values.js';
import type { OperationRequest, OperationResult } from '../operations.js';
import type { Registration } from '../registration.js';
import { FIRMWARE_STATE, PROTOCOL_BY_SCHEME, UPDATE_RESULTS, type DeviceOutcome, type DeviceStep, type FotaDevice, type FotaJob, type PullScheme } from './model.js';

/** What one device's update needs of the LwM2M server and the campaign around it. */
export interface RunContext {
  /** `signal`: withdraws the request while it still waits for the device. */
  perform(endpoint: Endpoint, request: OperationRequest, signal?: AbortSignal): Promise<OperationResult>;
  /** In a cluster it may be asked of the node that holds the device. */
  registrationOf(endpoint: Endpoint): Promise<Registration | undefined>;
  /** The package, for a push (shared by every device of the job). */
  packageBytes(job: FotaJob): Promise<Uint8Array>;
  /** A download URL of the job's file for the device to pull over `scheme`. */
  packageUri(job: FotaJob, endpoint: Endpoint, scheme: PullScheme): Promise<string>;
  /** Whether the file still has the content the job was made with. */
  fileUnchanged(job: FotaJob): Promise<boolean>;
  /** Stores where the device is, so a restart takes it up there. */
  save(change: Partial<Pick<FotaDevice, 'step' | 'mode' | 'updateResult' | 'previousVersion' | 'version' | 'startedAt'>>): Promise<void>;
}

/** How the device's FOTA ended. */
export interface RunEnd {
  readonly outcome: DeviceOutcome;
  readonly reason: string | null;
  /** The step it failed or was aborted at; null on success. */
  readonly failedStep: DeviceStep | null;
  readonly updateResult: number | null;
  readonly version: string | null;
}

/** State and Update Result as last seen. */
interface Status {
  state: number | undefined;
  result: number | undefined;
}

/** The abort reason of runs stopped with the process, as opposed to cancelled. */
export const STOPPING = 'stopping';

const STATE = '/5/0/3';
const RESULT = '/5/0/5';
/** The schemes a device is offered a URL in, best first; a secure registration prefers CoAPS. */
const PULL_ORDER: readonly PullScheme[] = ['coap', 'coaps', 'http'];

/**
 * One device's firmware update through object 5 (OMA LwM2M Core 1.1 E.6): reset to Idle, deliver the package
 * (push: Write /5/0/0 block-wise; pull: Write the Package URI /5/0/1), wait for Downloaded, Execute Update
 * /5/0/2, wait for the device to come back (a new Register, or Idle with Update Result 1) and read its new
 * Firmware Version /3/0/3. State and Update Result are observed, and read every `pollMs` as well, so a device
 * without Observe or a lost notification only slows it down. Each step has `stepTimeoutMs`. A run taken up
 * after a restart looks at the device's state first and goes on from there.
 */
export class FirmwareUpdateRun {
  readonly #endpoint: Endpoint;
  readonly #job: FotaJob;
  readonly #device: FotaDevice;
  readonly #context: RunContext;
  readonly #signal: AbortSignal;
  readonly #pollMs: number;
  readonly #status: Status = { state: undefined, result: undefined };
  /** Wakes the waiting loop early: a notification, a registration, a cancellation. */
  #wake: (() => void) | undefined;
  /** The registration id the update was executed under: another one means the device came back. */
  #executedUnder: string | undefined;
  #registrationChanged = false;
  #deregisteredAt: number | undefined;
  #mode: 'push' | 'pull' | null;
  #previousVersion: string | null;

  constructor(endpoint: Endpoint, job: FotaJob, device: FotaDevice, context: RunContext, signal: AbortSignal) {
    this.#endpoint = endpoint;
    this.#job = job;
    this.#device = device;
    this.#context = context;
    this.#signal = signal;
    this.#mode = device.mode;
    this.#previousVersion = device.previousVersion;
    this.#pollMs = Math.min(Math.max(Math.round(job.options.stepTimeoutMs / 10), 250), 30_000);
  }

  /** Values the device notified (State, Update Result). */
  notified(values: readonly JsonRecord[]): void {
    for (const { path, value } of values) {
      if (path === STATE && typeof value === 'number') this.#status.state = value;
      if (path === RESULT && typeof value === 'number') this.#status.result = value;
    }
    this.#wake?.();
  }

  /** The device registered anew (undefined: its registration ended). */
  registrationChanged(registration: Registration | undefined): void {
    this.#registrationSeen(registration);
    if (!registration) this.#deregisteredAt = Date.now();
    this.#wake?.();
  }

  #registrationSeen(registration: Registration | undefined): void {
    if (registration) {
      this.#deregisteredAt = undefined;
      if (registration.id !== this.#executedUnder) this.#registrationChanged = true;
    } else {
      this.#deregisteredAt ??= Date.now();
    }
  }

  /** How it ended; undefined when the process is stopping (the run is taken up again at the next start). */
  async run(): Promise<RunEnd | undefined> {
    let step: DeviceStep = this.#device.step === 'pending' ? 'preparing' : this.#device.step;
    const onAbort = () => this.#wake?.();
    this.#signal.addEventListener('abort', onAbort, { once: true });
    try {
      if (!(await this.#context.fileUnchanged(this.#job))) return this.#aborted(step, 'the file was deleted or replaced');
      if (step === 'preparing') {
        await this.#context.save({ step, startedAt: new Date().toISOString() });
        await this.#prepare();
        step = 'downloading';
      }
      if (step === 'downloading') {
        await this.#context.save({ step, mode: this.#mode });
        const failed = await this.#download(this.#device.step === 'downloading');
        if (failed) return failed;
        step = 'updating';
      }
      return await this.#update(this.#device.step === 'updating');
    } catch (error) {
      if (this.#signal.aborted) return this.#signal.reason === STOPPING ? undefined : this.#cancelled(step);
      if (error instanceof StepEnd) return { ...error.end, failedStep: error.end.failedStep ?? step };
      const reason = error instanceof AppError ? `${error.code}: ${error.message}` : (error as Error).message;
      // A failure because the file changed under the job says so, not what the device made of it.
      if (!(await this.#context.fileUnchanged(this.#job).catch(() => true))) return this.#aborted(step, 'the file was deleted or replaced');
      return { outcome: error instanceof AppError && error.code === 'IOTB_LWM2M_TIMEOUT' ? 'aborted' : 'failed', reason, failedStep: step, updateResult: this.#status.result ?? null, version: null };
    } finally {
      this.#signal.removeEventListener('abort', onAbort);
    }
  }

  /** The version before, the delivery mode, and the state machine back to Idle. */
  async #prepare(): Promise<void> {
    this.#previousVersion = await this.#readString('/3/0/3');
    if (this.#mode === null) this.#mode = await this.#chooseMode();
    await this.#context.save({ previousVersion: this.#previousVersion, mode: this.#mode });
    await this.#readStatus();
    if (this.#status.state !== FIRMWARE_STATE.idle || (this.#status.result ?? 0) !== 0) {
      await this.#reset();
      await this.#waitFor('preparing', (s) => s.state === FIRMWARE_STATE.idle || s.state === undefined);
    }
    // Best effort: without it, polling sees the changes.
    for (const path of [STATE, RESULT]) await this.#perform({ operation: 'observe', path }).catch(() => undefined);
  }

  /** Delivers the package and waits for Downloaded; a RunEnd when the device reported a failure. */
  async #download(resumed: boolean): Promise<RunEnd | undefined> {
    let deliver = true;
    if (resumed) {
      await this.#readStatus();
      if (this.#status.state === FIRMWARE_STATE.downloaded) deliver = false;
      // A pull still under way goes on; a push died with the process that sent it.
      else if (this.#status.state === FIRMWARE_STATE.downloading && this.#mode === 'pull') deliver = false;
      else if (this.#status.state !== FIRMWARE_STATE.idle) await this.#reset();
    }
    this.#status.result = 0;
    if (deliver) {
      if (this.#mode === 'push') {
        const bytes = await this.#context.packageBytes(this.#job);
        await this.#perform({ operation: 'write', path: '/5/0/0', value: bytes, format: 'opaque' });
      } else {
        const uri = await this.#context.packageUri(this.#job, this.#endpoint, await this.#pullScheme());
        await this.#perform({ operation: 'write', path: '/5/0/1', value: uri });
      }
    }
    const status = await this.#waitFor('downloading', (s) => s.state === FIRMWARE_STATE.downloaded || isFailure(s.result), { abortOnDeregistration: true });
    if (status.state !== FIRMWARE_STATE.downloaded) return this.#failed('downloading', status.result ?? null);
    return undefined;
  }

  /** Executes Update and waits for the device's verdict. */
  async #update(resumed: boolean): Promise<RunEnd> {
    await this.#context.save({ step: 'updating' });
    let execute = true;
    if (resumed) {
      await this.#readStatus().catch(() => undefined);
      execute = this.#status.state === FIRMWARE_STATE.downloaded && !isFailure(this.#status.result);
    }
    if (execute) {
      this.#executedUnder = (await this.#context.registrationOf(this.#endpoint))?.id;
      this.#registrationChanged = false;
      this.#status.result = 0;
      await this.#perform({ operation: 'exec', path: '/5/0/2' });
    } else {
      this.#executedUnder = (await this.#context.registrationOf(this.#endpoint))?.id;
    }
    const status = await this.#waitFor('updating', (s) => this.#registrationChanged || s.result === 1 || isFailure(s.result), { pollWhileUpdating: true });
    if (isFailure(status.result)) return this.#failed('updating', status.result ?? null);
    // Back after its reboot (or Idle with success): the verdict is what it says now.
    await this.#readStatus();
    const version = await this.#readString('/3/0/3');
    const result = this.#status.result ?? null;
    if (result === 1 || (result === 0 && version !== null && version !== this.#previousVersion)) {
      await this.#context.save({ version, updateResult: result });
      return { outcome: 'success', reason: null, failedStep: null, updateResult: result, version };
    }
    return { ...this.#failed('updating', result), version };
  }

  /**
   * Waits until `done` holds for the status (polled every `pollMs`, woken early by notifications), the step's
   * time runs out (aborted: timed out), or the job is cancelled.
   */
  async #waitFor(step: DeviceStep, done: (status: Status) => boolean, options: { abortOnDeregistration?: boolean; pollWhileUpdating?: boolean } = {}): Promise<Status> {
    const deadline = Date.now() + this.#job.options.stepTimeoutMs;
    let nextPoll = Date.now() + this.#pollMs;
    for (;;) {
      if (this.#signal.aborted) throw new Error('cancelled');
      if (done(this.#status)) return { ...this.#status };
      const now = Date.now();
      if (now >= deadline) throw new StepEnd({ outcome: 'aborted', reason: `timed out: the device did not finish ${step} within ${this.#job.options.stepTimeoutMs} ms`, failedStep: step, updateResult: this.#status.result ?? null, version: null });
      // De-registered and not back within a poll: it is gone (a reboot re-registers at once).
      if (options.abortOnDeregistration && this.#deregisteredAt !== undefined && now - this.#deregisteredAt > this.#pollMs && !(await this.#context.registrationOf(this.#endpoint))) {
        throw new StepEnd({ outcome: 'aborted', reason: 'the device de-registered', failedStep: step, updateResult: this.#status.result ?? null, version: null });
      }
      if (now >= nextPoll) {
        nextPoll = now + this.#pollMs;
        // In a cluster the device may be held by another node, whose notifications and registration changes do not
        // reach this one: the poll sees them.
        const registration = await this.#context.registrationOf(this.#endpoint);
        this.#registrationSeen(registration);
        if (this.#registrationChanged && options.pollWhileUpdating) continue;
        // A device rebooting into its new firmware answers nothing until it registers again: no read then.
        if (registration && (!options.pollWhileUpdating || this.#status.state !== FIRMWARE_STATE.updating)) {
          await this.#readStatus(Math.min(this.#pollMs * 4, Math.max(deadline - now, 1))).catch(() => undefined);
          continue;
        }
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(Math.min(nextPoll, deadline) - Date.now(), 1));
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  async #readStatus(timeoutMs?: number): Promise<void> {
    const result = await this.#perform({ operation: 'read', path: '/5/0' }, timeoutMs);
    const state = result.values?.find((v) => v.path === STATE)?.value;
    const update = result.values?.find((v) => v.path === RESULT)?.value;
    if (typeof state === 'number') this.#status.state = state;
    if (typeof update === 'number') this.#status.result = update;
  }

  async #readString(path: string): Promise<string | null> {
    try {
      const value = (await this.#perform({ operation: 'read', path })).values?.[0]?.value;
      return value === undefined ? null : String(value);
    } catch {
      return null;
    }
  }

  /** Delivery Method (/5/0/9): 0 pull only, 1 push only, 2 both; the job's mode unless it is `auto`. */
  async #chooseMode(): Promise<'push' | 'pull'> {
    if (this.#job.options.mode !== 'auto') return this.#job.options.mode;
    const delivery = Number(await this.#readString('/5/0/9'));
    if (delivery === 1) return 'push';
    if (delivery === 0) return 'pull';
    return (await this.#supportedSchemes()).length > 0 ? 'pull' : 'push';
  }

  async #supportedSchemes(): Promise<PullScheme[]> {
    const result = await this.#perform({ operation: 'read', path: '/5/0/8' }).catch(() => undefined);
    const protocols = new Set((result?.values ?? []).map((v) => Number(v.value)));
    // A device without /5/0/8 (object 5 version 1.0) supports CoAP (the resource's default).
    if (result === undefined) protocols.add(PROTOCOL_BY_SCHEME.coap);
    const order = (await this.#context.registrationOf(this.#endpoint))?.secure ? ['coaps', 'coap', 'http'] as const : PULL_ORDER;
    return order.filter((scheme) => protocols.has(PROTOCOL_BY_SCHEME[scheme]));
  }

  async #pullScheme(): Promise<PullScheme> {
    if (this.#job.options.protocol) return this.#job.options.protocol;
    return (await this.#context.registrationOf(this.#endpoint))?.secure ? 'coaps' : 'coap';
  }

  /** An empty Package URI (pull) or Package (push) sets State Idle and Update Result 0 (5.xml, State). */
  async #reset(): Promise<void> {
    if (this.#mode === 'push') await this.#perform({ operation: 'write', path: '/5/0/0', value: new Uint8Array(0), format: 'opaque' });
    else await this.#perform({ operation: 'write', path: '/5/0/1', value: '' });
    this.#status.state = FIRMWARE_STATE.idle;
    this.#status.result = 0;
  }

  #perform(request: Omit<OperationRequest, 'timeoutMs'>, timeoutMs = this.#job.options.stepTimeoutMs): Promise<OperationResult> {
    if (this.#signal.aborted) return Promise.reject(new Error('cancelled'));
    // Queue mode: the request waits for the device to wake, within the step's time.
    // A cancellation withdraws a request still waiting for an absent or sleeping device.
    return this.#context.perform(this.#endpoint, { ...request, timeoutMs, queueTimeoutMs: this.#job.options.stepTimeoutMs }, this.#signal);
  }

  #failed(step: DeviceStep, result: number | null): RunEnd {
    const words = result === null ? 'no Update Result' : (UPDATE_RESULTS[result] ?? `Update Result ${result}`);
    return { outcome: 'failed', reason: `the device reported: ${words}`, failedStep: step, updateResult: result, version: null };
  }

  #aborted(step: DeviceStep, reason: string): RunEnd {
    return { outcome: 'aborted', reason, failedStep: step, updateResult: this.#status.result ?? null, version: null };
  }

  /** Cancelled: a device still downloading is reset (best effort); one installing goes on by itself. */
  async #cancelled(step: DeviceStep): Promise<RunEnd> {
    if (step === 'downloading' || step === 'preparing') {
      // A device that is not registered is not told: the reset would only wait in its queue.
      if (await this.#context.registrationOf(this.#endpoint)) {
        const request = this.#mode === 'push' ? { operation: 'write' as const, path: '/5/0/0', value: new Uint8Array(0), format: 'opaque' } : { operation: 'write' as const, path: '/5/0/1', value: '' };
        await this.#context.perform(this.#endpoint, { ...request, timeoutMs: Math.min(this.#job.options.stepTimeoutMs, 10_000) }).catch(() => undefined);
      }
      return this.#aborted(step, 'cancelled');
    }
    return this.#aborted(step, 'cancelled while the device was installing: its outcome is not followed');
  }
}

/** Update Result 2–11 other than success: the device gave up. */
function isFailure(result: number | undefined): boolean {
  return result !== undefined && result > 1;
}

/** Ends a run from inside a wait. */
class StepEnd extends Error {
  constructor(readonly end: RunEnd) {
    super(end.reason ?? end.outcome);
  }
}
