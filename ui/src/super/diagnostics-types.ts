import type { ApiData } from '../api/client';

export type EventsView = ApiData<'/super/events'>;
export type TriggersView = ApiData<'/super/triggers'>;
export type DevicesView = ApiData<'/super/devices'>;
export type StorageView = ApiData<'/super/storage'>;

const NUMBER = new Intl.NumberFormat('en');

/** A count as the diagnostics show it: "12,345", or "unknown" for null. */
export function count(value: number | null): string {
  return value === null ? 'unknown' : NUMBER.format(value);
}

/** A duration in ms as "850 ms", "12.5 s", "3.2 min". */
export function duration(ms: number | null): string {
  if (ms === null) return 'none';
  if (ms < 1000) return `${NUMBER.format(Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

/** Bytes as "512 B", "3.4 MiB". */
export function bytes(value: number | null): string {
  if (value === null) return 'unknown';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let size = value;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${size.toFixed(1)} ${units[unit]}`;
}
