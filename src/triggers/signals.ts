/**
 * `trigger.wait` / `trigger.signal`: one run waits until another run of the same account signals the same
 * name. A signal nobody waits for is kept (the latest value, for `keepMs`) and consumed by the next wait.
 * An interface: in a cluster the runs may be on different nodes (src/store/redis-signals.ts).
 */
export interface Signals {
  /** Wakes every run waiting on the name with `value`; if none waits, keeps it for the next wait → how many woke. */
  signal(accountId: string, name: string, value: unknown): number | Promise<number>;
  wait(accountId: string, name: string, timeoutMs: number): Promise<unknown>;
  /** Forgets a kept signal (waiting runs keep waiting) → whether there was one. */
  reset(accountId: string, name: string): boolean | Promise<boolean>;
}

/** How long a signal nobody waited for is kept by default. */
export const SIGNAL_KEEP_MS = 60_000;

/** Signals between runs of this process. */
export class LocalSignals implements Signals {
  readonly #waiting = new Map<string, ((value: unknown) => void)[]>();
  readonly #pending = new Map<string, { value: unknown; expires: number }>();
  readonly #keepMs: number;

  constructor(options: { keepMs: number } = { keepMs: SIGNAL_KEEP_MS }) {
    this.#keepMs = options.keepMs;
  }

  signal(accountId: string, name: string, value: unknown): number {
    const id = slot(accountId, name);
    const waiters = this.#waiting.get(id) ?? [];
    this.#waiting.delete(id);
    if (waiters.length === 0) this.#pending.set(id, { value, expires: Date.now() + this.#keepMs });
    for (const wake of waiters) wake(value);
    return waiters.length;
  }

  wait(accountId: string, name: string, timeoutMs: number): Promise<unknown> {
    const id = slot(accountId, name);
    const kept = this.#pending.get(id);
    this.#pending.delete(id);
    if (kept && kept.expires > Date.now()) return Promise.resolve(kept.value);
    return new Promise((resolve) => {
      const wake = (value: unknown) => {
        clearTimeout(timer);
        resolve(value);
      };
      const timer = setTimeout(() => {
        const list = this.#waiting.get(id)?.filter((w) => w !== wake) ?? [];
        if (list.length > 0) this.#waiting.set(id, list);
        else this.#waiting.delete(id);
        resolve(null);
      }, timeoutMs);
      this.#waiting.set(id, [...(this.#waiting.get(id) ?? []), wake]);
    });
  }

  reset(accountId: string, name: string): boolean {
    return this.#pending.delete(slot(accountId, name));
  }
}

function slot(accountId: string, name: string): string {
  return `${accountId}\u0000${name}`;
}
