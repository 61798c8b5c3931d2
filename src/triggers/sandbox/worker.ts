/**
 * A script worker process: runs trigger scripts in isolated-vm isolates, one isolate and one context per
 * account. The context is locked down once (every built-in frozen) and each trigger version is compiled
 * once into a function; a run calls that function with the event and the trigger's globals, and whatever a
 * run adds to the global object is removed after it, so runs share nothing. Namespace calls go to the
 * service over the worker's pipe (see wire.ts) and block the script until answered (`applySyncPromise`),
 * so scripts read synchronously. Started by WorkerPool with `--no-node-snapshot` (isolated-vm needs it on Node 20); if
 * anything here dies, the pool replaces it.
 */
import { Socket } from 'node:net';
import ivm from 'isolated-vm';
import { LOCAL_NAMESPACES } from '../namespaces/local/index.js';
import { LIMITS_ENV, type FromWorker, type HostCall, type RunLimits, type RunResult, type ScriptDefinition, type ToWorker } from './protocol.js';
import { Outbox } from './outbox.js';
import { LineReader, decodeToWorker, encodeFromWorker } from './wire.js';

const MAX_LOG_LINES = 100;
const MAX_LOG_LINE = 2000;
const MAX_ISOLATES = 100;
const MAX_PER_ACCOUNT = 4;

/** The same for every run of this worker: set by the pool when it starts the process. */
const LIMITS = JSON.parse(process.env[LIMITS_ENV] ?? 'null') as RunLimits;

/** One run: its script as the service defined it (shared by its runs), and what changes from run to run. */
interface RunRequest {
  readonly definition: ScriptDefinition;
  readonly runId: number;
  readonly eventJson: string;
  readonly globalsJson: string;
}

interface AccountSandbox {
  readonly isolate: ivm.Isolate;
  readonly context: ivm.Context;
  /** The bootstrap's runner: (runId, fn, eventJson, globalsJson, sync). */
  readonly runner: ivm.Reference<(runId: number, fn: unknown, eventJson: string, globalsJson: string, sync: boolean) => void>;
  /** The bootstrap's batch runner: (fn, runIds, events, globals) → JSON of an outcome per run done (see runBatch). */
  readonly batchRunner: ivm.Reference<(fn: unknown, runIds: string, events: string, globals: string) => string>;
  /** Compiled trigger functions by the number of their definition (a trigger version, as the service sent it). */
  readonly scripts: Map<number, ivm.Reference<unknown>>;
  /** Id of the namespace list its bootstrap defined. */
  readonly namespaces: number;
  inUse: number;
  /** Runs executing on an isolate thread (`apply`): while any does, no run may take the isolate on the worker's thread. */
  threadedRuns: number;
  /** A run left something on the global object that cannot be removed: the context is replaced after it. */
  tainted: boolean;
  /** Settles once the context and runner exist: a sandbox joins its account's pool before it is ready. */
  ready: Promise<void>;
}

/** What one run collects while it executes. */
interface RunState {
  readonly accountId: string;
  readonly logs: string[];
  exitMessage: string | null;
  /** A run on the worker's thread called a namespace only the service answers: the attempt is void. */
  needsHost: boolean;
}

/**
 * Runs once per context: takes the host functions off the global object, defines log/console and the
 * namespaces, freezes every built-in (no prototype pollution can outlive a run), and returns the runner.
 */
const BOOTSTRAP = `
(function () {
  const call = globalThis.__iotbCall, syncCall = globalThis.__iotbSyncCall, log = globalThis.__iotbLog, exit = globalThis.__iotbExit, taint = globalThis.__iotbTaint;
  const names = JSON.parse(globalThis.__iotbNamespaces);
  delete globalThis.__iotbCall; delete globalThis.__iotbSyncCall; delete globalThis.__iotbLog; delete globalThis.__iotbExit; delete globalThis.__iotbTaint; delete globalThis.__iotbNamespaces;
  let run = 0;
  /** The run executes on the worker's own thread: namespace calls are answered at once (or refused, see worker.ts). */
  let sync = false;
  /** Libraries imported by the run under way: evaluated once per run, never shared between runs. */
  let imported = Object.create(null);
  const text = (v) => typeof v === 'string' ? v : (() => { try { return JSON.stringify(v); } catch (e) { return String(v); } })();
  const write = (...args) => { log.applySync(undefined, [run, args.map(text).join(' ')]); };
  const define = (name, value) => Object.defineProperty(globalThis, name, { value, writable: false, enumerable: false, configurable: false });
  define('log', write);
  define('console', { log: write, info: write, warn: write, error: write, debug: write });
  const hexBytes = (input) => {
    if (Array.isArray(input)) return input.map((b) => { if (!Number.isInteger(b) || b < 0 || b > 255) throw new RangeError('bytes are integers 0..255'); return b; });
    if (typeof input !== 'string') throw new TypeError('a reader takes a hex string or an array of bytes');
    const hex = input.replace(/\\s+/g, '');
    if (!/^([0-9a-fA-F]{2})*$/.test(hex)) throw new TypeError('not a hex string of whole bytes');
    const out = [];
    for (let i = 0; i < hex.length; i += 2) out.push(parseInt(hex.slice(i, i + 2), 16));
    return out;
  };
  const binReader = (input, littleEndian) => {
    const bytes = hexBytes(input), le = littleEndian === true;
    let pos = 0;
    const take = (n) => {
      if (!Number.isInteger(n) || n < 0) throw new RangeError('binReader: a length is a whole number');
      if (pos + n > bytes.length) throw new RangeError('binReader: read past the end (' + n + ' bytes at ' + pos + ' of ' + bytes.length + ')');
      pos += n;
      return bytes.slice(pos - n, pos);
    };
    const uint = (n) => { const b = take(n); let v = 0; for (let i = 0; i < n; i++) v = v * 256 + b[le ? n - 1 - i : i]; return v; };
    const int = (n) => { const v = uint(n), max = Math.pow(2, 8 * n); return v >= max / 2 ? v - max : v; };
    const float = (n) => { const b = take(n), view = new DataView(new ArrayBuffer(n)); b.forEach((x, i) => view.setUint8(i, x)); return n === 4 ? view.getFloat32(0, le) : view.getFloat64(0, le); };
    const hexOf = (b) => b.map((x) => (x < 16 ? '0' : '') + x.toString(16)).join('');
    return Object.freeze({
      readUint8: () => uint(1), readInt8: () => int(1), readUint16: () => uint(2), readInt16: () => int(2),
      readUint24: () => uint(3), readInt24: () => int(3), readUint32: () => uint(4), readInt32: () => int(4),
      readFloat32: () => float(4), readFloat64: () => float(8),
      readBytes: (n) => hexOf(take(n)),
      readString: (n) => decodeURIComponent(take(n === undefined ? bytes.length - pos : n).map((x) => '%' + (x < 16 ? '0' : '') + x.toString(16)).join('')),
      skip: (n) => { take(n); },
      seek: (p) => { if (!Number.isInteger(p) || p < 0 || p > bytes.length) throw new RangeError('binReader: no position ' + p); pos = p; },
      position: () => pos, remaining: () => bytes.length - pos, length: () => bytes.length, eof: () => pos >= bytes.length,
    });
  };
  const bitReader = (input) => {
    const bytes = hexBytes(input), total = bytes.length * 8;
    let bit = 0;
    const readBits = (n) => {
      if (!Number.isInteger(n) || n < 1 || n > 32) throw new RangeError('bitReader reads 1 to 32 bits at a time');
      if (bit + n > total) throw new RangeError('bitReader: read past the end (' + n + ' bits at ' + bit + ' of ' + total + ')');
      let v = 0;
      for (let i = 0; i < n; i++, bit++) v = v * 2 + ((bytes[bit >> 3] >> (7 - (bit & 7))) & 1);
      return v;
    };
    return Object.freeze({
      readBits,
      readSignedBits: (n) => { const v = readBits(n), max = Math.pow(2, n); return v >= max / 2 ? v - max : v; },
      readBool: () => readBits(1) === 1,
      skip: (n) => { if (!Number.isInteger(n) || n < 0 || bit + n > total) throw new RangeError('bitReader: cannot skip ' + n + ' bits'); bit += n; },
      position: () => bit, remaining: () => total - bit, length: () => total, eof: () => bit >= total,
    });
  };
  for (const namespace of Object.keys(names)) {
    const target = {};
    for (const fn of names[namespace]) {
      target[fn] = function () {
        const args = JSON.stringify(Array.from(arguments));
        const out = sync ? syncCall.applySync(undefined, [run, namespace, fn, args]) : call.applySyncPromise(undefined, [run, namespace, fn, args]);
        const reply = JSON.parse(out);
        if (reply.error !== undefined) throw new Error(namespace + '.' + fn + ': ' + reply.error);
        return reply.value;
      };
    }
    if (namespace === 'convert') {
      target.binReader = binReader;
      target.bitReader = bitReader;
    }
    if (namespace === 'trigger') {
      target.import = function (name) {
        if (imported[name]) return imported[name].exports;
        const library = target.librarySource(name);
        const module = { exports: {} };
        imported[name] = module;
        Function('exports', 'module', library.script + '\\n//# sourceURL=library:' + library.name)(module.exports, module);
        return module.exports;
      };
      target.exit = function (message) {
        const why = message === undefined ? 'trigger.exit()' : String(message);
        exit.applySync(undefined, [run, why]);
        throw new Error('trigger.exit: ' + why);
      };
    }
    define(namespace, target);
  }
  // After a run, what it added to the global object is removed. Object.keys(globalThis) finds what was added
  // by assignment (implicit globals, globalThis.x = …, var in an indirect eval) in ½ µs where
  // Reflect.ownKeys takes 6; what these three may have added without being enumerable is looked for in full.
  let defined = false;
  const apply = Reflect.apply, isExtensible = Object.isExtensible, ownKeys = Reflect.ownKeys, keys = Object.keys;
  const watch = (owner, name, length) => {
    const original = owner[name];
    const wrapper = { [name]: function () { if (arguments[0] === globalThis) defined = true; return apply(original, this, arguments); } }[name];
    Object.defineProperty(wrapper, 'length', { value: length });
    Object.defineProperty(owner, name, { value: wrapper, writable: true, enumerable: false, configurable: true });
  };
  watch(Object, 'defineProperty', 3);
  watch(Object, 'defineProperties', 2);
  watch(Reflect, 'defineProperty', 3);
  const frozen = new WeakSet();
  const freeze = (value) => {
    if ((typeof value !== 'object' && typeof value !== 'function') || value === null || frozen.has(value)) return;
    frozen.add(value);
    Object.freeze(value);
    for (const key of Reflect.ownKeys(value)) {
      const d = Object.getOwnPropertyDescriptor(value, key);
      if (!d) continue;
      if ('value' in d) freeze(d.value); else { freeze(d.get); freeze(d.set); }
    }
    freeze(Object.getPrototypeOf(value));
  };
  for (const key of Reflect.ownKeys(globalThis)) {
    const d = Object.getOwnPropertyDescriptor(globalThis, key);
    if (d && 'value' in d && d.value !== globalThis) freeze(d.value);
  }
  freeze(Object.getPrototypeOf(globalThis));
  // The global bindings themselves stay as they are too (\`JSON = null\` would otherwise outlive the run), so
  // a run can only add to the global object, and a count tells whether it did.
  for (const key of Reflect.ownKeys(globalThis)) {
    const d = Object.getOwnPropertyDescriptor(globalThis, key);
    if (d && d.configurable) Object.defineProperty(globalThis, key, 'value' in d ? { configurable: false, writable: false } : { configurable: false });
  }
  const baseline = new Set(ownKeys(globalThis));
  const enumerable = keys(globalThis).length;
  defined = false;
  /** Set once a run left something on the global object that cannot be removed: no run may follow it here. */
  let spoiled = false;
  const spoil = () => { spoiled = true; taint.applySync(undefined, []); };
  const runOne = function (runId, fn, eventJson, globalsJson, syncRun) {
    run = runId;
    sync = syncRun === true;
    imported = Object.create(null);
    try {
      fn(JSON.parse(eventJson), globalsJson === '{}' ? {} : JSON.parse(globalsJson));
    } finally {
      if (defined || keys(globalThis).length !== enumerable) {
        for (const key of ownKeys(globalThis)) {
          if (!baseline.has(key) && !delete globalThis[key]) spoil();
        }
      }
      // A global object made non-extensible (preventExtensions, seal, freeze) cannot be given back either.
      if (!isExtensible(globalThis)) spoil();
      defined = false;
      run = 0;
      sync = false;
    }
  };
  // What a run threw, as the host describes it: [message, stack] in JSON, as a run on its own gets it through
  // isolated-vm (which has this text for a thrown object that is not an Error). A thrown value's getters run here.
  const NOT_AN_ERROR = 'An object was thrown from supplied code within isolated-vm, but that object was not an instance of \`Error\`.';
  const outcome = (thrown) => {
    try {
      if (thrown instanceof Error) return JSON.stringify([String(thrown.message), String(thrown.stack)]);
      return JSON.stringify([(typeof thrown === 'object' && thrown !== null) || typeof thrown === 'function' ? NOT_AN_ERROR : String(thrown), '']);
    } catch (e) {
      return JSON.stringify([NOT_AN_ERROR, '']);
    }
  };
  /**
   * Several runs of one script on the worker's thread in one call (see worker.ts, runBatch): runs one after
   * another, each as runOne does, and returns (JSON) an outcome per run done, '' when it succeeded. Stops
   * after a run that spoiled the context.
   */
  const runBatch = function (fn, runIds, events, globals) {
    const ids = runIds.split(','), eventLines = events.split('\\n'), globalLines = globals.split('\\n'), out = [];
    for (let i = 0; i < ids.length && !spoiled; i++) {
      let line = '';
      try {
        runOne(Number(ids[i]), fn, eventLines[i], globalLines[i], true);
      } catch (thrown) {
        line = outcome(thrown);
      }
      out.push(line);
    }
    return JSON.stringify(out);
  };
  return [runOne, runBatch];
})()
`;

const sandboxes = new Map<string, AccountSandbox[]>();
const runs = new Map<number, RunState>();
/** The service's namespace lists by id, with the worker-local namespaces added (JSON). */
const namespaceLists = new Map<number, string>();

function withLocal(namespacesJson: string): string {
  const names = JSON.parse(namespacesJson) as Record<string, string[]>;
  for (const [namespace, functions] of Object.entries(LOCAL_NAMESPACES)) names[namespace] = [...new Set([...(names[namespace] ?? []), ...Object.keys(functions)])];
  return JSON.stringify(names);
}

/** Answers a pure namespace call here, or returns undefined when the service must answer it. */
function localCall(runId: number, namespace: string, fn: string, argsJson: string): string | undefined {
  const functions = Object.hasOwn(LOCAL_NAMESPACES, namespace) ? LOCAL_NAMESPACES[namespace] : undefined;
  const local = functions && Object.hasOwn(functions, fn) ? functions[fn] : undefined;
  if (!local) return undefined;
  try {
    const accountId = runs.get(runId)?.accountId;
    if (accountId === undefined) return JSON.stringify({ error: 'the run ended' });
    const value = local(JSON.parse(argsJson) as unknown[], { accountId });
    return value === undefined ? '{}' : JSON.stringify({ value });
  } catch (error) {
    return JSON.stringify({ error: error instanceof Error ? error.message : String(error) });
  }
}
/**
 * A namespace call of a run on the worker's thread: answered here when it is pure, or the attempt is void
 * (see `run`). `sql` is answered here too but is not pure (a write must not happen twice when the run starts
 * again), so it voids the attempt like a service call.
 */
function syncCall(runId: number, namespace: string, fn: string, argsJson: string): string {
  const local = namespace === 'sql' ? undefined : localCall(runId, namespace, fn, argsJson);
  if (local !== undefined) return local;
  const state = runs.get(runId);
  if (state) state.needsHost = true;
  return JSON.stringify({ error: 'needs the service (the run starts again)' });
}

const pendingCalls = new Map<number, { resolve: (json: string) => void; runId: number }>();
let nextCallId = 1;

// The service's end of the pipe; when it closes, the service is gone and the worker goes too.
const pipe = new Socket({ fd: 3, readable: true, writable: true });
pipe.setEncoding('utf8');
pipe.on('close', () => process.exit(0));
pipe.on('error', () => process.exit(0));

const outbox = new Outbox<FromWorker>((messages) => {
  let text = '';
  for (const message of messages) text += encodeFromWorker(message);
  pipe.write(text);
});

function send(message: FromWorker): void {
  outbox.push(message);
}

/**
 * A sandbox of the account for one run, reserved (`inUse`) before it is returned: an idle one, else (for a
 * run tried on the worker's thread, which never holds an isolate across turns) one no run holds on its
 * thread, else a new one while the account has fewer than MAX_PER_ACCOUNT, else the least busy (the run
 * then queues on its isolate). Several per account let a run that waits (`trigger.wait`, a slow host call)
 * not hold up the account's other runs, and let one busy account use more than one core.
 */
async function sandboxFor(accountId: string, request: RunRequest): Promise<AccountSandbox> {
  const pool = (sandboxes.get(accountId) ?? []).filter((s) => {
    const usable = !s.isolate.isDisposed && !s.tainted && s.namespaces === request.definition.namespaces;
    if (!usable) retire(accountId, s);
    return usable;
  });
  // Most recently used last, so eviction takes the oldest accounts.
  sandboxes.delete(accountId);
  sandboxes.set(accountId, pool);
  const idle = pool.find((s) => s.inUse === 0) ?? (threaded.has(request.definition.scriptId) ? undefined : pool.find((s) => s.threadedRuns === 0));
  if (idle || pool.length >= MAX_PER_ACCOUNT) {
    const chosen = idle ?? pool.reduce((a, b) => (b.inUse < a.inUse ? b : a));
    chosen.inUse++;
    try {
      await chosen.ready;
    } catch (error) {
      chosen.inUse--;
      throw error;
    }
    return chosen;
  }
  const isolate = new ivm.Isolate({ memoryLimit: LIMITS.memoryMb });
  const sandbox: AccountSandbox = {
    isolate,
    context: undefined as never,
    runner: undefined as never,
    batchRunner: undefined as never,
    scripts: new Map(),
    namespaces: request.definition.namespaces,
    inUse: 1,
    threadedRuns: 0,
    tainted: false,
    ready: Promise.resolve(),
  };
  pool.push(sandbox);
  let markReady!: () => void;
  let markFailed!: (error: unknown) => void;
  sandbox.ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    markFailed = reject;
  });
  sandbox.ready.catch(() => undefined); // waiters see the failure; nobody else needs to
  try {
    const context = await isolate.createContext();
    const global = context.global;
    await global.set('__iotbCall', new ivm.Reference((runId: number, namespace: string, fn: string, argsJson: string) => hostCall(runId, namespace, fn, argsJson)));
    await global.set('__iotbSyncCall', new ivm.Reference((runId: number, namespace: string, fn: string, argsJson: string) => syncCall(runId, namespace, fn, argsJson)));
    await global.set('__iotbLog', new ivm.Reference((runId: number, line: string) => {
      const logs = runs.get(runId)?.logs;
      if (logs && logs.length < MAX_LOG_LINES) logs.push(line.length > MAX_LOG_LINE ? `${line.slice(0, MAX_LOG_LINE)}…` : line);
    }));
    await global.set('__iotbExit', new ivm.Reference((runId: number, message: string) => {
      const state = runs.get(runId);
      if (state) state.exitMessage ??= message;
    }));
    await global.set('__iotbTaint', new ivm.Reference(() => {
      sandbox.tainted = true;
    }));
    const names = namespaceLists.get(request.definition.namespaces);
    if (names === undefined) throw new Error(`namespace list ${request.definition.namespaces} was never sent`);
    await global.set('__iotbNamespaces', names);
    const bootstrap = await isolate.compileScript(BOOTSTRAP, { filename: 'iotbridge:bootstrap' });
    const runners = (await bootstrap.run(context, { reference: true, timeout: 5000 })) as ivm.Reference<unknown[]>;
    const runner = (await runners.get(0, { reference: true })) as AccountSandbox['runner'];
    const batchRunner = (await runners.get(1, { reference: true })) as AccountSandbox['batchRunner'];
    runners.release();
    Object.assign(sandbox, { context, runner, batchRunner });
    markReady();
  } catch (error) {
    markFailed(error);
    sandbox.inUse--;
    retire(accountId, sandbox);
    throw error;
  }
  evict();
  return sandbox;
}

/** Keeps at most MAX_ISOLATES isolates, disposing idle ones of the accounts used longest ago. */
function evict(): void {
  let total = 0;
  for (const pool of sandboxes.values()) total += pool.length;
  for (const [accountId, pool] of sandboxes) {
    if (total <= MAX_ISOLATES) return;
    for (const sandbox of [...pool]) {
      if (total <= MAX_ISOLATES) return;
      if (sandbox.inUse === 0) {
        retire(accountId, sandbox);
        total--;
      }
    }
  }
}

function retire(accountId: string, sandbox: AccountSandbox): void {
  const pool = sandboxes.get(accountId);
  if (pool?.includes(sandbox)) {
    const rest = pool.filter((s) => s !== sandbox);
    if (rest.length > 0) sandboxes.set(accountId, rest);
    else sandboxes.delete(accountId);
  }
  if (sandbox.inUse === 0 && !sandbox.isolate.isDisposed) sandbox.isolate.dispose();
}

/** `(function (event, __g) { var name = __g.name; … <script>\n})` on the script's first line, so its line numbers stay true. */
function wrap(script: string, globalNames: string[]): string {
  const declarations = globalNames.map((name) => `var ${name} = __g[${JSON.stringify(name)}];`).join(' ');
  return `(function (event, __g) { ${declarations} ${script}\n})`;
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

/** A run is done with its sandbox: it goes back to the account's pool, or away if it cannot be used again. */
function release(accountId: string, sandbox: AccountSandbox): void {
  sandbox.inUse--;
  if (sandbox.isolate.isDisposed || sandbox.tainted) retire(accountId, sandbox);
}

/** Compiled once per script definition (trigger version) and isolate. */
async function compiled(sandbox: AccountSandbox, request: RunRequest): Promise<ivm.Reference<unknown>> {
  let fn = sandbox.scripts.get(request.definition.ref);
  if (!fn) {
    const globalNames = Object.keys(JSON.parse(request.globalsJson) as Record<string, unknown>);
    const script = await sandbox.isolate.compileScript(wrap(request.definition.script, globalNames), { filename: request.definition.scriptName });
    fn = (await script.run(sandbox.context, { reference: true, timeout: LIMITS.timeoutMs })) as ivm.Reference<unknown>;
    sandbox.scripts.set(request.definition.ref, fn);
  }
  return fn;
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

/** isolated-vm's error for a run stopped at its CPU limit (not a script's own error that says "timed out"). */
function isTimeout(error: unknown): boolean {
  return error instanceof Error && error.message === 'Script execution timed out.';
}

/** Script ids (trigger id @ version) that run on isolate threads only. */
const threaded = new Set<string>();
/** Per script run on the worker's thread: a moving average of the isolate CPU time of its runs (ms). */
const cpuAverage = new Map<string, number>();

function runThreaded(scriptId: string): void {
  if (threaded.size >= 10_000) threaded.clear(); // forgetting costs one more attempt per script
  threaded.add(scriptId);
  cpuAverage.delete(scriptId);
}

/**
 * A run on the worker's thread took `cpuMs` of its isolate's time. A script whose runs average more than
 * SYNC_MAX_MS goes to isolate threads. The isolate's clock runs on when the machine is busy with other work,
 * and a first run or a garbage collection is slow, so one run counts for a sixteenth and at most
 * SYNC_SAMPLE_MS: a script goes only when most of its runs are slow (a 100 ms one after three runs).
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
  const state: RunState = { accountId: request.definition.accountId, logs: [], exitMessage: null, needsHost: false };
  const elapsed = () => Number(process.hrtime.bigint() - started) / 1e6;
  let wallExpired = false;
  let sandbox: AccountSandbox;
  /** The run no longer holds `sandbox` (between giving up a tainted one and getting a new one). */
  let released = false;
  try {
    sandbox = await sandboxFor(request.definition.accountId, request);
  } catch (error) {
    return sandboxFailure(String(error), elapsed());
  }
  runs.set(request.runId, state);
  const wallTimer = setTimeout(() => {
    wallExpired = true;
    // A script stuck in a host call or over its wall time: nothing else can stop it. The account's next run gets a new isolate.
    sandbox.isolate.dispose();
  }, LIMITS.wallTimeoutMs);
  const failed = (error: unknown): RunResult =>
    state.exitMessage !== null
      ? { status: 'failed', error: state.exitMessage, line: null, logs: state.logs, durationMs: elapsed() }
      : { status: 'failed', ...describe(error, request.definition.scriptName, sandbox.isolate, wallExpired), logs: state.logs, durationMs: elapsed() };
  const succeeded = (): RunResult =>
    state.exitMessage !== null
      ? { status: 'failed', error: state.exitMessage, line: null, logs: state.logs, durationMs: elapsed() }
      : { status: 'success', error: null, line: null, logs: state.logs, durationMs: elapsed() };
  try {
    let fn = await compiled(sandbox, request);
    const { eventJson, globalsJson } = request;
    // Not while a run holds the isolate on its thread: it may be waiting for this thread (a host call, a log line).
    if (sandbox.threadedRuns === 0 && !threaded.has(request.definition.scriptId) && LIMITS.timeoutMs <= LIMITS.wallTimeoutMs) {
      let error: unknown;
      let threw = false;
      const cpuBefore = sandbox.isolate.cpuTime;
      // The attempt holds the worker's thread (and every other account's runs on it) for at most SYNC_TIMEOUT_MS.
      const attemptTimeout = Math.min(LIMITS.timeoutMs, SYNC_TIMEOUT_MS);
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
        else if (!sandbox.isolate.isDisposed) noteCpu(request.definition.scriptId, Number(sandbox.isolate.cpuTime - cpuBefore) / 1e6);
        return threw ? failed(error) : succeeded();
      }
      // It needs the service, or more time than an attempt gets: again from the start, on an isolate thread.
      runThreaded(request.definition.scriptId);
      state.logs.length = 0;
      state.exitMessage = null;
      state.needsHost = false;
      if (sandbox.tainted) {
        // The attempt left something on the global object: the run starts again in a clean context.
        release(request.definition.accountId, sandbox);
        released = true;
        sandbox = await sandboxFor(request.definition.accountId, request);
        released = false;
        fn = await compiled(sandbox, request);
      }
    }
    sandbox.threadedRuns++;
    try {
      await sandbox.runner.apply(undefined, [request.runId, fn.derefInto(), eventJson, globalsJson, false], { timeout: LIMITS.timeoutMs });
    } finally {
      sandbox.threadedRuns--;
    }
    return succeeded();
  } catch (error) {
    // A run stopped mid-way skipped its clean-up: the account's next run gets a fresh context.
    if (isTimeout(error)) sandbox.tainted = true;
    return failed(error);
  } finally {
    clearTimeout(wallTimer);
    runs.delete(request.runId);
    if (!released) release(request.definition.accountId, sandbox);
    for (const [callId, pending] of pendingCalls) {
      if (pending.runId === request.runId) {
        pendingCalls.delete(callId);
        pending.resolve(JSON.stringify({ error: 'the run ended' }));
      }
    }
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
    sandbox = await sandboxFor(first.definition.accountId, first);
  } catch {
    for (const request of requests) start(request);
    return;
  }
  let settled: { request: RunRequest; result: RunResult }[] = [];
  let again: RunRequest[] = requests;
  try {
    const fn = await compiled(sandbox, first);
    if (sandbox.threadedRuns > 0 || threaded.has(first.definition.scriptId) || LIMITS.timeoutMs > LIMITS.wallTimeoutMs) return;
    const states = requests.map((request): RunState => ({ accountId: request.definition.accountId, logs: [], exitMessage: null, needsHost: false }));
    requests.forEach((request, i) => runs.set(request.runId, states[i]!));
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
      for (const request of requests) runs.delete(request.runId);
    }
    // At least one: the first run of a batch always runs.
    const done = Math.max(1, outcomes.length);
    const durationMs = Number(process.hrtime.bigint() - started) / 1e6 / done;
    if (!sandbox.isolate.isDisposed) noteCpu(first.definition.scriptId, Number(sandbox.isolate.cpuTime - cpuBefore) / 1e6 / done);
    again = requests.slice(outcomes.length);
    for (let i = 0; i < outcomes.length; i++) {
      const request = requests[i]!;
      const state = states[i]!;
      if (state.needsHost) {
        runThreaded(request.definition.scriptId);
        again.push(request);
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
    release(first.definition.accountId, sandbox);
    for (const { request, result } of settled) send({ kind: 'done', runId: request.runId, result });
    for (const request of again) start(request);
  }
}

function hostCall(runId: number, namespace: string, fn: string, argsJson: string): Promise<string> {
  const local = localCall(runId, namespace, fn, argsJson);
  if (local !== undefined) return Promise.resolve(local);
  const callId = nextCallId++;
  return new Promise<string>((resolve) => {
    pendingCalls.set(callId, { resolve, runId });
    const call: HostCall = { kind: 'call', runId, callId, namespace, fn, argsJson };
    send(call);
  });
}

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
  () => process.exit(1),
);
pipe.on('data', (chunk: string) => {
  lines.push(chunk);
  const requests = received;
  received = [];
  // By definition: one script text of one account.
  const byScript = new Map<number, RunRequest[]>();
  for (const request of requests) {
    const group = byScript.get(request.definition.ref);
    if (group) group.push(request);
    else byScript.set(request.definition.ref, [request]);
  }
  for (const group of byScript.values()) {
    const size = batchSize(group[0]!.definition.scriptId);
    for (let i = 0; i < group.length; i += size) {
      const batch = group.slice(i, i + size);
      if (batch.length === 1) start(batch[0]!);
      else void runBatch(batch);
    }
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

/** One run on its own; its result goes to the service. */
function start(request: RunRequest): void {
  run(request).then(
    (result) => send({ kind: 'done', runId: request.runId, result }),
    (error: unknown) => send({ kind: 'done', runId: request.runId, result: sandboxFailure(String(error)) }),
  );
}

function receive(message: ToWorker): void {
  if (message.kind === 'run') {
    const definition = scripts.get(message.script);
    if (definition) received.push({ definition, runId: message.runId, eventJson: message.eventJson, globalsJson: message.globalsJson });
    else send({ kind: 'done', runId: message.runId, result: sandboxFailure(`script ${message.script} was never sent`) });
  } else if (message.kind === 'script') {
    scripts.set(message.ref, message);
  } else if (message.kind === 'forget') {
    scripts.clear();
  } else if (message.kind === 'namespaces') {
    namespaceLists.set(message.id, withLocal(message.json));
  } else if (message.kind === 'reply') {
    const pending = pendingCalls.get(message.callId);
    if (!pending) return;
    pendingCalls.delete(message.callId);
    // The script side parses `{value}` or `{error}`; the value is already JSON text, so splice it in.
    pending.resolve(message.error !== undefined ? JSON.stringify({ error: message.error }) : message.json === undefined ? '{}' : `{"value":${message.json}}`);
  }
}

process.on('SIGTERM', () => process.exit(0));
