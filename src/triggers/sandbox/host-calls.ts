/**
 * Where a script's namespace calls are answered, and the time they count. A call goes to the service (over
 * the worker's pipe), to the worker itself (pure functions known to be cheap, local-calls.ts), or to a call
 * process (`sql` and every other worker-side function, call-pool.ts). isolated-vm pauses a run's time limit
 * while a host function runs, so 50 `sql` calls of 100 ms each went unseen by a limit of 1000 ms: the time
 * of calls answered by the worker and its call processes counts in the run's limit here.
 */
import type ivm from 'isolated-vm';
import { CallPool } from './call-pool.js';
import { callLocal, errorReply, isLocal, runsInline } from './local-calls.js';
import type { HostCall, HostReply, RunLimits } from './protocol.js';

/** What one run collects while it executes. */
export interface RunState {
  readonly accountId: string;
  readonly logs: string[];
  exitMessage: string | null;
  /** A run on the worker's thread called a namespace it cannot answer there: the attempt is void. */
  needsHost: boolean;
  /** `performance.now()` when the run began: a call it makes ends by its wall time. */
  readonly startedAt: number;
  /**
   * A run on an isolate thread: the isolate, and its wall clock (which runs while a task of the isolate
   * does, host calls included) when the run began on it, or at its first call when it waited behind another
   * run of the isolate (what it used before that is not counted).
   */
  clock: RunClock | undefined;
  /** Time it waited for others, not counted: for the service to answer, for a call process to be free (ms). */
  waitedMs: number;
  /** Time its calls answered here took (in a call process, or inline), measured around each (ms). */
  callsMs: number;
  /** It made a call the worker answers (itself or in a call process): its time is checked at its end too. */
  calledLocal: boolean;
  /** It used up its time in a call: the run fails with `timeout`, and every call after that at once. */
  spent: boolean;
}

/** Where a run on an isolate thread started on its isolate's clocks (both undefined until it starts, see RunState). */
export interface RunClock {
  readonly isolate: ivm.Isolate;
  /** The isolate's wall time, and its CPU time (which stops during host calls). */
  from: { readonly wall: bigint; readonly cpu: bigint } | undefined;
}

/** A clock reading of the isolate for RunClock.from. */
export function clockReading(isolate: ivm.Isolate): { wall: bigint; cpu: bigint } {
  return { wall: isolate.wallTime, cpu: isolate.cpuTime };
}

export function newRunState(accountId: string): RunState {
  return { accountId, logs: [], exitMessage: null, needsHost: false, startedAt: performance.now(), clock: undefined, waitedMs: 0, callsMs: 0, calledLocal: false, spent: false };
}

export class HostCalls {
  /** Runs under way, by run id. */
  readonly runs = new Map<number, RunState>();
  readonly #limits: RunLimits;
  readonly #send: (call: HostCall) => void;
  /** How long the calls answered here in one attempt on the worker's thread may take in all (ms). */
  readonly #attemptMs: number;
  readonly #pool = new CallPool();
  /** Calls the service is answering: their run, and when they were made (the wait is not counted). */
  readonly #pending = new Map<number, { resolve: (reply: string) => void; runId: number; state: RunState; sent: number }>();
  #nextCallId = 1;
  /** Time the calls answered here took in the attempt under way on the worker's thread. */
  #attemptSpent = 0;

  constructor(limits: RunLimits, attemptMs: number, send: (call: HostCall) => void) {
    this.#limits = limits;
    this.#attemptMs = Math.min(attemptMs, limits.timeoutMs);
    this.#send = send;
  }

  /** An attempt on the worker's thread (one run or a batch) starts. */
  beginAttempt(): void {
    this.#attemptSpent = 0;
  }

  /** Time the calls answered here took in the last attempt on the worker's thread (ms): it held the thread too. */
  get attemptCallsMs(): number {
    return this.#attemptSpent;
  }

  /**
   * A call of a run on the worker's thread: answered at once when it is cheap (and the attempt's calls have
   * not taken its time yet), else the attempt is void and the run starts again on an isolate thread (see
   * worker.ts, `run`). That is safe because nothing else is done for an attempt: `sql` writes, so it never
   * runs here (a write must not happen twice).
   */
  sync(runId: number, namespace: string, fn: string, argsJson: string): string {
    const state = this.runs.get(runId);
    if (state && this.#attemptSpent < this.#attemptMs && runsInline(namespace, fn, argsJson)) {
      const started = performance.now();
      const reply = callLocal(namespace, fn, argsJson, state.accountId)!;
      this.#attemptSpent += performance.now() - started;
      return reply;
    }
    if (state) state.needsHost = true;
    return errorReply('needs the service (the run starts again)');
  }

  /** A call of a run on an isolate thread (`applySyncPromise`: the script waits for the answer). */
  call(runId: number, namespace: string, fn: string, argsJson: string): Promise<string> {
    const state = this.runs.get(runId);
    if (!state) return Promise.resolve(errorReply('the run ended'));
    const clock = state.clock;
    if (clock && clock.from === undefined && !clock.isolate.isDisposed) clock.from = clockReading(clock.isolate);
    const entered = performance.now();
    if (!isLocal(namespace, fn)) return this.#toService(runId, state, namespace, fn, argsJson, entered);
    state.calledLocal = true;
    const left = state.spent ? 0 : this.#limits.timeoutMs - this.#usedMs(state);
    if (left <= 0) {
      state.spent = true;
      return Promise.resolve(errorReply(this.spentError()));
    }
    if (runsInline(namespace, fn, argsJson)) {
      const reply = callLocal(namespace, fn, argsJson, state.accountId)!;
      state.callsMs += performance.now() - entered;
      return Promise.resolve(reply);
    }
    const wallLeft = this.#limits.wallTimeoutMs - (entered - state.startedAt);
    return this.#pool.call(runId, state.accountId, namespace, fn, argsJson, Math.min(left, wallLeft)).then((outcome) => {
      // Only the time a process was at it counts: not the wait for a process other accounts held.
      state.waitedMs += Math.max(0, performance.now() - entered - outcome.ms);
      state.callsMs += outcome.ms;
      if (!outcome.timedOut) return outcome.reply;
      state.spent = true;
      return errorReply(this.spentError());
    });
  }

  /** The service answered a call. */
  reply(message: HostReply): void {
    const pending = this.#pending.get(message.callId);
    if (!pending) return;
    this.#pending.delete(message.callId);
    pending.state.waitedMs += performance.now() - pending.sent;
    // The script side parses `{value}` or `{error}`; the value is already JSON text, so splice it in.
    pending.resolve(message.error !== undefined ? errorReply(message.error) : message.json === undefined ? '{}' : `{"value":${message.json}}`);
  }

  /**
   * Whether the run went past its time limit with its calls counted: known at its end too, for the time it
   * used after its last call. Runs that made no such call have only isolated-vm's limit, which held.
   */
  overLimit(state: RunState): boolean {
    if (!state.spent && state.calledLocal && this.#usedMs(state) > this.#limits.timeoutMs) state.spent = true;
    return state.spent;
  }

  spentError(): string {
    return `timeout: the run used more than ${this.#limits.timeoutMs} ms of CPU time (its script's and its sql and namespace calls')`;
  }

  /** The run is over: calls of it still waiting are answered so. */
  end(runId: number): void {
    this.runs.delete(runId);
    for (const [callId, pending] of this.#pending) {
      if (pending.runId === runId) {
        this.#pending.delete(callId);
        pending.resolve(errorReply('the run ended'));
      }
    }
    this.#pool.cancel(runId);
  }

  #toService(runId: number, state: RunState, namespace: string, fn: string, argsJson: string, sent: number): Promise<string> {
    const callId = this.#nextCallId++;
    return new Promise<string>((resolve) => {
      this.#pending.set(callId, { resolve, runId, state, sent });
      this.#send({ kind: 'call', runId, callId, namespace, fn, argsJson });
    });
  }

  /**
   * The time the run used so far, the larger of two counts. (1) The isolate's wall clock while it ran (as
   * isolated-vm's own limit counts it, with the script's host calls and their hand-overs, which isolated-vm's
   * does not), less its waits. (2) The isolate's CPU time (paused during host calls) plus the time of its calls
   * answered here. (1) is the truer one, but isolated-vm starts an isolate's wall clock only for the task that
   * takes it while none runs: a run whose task queued behind another task of the isolate is not on it at all
   * (seen under load: 50 queries of 290 ms counted as nothing). (2) misses only the hand-overs.
   * Only runs on an isolate thread are counted so; an attempt on the worker's thread has its own bounds.
   */
  #usedMs(state: RunState): number {
    const clock = state.clock;
    if (!clock || clock.isolate.isDisposed || clock.from === undefined) return 0;
    const now = clockReading(clock.isolate);
    const byWall = Number(now.wall - clock.from.wall) / 1e6 - state.waitedMs;
    const byCpu = Number(now.cpu - clock.from.cpu) / 1e6 + state.callsMs;
    return Math.max(byWall, byCpu);
  }
}
