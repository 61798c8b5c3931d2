/** How long a queued item lives (SPEC "Limits": trigger queue ttl). */
export const QUEUE_TTL_SECONDS = 604_800;

/** Named FIFO queues private to an account, kept in the database: `queue.put/get/flush` in scripts. */
export interface ScriptQueueStore {
  /** Appends a value; returns how many unexpired items the queue holds now. */
  put(accountId: string, name: string, value: unknown, expiresAt: number): Promise<number>;
  /** Removes and returns the oldest unexpired value, or undefined when the queue is empty. */
  take(accountId: string, name: string, now: number): Promise<{ value: unknown } | undefined>;
  /** Removes and returns every unexpired value, oldest first. */
  takeAll(accountId: string, name: string, now: number): Promise<unknown[]>;
}
