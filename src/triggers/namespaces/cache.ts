import { numberArg, ScriptArgumentError, stringArg, type Namespace } from './namespace.js';

function ttl(args: unknown[], index: number): number | undefined {
  return args[index] === undefined || args[index] === null ? undefined : numberArg(args, index, 'ttl');
}

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new ScriptArgumentError('cache.set stores strings (and numbers, booleans); use set2 for objects');
}

/** `cache.*`: a key/value cache private to the account; entries live at most 86400 s (the default). */
export const cacheNamespace: Namespace = {
  name: 'cache',
  functions: {
    /** cache.set(key, value, ttlSeconds?) stores a string → true. */
    set: async (context, args) => {
      await context.cache.set(context.scope.accountId, stringArg(args, 0, 'key'), text(args[1]), ttl(args, 2));
      return true;
    },
    /** cache.get(key) → the string, or null. */
    get: (context, args) => context.cache.get(context.scope.accountId, stringArg(args, 0, 'key')),
    /** cache.set2(key, value, ttlSeconds?) stores any JSON value → true. */
    set2: async (context, args) => {
      await context.cache.set(context.scope.accountId, stringArg(args, 0, 'key'), JSON.stringify(args[1] ?? null), ttl(args, 2));
      return true;
    },
    /** cache.get2(key) → the value stored with set2, or null. */
    get2: async (context, args) => {
      const stored = await context.cache.get(context.scope.accountId, stringArg(args, 0, 'key'));
      if (stored === null) return null;
      try {
        return JSON.parse(stored) as unknown;
      } catch {
        return stored;
      }
    },
    /** cache.incr(key, by = 1, ttlSeconds?) adds atomically → the new number. */
    incr: (context, args) => context.cache.incr(context.scope.accountId, stringArg(args, 0, 'key'), numberArg(args, 1, 'by', 1), ttl(args, 2)),
    /** cache.delete(key) → true when there was an entry. */
    delete: (context, args) => context.cache.delete(context.scope.accountId, stringArg(args, 0, 'key')),
  },
};
