import type { ApiData } from '../api/client';
import type { paths } from '../api/schema';
import { href } from '../router/hash-location';

/** A campaign with its counts, as `GET /fota/jobs/{id}` answers it. */
export type FotaJob = ApiData<'/fota/jobs/{id}'>;
/** One device of a campaign: its step, outcome, Update Result and versions. */
export type FotaDevice = ApiData<'/fota/jobs/{id}/devices'>['items'][number];
export type FotaStep = FotaDevice['step'];
/** The body of `POST /fota/jobs`. */
export type FotaJobWrite = paths['/fota/jobs']['post']['requestBody']['content']['application/json'];

export const JOBS_PAGE_SIZE = 25;
export const DEVICES_PAGE_SIZE = 25;

export function fotaHref(offset: number): string {
  return href('/fota', { offset: offset === 0 ? undefined : offset });
}

/** The steps of a device, in order, for the devices filter. */
export const STEPS = ['pending', 'preparing', 'downloading', 'updating', 'done'] as const satisfies readonly FotaStep[];

// A step the API adds and this list lacks fails the typecheck here.
const everyStepListed: [Exclude<FotaStep, (typeof STEPS)[number]>] extends [never] ? true : false = true;
void everyStepListed;

/** Firmware Update Result `/5/0/5` (OMA LwM2M Core 1.1, E.6), as a device reports it. */
const UPDATE_RESULTS: Readonly<Record<number, string>> = {
  0: 'initial value',
  1: 'success',
  2: 'not enough flash memory',
  3: 'out of RAM',
  4: 'connection lost during download',
  5: 'integrity check failure',
  6: 'unsupported package type',
  7: 'invalid URI',
  8: 'firmware update failed',
  9: 'unsupported protocol',
  10: 'update cancelled',
};

export function updateResultText(result: number | null): string {
  if (result === null) return '';
  return `${result} ${UPDATE_RESULTS[result] ?? 'unknown'}`;
}

/** Devices that are done: success, failed and aborted. */
export function finished(job: FotaJob): number {
  return job.counts.success + job.counts.failed + job.counts.aborted;
}

/** How a campaign chose its devices, in a line. */
export function selectorText(job: FotaJob): string {
  const { endpoints, tags, serviceId, keyPrefix } = job.selector;
  const parts: string[] = [];
  if (endpoints !== undefined) parts.push(`${endpoints.length} endpoint${endpoints.length === 1 ? '' : 's'} listed`);
  if (tags !== undefined && tags.length > 0) parts.push(`tags ${tags.join(', ')}`);
  if (serviceId !== undefined) parts.push(`service ${serviceId}`);
  if (keyPrefix !== undefined) parts.push(`keys starting with ${keyPrefix}`);
  return parts.length === 0 ? 'every endpoint' : parts.join('; ');
}
