/**
 * Messages between the service and a script worker process (child_process IPC, JSON: for these small
 * messages of strings and numbers it costs half of the structured clone on the service's side).
 * Each IPC message is an array: what one side has to say in one turn of its event loop goes together,
 * one pipe write instead of one per run (see `outbox.ts`).
 */

export interface RunLimits {
  /** CPU time a run may use inside the isolate (ms). */
  readonly timeoutMs: number;
  /** Wall time a run may take including host calls (ms); past it the worker disposes the isolate. */
  readonly wallTimeoutMs: number;
  /** Heap of one account's isolate (MiB). */
  readonly memoryMb: number;
}

export interface RunRequest {
  readonly kind: 'run';
  readonly runId: number;
  /** Isolates are per account: scripts of two accounts never share one. */
  readonly accountId: string;
  /** Scripts are compiled once per trigger version. */
  readonly scriptId: string;
  readonly scriptName: string;
  readonly script: string;
  /** JSON of what the script sees as `event`. */
  readonly eventJson: string;
  /** JSON of the other values the script sees as globals (the trigger's global variables): `{ name: value }`. */
  readonly globalsJson: string;
  /** The namespaces the script can call on the host: the id of a {@link NamespaceList} sent before. */
  readonly namespaces: number;
  readonly limits: RunLimits;
}

/** `{ namespace: [function names] }`, sent once per worker and list rather than with every run. */
export interface NamespaceList {
  readonly kind: 'namespaces';
  readonly id: number;
  readonly json: string;
}

export interface HostReply {
  readonly kind: 'reply';
  readonly callId: number;
  /** JSON text of the value, or undefined for `undefined`. */
  readonly json?: string | undefined;
  readonly error?: string | undefined;
}

export type ToWorker = RunRequest | HostReply | NamespaceList;

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
