/**
 * `trigger.wait` / `trigger.signal`: one run waits until another run of the same account signals the same
 * name. A signal nobody waits for is kept (the latest value, for `keepMs`) and consumed by the next wait.
 * In this process only; a cluster needs a shared implementation behind the same methods.
 */
export class Signals {
  readonly #waiting = new Map<string, ((value: unknown) => void)[]>();
  readonly #pending = new Map<string, { value: unknown; expires: number }>();
  readonly #keepMs: number;

  constructor(options: { keepMs: number } = { keepMs: 60_000 }) {
    this.#keepMs = options.keepMs;
  }

  /** Wakes every run waiting on the name with `value`; if none waits, keeps it for the next wait. Returns how many woke. */
  signal(accountId: string, name: string, value: unknown): number {
    const id = slot(accountId, name);
    const waiters = this.#waiting.get(id) ?? [];
    this.#waiting.delete(id);
    if (waiters.length === 0) this.#pending.set(id, { value, expires: Date.now() + this.#keepMs });
    for (const wake of waiters) wake(value);
    return waiters.length;
  }

  /** The signalled value, at once if one is kept, else when it comes; null after `timeoutMs`. */
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

  /** Forgets a kept signal (waiting runs keep waiting). */
  reset(accountId: string, name: string): boolean {
    return this.#pending.delete(slot(accountId, name));
  }
}

function slot(accountId: string, name: string): string {
  return `${accountId}\u0000${name}`;
}
