import { takeToken, type TokenBucket } from '../domain/rate-limit.js';
import { NO_LIMITS, type AccountLimitValues } from './model.js';

const MINUTE_MS = 60_000;

/** What the limits refused since the start of this process, per account. */
export interface LimitUsage {
  /** Device messages dropped over `eventsPerSecond`. */
  readonly droppedDeviceMessages: number;
  /** `POST /events` answered 429 over `eventsPerSecond`. */
  readonly refusedApiEvents: number;
  /** Trigger runs skipped over `scriptCpuMsPerMinute`. */
  readonly skippedScriptRuns: number;
  /** Script time used in the current minute (ms). */
  readonly scriptCpuMsThisMinute: number;
}

interface Counters {
  droppedDeviceMessages: number;
  refusedApiEvents: number;
  skippedScriptRuns: number;
}

interface CpuMinute {
  minute: number;
  usedMs: number;
  /** The account's log was told in this minute that runs are skipped. */
  told: boolean;
}

/**
 * Per-account limits a Super-Admin sets, held in memory (loaded at start, changed by `PUT /super/accounts/{id}/limits`)
 * and checked on hot paths with one map look-up: accounts without limits cost nothing more. Events per second are a
 * token bucket (bursts of up to one second's worth); script time is summed per wall-clock minute from what each run
 * took (the worker reports a run's duration, its isolate's CPU time and host calls).
 */
export class AccountLimits {
  readonly #limits = new Map<string, AccountLimitValues>();
  readonly #buckets = new Map<string, TokenBucket>();
  readonly #cpu = new Map<string, CpuMinute>();
  readonly #counters = new Map<string, Counters>();

  get(accountId: string): AccountLimitValues {
    return this.#limits.get(accountId) ?? NO_LIMITS;
  }

  set(accountId: string, limits: AccountLimitValues): void {
    this.#buckets.delete(accountId);
    if (limits.maxEndpoints === null && limits.eventsPerSecond === null && limits.scriptCpuMsPerMinute === null) this.#limits.delete(accountId);
    else this.#limits.set(accountId, limits);
  }

  /** True when the account may add `count` events now (and they are counted); false over its rate. */
  admitEvents(accountId: string, count = 1, now = Date.now()): boolean {
    const rate = this.#limits.get(accountId)?.eventsPerSecond;
    if (rate === undefined || rate === null) return true;
    let bucket = this.#buckets.get(accountId);
    if (!bucket) this.#buckets.set(accountId, (bucket = { tokens: rate, refilledAt: now }));
    for (let taken = 0; taken < count; taken++) {
      if (takeToken(bucket, { rate, burst: rate }, now) > 0) return false;
    }
    return true;
  }

  /** A device message was dropped, or an API event refused, over the rate. */
  noteRefused(accountId: string, what: 'device' | 'api'): void {
    const counters = this.#countersOf(accountId);
    if (what === 'device') counters.droppedDeviceMessages++;
    else counters.refusedApiEvents++;
  }

  /**
   * Whether a trigger of the account may run now: `run`, or `skip` once the account used its script time of the
   * current minute (`skip-first` the first time in that minute, so the caller logs it once).
   */
  scriptRun(accountId: string, now = Date.now()): 'run' | 'skip' | 'skip-first' {
    const budget = this.#limits.get(accountId)?.scriptCpuMsPerMinute;
    if (budget === undefined || budget === null) return 'run';
    const used = this.#minuteOf(accountId, now);
    if (used.usedMs < budget) return 'run';
    this.#countersOf(accountId).skippedScriptRuns++;
    if (used.told) return 'skip';
    used.told = true;
    return 'skip-first';
  }

  /** A run of the account took `ms`. */
  noteScriptTime(accountId: string, ms: number, now = Date.now()): void {
    if (this.#limits.get(accountId)?.scriptCpuMsPerMinute == null) return;
    this.#minuteOf(accountId, now).usedMs += ms;
  }

  usage(accountId: string, now = Date.now()): LimitUsage {
    const counters = this.#counters.get(accountId);
    const cpu = this.#cpu.get(accountId);
    return {
      droppedDeviceMessages: counters?.droppedDeviceMessages ?? 0,
      refusedApiEvents: counters?.refusedApiEvents ?? 0,
      skippedScriptRuns: counters?.skippedScriptRuns ?? 0,
      scriptCpuMsThisMinute: cpu && cpu.minute === Math.floor(now / MINUTE_MS) ? Math.round(cpu.usedMs) : 0,
    };
  }

  #minuteOf(accountId: string, now: number): CpuMinute {
    const minute = Math.floor(now / MINUTE_MS);
    let used = this.#cpu.get(accountId);
    if (!used || used.minute !== minute) this.#cpu.set(accountId, (used = { minute, usedMs: 0, told: false }));
    return used;
  }

  #countersOf(accountId: string): Counters {
    let counters = this.#counters.get(accountId);
    if (!counters) this.#counters.set(accountId, (counters = { droppedDeviceMessages: 0, refusedApiEvents: 0, skippedScriptRuns: 0 }));
    return counters;
  }
}
