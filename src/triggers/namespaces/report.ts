import { AppError } from '../../errors.js';
import { timeMs } from '../../domain/time.js';
import { deviceCall, objectArg, ScriptArgumentError, stringArg, type Namespace } from './namespace.js';

/** A `from`/`to` of listEntries: an ISO date-time or epoch milliseconds. */
function instant(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  const ms = typeof value === 'number' ? value : typeof value === 'string' ? timeMs(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw new ScriptArgumentError(`${name} is an ISO date-time or epoch milliseconds`);
  return ms;
}

/** `report.*`: the account's reports (docs/reports-alerts.md). Failures reach the script as `IOTB_CODE: message`. */
export const reportNamespace: Namespace = {
  name: 'report',
  functions: {
    /**
     * report.publish(name, entry, {time}?) → {reportId, id, time}: appends the entry (an object of column values)
     * to the report, creating the report on its first entry; new keys become columns. Example:
     * `report.publish('daily-energy', {meter: event.endpointKey, kwh: event.data.kwh});`
     */
    publish: async (context, args) => {
      const name = stringArg(args, 0, 'name');
      const entry = objectArg(args, 1, 'entry');
      const options = (args[2] ?? {}) as { time?: unknown };
      const time = instant(options.time, 'time');
      return deviceCall(() => context.domain.reports.publish(context.scope, name, entry, time === undefined ? undefined : new Date(time).toISOString()));
    },
    /**
     * report.listEntries(name, {from, to, limit, next}?) → {items: [{id, time, data}], next}: entries in publication
     * order, at most `limit` (default 100, at most 1000); pass `next` back for the following page (null after the last).
     */
    listEntries: async (context, args) => {
      const name = stringArg(args, 0, 'name');
      const options = (args[1] ?? {}) as Record<string, unknown>;
      if (typeof options !== 'object' || options === null) throw new ScriptArgumentError('options must be an object');
      const limit = options.limit === undefined ? undefined : Number(options.limit);
      if (limit !== undefined && !(Number.isInteger(limit) && limit > 0)) throw new ScriptArgumentError('limit is a whole number ≥ 1');
      const next = options.next === undefined || options.next === null ? undefined : Number(options.next);
      if (next !== undefined && !Number.isInteger(next)) throw new ScriptArgumentError('next is the cursor a previous page gave');
      try {
        return await context.domain.reports.entries(context.scope, name, { from: instant(options.from, 'from'), to: instant(options.to, 'to'), limit, after: next });
      } catch (error) {
        if (error instanceof AppError && error.code === 'IOTB_REPORT_NOT_FOUND') return { items: [], next: null };
        throw error instanceof AppError ? new Error(`${error.code}: ${error.message}`) : error;
      }
    },
  },
};
