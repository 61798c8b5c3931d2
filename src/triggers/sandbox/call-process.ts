/**
 * A call process: answers the namespace calls a script worker does not answer on its own thread (`sql`, and
 * pure functions whose cost is not known to be small; see local-calls.ts), one at a time, for any account.
 * Started by the worker's CallPool, which kills it when a call outlasts its run's CPU time: SQLite cannot be
 * stopped otherwise (better-sqlite3 has no sqlite3_interrupt, its SQLite is built without a progress
 * handler, and a worker thread stuck in sqlite3_step ignores Worker.terminate()).
 *
 * Lines on its pipe (fd 3), in the framing of wire.ts: `R` once it is ready; then for each
 * `<callId>\t<accountId>\t<namespace>\t<fn>\t<argsJson>` it receives, `<callId>\t<reply>` (see callLocal).
 */
import { Socket } from 'node:net';
import { Worker } from 'node:worker_threads';
import { callLocal, errorReply } from './local-calls.js';
import { LineReader, split } from './wire.js';

// Its worker gone, nobody will kill it: a thread of its own ends it even while a call holds the main thread
// (a worker killed with SIGKILL mid-call would otherwise leave it running a query without end).
const watchdog = new Worker(
  `const { workerData } = require('node:worker_threads');
   setInterval(() => { if (process.ppid !== workerData) process.kill(process.pid, 'SIGKILL'); }, 500);`,
  { eval: true, workerData: process.ppid },
);
watchdog.unref();

const pipe = new Socket({ fd: 3, readable: true, writable: true });
pipe.setEncoding('utf8');
pipe.on('close', () => process.exit(0));
pipe.on('error', () => process.exit(0));

const lines = new LineReader(
  (line) => {
    const fields = split(line, 5);
    const [callId, accountId, namespace, fn, argsJson] = fields as [string, string, string, string, string];
    const reply = fields.length === 5 ? (callLocal(namespace, fn, argsJson, accountId) ?? errorReply('no such function')) : errorReply('not a call');
    pipe.write(`${callId}\t${reply}\n`);
  },
  () => process.exit(1),
);
pipe.on('data', (chunk: string) => lines.push(chunk));
pipe.write('R\n');

process.on('SIGTERM', () => process.exit(0));
