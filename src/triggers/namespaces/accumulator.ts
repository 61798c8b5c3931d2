import { clampTtl } from '../cache.js';
import { numberArg, ScriptArgumentError, stringArg, type Namespace } from './namespace.js';

const MAX_BUCKETS = 1440;

function seconds(args: unknown[], index: number, name: string): number {
  const value = numberArg(args, index, name);
  if (!Number.isInteger(value) || value < 1) throw new ScriptArgumentError(`${name} must be a whole number of seconds ≥ 1`);
  return value;
}

const slot = (key: string, interval: number, bucket: number) => `\u0001acc\u0001${key}\u0001${interval}\u0001${bucket}`;

/**
 * `accumulator.*`: sums in time buckets, on the account's cache (so bounded by its 86400 s maximum TTL).
 * inc adds into the bucket of size `interval` that holds now, kept for `window` seconds; get reads them back.
 */
export const accumulatorNamespace: Namespace = {
  name: 'accumulator',
  functions: {
    /** accumulator.inc(key, value, intervalSeconds, windowSeconds) → the current bucket's new sum. */
    inc: (context, args) => {
      const key = stringArg(args, 0, 'key');
      const value = numberArg(args, 1, 'value');
      const interval = seconds(args, 2, 'interval');
      const window = seconds(args, 3, 'window');
      if (window < interval) throw new ScriptArgumentError('window must be at least one interval');
      const bucket = Math.floor(Date.now() / 1000 / interval) * interval;
      return context.cache.incr(context.scope.accountId, slot(key, interval, bucket), value, clampTtl(window + interval));
    },
    /** accumulator.get(key, intervalSeconds, periodSeconds) → {total, buckets: [{start, value}]} for the last `period` seconds, oldest first. */
    get: async (context, args) => {
      const key = stringArg(args, 0, 'key');
      const interval = seconds(args, 1, 'interval');
      const period = seconds(args, 2, 'period');
      const current = Math.floor(Date.now() / 1000 / interval) * interval;
      const count = Math.min(Math.ceil(period / interval), MAX_BUCKETS);
      const buckets: { start: string; value: number }[] = [];
      for (let i = count - 1; i >= 0; i--) {
        const start = current - i * interval;
        const stored = await context.cache.get(context.scope.accountId, slot(key, interval, start));
        buckets.push({ start: new Date(start * 1000).toISOString(), value: stored === null ? 0 : Number(stored) });
      }
      return { total: buckets.reduce((sum, b) => sum + b.value, 0), buckets };
    },
  },
};
