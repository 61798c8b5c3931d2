/**
 * A worker's sandboxes, per account: an isolate and its context, locked down once by the bootstrap, with the
 * trigger functions compiled in it. One account's runs never get another account's sandbox. Several per
 * account (see `sandboxFor`); past MAX_ISOLATES in the worker, idle ones of the accounts used longest ago go.
 */
import ivm from 'isolated-vm';
import { BOOTSTRAP } from './bootstrap.js';
import type { HostCalls } from './host-calls.js';
import type { RunLimits, ScriptDefinition } from './protocol.js';

const MAX_LOG_LINES = 100;
const MAX_LOG_LINE = 2000;
const MAX_ISOLATES = 100;
const MAX_PER_ACCOUNT = 4;

/** What the sandboxes need of a run: its script as the service defined it, and its globals (their names are compiled in). */
export interface SandboxRun {
  readonly definition: ScriptDefinition;
  readonly globalsJson: string;
}

export interface AccountSandbox {
  readonly isolate: ivm.Isolate;
  readonly context: ivm.Context;
  /** The bootstrap's runner: (runId, fn, eventJson, globalsJson, sync). */
  readonly runner: ivm.Reference<(runId: number, fn: unknown, eventJson: string, globalsJson: string, sync: boolean) => void>;
  /** The bootstrap's batch runner: (fn, runIds, events, globals) → JSON of an outcome per run done (see worker.ts, runBatch). */
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

export class AccountSandboxes {
  /** By account, the accounts used most recently last. */
  readonly #sandboxes = new Map<string, AccountSandbox[]>();
  /** Every isolate not disposed of yet, in a pool or not (a retired one still in use). */
  readonly #isolates = new Set<ivm.Isolate>();
  readonly #limits: RunLimits;
  /** Answers the host functions a sandbox's bootstrap takes (`__iotbCall`, …) and holds the runs' logs and exit messages. */
  readonly #hostCalls: HostCalls;
  /** The namespace lists by id as the bootstrap defines them (JSON); the worker adds them as the service sends them. */
  readonly #namespaceLists: ReadonlyMap<number, string>;
  /** Script ids that run on isolate threads only (the worker decides which, see worker.ts). */
  readonly #threaded: ReadonlySet<string>;

  constructor(limits: RunLimits, hostCalls: HostCalls, namespaceLists: ReadonlyMap<number, string>, threaded: ReadonlySet<string>) {
    this.#limits = limits;
    this.#hostCalls = hostCalls;
    this.#namespaceLists = namespaceLists;
    this.#threaded = threaded;
  }

  /**
   * A sandbox of the account for one run, reserved (`inUse`) before it is returned: an idle one, else (for a
   * run tried on the worker's thread, which never holds an isolate across turns) one no run holds on its
   * thread, else a new one while the account has fewer than MAX_PER_ACCOUNT, else the least busy (the run
   * then queues on its isolate). Several per account let a run that waits (`trigger.wait`, a slow host call)
   * not hold up the account's other runs, and let one busy account use more than one core.
   */
  async sandboxFor(accountId: string, request: SandboxRun): Promise<AccountSandbox> {
    const pool = (this.#sandboxes.get(accountId) ?? []).filter((s) => {
      const usable = !s.isolate.isDisposed && !s.tainted && s.namespaces === request.definition.namespaces;
      if (!usable) this.#retire(accountId, s);
      return usable;
    });
    // Most recently used last, so eviction takes the oldest accounts.
    this.#sandboxes.delete(accountId);
    this.#sandboxes.set(accountId, pool);
    const idle = pool.find((s) => s.inUse === 0) ?? (this.#threaded.has(request.definition.scriptId) ? undefined : pool.find((s) => s.threadedRuns === 0));
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
    const isolate = new ivm.Isolate({ memoryLimit: this.#limits.memoryMb });
    this.#isolates.add(isolate);
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
    const hostCalls = this.#hostCalls;
    try {
      const context = await isolate.createContext();
      const global = context.global;
      await global.set('__iotbCall', new ivm.Reference((runId: number, namespace: string, fn: string, argsJson: string) => hostCalls.call(runId, namespace, fn, argsJson)));
      await global.set('__iotbSyncCall', new ivm.Reference((runId: number, namespace: string, fn: string, argsJson: string) => hostCalls.sync(runId, namespace, fn, argsJson)));
      await global.set('__iotbLog', new ivm.Reference((runId: number, line: string) => {
        const logs = hostCalls.runs.get(runId)?.logs;
        if (logs && logs.length < MAX_LOG_LINES) logs.push(line.length > MAX_LOG_LINE ? `${line.slice(0, MAX_LOG_LINE)}…` : line);
      }));
      await global.set('__iotbExit', new ivm.Reference((runId: number, message: string) => {
        const state = hostCalls.runs.get(runId);
        if (state) state.exitMessage ??= message;
      }));
      await global.set('__iotbTaint', new ivm.Reference(() => {
        sandbox.tainted = true;
      }));
      const names = this.#namespaceLists.get(request.definition.namespaces);
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
      this.#retire(accountId, sandbox);
      throw error;
    }
    this.#evict();
    return sandbox;
  }

  /** A run is done with its sandbox: it goes back to the account's pool, or away if it cannot be used again. */
  release(accountId: string, sandbox: AccountSandbox): void {
    sandbox.inUse--;
    if (sandbox.isolate.isDisposed || sandbox.tainted) this.#retire(accountId, sandbox);
  }

  /** Compiled once per script definition (trigger version) and isolate. */
  async compiled(sandbox: AccountSandbox, request: SandboxRun): Promise<ivm.Reference<unknown>> {
    let fn = sandbox.scripts.get(request.definition.ref);
    if (!fn) {
      const globalNames = Object.keys(JSON.parse(request.globalsJson) as Record<string, unknown>);
      const script = await sandbox.isolate.compileScript(wrap(request.definition.script, globalNames), { filename: request.definition.scriptName });
      fn = (await script.run(sandbox.context, { reference: true, timeout: this.#limits.timeoutMs })) as ivm.Reference<unknown>;
      sandbox.scripts.set(request.definition.ref, fn);
    }
    return fn;
  }

  /** Disposes of every isolate, those of runs under way too: the worker is exiting (see worker.ts, `exit`). */
  disposeAll(): void {
    for (const isolate of this.#isolates) if (!isolate.isDisposed) isolate.dispose();
  }

  /** Keeps at most MAX_ISOLATES isolates, disposing idle ones of the accounts used longest ago. */
  #evict(): void {
    let total = 0;
    for (const pool of this.#sandboxes.values()) total += pool.length;
    for (const [accountId, pool] of this.#sandboxes) {
      if (total <= MAX_ISOLATES) return;
      for (const sandbox of [...pool]) {
        if (total <= MAX_ISOLATES) return;
        if (sandbox.inUse === 0) {
          this.#retire(accountId, sandbox);
          total--;
        }
      }
    }
  }

  #retire(accountId: string, sandbox: AccountSandbox): void {
    const pool = this.#sandboxes.get(accountId);
    if (pool?.includes(sandbox)) {
      const rest = pool.filter((s) => s !== sandbox);
      if (rest.length > 0) this.#sandboxes.set(accountId, rest);
      else this.#sandboxes.delete(accountId);
    }
    if (sandbox.inUse > 0) return;
    if (!sandbox.isolate.isDisposed) sandbox.isolate.dispose();
    this.#isolates.delete(sandbox.isolate);
  }
}

/** `(function (event, __g) { var name = __g.name; … <script>\n})` on the script's first line, so its line numbers stay true. */
function wrap(script: string, globalNames: string[]): string {
  const declarations = globalNames.map((name) => `var ${name} = __g[${JSON.stringify(name)}];`).join(' ');
  return `(function (event, __g) { ${declarations} ${script}\n})`;
}
