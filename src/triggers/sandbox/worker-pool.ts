import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { Outbox } from './outbox.js';
import { LIMITS_ENV, type FromWorker, type RunLimits, type RunResult, type ToWorker } from './protocol.js';
import { LineReader, decodeFromWorker, encodeToWorker } from './wire.js';

/** Answers a namespace call of a running script: the value (JSON-able) or a thrown error the script sees. */
export type HostHandler = (namespace: string, fn: string, args: unknown[]) => Promise<unknown>;

export interface ScriptRun {
  readonly accountId: string;
  readonly scriptId: string;
  readonly scriptName: string;
  readonly script: string;
  /** The run's `event` (JSON-able). */
  readonly event: unknown;
  /** `event`'s JSON when the caller has it (the trigger engine's events: src/events/event-json.ts). */
  readonly eventJson?: string | undefined;
  /**
   * Its other global variables (JSON-able; none is named `event`). Pass the same object to every run of a
   * script, and do not change it: its JSON is made once per object.
   */
  readonly globals?: Readonly<Record<string, unknown>> | undefined;
  readonly namespaces: Record<string, string[]>;
  readonly host: HostHandler;
  /** Runs given with the same sequence run one after another, in the order given (see {@link RunSequence}). */
  readonly sequence?: RunSequence | undefined;
}

/**
 * Runs that must happen one after another in the order given (one endpoint's triggers, event after event):
 * each starts once the one before has ended, host calls and all. They can be handed over all at once: the
 * runner keeps the order where they run, so a run does not wait for a trip back to the caller to start.
 * The runs of one sequence are of one account (they run on its worker). Made by the caller, one per sequence
 * (`new RunSequence()`); the runner keeps what it needs in it.
 */
export class RunSequence {
  /** The last run given and its runner's handle on it, while it may not have ended; set by the runner. */
  tail: unknown;
}

/** Runs user scripts somewhere they cannot harm the service. */
export interface ScriptRunner {
  run(run: ScriptRun): Promise<RunResult>;
  stop(): Promise<void>;
}

export interface WorkerPoolOptions {
  readonly workers: number;
  readonly limits: RunLimits;
  readonly logger: Logger;
  /** Directory of the accounts' `sql` databases (one SQLite file per account), handed to the workers. */
  readonly sqlDir: string;
}

/** Past a run's wall time, this much longer without an answer means the worker itself is stuck. */
const STUCK_GRACE_MS = 2000;
/** How often runs past that are looked for: one timer for the pool, not one per run. */
const SWEEP_MS = 250;

interface InFlight {
  readonly resolve: (result: RunResult) => void;
  readonly host: HostHandler;
  readonly worker: Worker;
  /** `performance.now()` past which the worker is taken to be stuck. */
  readonly deadline: number;
}

/** The last run of a sequence as the pool gave it out (`RunSequence.tail`). */
interface SequenceTail {
  readonly runId: number;
  readonly worker: Worker;
}

/** A script as a worker was told it: its number there, and what it was told (to notice a change). */
interface SentScript {
  readonly ref: number;
  readonly accountId: string;
  readonly script: string;
  readonly scriptName: string;
  readonly namespaces: number;
}

interface Worker {
  readonly index: number;
  readonly child: ChildProcess;
  readonly outbox: Outbox<ToWorker>;
  /** Namespace lists (by their JSON) this worker has been sent, with their ids. */
  readonly namespaceIds: Map<string, number>;
  /** Scripts (by script id) this worker has been sent. */
  readonly scripts: Map<string, SentScript>;
}

/** Past this many script versions a worker is told to forget them all, and is sent again what runs next. */
const MAX_SENT_SCRIPTS = 10_000;

// Under tsx (tests, `npm run dev`) this module is TypeScript and so is the worker next to it.
const fromSource = import.meta.url.endsWith('.ts');
const WORKER = fileURLToPath(new URL(fromSource ? './worker.ts' : './worker.js', import.meta.url));
const EXEC_ARGV = ['--no-node-snapshot', ...(fromSource ? ['--import', 'tsx'] : [])];
/** The worker's end of the message pipe (see wire.ts). */
const PIPE_FD = 3;

/**
 * Script worker processes supervised by the service: scripts never run in the process that holds the
 * sockets and the API. A worker that dies is replaced; its runs in flight fail with the reason. An
 * account's scripts always go to the same worker, so its isolate and compiled scripts are reused. A worker
 * starts with the first run it is given: a node that runs no script holds no worker (each is a process of
 * its own, tens of MB, and starting one was a good part of a service's start).
 */
export class WorkerPool implements ScriptRunner {
  readonly #options: WorkerPoolOptions;
  /** By index; undefined until the first run placed on it. */
  readonly #workers: Array<Worker | undefined>;
  readonly #inFlight = new Map<number, InFlight>();
  /**
   * Runs sent to follow another of their sequence that has not ended: not timed until it has (they may wait
   * for several runs' wall time), so not in `#inFlight`, whose order the sweep relies on.
   */
  readonly #waiting = new Map<number, Omit<InFlight, 'deadline'>>();
  /** The run waiting to follow each run (by the id of the run it follows). */
  readonly #followers = new Map<number, number>();
  #nextRunId = 1;
  #nextNamespacesId = 1;
  #nextScriptRef = 1;
  #stopping = false;

  readonly #sweeper: NodeJS.Timeout;

  constructor(options: WorkerPoolOptions) {
    this.#options = options;
    this.#workers = Array.from({ length: options.workers }, () => undefined);
    this.#sweeper = setInterval(() => this.#sweep(), SWEEP_MS);
    this.#sweeper.unref();
  }

  run(run: ScriptRun): Promise<RunResult> {
    let eventJson: string;
    let globalsJson: string;
    try {
      eventJson = run.eventJson ?? JSON.stringify(run.event ?? null);
      globalsJson = run.globals === undefined ? '{}' : jsonOnce(run.globals);
    } catch (error) {
      return Promise.resolve(failed(`the event or a global variable is not JSON: ${error instanceof Error ? error.message : String(error)}`));
    }
    if (this.#stopping) return Promise.resolve(failed('the service is stopping'));
    const index = hash(run.accountId) % this.#workers.length;
    const worker = (this.#workers[index] ??= this.#spawn(index));
    const script = this.#scriptRef(worker, run);
    const runId = this.#nextRunId++;
    const tail = run.sequence?.tail as SequenceTail | undefined;
    // A worker replaced since has ended every run of the one before (they failed with it).
    const after = tail && tail.worker === worker && this.#flightOf(tail.runId) ? tail.runId : undefined;
    const done = new Promise<RunResult>((resolve) => {
      if (after === undefined) this.#inFlight.set(runId, { resolve, host: run.host, worker, deadline: this.#deadline() });
      else {
        this.#waiting.set(runId, { resolve, host: run.host, worker });
        this.#followers.set(after, runId);
      }
      worker.outbox.push({ kind: 'run', runId, script, eventJson, globalsJson, after });
    });
    if (run.sequence) run.sequence.tail = { runId, worker } satisfies SequenceTail;
    return done;
  }

  #deadline(): number {
    return performance.now() + this.#options.limits.wallTimeoutMs + STUCK_GRACE_MS;
  }

  /** A run given out that has not ended yet: running, waiting in its worker, or following another. */
  #flightOf(runId: number): Omit<InFlight, 'deadline'> | undefined {
    return this.#inFlight.get(runId) ?? this.#waiting.get(runId);
  }

  /**
   * The worker enforces the wall time itself; if it cannot (its event loop blocked: nothing a script does
   * should do that since `sql` and costly calls run in call processes, but this is the last resort), the
   * worker is killed: its runs fail with the reason and a new worker takes over. Runs are in the map in the
   * order they started, all with the same limit: the first not past its deadline ends the look.
   */
  #sweep(): void {
    const now = performance.now();
    for (const [runId, flight] of this.#inFlight) {
      if (flight.deadline > now) return;
      if (flight.worker.child.killed) continue;
      this.#options.logger.error({ worker: flight.worker.index, runId }, 'script worker stopped answering; killing it');
      flight.worker.child.kill('SIGKILL');
    }
  }

  /** The worker's number for the run's script, telling it the script (and its namespace list) first if need be. */
  #scriptRef(worker: Worker, run: ScriptRun): number {
    const namespacesJson = jsonOnce(run.namespaces);
    let namespaces = worker.namespaceIds.get(namespacesJson);
    if (namespaces === undefined) {
      namespaces = this.#nextNamespacesId++;
      worker.namespaceIds.set(namespacesJson, namespaces);
      worker.outbox.push({ kind: 'namespaces', id: namespaces, json: namespacesJson });
    }
    const sent = worker.scripts.get(run.scriptId);
    if (sent && sent.script === run.script && sent.accountId === run.accountId && sent.scriptName === run.scriptName && sent.namespaces === namespaces) return sent.ref;
    if (worker.scripts.size >= MAX_SENT_SCRIPTS) {
      worker.scripts.clear();
      worker.outbox.push({ kind: 'forget' });
    }
    const ref = this.#nextScriptRef++;
    worker.scripts.set(run.scriptId, { ref, accountId: run.accountId, script: run.script, scriptName: run.scriptName, namespaces });
    worker.outbox.push({ kind: 'script', ref, accountId: run.accountId, scriptId: run.scriptId, scriptName: run.scriptName, script: run.script, namespaces });
    return ref;
  }

  /** Runs in flight per worker (running, or waiting in the worker for the one before): `GET /super/triggers`. */
  get state(): Array<{ index: number; pid: number; inFlight: number }> {
    const counts = new Map<number, number>();
    for (const flights of [this.#inFlight, this.#waiting]) {
      for (const flight of flights.values()) counts.set(flight.worker.index, (counts.get(flight.worker.index) ?? 0) + 1);
    }
    return this.#started().map((worker) => ({ index: worker.index, pid: worker.child.pid ?? -1, inFlight: counts.get(worker.index) ?? 0 }));
  }

  /** Process ids of the workers started (diagnostics and tests). */
  get pids(): number[] {
    return this.#started().map((worker) => worker.child.pid ?? -1);
  }

  #started(): Worker[] {
    return this.#workers.filter((worker) => worker !== undefined);
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#sweeper);
    await Promise.all(
      this.#started().map(async ({ child }) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        // A worker that does not end (stuck in native code) must not hold up the service's own stop.
        const kill = setTimeout(() => child.kill('SIGKILL'), STUCK_GRACE_MS);
        await exited;
        clearTimeout(kill);
      }),
    );
  }

  #spawn(index: number): Worker {
    const child = spawn(process.execPath, [...EXEC_ARGV, WORKER], {
      stdio: ['ignore', 'inherit', 'inherit', 'pipe'],
      env: { ...process.env, IOTBRIDGE_SQL_DIR: this.#options.sqlDir, [LIMITS_ENV]: JSON.stringify(this.#options.limits) },
    });
    const pipe = child.stdio[PIPE_FD] as Socket;
    pipe.setEncoding('utf8');
    const namespaceIds = new Map<string, number>();
    const scripts = new Map<string, SentScript>();
    const outbox = new Outbox<ToWorker>((messages) => {
      if (!pipe.writable) return; // its runs fail when its exit is seen
      let text = '';
      for (const message of messages) text += encodeToWorker(message);
      pipe.write(text, (error) => {
        if (!error) return;
        // Whatever it was told in these messages is told again with the next run.
        namespaceIds.clear();
        scripts.clear();
        for (const message of messages) {
          if (message.kind === 'run') this.#finish(message.runId, failed(`could not reach the script worker: ${error.message}`));
        }
      });
    });
    const worker: Worker = { index, child, outbox, namespaceIds, scripts };
    const lines = new LineReader(
      (line) => {
        const message = decodeFromWorker(line);
        if (message) this.#onMessage(worker, message);
        else this.#options.logger.warn({ worker: index }, 'script worker sent a message that is not well formed; ignored');
      },
      () => {
        this.#options.logger.error({ worker: index }, 'script worker sent a message past the size limit; killing it');
        child.kill('SIGKILL');
      },
    );
    pipe.on('data', (chunk: string) => lines.push(chunk));
    pipe.on('error', (error) => this.#options.logger.warn({ err: error, worker: index }, 'script worker pipe error'));
    child.on('error', (error) => this.#options.logger.warn({ err: error, worker: index }, 'script worker process error'));
    child.on('exit', (code, signal) => {
      pipe.destroy();
      const reason = `the script worker died (${signal ?? `exit code ${code}`})`;
      // Runs waiting to follow another go too: the one they follow has failed, or may have run in part.
      for (const flights of [this.#inFlight, this.#waiting]) {
        for (const [runId, flight] of flights) if (flight.worker === worker) this.#finish(runId, failed(reason));
      }
      if (this.#stopping) return;
      this.#options.logger.error({ worker: index, code, signal }, 'script worker died; starting a new one');
      this.#workers[index] = this.#spawn(index);
    });
    return worker;
  }

  #onMessage(worker: Worker, message: FromWorker): void {
    if (message.kind === 'done') {
      this.#finish(message.runId, message.result);
      return;
    }
    const flight = this.#flightOf(message.runId);
    if (!flight) return;
    let args: unknown[];
    try {
      args = JSON.parse(message.argsJson) as unknown[];
    } catch {
      args = [];
    }
    const reply = (answer: { json?: string; error?: string }) => {
      // The run may have ended (wall time) or the worker died while the host worked: then nobody waits.
      worker.outbox.push({ kind: 'reply', callId: message.callId, ...answer });
    };
    flight.host(message.namespace, message.fn, args).then(
      (value) => reply(value === undefined ? {} : { json: JSON.stringify(value) }),
      (error: unknown) => reply({ error: error instanceof Error ? error.message : String(error) }),
    );
  }

  #finish(runId: number, result: RunResult): void {
    const flight = this.#flightOf(runId);
    if (!flight) return;
    this.#inFlight.delete(runId);
    this.#waiting.delete(runId);
    // The run following it starts now in its worker: its time counts from here.
    const follower = this.#followers.get(runId);
    if (follower !== undefined) {
      this.#followers.delete(runId);
      const next = this.#waiting.get(follower);
      if (next) {
        this.#waiting.delete(follower);
        this.#inFlight.set(follower, { ...next, deadline: this.#deadline() });
      }
    }
    flight.resolve(result);
  }
}

/**
 * JSON of an object callers pass again and again without changing it (the engine's namespace map, a trigger
 * version's globals): made once per object.
 */
const jsonCache = new WeakMap<object, string>();
function jsonOnce(value: object): string {
  let json = jsonCache.get(value);
  if (json === undefined) {
    json = JSON.stringify(value);
    jsonCache.set(value, json);
  }
  return json;
}

function failed(error: string): RunResult {
  return { status: 'failed', error, line: null, logs: [], durationMs: 0 };
}

/** FNV-1a: cheap, stable placement of an account on a worker. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}
