/**
 * Messages between the service and a script worker process, over a pipe of their own in the text framing of
 * `wire.ts`. What one side has to say in one turn of its event loop goes in one write (see `outbox.ts`).
 * What does not change from run to run (a script, a namespace list, the limits) is sent once.
 */

export interface RunLimits {
  /** CPU time a run may use inside the isolate (ms). */
  readonly timeoutMs: number;
  /** Wall time a run may take including host calls (ms); past it the worker disposes the isolate. */
  readonly wallTimeoutMs: number;
  /** Heap of one account's isolate (MiB). */
  readonly memoryMb: number;
}

/** A script a worker is told once and runs by its number. */
export interface ScriptDefinition {
  readonly kind: 'script';
  readonly ref: number;
  /** Isolates are per account: scripts of two accounts never share one. */
  readonly accountId: string;
  /** Scripts are compiled once per trigger version: the trigger id @ version (or a UDP service's key script). */
  readonly scriptId: string;
  readonly scriptName: string;
  readonly script: string;
  /** The namespaces the script can call on the host: the id of a {@link NamespaceList} sent before. */
  readonly namespaces: number;
}

/** `{ namespace: [function names] }`, sent once per worker and list. */
export interface NamespaceList {
  readonly kind: 'namespaces';
  readonly id: number;
  readonly json: string;
}

/** The worker may drop every script definition: the service sends again what it runs next. */
export interface ForgetScripts {
  readonly kind: 'forget';
}

export interface RunRequest {
  readonly kind: 'run';
  readonly runId: number;
  /** The {@link ScriptDefinition} to run. */
  readonly script: number;
  /** JSON of what the script sees as `event`. */
  readonly eventJson: string;
  /** JSON of the other values the script sees as globals (the trigger's global variables): `{ name: value }`. */
  readonly globalsJson: string;
  /**
   * The run this one follows (same sequence, sent before it): it starts only once that one has ended, host calls
   * and all. Absent, or a run already ended: it starts at once.
   */
  readonly after?: number | undefined;
}

export interface HostReply {
  readonly kind: 'reply';
  readonly callId: number;
  /** JSON text of the value, or undefined for `undefined`. */
  readonly json?: string | undefined;
  readonly error?: string | undefined;
}

export type ToWorker = ScriptDefinition | NamespaceList | ForgetScripts | RunRequest | HostReply;

export interface HostCall {
  readonly kind: 'call';
  readonly runId: number;
  readonly callId: number;
  readonly namespace: string;
  readonly fn: string;
  readonly argsJson: string;
}

export type RunStatus = 'success' | 'failed';

export interface RunResult {
  readonly status: RunStatus;
  /** Why it failed: the `trigger.exit` message, the uncaught error, `timeout`, `memory limit`, … */
  readonly error: string | null;
  /** Line of the script an uncaught error came from, when known. */
  readonly line: number | null;
  readonly logs: string[];
  readonly durationMs: number;
}

export interface RunDone {
  readonly kind: 'done';
  readonly runId: number;
  readonly result: RunResult;
}

export type FromWorker = HostCall | RunDone;

/** How a worker learns its limits: an environment variable of its process, JSON of {@link RunLimits}. */
export const LIMITS_ENV = 'IOTBRIDGE_SCRIPT_LIMITS';
