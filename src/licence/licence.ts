import type { KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { ConfigError, ENV_NAMES } from '../config.js';
import { AppError } from '../errors.js';
import { verifyLicence, verifySignature, type LicenceLimits, type LicencePayload } from './licence-text.js';
import type { LicenceRecord, LicenceStore } from './model.js';

export type LicenceState = 'off' | 'grace' | 'valid' | 'expired';

/** The gauge `iotbridge_licence_state` takes these values. */
export const LICENCE_STATE_CODES: Readonly<Record<LicenceState, number>> = { off: 0, valid: 1, grace: 2, expired: 3 };

/** How long an installation runs without a valid licence after licensing is first switched on. */
export const GRACE_MS = 7 * 24 * 60 * 60 * 1000;

/** The response header that tells every API client the licence is in grace or expired. */
export const LICENCE_HEADER = 'x-iotbridge-licence';

/** How often the record is read again, so that a licence installed on another node is seen here too. */
const REFRESH_MS = 60_000;

export interface LicenceStatus {
  readonly required: boolean;
  readonly state: LicenceState;
  /** In grace and once expired: when the grace period ends or ended. */
  readonly graceEndsAt?: string;
  /** Why the state is not `valid` (grace or expired). */
  readonly reason?: string;
  /** The installed licence, its signature verified (also once it has expired). */
  readonly licence?: LicencePayload;
}

export interface LicenceOptions {
  /** `IOTBRIDGE_LICENSING`: false (the open-source default) makes the state `off` and changes nothing. */
  readonly required: boolean;
  readonly store: LicenceStore;
  /** Keys a licence may be signed with (keys.ts: the vendor's and the operator's additions). */
  readonly keys: readonly KeyObject[];
  /** Epoch ms; tests move it instead of waiting. */
  readonly clock?: (() => number) | undefined;
  readonly logger?: Logger | undefined;
}

/**
 * The private-instance licence (docs/admin.md "Licence"): the installed licence, the grace period, and the
 * state they give at the clock's time. Triggers run while the state is not `expired` (TriggerEngine's gate);
 * the API shows the state in `GET /licence` and in a header on every response.
 */
export class Licence {
  readonly required: boolean;
  readonly #store: LicenceStore;
  readonly #keys: readonly KeyObject[];
  readonly #clock: () => number;
  readonly #logger: Logger | undefined;
  #graceEndsMs = 0;
  #text: string | null = null;
  #installed: LicencePayload | undefined;
  #expiresMs = Number.NEGATIVE_INFINITY;
  /** Why the stored text is not believed (it no longer verifies with the trusted keys). */
  #storedProblem: string | undefined;
  #timer: NodeJS.Timeout | undefined;
  #lastState: LicenceState | undefined;

  constructor(options: LicenceOptions) {
    this.required = options.required;
    this.#store = options.store;
    this.#keys = options.keys;
    this.#clock = options.clock ?? Date.now;
    this.#logger = options.logger;
  }

  /** Starts grace on the first start with licensing on, loads the installed licence, then installs `file`'s. */
  async start(file?: string): Promise<void> {
    if (!this.required) return;
    this.#load(await this.#store.startGrace(this.#clock()));
    if (file !== undefined) await this.#installFile(file);
    this.#noteState();
    this.#timer = setInterval(() => void this.refresh().catch((error: unknown) => this.#logger?.error({ err: error }, 'could not read the licence')), REFRESH_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Reads the record again (a licence installed through another node). */
  async refresh(): Promise<void> {
    const record = await this.#store.read();
    if (record) this.#load(record);
    this.#noteState();
  }

  /** Whether triggers run: checked for every event, so no allocation. */
  get processing(): boolean {
    if (!this.required) return true;
    const now = this.#clock();
    return this.#expiresMs > now || now < this.#graceEndsMs;
  }

  status(): LicenceStatus {
    if (!this.required) return { required: false, state: 'off' };
    const now = this.#clock();
    const licence = this.#installed === undefined ? {} : { licence: this.#installed };
    if (this.#expiresMs > now) return { required: true, state: 'valid', ...licence };
    const graceEndsAt = new Date(this.#graceEndsMs).toISOString();
    const missing = this.#installed
      ? `the installed licence expired at ${new Date(this.#expiresMs).toISOString()}`
      : (this.#storedProblem ?? 'no licence is installed');
    if (now < this.#graceEndsMs) return { required: true, state: 'grace', graceEndsAt, reason: `${missing}; triggers run until the grace period ends at ${graceEndsAt}`, ...licence };
    return { required: true, state: 'expired', graceEndsAt, reason: `${missing} and the grace period ended at ${graceEndsAt}: events are stored but triggers do not run until a valid licence is installed`, ...licence };
  }

  /** The `x-iotbridge-licence` header value, or undefined while the licence is valid or licensing is off. */
  header(): string | undefined {
    const { state, graceEndsAt } = this.status();
    if (state === 'grace') return `grace; ends=${graceEndsAt}`;
    return state === 'expired' ? 'expired' : undefined;
  }

  /** The limits of a valid licence; none in grace, once expired, or with licensing off. */
  limits(): LicenceLimits | undefined {
    return this.required && this.#expiresMs > this.#clock() ? this.#installed?.limits : undefined;
  }

  /** Verifies and stores a licence; 400 `IOTB_LICENCE_INVALID` with the reason when it is not good now. */
  async install(text: string): Promise<LicenceStatus> {
    if (!this.required) throw new AppError('IOTB_LICENCE_OFF');
    const now = this.#clock();
    const verified = verifyLicence(text, this.#keys, now);
    if (!verified.ok) throw new AppError('IOTB_LICENCE_INVALID', `The licence is not valid: ${verified.reason}`, { reason: verified.reason });
    const trimmed = text.trim();
    await this.#store.install(trimmed, now);
    this.#setInstalled(trimmed, verified.payload);
    this.#logger?.info({ licenceId: verified.payload.id, licensee: verified.payload.licensee, expiresAt: verified.payload.expiresAt }, 'licence installed');
    this.#noteState();
    return this.status();
  }

  /** `IOTBRIDGE_LICENCE_FILE`: installed unless the stored licence is good for as long or longer. */
  async #installFile(file: string): Promise<void> {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      throw new ConfigError(`${ENV_NAMES.licenceFile}: cannot read ${file}: ${(error as Error).message}`);
    }
    const verified = verifyLicence(text, this.#keys, this.#clock());
    if (!verified.ok) {
      this.#logger?.error({ file, reason: verified.reason }, `the licence in ${ENV_NAMES.licenceFile} is not installed: ${verified.reason}`);
      return;
    }
    if (text.trim() === this.#text || this.#expiresMs >= Date.parse(verified.payload.expiresAt)) return;
    await this.install(text);
  }

  #load(record: LicenceRecord): void {
    this.#graceEndsMs = Number(record.graceStartedAt) + GRACE_MS;
    if (record.licence === this.#text) return;
    const verified = record.licence === null ? undefined : verifySignature(record.licence, this.#keys);
    this.#storedProblem = verified && !verified.ok ? `the stored licence is not believed (${verified.reason})` : undefined;
    this.#setInstalled(record.licence, verified?.ok ? verified.payload : undefined);
  }

  #setInstalled(text: string | null, payload: LicencePayload | undefined): void {
    this.#text = text;
    this.#installed = payload;
    this.#expiresMs = payload ? Date.parse(payload.expiresAt) : Number.NEGATIVE_INFINITY;
    if (payload) this.#storedProblem = undefined;
  }

  /** Logs each change of state as it is noticed (at start, install and every refresh). */
  #noteState(): void {
    const { state, reason } = this.status();
    if (state === this.#lastState) return;
    this.#lastState = state;
    if (state === 'valid') this.#logger?.info({ licence: state }, 'licence valid');
    else this.#logger?.warn({ licence: state, reason }, `licence ${state}: ${reason ?? ''}`);
  }
}
