/**
 * Times as the API shows them (ISO 8601 text) and as the store keeps them (ms). Events and execution records
 * are stamped many to the millisecond under load, and formatting or parsing a date costs about as much as a
 * row insert: the last conversion each way is kept and reused.
 */
let lastMs = Number.NaN;
let lastIso = '';
let parsedIso = '';
let parsedMs = Number.NaN;

export function isoTime(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}

/** NaN for text that is not a date, as `Date.parse` gives. */
export function timeMs(iso: string): number {
  if (iso !== parsedIso) {
    parsedMs = Date.parse(iso);
    parsedIso = iso;
  }
  return parsedMs;
}

export const nowIso = (): string => isoTime(Date.now());
