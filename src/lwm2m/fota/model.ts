import type { Page, PageRequest } from '../../domain/pagination.js';

/**
 * Firmware over the air (FOTA) through the LwM2M Firmware Update object (object 5, OMA LwM2M Core 1.1 appendix
 * E.6): jobs, the devices in them, and what is stored of both so a restart takes them up again (docs/fota.md).
 */

/** State (/5/0/3). */
export const FIRMWARE_STATE = { idle: 0, downloading: 1, downloaded: 2, updating: 3 } as const;

/** Update Result (/5/0/5), with the words of the object definition for events and the API. */
export const UPDATE_RESULTS: Readonly<Record<number, string>> = {
  0: 'initial',
  1: 'success',
  2: 'not enough flash memory for the new firmware package',
  3: 'out of RAM during downloading',
  4: 'connection lost during downloading',
  5: 'integrity check failure',
  6: 'unsupported package type',
  7: 'invalid URI',
  8: 'firmware update failed',
  9: 'unsupported protocol',
  10: 'firmware update cancelled',
  11: 'deferred',
};

/** Firmware Update Protocol Support (/5/0/8) values by URI scheme. */
export const PROTOCOL_BY_SCHEME = { coap: 0, coaps: 1, http: 2, https: 3 } as const;
export type PullScheme = keyof typeof PROTOCOL_BY_SCHEME;

/** How the package reaches the device: written to /5/0/0 (push), fetched by the device from /5/0/1 (pull), or chosen from /5/0/9. */
export type FotaMode = 'push' | 'pull' | 'auto';

export interface FotaOptions {
  readonly mode: FotaMode;
  /** Pull: the file's name is appended to the download URL (`…/download/<token>/<name>`). */
  readonly appendFileName: boolean;
  /** Pull: the port is written into the URL even when it is the scheme's default. */
  readonly includePortInUrl: boolean;
  /** Pull: the URL's scheme; default the first of coap, coaps, http the device supports (/5/0/8). */
  readonly protocol: PullScheme | undefined;
  /** How long each step (reset, download, update) may take, ms. */
  readonly stepTimeoutMs: number;
}

/** Which of an account's endpoints a campaign updates (resolved when the job is created). */
export interface FotaSelector {
  /** Endpoint ids or `k.<key>`s. */
  readonly endpoints?: string[] | undefined;
  /** Each `name` or `name:value` must be among the endpoint's tags. */
  readonly tags?: string[] | undefined;
  readonly serviceId?: string | undefined;
  /** Keys starting with this. */
  readonly keyPrefix?: string | undefined;
}

export type JobState = 'running' | 'finished' | 'cancelled';

/** Where one device is. `pending`: not started yet (the campaign's concurrency or rate holds it back). */
export type DeviceStep = 'pending' | 'preparing' | 'downloading' | 'updating' | 'done';

/** How one device's FOTA ended. `aborted`: it did not run to the device's own answer (cancelled, timed out, gone). */
export type DeviceOutcome = 'success' | 'failed' | 'aborted';

export interface FotaJob {
  readonly id: string;
  readonly accountId: string;
  readonly file: { readonly name: string; readonly sha256: string; readonly size: number; readonly version: string | null };
  readonly options: FotaOptions;
  readonly selector: FotaSelector;
  /** Devices updated at once. */
  readonly concurrency: number;
  /** Devices started per minute at most; null: no limit. */
  readonly ratePerMinute: number | null;
  readonly state: JobState;
  readonly createdBy: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly finishedAt: string | null;
}

export interface FotaDevice {
  readonly jobId: string;
  readonly accountId: string;
  readonly endpointId: string;
  readonly step: DeviceStep;
  readonly outcome: DeviceOutcome | null;
  /** The mode used (push or pull) once chosen. */
  readonly mode: 'push' | 'pull' | null;
  /** The last Update Result the device reported. */
  readonly updateResult: number | null;
  /** Why it failed or was aborted, in words; the step it was at is `failedStep`. */
  readonly reason: string | null;
  readonly failedStep: DeviceStep | null;
  /** Firmware Version (/3/0/3) before and after. */
  readonly previousVersion: string | null;
  readonly version: string | null;
  readonly startedAt: string | null;
  readonly finishedAt: string | null;
  readonly updatedAt: string;
}

export interface DeviceCounts {
  readonly total: number;
  readonly pending: number;
  readonly running: number;
  readonly success: number;
  readonly failed: number;
  readonly aborted: number;
}

/** What is kept of jobs and their devices. Every read names the account; a job of another account is not found. */
export interface FotaStore {
  /** `node`: cluster mode, the node that drives the job. */
  insertJob(job: FotaJob, endpointIds: readonly string[], node?: string): Promise<void>;
  job(accountId: string, id: string): Promise<FotaJob | undefined>;
  jobs(accountId: string, page: PageRequest): Promise<Page<FotaJob>>;
  /** Jobs still running, of every account (taken up at start); with `node`, those that node drives (cluster mode). */
  runningJobs(node?: string): Promise<FotaJob[]>;
  /** Cluster mode: the running jobs `lost` drove (it died; null: made in one process) become `node`'s, each once whichever node asks. */
  takeJobsOf(lost: string | null, node: string): Promise<FotaJob[]>;
  setJobState(id: string, state: JobState, at: string): Promise<void>;
  counts(jobId: string): Promise<DeviceCounts>;
  devices(accountId: string, jobId: string, page: PageRequest, step?: DeviceStep): Promise<Page<FotaDevice>>;
  /** Devices of the job not done, pending ones last, in the order they were added. */
  unfinished(jobId: string): Promise<FotaDevice[]>;
  /** The device's latest FOTA (the running one first). */
  latestFor(accountId: string, endpointId: string): Promise<FotaDevice | undefined>;
  /** Whether the endpoint is in a job not done (one FOTA per device at a time). */
  busy(endpointIds: readonly string[]): Promise<Set<string>>;
  updateDevice(jobId: string, endpointId: string, change: Partial<Omit<FotaDevice, 'jobId' | 'accountId' | 'endpointId' | 'outcome'>>): Promise<void>;
  /** Ends the device's FOTA once: false when it had ended already (so its event is sent exactly once). */
  finishDevice(jobId: string, endpointId: string, end: { outcome: DeviceOutcome; reason: string | null; failedStep: DeviceStep | null; updateResult: number | null; version: string | null; at: string }): Promise<boolean>;
}
