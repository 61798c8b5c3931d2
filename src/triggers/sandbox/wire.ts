/**
 * The text framing of messages between the service and a script worker: one message per line, fields
 * separated by tabs, JSON texts (an event, globals, a value, a result) placed as they are. JSON.stringify
 * never writes a raw tab or newline, so nothing is escaped twice; child_process IPC escaped every JSON text
 * inside a message again and parsed it twice, a quarter of a worker's work on a trivial trigger.
 */
import type { FromWorker, ToWorker } from './protocol.js';

export function encodeToWorker(message: ToWorker): string {
  switch (message.kind) {
    case 'run':
      if (message.after !== undefined) return `A\t${message.runId}\t${message.after}\t${message.script}\t${message.globalsJson}\t${message.eventJson}\n`;
      return `R\t${message.runId}\t${message.script}\t${message.globalsJson}\t${message.eventJson}\n`;
    case 'reply':
      return `Y\t${message.callId}\t${message.json ?? ''}\t${message.error === undefined ? '' : JSON.stringify(message.error)}\n`;
    case 'script': {
      const { accountId, scriptId, scriptName, script } = message;
      return `S\t${message.ref}\t${message.namespaces}\t${JSON.stringify({ accountId, scriptId, scriptName, script })}\n`;
    }
    case 'namespaces':
      return `N\t${message.id}\t${message.json}\n`;
    case 'forget':
      return 'F\n';
  }
}

/** A line from the service; undefined when it is not one this version writes. */
export function decodeToWorker(line: string): ToWorker | undefined {
  const fields = split(line, line.startsWith('A\t') ? 6 : 5);
  switch (fields[0]) {
    case 'R':
      return fields.length === 5 ? { kind: 'run', runId: Number(fields[1]), script: Number(fields[2]), globalsJson: fields[3]!, eventJson: fields[4]! } : undefined;
    case 'A':
      return fields.length === 6 ? { kind: 'run', runId: Number(fields[1]), after: Number(fields[2]), script: Number(fields[3]), globalsJson: fields[4]!, eventJson: fields[5]! } : undefined;
    case 'Y': {
      if (fields.length !== 4) return undefined;
      const [, callId, json, error] = fields;
      return { kind: 'reply', callId: Number(callId), ...(json === '' ? {} : { json }), ...(error === '' ? {} : { error: JSON.parse(error!) as string }) };
    }
    case 'S': {
      if (fields.length !== 4) return undefined;
      const { accountId, scriptId, scriptName, script } = JSON.parse(fields[3]!) as { accountId: string; scriptId: string; scriptName: string; script: string };
      return { kind: 'script', ref: Number(fields[1]), namespaces: Number(fields[2]), accountId, scriptId, scriptName, script };
    }
    case 'N':
      return fields.length === 3 ? { kind: 'namespaces', id: Number(fields[1]), json: fields[2]! } : undefined;
    case 'F':
      return { kind: 'forget' };
    default:
      return undefined;
  }
}

export function encodeFromWorker(message: FromWorker): string {
  if (message.kind === 'done') {
    const { result } = message;
    // Most runs succeed and log nothing: then their duration alone (a JSON number, not an object) says it.
    if (result.status === 'success' && result.logs.length === 0) return `D\t${message.runId}\t${result.durationMs}\n`;
    return `D\t${message.runId}\t${JSON.stringify(result)}\n`;
  }
  return `C\t${message.runId}\t${message.callId}\t${message.namespace}\t${message.fn}\t${message.argsJson}\n`;
}

/**
 * A line from a worker. A worker runs hostile code, so a line that is not well formed is refused
 * (undefined) rather than trusted; what it names is still checked by whoever handles it.
 */
export function decodeFromWorker(line: string): FromWorker | undefined {
  const fields = split(line, 6);
  try {
    if (fields[0] === 'D' && fields.length === 3) {
      const runId = Number(fields[1]);
      const result = fields[2]!;
      if (result.startsWith('{')) return { kind: 'done', runId, result: JSON.parse(result) as never };
      const durationMs = Number(result);
      if (result !== '' && Number.isFinite(durationMs)) return { kind: 'done', runId, result: { status: 'success', error: null, line: null, logs: [], durationMs } };
    }
    if (fields[0] === 'C' && fields.length === 6) {
      const [, runId, callId, namespace, fn, argsJson] = fields as [string, string, string, string, string, string];
      return { kind: 'call', runId: Number(runId), callId: Number(callId), namespace, fn, argsJson };
    }
  } catch {
    // not JSON: refused below
  }
  return undefined;
}

/** The first `max - 1` tab-separated fields, and the rest of the line as the last. */
export function split(line: string, max: number): string[] {
  const fields: string[] = [];
  let start = 0;
  while (fields.length < max - 1) {
    const tab = line.indexOf('\t', start);
    if (tab === -1) break;
    fields.push(line.slice(start, tab));
    start = tab + 1;
  }
  fields.push(line.slice(start));
  return fields;
}

/** Longest line either side accepts (a run's result with its logs, a namespace value): far past any real one. */
export const MAX_LINE = 64 * 1024 * 1024;

/**
 * Cuts a stream of text into lines; a line cut between two chunks is kept until its end arrives. A line
 * longer than `maxLine` is not kept growing: `onOverflow` is called and the rest of the stream ignored (a
 * peer that writes one has failed, or is hostile).
 */
export class LineReader {
  readonly #onLine: (line: string) => void;
  readonly #onOverflow: () => void;
  readonly #maxLine: number;
  #rest = '';
  #failed = false;

  constructor(onLine: (line: string) => void, onOverflow: () => void, maxLine = MAX_LINE) {
    this.#onLine = onLine;
    this.#onOverflow = onOverflow;
    this.#maxLine = maxLine;
  }

  push(chunk: string): void {
    if (this.#failed) return;
    let start = 0;
    let newline = chunk.indexOf('\n');
    if (newline === -1) {
      this.#rest += chunk;
      if (this.#rest.length > this.#maxLine) this.#overflow();
      return;
    }
    let line = this.#rest + chunk.slice(0, newline);
    this.#rest = '';
    for (;;) {
      if (line.length > this.#maxLine) return this.#overflow();
      this.#onLine(line);
      start = newline + 1;
      newline = chunk.indexOf('\n', start);
      if (newline === -1) break;
      line = chunk.slice(start, newline);
    }
    this.#rest = chunk.slice(start);
    if (this.#rest.length > this.#maxLine) this.#overflow();
  }

  #overflow(): void {
    this.#failed = true;
    this.#rest = '';
    this.#onOverflow();
  }
}
