/**
 * A script worker process: runs trigger scripts in isolated-vm isolates, one isolate per account,
 * a fresh context per run. Namespace calls go to the service over IPC and block the script until
 * answered (`applySyncPromise`), so scripts read synchronously. Started by WorkerPool with
 * `--no-node-snapshot` (isolated-vm needs it on Node 20); if anything here dies, the pool replaces it.
 */
import ivm from 'isolated-vm';
import { LOCAL_NAMESPACES } from '../namespaces/local/index.js';
import type { FromWorker, HostCall, RunRequest, RunResult, ToWorker } from './protocol.js';

const MAX_LOG_LINES = 100;
const MAX_LOG_LINE = 2000;
const MAX_ISOLATES = 100;

interface AccountIsolate {
  readonly isolate: ivm.Isolate;
  readonly scripts: Map<string, ivm.Script>;
  readonly bootstrap: ivm.Script;
  inUse: number;
}

/** Set up in every context before the user script; takes the host functions off the global object. */
const BOOTSTRAP = `
(function () {
  const call = globalThis.__iotbCall, log = globalThis.__iotbLog, exit = globalThis.__iotbExit;
  const names = JSON.parse(globalThis.__iotbNamespaces);
  delete globalThis.__iotbCall; delete globalThis.__iotbLog; delete globalThis.__iotbExit; delete globalThis.__iotbNamespaces;
  const text = (v) => typeof v === 'string' ? v : (() => { try { return JSON.stringify(v); } catch (e) { return String(v); } })();
  const write = (...args) => { log.applySync(undefined, [args.map(text).join(' ')]); };
  const define = (name, value) => Object.defineProperty(globalThis, name, { value, writable: false, enumerable: false, configurable: false });
  define('log', write);
  define('console', Object.freeze({ log: write, info: write, warn: write, error: write, debug: write }));
  for (const namespace of Object.keys(names)) {
    const target = {};
    for (const fn of names[namespace]) {
      target[fn] = function () {
        const out = call.applySyncPromise(undefined, [namespace, fn, JSON.stringify(Array.from(arguments))]);
        const reply = JSON.parse(out);
        if (reply.error !== undefined) throw new Error(namespace + '.' + fn + ': ' + reply.error);
        return reply.value;
      };
    }
    if (namespace === 'trigger') {
      target.exit = function (message) {
        const why = message === undefined ? 'trigger.exit()' : String(message);
        exit.applySync(undefined, [why]);
        throw new Error('trigger.exit: ' + why);
      };
    }
    define(namespace, Object.freeze(target));
  }
})();
`;

const isolates = new Map<string, AccountIsolate>();
/** The service's namespace list (by its JSON) with the worker-local namespaces added. */
const namesWithLocal = new Map<string, string>();

function withLocal(namespacesJson: string): string {
  let merged = namesWithLocal.get(namespacesJson);
  if (merged === undefined) {
    const names = JSON.parse(namespacesJson) as Record<string, string[]>;
    for (const [namespace, functions] of Object.entries(LOCAL_NAMESPACES)) names[namespace] = [...new Set([...(names[namespace] ?? []), ...Object.keys(functions)])];
    merged = JSON.stringify(names);
    namesWithLocal.set(namespacesJson, merged);
  }
  return merged;
}

/** Answers a pure namespace call here, or returns undefined when the service must answer it. */
function localCall(namespace: string, fn: string, argsJson: string): string | undefined {
  const functions = Object.hasOwn(LOCAL_NAMESPACES, namespace) ? LOCAL_NAMESPACES[namespace] : undefined;
  const local = functions && Object.hasOwn(functions, fn) ? functions[fn] : undefined;
  if (!local) return undefined;
  try {
    const value = local(JSON.parse(argsJson) as unknown[]);
    return value === undefined ? '{}' : JSON.stringify({ value });
  } catch (error) {
    return JSON.stringify({ error: error instanceof Error ? error.message : String(error) });
  }
}
const pendingCalls = new Map<number, { resolve: (json: string) => void; runId: number }>();
let nextCallId = 1;

function send(message: FromWorker): void {
  process.send?.(message);
}

function isolateFor(accountId: string, memoryMb: number): AccountIsolate {
  let entry = isolates.get(accountId);
  if (entry && !entry.isolate.isDisposed) {
    // Most recently used last, so eviction takes the oldest.
    isolates.delete(accountId);
    isolates.set(accountId, entry);
    return entry;
  }
  const isolate = new ivm.Isolate({ memoryLimit: memoryMb });
  entry = { isolate, scripts: new Map(), bootstrap: isolate.compileScriptSync(BOOTSTRAP, { filename: 'iotbridge:bootstrap' }), inUse: 0 };
  isolates.set(accountId, entry);
  for (const [id, old] of isolates) {
    if (isolates.size <= MAX_ISOLATES) break;
    if (old.inUse === 0) {
      old.isolate.dispose();
      isolates.delete(id);
    }
  }
  return entry;
}

/** Turns what the isolate threw into a message and the script line it points at. */
function describe(error: unknown, scriptName: string, isolate: ivm.Isolate, limits: RunRequest['limits'], wallExpired: boolean): { error: string; line: number | null } {
  const message = error instanceof Error ? error.message : String(error);
  if (wallExpired) return { error: `wall time limit: the run took longer than ${limits.wallTimeoutMs} ms (host calls included)`, line: null };
  if (/timed out/i.test(message)) return { error: `timeout: the script used more than ${limits.timeoutMs} ms of CPU time`, line: null };
  if (/memory limit/i.test(message) || (isolate.isDisposed && /disposed/i.test(message))) {
    return { error: `memory limit: the script used more than ${limits.memoryMb} MiB`, line: null };
  }
  const stack = error instanceof Error ? (error.stack ?? '') : '';
  const at = new RegExp(`${scriptName.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:(\\d+)(?::\\d+)?`).exec(stack);
  return { error: message, line: at ? Number(at[1]) : null };
}

async function run(request: RunRequest): Promise<RunResult> {
  const started = process.hrtime.bigint();
  const logs: string[] = [];
  let exitMessage: string | null = null;
  let wallExpired = false;
  const entry = isolateFor(request.accountId, request.limits.memoryMb);
  entry.inUse++;
  const { isolate } = entry;
  let context: ivm.Context | undefined;
  const wallTimer = setTimeout(() => {
    wallExpired = true;
    // A script stuck in a host call or over its wall time: nothing else can stop it. The account's next run gets a new isolate.
    isolate.dispose();
  }, request.limits.wallTimeoutMs);
  const elapsed = () => Number(process.hrtime.bigint() - started) / 1e6;
  try {
    let script = entry.scripts.get(request.scriptId);
    if (!script) {
      try {
        script = await isolate.compileScript(request.script, { filename: request.scriptName });
      } catch (error) {
        return { status: 'failed', ...describe(error, request.scriptName, isolate, request.limits, wallExpired), logs, durationMs: elapsed() };
      }
      entry.scripts.set(request.scriptId, script);
    }
    context = await isolate.createContext();
    const global = context.global;
    await global.set('__iotbCall', new ivm.Reference((namespace: string, fn: string, argsJson: string) => hostCall(request.runId, namespace, fn, argsJson)));
    await global.set('__iotbLog', new ivm.Reference((line: string) => {
      if (logs.length < MAX_LOG_LINES) logs.push(line.length > MAX_LOG_LINE ? `${line.slice(0, MAX_LOG_LINE)}…` : line);
    }));
    await global.set('__iotbExit', new ivm.Reference((message: string) => {
      exitMessage ??= message;
    }));
    await global.set('__iotbNamespaces', withLocal(request.namespacesJson));
    await entry.bootstrap.run(context, { timeout: request.limits.timeoutMs });
    for (const [name, value] of Object.entries(request.globals)) {
      await global.set(name, new ivm.ExternalCopy(value).copyInto());
    }
    await script.run(context, { timeout: request.limits.timeoutMs });
    if (exitMessage !== null) return { status: 'failed', error: exitMessage, line: null, logs, durationMs: elapsed() };
    return { status: 'success', error: null, line: null, logs, durationMs: elapsed() };
  } catch (error) {
    if (exitMessage !== null) return { status: 'failed', error: exitMessage, line: null, logs, durationMs: elapsed() };
    return { status: 'failed', ...describe(error, request.scriptName, isolate, request.limits, wallExpired), logs, durationMs: elapsed() };
  } finally {
    clearTimeout(wallTimer);
    entry.inUse--;
    if (!isolate.isDisposed) context?.release();
    else if (isolates.get(request.accountId) === entry) isolates.delete(request.accountId);
    for (const [callId, pending] of pendingCalls) {
      if (pending.runId === request.runId) {
        pendingCalls.delete(callId);
        pending.resolve(JSON.stringify({ error: 'the run ended' }));
      }
    }
  }
}

function hostCall(runId: number, namespace: string, fn: string, argsJson: string): Promise<string> {
  const local = localCall(namespace, fn, argsJson);
  if (local !== undefined) return Promise.resolve(local);
  const callId = nextCallId++;
  return new Promise<string>((resolve) => {
    pendingCalls.set(callId, { resolve, runId });
    const call: HostCall = { kind: 'call', runId, callId, namespace, fn, argsJson };
    send(call);
  });
}

process.on('message', (message: ToWorker) => {
  if (message.kind === 'run') {
    void run(message).then(
      (result) => send({ kind: 'done', runId: message.runId, result }),
      (error: unknown) =>
        send({ kind: 'done', runId: message.runId, result: { status: 'failed', error: `sandbox error: ${String(error)}`, line: null, logs: [], durationMs: 0 } }),
    );
  } else if (message.kind === 'reply') {
    const pending = pendingCalls.get(message.callId);
    if (!pending) return;
    pendingCalls.delete(message.callId);
    // The script side parses `{value}` or `{error}`; the value is already JSON text, so splice it in.
    pending.resolve(message.error !== undefined ? JSON.stringify({ error: message.error }) : message.json === undefined ? '{}' : `{"value":${message.json}}`);
  }
});

// The service going away takes its workers with it.
process.on('disconnect', () => process.exit(0));
