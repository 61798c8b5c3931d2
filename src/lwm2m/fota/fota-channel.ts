import type { Page } from '../../domain/pagination.js';
import type { Scope } from '../../domain/scope.js';
import type { DeviceCounts, DeviceStep, FotaDevice, FotaJob, FotaMode, FotaSelector, PullScheme } from './model.js';

/** What `POST /fota/jobs` and `POST /endpoints/{ref}/fota` take (timeouts in seconds, as users write them). */
export interface FotaInput {
  readonly file: string;
  readonly mode?: FotaMode | undefined;
  readonly appendFileName?: boolean | undefined;
  readonly includePortInUrl?: boolean | undefined;
  readonly protocol?: PullScheme | undefined;
  /** Seconds each step may take. */
  readonly timeout?: number | undefined;
  readonly concurrency?: number | undefined;
  readonly ratePerMinute?: number | null | undefined;
}

export interface JobView extends FotaJob {
  readonly counts: DeviceCounts;
}

/**
 * What the API (`/fota/…`, `/endpoints/{ref}/fota`) and scripts (`lwm2m.firmwareUpdate`) reach through
 * `context.devices.fota`: FOTA jobs of the account (FotaService, fota-service.ts). Tenancy: `scope` owns them.
 */
export interface FotaChannel {
  /** A campaign over the endpoints `selector` picks. */
  create(scope: Scope, input: FotaInput, selector: FotaSelector): Promise<JobView>;
  /** `POST /endpoints/{ref}/fota`: a job of one device. */
  createFor(scope: Scope, ref: string, input: FotaInput): Promise<JobView>;
  job(scope: Scope, id: string): Promise<JobView>;
  jobs(scope: Scope, page: { offset?: number; limit?: number }): Promise<Page<JobView>>;
  devices(scope: Scope, id: string, page: { offset?: number; limit?: number; step?: DeviceStep }): Promise<Page<FotaDevice>>;
  /** The endpoint's current or last FOTA, with its job. */
  latestFor(scope: Scope, ref: string): Promise<{ device: FotaDevice; job: JobView }>;
  /** Cancels a running job: devices not started end at once, those under way as soon as they can. */
  cancel(scope: Scope, id: string): Promise<JobView>;
}
