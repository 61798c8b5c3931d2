/**
 * The call processes of one script worker (call-process.ts): they answer the namespace calls that must not
 * run on the worker's own thread, each under a deadline (what is left of its run's CPU time), and a process
 * that misses one is killed (SIGKILL: the only thing that stops a SQLite statement here) and replaced when
 * next needed. A process holds one account's calls at a time, so a runaway account holds one process and
 * the other keeps answering everybody else; calls wait for a process in the order they came.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { errorReply } from './local-calls.js';
import { Outbox } from './outbox.js';
import { LineReader } from './wire.js';

/** What a call came to: the reply text (see callLocal), how long a process took over it, and whether it was stopped. */
export interface CallOutcome {
  readonly reply: string;
  readonly ms: number;
  readonly timedOut: boolean;
}

interface Call {
  readonly id: number;
  readonly runId: number;
  readonly accountId: string;
  readonly line: string;
  /** How long a process may take over it (ms). */
  readonly budgetMs: number;
  readonly resolve: (outcome: CallOutcome) => void;
}

interface Slot {
  readonly child: ChildProcess;
  readonly pipe: Socket;
  /** Calls written in one turn go in one write: a pipe write per call cost more than most calls. */
  readonly outbox: Outbox<string>;
  ready: boolean;
  /** The one account whose calls it holds, while it holds any. */
  account: string | undefined;
  /** Calls written to it, oldest first: it answers them in that order, so the first is the one under way. */
  readonly calls: Call[];
  /** `performance.now()` when the first call got under way, and its deadline. */
  started: number;
  deadline: NodeJS.Timeout | undefined;
  idleTimer: NodeJS.Timeout | undefined;
}

/** Call processes per worker: one may be held by a runaway account while another serves everybody else. */
const SIZE = 2;
/** A process idle this long is closed (it is started again on demand, in ~0.1–0.3 s). */
const IDLE_MS = 60_000;

// As the worker itself: TypeScript under tsx (tests, `npm run dev`), JavaScript when built.
const fromSource = import.meta.url.endsWith('.ts');
const PROCESS = fileURLToPath(new URL(fromSource ? './call-process.ts' : './call-process.js', import.meta.url));
/** A call process holds one call's arguments and answer at a time: its heap stays small (the isolate that gets the answer has 64 MiB by default). */
const HEAP_MB = 256;
const EXEC_ARGV = [`--max-old-space-size=${HEAP_MB}`, ...(fromSource ? ['--import', 'tsx'] : [])];

export class CallPool {
  readonly #slots: Slot[] = [];
  /** Calls not written to a process yet, oldest first. */
  readonly #queue: Call[] = [];
  /** The process holding an account's calls, while it holds any. */
  readonly #holding = new Map<string, Slot>();
  /** The process an account's last call went to: its database is open there, its statements prepared. */
  readonly #lastSlot = new Map<string, Slot>();
  #nextId = 1;

  /**
   * Answers `namespace.fn` for the account in a call process. `budgetMs` counts from when the process gets
   * to the call (waiting for it is not the run's CPU time; its wall time limit covers that).
   */
  call(runId: number, accountId: string, namespace: string, fn: string, argsJson: string, budgetMs: number): Promise<CallOutcome> {
    // The framing is one call per line: JSON.stringify writes no raw newline, but the text came from a script.
    if (argsJson.includes('\n')) return Promise.resolve({ reply: errorReply('arguments are not JSON'), ms: 0, timedOut: false });
    return new Promise((resolve) => {
      const id = this.#nextId++;
      this.#queue.push({ id, runId, accountId, line: `${id}\t${accountId}\t${namespace}\t${fn}\t${argsJson}\n`, budgetMs, resolve });
      this.#dispatch();
    });
  }

  /** The run ended: its calls not yet written to a process are answered so (one written ends by its deadline). */
  cancel(runId: number): void {
    for (let i = this.#queue.length - 1; i >= 0; i--) {
      const call = this.#queue[i]!;
      if (call.runId !== runId) continue;
      this.#queue.splice(i, 1);
      call.resolve({ reply: errorReply('the run ended'), ms: 0, timedOut: false });
    }
  }

  /**
   * Writes waiting calls, oldest first, to processes. A process holds one account's calls at a time, so a
   * runaway account holds one process at most; the account's further calls queue in that process (a round
   * trip costs ~0.3 ms, an account has up to 4 runs on isolate threads) unless another account waits for a
   * process: then its process finishes what it holds and goes to the call that waited longest.
   */
  #dispatch(): void {
    let waiting = false;
    let spawned = false;
    for (let i = 0; i < this.#queue.length; ) {
      const call = this.#queue[i]!;
      const holding = this.#holding.get(call.accountId);
      const slot = holding ? (waiting ? undefined : holding) : this.#freeSlot(call.accountId);
      if (!slot) {
        if (!holding) waiting = true;
        // Still starting, or all taken: an answer or a ready process dispatches again.
        if (!holding && !spawned && this.#slots.length < SIZE) {
          this.#slots.push(this.#spawn());
          spawned = true;
        }
        i++;
        continue;
      }
      this.#queue.splice(i, 1);
      this.#write(slot, call);
    }
  }

  #freeSlot(accountId: string): Slot | undefined {
    const last = this.#lastSlot.get(accountId);
    if (last && last.ready && last.account === undefined && this.#slots.includes(last)) return last;
    return this.#slots.find((slot) => slot.ready && slot.account === undefined);
  }

  #write(slot: Slot, call: Call): void {
    if (slot.account === undefined) {
      clearTimeout(slot.idleTimer);
      slot.account = call.accountId;
      this.#holding.set(call.accountId, slot);
      if (this.#lastSlot.size >= 10_000) this.#lastSlot.clear();
      this.#lastSlot.set(call.accountId, slot);
    }
    slot.calls.push(call);
    if (slot.calls.length === 1) this.#underWay(slot);
    slot.outbox.push(call.line);
  }

  /** The slot's first call is under way from now, until its run's CPU time is up. */
  #underWay(slot: Slot): void {
    slot.started = performance.now();
    // The only way to stop a statement (see call-process.ts): the account's resources go with the process.
    slot.deadline = setTimeout(() => this.#drop(slot, errorReply('timeout'), true), Math.max(1, Math.ceil(slot.calls[0]!.budgetMs)));
  }

  /** The process answered its first call: the next (if any) is under way. */
  #answered(slot: Slot, id: number, reply: string): void {
    const call = slot.calls[0];
    if (!call || call.id !== id) return; // cannot happen: it answers in order
    slot.calls.shift();
    clearTimeout(slot.deadline);
    call.resolve({ reply, ms: performance.now() - slot.started, timedOut: false });
    if (slot.calls.length > 0) {
      this.#underWay(slot);
      return;
    }
    this.#holding.delete(slot.account!);
    slot.account = undefined;
    slot.idleTimer = setTimeout(() => this.#drop(slot), IDLE_MS);
    slot.idleTimer.unref();
    this.#dispatch();
  }

  /**
   * Ends a process and forgets it; a new one starts when a call needs it. One with calls is killed (a
   * statement under way would not let a SIGTERM handler run): its first call gets `reply`, the others (not
   * started) wait for a process again.
   */
  #drop(slot: Slot, reply = errorReply('the call process died'), timedOut = false): void {
    const at = this.#slots.indexOf(slot);
    if (at === -1) return;
    this.#slots.splice(at, 1);
    clearTimeout(slot.idleTimer);
    clearTimeout(slot.deadline);
    slot.child.kill(slot.calls.length > 0 ? 'SIGKILL' : 'SIGTERM');
    if (slot.account !== undefined) this.#holding.delete(slot.account);
    const [first, ...rest] = slot.calls.splice(0);
    if (first) first.resolve({ reply, ms: timedOut ? first.budgetMs : performance.now() - slot.started, timedOut });
    this.#queue.unshift(...rest);
    this.#dispatch();
  }

  #spawn(): Slot {
    // Its output is not read: a call that runs out of memory makes V8 print a page of stack, once per such call.
    const child = spawn(process.execPath, [...EXEC_ARGV, PROCESS], { stdio: ['ignore', 'ignore', 'ignore', 'pipe'] });
    const pipe = child.stdio[3] as Socket;
    pipe.setEncoding('utf8');
    const outbox = new Outbox<string>((lines) => pipe.writable && pipe.write(lines.join('')));
    const slot: Slot = { child, pipe, outbox, ready: false, account: undefined, calls: [], started: 0, deadline: undefined, idleTimer: undefined };
    const lines = new LineReader(
      (line) => {
        if (line !== 'R') {
          const tab = line.indexOf('\t');
          this.#answered(slot, Number(line.slice(0, tab)), line.slice(tab + 1));
          return;
        }
        slot.ready = true;
        slot.idleTimer = setTimeout(() => this.#drop(slot), IDLE_MS);
        slot.idleTimer.unref();
        this.#dispatch();
      },
      () => this.#drop(slot, errorReply('the answer is too large')),
    );
    pipe.on('data', (chunk: string) => lines.push(chunk));
    pipe.on('error', () => undefined); // its exit follows
    child.on('error', () => undefined);
    child.on('exit', (code, signal) => {
      pipe.destroy();
      // One that never started would be started again and again for the calls waiting: they fail instead.
      if (!slot.ready) for (const call of this.#queue.splice(0)) call.resolve({ reply: errorReply('could not start a call process'), ms: 0, timedOut: false });
      // V8 aborts a process out of heap (exit code 134, SIGABRT): the call under way asked for too much memory.
      const outOfMemory = code === 134 || signal === 'SIGABRT';
      this.#drop(slot, errorReply(outOfMemory ? `out of memory: the call needed more than ${HEAP_MB} MB` : 'the call process died'));
    });
    return slot;
  }
}
