/**
 * A script worker process: runs trigger scripts in isolated-vm isolates, one isolate and one context per
 * account. The context is locked down once (every built-in frozen) and each trigger version is compiled
 * once into a function; a run calls that function with the event and the trigger's globals, and whatever a
 * run adds to the global object is removed after it, so runs share nothing. Namespace calls go to the
 * service over the worker's pipe (see wire.ts), or are answered by the worker and its call processes (see
 * host-calls.ts), and block the script until answered (`applySyncPromise`), so scripts read synchronously.
 * Started by WorkerPool with `--no-node-snapshot` (isolated-vm needs it on Node 20); if anything here dies,
 * the pool replaces it. The isolates, contexts and compiled scripts are kept in account-sandboxes.ts.
 */
import { Socket } from 'node:net';
import type ivm from 'isolated-vm';
import { LOCAL_NAMESPACES } from '../namespaces/local/index.js';
import { AccountSandboxes, type AccountSandbox } from './account-sandboxes.js';
import { clockReading, HostCalls, newRunState, type RunState } from './host-calls.js';
import { LIMITS_ENV, type FromWorker, type RunLimits, type RunResult, type ScriptDefinition, type ToWorker } from './protocol.js';
import { Outbox } from './outbox.js';
import { RunOrder } from './run-order.js';
import { LineReader, decodeToWorker, encodeFromWorker } from './wire.js';

/** The same for every run of this worker: set by the pool when it starts the process. */
const LIMITS = JSON.parse(process.env[LIMITS_ENV] ?? 'null') as RunLimits;

/** One run: its script as the service defined it (shared by its runs), and what changes from run to run. */
interface RunRequest {
  readonly definition: ScriptDefinition;
  readonly runId: number;
  readonly eventJson: string;
  readonly globalsJson: string;
  /** The run of its sequence it follows (see protocol.ts). */
  readonly after: number | undefined;
}

/** The service's namespace lists by id, with the worker-local namespaces added (JSON). */
const namespaceLists = new Map<number, string>();

function withLocal(namespacesJson: string): string {
  const names = JSON.parse(namespacesJson) as Record<string, string[]>;
  for (const [namespace, functions] of Object.entries(LOCAL_NAMESPACES)) names[namespace] = [...new Set([...(names[namespace] ?? []), ...Object.keys(functions)])];
  return JSON.stringify(names);
}

// The service's end of the pipe; when it closes, the service is gone and the worker goes too.
const pipe = new Socket({ fd: 3, readable: true, writable: true });
pipe.setEncoding('utf8');
pipe.on('close', () => exit(0));
pipe.on('error', () => exit(0));

const outbox = new Outbox<FromWorker>((messages) => {
  let text = '';
  for (const message of messages) text += encodeFromWorker(message);
  pipe.write(text);
});

function send(message: FromWorker): void {
  outbox.push(message);
}


/** Turns what the isolate threw into a message and the script line it points at. */
function describe(error: unknown, scriptName: string, isolate: ivm.Isolate, wallExpired: boolean): { error: string; line: number | null } {
  if (wallExpired) return { error: `wall time limit: the run took longer than ${LIMITS.wallTimeoutMs} ms (host calls included)`, line: null };
  if (isTimeout(error)) return { error: `timeout: the script used more than ${LIMITS.timeoutMs} ms of CPU time`, line: null };
  const message = error instanceof Error ? error.message : String(error);
  if (isolate.isDisposed && /disposed|memory limit/i.test(message)) return { error: `memory limit: the script used more than ${LIMITS.memoryMb} MiB`, line: null };
  return scriptError(message, error instanceof Error ? (error.stack ?? '') : '', scriptName);
}

/** What the script threw: its message, and the line of the script its stack points at. */
function scriptError(message: string, stack: string, scriptName: string): { error: string; line: number | null } {
  const at = new RegExp(`${scriptName.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:(\\d+)(?::\\d+)?`).exec(stack);
  return { error: message, line: at ? Number(at[1]) : null };
}

/**
 * A run is first tried on the worker's own thread (`applySync`): a short script then costs a few µs instead
 * of a hand-over to an isolate thread and back (~25–50 µs of CPU, most of a trivial trigger's cost). There
 * the script cannot wait for the service, so a namespace call the worker cannot answer itself makes the
 * attempt void: it has done nothing outside the isolate (its logs and exit message are dropped, what it
 * added to the global object is removed) and the run starts again on an isolate thread, as does every later
 * run of that script. Scripts whose runs take longer than SYNC_MAX_MS go to isolate threads as well, so the
 * worker's event loop (and other accounts' runs waiting for host answers) is never held for long.
 */
const SYNC_MAX_MS = 1;
/** How long a first attempt on the worker's thread may run before it is stopped and the run moves to an isolate thread. */
const SYNC_TIMEOUT_MS = 10;

/** Runs under way and their namespace calls; an attempt's calls answered here may take as long as its script. */
const hostCalls = new HostCalls(LIMITS, SYNC_TIMEOUT_MS, send);

/** isolated-vm's error for a run stopped at its CPU limit (not a script's own error that says "timed out"). */
function isTimeout(error: unknown): boolean {
  return error instanceof Error && error.message === 'Script execution timed out.';
}

/** Script ids (trigger id @ version) that run on isolate threads only. */
const threaded = new Set<string>();
/** The accounts' isolates and contexts, and the scripts compiled in them. */
const sandboxes = new AccountSandboxes(LIMITS, hostCalls, namespaceLists, threaded);
/** Per script run on the worker's thread: a moving average of the isolate CPU time of its runs (ms). */
const cpuAverage = new Map<string, number>();

function runThreaded(scriptId: string): void {
  if (threaded.size >= 10_000) threaded.clear(); // forgetting costs one more attempt per script
  threaded.add(scriptId);
  cpuAverage.delete(scriptId);
}

/**
 * A run on the worker's thread took `cpuMs` of its isolate's time and of its calls answered there. A script
 * whose runs average more than SYNC_MAX_MS goes to isolate threads. The isolate's clock runs on when the
 * machine is busy with other work, and a first run or a garbage collection is slow, so one run counts for a
 * sixteenth and at most SYNC_SAMPLE_MS: a script goes only when most of its runs are slow (a 100 ms one after
 * three runs).
 */
const SYNC_SAMPLE_MS = 8;
function noteCpu(scriptId: string, cpuMs: number): void {
  const average = ((cpuAverage.get(scriptId) ?? 0) * 15 + Math.min(cpuMs, SYNC_SAMPLE_MS)) / 16;
  if (average > SYNC_MAX_MS) {
    runThreaded(scriptId);
    return;
  }
  if (cpuAverage.size >= 10_000) cpuAverage.clear();
  cpuAverage.set(scriptId, average);
}

async function run(request: RunRequest): Promise<RunResult> {
  const started = process.hrtime.bigint();
  const state = newRunState(request.definition.accountId);
  const elapsed = () => Number(process.hrtime.bigint() - started) / 1e6;
  let wallExpired = false;
  let sandbox: AccountSandbox;
  /** The run no longer holds `sandbox` (between giving up a tainted one and getting a new one). */
  let released = false;
  try {
    sandbox = await sandboxes.sandboxFor(request.definition.accountId, request);
  } catch (error) {
    return sandboxFailure(String(error), elapsed());
  }
  hostCalls.runs.set(request.runId, state);
  const wallTimer = setTimeout(() => {
    wallExpired = true;
    // A script stuck in a host call or over its wall time: nothing else can stop it. The account's next run gets a new isolate.
    sandbox.isolate.dispose();
  }, LIMITS.wallTimeoutMs);
  /** The run's result: `thrown` holds what it threw, if it did. Its exit message first, then a limit it went over. */
  const finish = (thrown?: { error: unknown }): RunResult => {
    const durationMs = elapsed();
    if (state.exitMessage !== null) return { status: 'failed', error: state.exitMessage, line: null, logs: state.logs, durationMs };
    if (!wallExpired && hostCalls.overLimit(state)) return { status: 'failed', error: hostCalls.spentError(), line: null, logs: state.logs, durationMs };
    if (thrown) return { status: 'failed', ...describe(thrown.error, request.definition.scriptName, sandbox.isolate, wallExpired), logs: state.logs, durationMs };
    return { status: 'success', error: null, line: null, logs: state.logs, durationMs };
  };
  try {
    let fn = await sandboxes.compiled(sandbox, request);
    const { eventJson, globalsJson } = request;
    // Not while a run holds the isolate on its thread: it may be waiting for this thread (a host call, a log line).
    if (sandbox.threadedRuns === 0 && !threaded.has(request.definition.scriptId) && LIMITS.timeoutMs <= LIMITS.wallTimeoutMs) {
      let error: unknown;
      let threw = false;
      const cpuBefore = sandbox.isolate.cpuTime;
      // The attempt holds the worker's thread (and every other account's runs on it) for at most SYNC_TIMEOUT_MS.
      const attemptTimeout = Math.min(LIMITS.timeoutMs, SYNC_TIMEOUT_MS);
      hostCalls.beginAttempt();
      try {
        sandbox.runner.applySync(undefined, [request.runId, fn.derefInto(), eventJson, globalsJson, true], { timeout: attemptTimeout });
      } catch (thrown) {
        threw = true;
        error = thrown;
      }
      const timedOut = threw && isTimeout(error);
      // A run stopped mid-way skipped its clean-up: the account's next run gets a fresh context.
      if (timedOut) sandbox.tainted = true;
      const cutShort = timedOut && attemptTimeout < LIMITS.timeoutMs;
      if ((!state.needsHost && !cutShort) || sandbox.isolate.isDisposed) {
        // A run stopped at the CPU limit held this thread that long: the script's next runs do not.
        if (timedOut) runThreaded(request.definition.scriptId);
        else if (!sandbox.isolate.isDisposed) noteCpu(request.definition.scriptId, Number(sandbox.isolate.cpuTime - cpuBefore) / 1e6 + hostCalls.attemptCallsMs);
        return finish(threw ? { error } : undefined);
      }
      // It needs the service, or more time than an attempt gets: again from the start, on an isolate thread.
      runThreaded(request.definition.scriptId);
      state.logs.length = 0;
      state.exitMessage = null;
      state.needsHost = false;
      if (sandbox.tainted) {
        // The attempt left something on the global object: the run starts again in a clean context.
        sandboxes.release(request.definition.accountId, sandbox);
        released = true;
        sandbox = await sandboxes.sandboxFor(request.definition.accountId, request);
        released = false;
        fn = await sandboxes.compiled(sandbox, request);
      }
    }
    // Its time counts from here; behind another run of the isolate, from its first call (see RunState).
    state.clock = { isolate: sandbox.isolate, from: sandbox.threadedRuns === 0 ? clockReading(sandbox.isolate) : undefined };
    sandbox.threadedRuns++;
    try {
      await sandbox.runner.apply(undefined, [request.runId, fn.derefInto(), eventJson, globalsJson, false], { timeout: LIMITS.timeoutMs });
    } finally {
      sandbox.threadedRuns--;
    }
    return finish();
  } catch (error) {
    // A run stopped mid-way skipped its clean-up: the account's next run gets a fresh context.
    if (isTimeout(error)) sandbox.tainted = true;
    return finish({ error });
  } finally {
    clearTimeout(wallTimer);
    hostCalls.end(request.runId);
    if (!released) sandboxes.release(request.definition.accountId, sandbox);
  }
}

/**
 * Runs of one script that arrived together are tried on the worker's thread in ONE call into the isolate:
 * a call costs ~7 µs of CPU (most of it isolated-vm arming its CPU-time limit), a run of a trivial script
 * inside it under 1. The batch is an attempt like a single run's: it holds the thread for at most
 * SYNC_TIMEOUT_MS, and whatever it cannot settle — a run that needs the service, runs after one that spoiled
 * the context, every run of a batch stopped at its limit or by a memory overrun — starts again on its own
 * (`run`), which is safe because an attempt does nothing outside the isolate. A run's duration is its share
 * of the batch's time.
 */
async function runBatch(requests: RunRequest[]): Promise<void> {
  const first = requests[0]!;
  const started = process.hrtime.bigint();
  let sandbox: AccountSandbox;
  try {
    sandbox = await sandboxes.sandboxFor(first.definition.accountId, first);
  } catch {
    order.startInOrder(requests);
    return;
  }
  let settled: { request: RunRequest; result: RunResult }[] = [];
  let again: RunRequest[] = requests;
  try {
    const fn = await sandboxes.compiled(sandbox, first);
    if (sandbox.threadedRuns > 0 || threaded.has(first.definition.scriptId) || LIMITS.timeoutMs > LIMITS.wallTimeoutMs) return;
    const states = requests.map((request): RunState => newRunState(request.definition.accountId));
    requests.forEach((request, i) => hostCalls.runs.set(request.runId, states[i]!));
    hostCalls.beginAttempt();
    const cpuBefore = sandbox.isolate.cpuTime;
    let outcomes: string[];
    try {
      const out = sandbox.batchRunner.applySync(
        undefined,
        [fn.derefInto(), requests.map((r) => r.runId).join(','), requests.map((r) => r.eventJson).join('\n'), requests.map((r) => r.globalsJson).join('\n')],
        { timeout: Math.min(LIMITS.timeoutMs, SYNC_TIMEOUT_MS) },
      );
      outcomes = JSON.parse(out) as string[];
    } catch (error) {
      // Stopped at its limit (the context skipped a clean-up) or the isolate is gone: every run on its own.
      if (isTimeout(error)) sandbox.tainted = true;
      return;
    } finally {
      for (const request of requests) hostCalls.runs.delete(request.runId);
    }
    // At least one: the first run of a batch always runs.
    const done = Math.max(1, outcomes.length);
    const durationMs = Number(process.hrtime.bigint() - started) / 1e6 / done;
    if (!sandbox.isolate.isDisposed) noteCpu(first.definition.scriptId, (Number(sandbox.isolate.cpuTime - cpuBefore) / 1e6 + hostCalls.attemptCallsMs) / done);
    again = [];
    /** Runs starting again, with every later run of their sequences: a run after one that needs the service waits for it. */
    const startingAgain = new Set<number>();
    for (let i = 0; i < requests.length; i++) {
      const request = requests[i]!;
      const state = states[i]!;
      if (i >= outcomes.length || state.needsHost || (request.after !== undefined && startingAgain.has(request.after))) {
        if (state.needsHost) runThreaded(request.definition.scriptId);
        again.push(request);
        startingAgain.add(request.runId);
        continue;
      }
      const outcome = outcomes[i]!;
      let result: RunResult;
      if (state.exitMessage !== null) result = { status: 'failed', error: state.exitMessage, line: null, logs: state.logs, durationMs };
      else if (outcome === '') result = { status: 'success', error: null, line: null, logs: state.logs, durationMs };
      else {
        const [message, stack] = JSON.parse(outcome) as [string, string];
        result = { status: 'failed', ...scriptError(message, stack, request.definition.scriptName), logs: state.logs, durationMs };
      }
      settled.push({ request, result });
    }
  } catch {
    settled = [];
    again = requests;
  } finally {
    sandboxes.release(first.definition.accountId, sandbox);
    for (const { request, result } of settled) ended(request.runId, result);
    order.startInOrder(again);
  }
}

/** Which runs wait for which (sequences), and how runs received together are batched. */
const order = new RunOrder<RunRequest>((request) => start(request));

/** Script definitions by the service's number for them. */
const scripts = new Map<number, ScriptDefinition>();

/** Runs received in the chunk being read: started together once it is read, those of one script in a batch. */
let received: RunRequest[] = [];

const lines = new LineReader(
  (line) => {
    const message = decodeToWorker(line);
    if (message) receive(message);
  },
  // The service does not write such lines: something is wrong with it or the pipe, and it will start a new worker.
  () => exit(1),
);
pipe.on('data', (chunk: string) => {
  lines.push(chunk);
  const requests = received;
  received = [];
  for (const batch of order.batches(requests, batchSize)) {
    if (batch.length === 1) order.startInOrder(batch);
    else void runBatch(batch);
  }
});

/**
 * How many runs of a script go in one batch: as many as take half an attempt's time by the script's average
 * (a batch stopped at its limit costs a whole attempt, and its runs then go one by one), 8 while it has none.
 */
function batchSize(scriptId: string): number {
  const average = cpuAverage.get(scriptId);
  if (average === undefined) return 8;
  return Math.max(1, Math.min(100, Math.floor(SYNC_TIMEOUT_MS / 2 / Math.max(average, 0.005))));
}

/** The result of a run the sandbox itself could not carry out. */
function sandboxFailure(why: string, durationMs = 0): RunResult {
  return { status: 'failed', error: `sandbox error: ${why}`, line: null, logs: [], durationMs };
}

/** A run has ended: its result goes to the service, and the runs following it start. */
function ended(runId: number, result: RunResult): void {
  send({ kind: 'done', runId, result });
  order.ended(runId);
}

/** One run on its own; its result goes to the service. */
function start(request: RunRequest): void {
  run(request).then(
    (result) => ended(request.runId, result),
    (error: unknown) => ended(request.runId, sandboxFailure(String(error))),
  );
}

function receive(message: ToWorker): void {
  if (message.kind === 'run') {
    const definition = scripts.get(message.script);
    order.received(message.runId);
    if (definition) received.push({ definition, runId: message.runId, eventJson: message.eventJson, globalsJson: message.globalsJson, after: message.after });
    else ended(message.runId, sandboxFailure(`script ${message.script} was never sent`));
  } else if (message.kind === 'script') {
    scripts.set(message.ref, message);
  } else if (message.kind === 'forget') {
    scripts.clear();
  } else if (message.kind === 'namespaces') {
    namespaceLists.set(message.id, withLocal(message.json));
  } else if (message.kind === 'reply') {
    hostCalls.reply(message);
  }
}

process.on('SIGTERM', () => exit(0));

/**
 * Ends the worker. process.exit() alone never returned while a run waited for a host call: isolated-vm joins
 * its threads at exit, and that run's thread waits for this one. Disposing the isolates first releases them.
 */
function exit(code: number): void {
  sandboxes.disposeAll();
  process.exit(code);
}
