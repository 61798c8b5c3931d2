import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { WorkerPool, type ScriptRun } from '../../src/triggers/sandbox/worker-pool.js';

const RUNAWAY = 'with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c';
/** ~270 ms on the 2-core machine these tests were written on: under the limit of 1000 ms; 50 of them pass it on a machine 10 times faster. */
const SLOW = 'with recursive c(x) as (select 1 union all select x + 1 from c limit 1000000) select count(*) as n from c';

/** Child process ids of a process (Linux /proc); undefined elsewhere. */
function childrenOf(pid: number): number[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return undefined;
  }
}

/** Running (not gone, nor a zombie waiting to be reaped). */
function alive(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

/** Namespace calls answered on the worker's side (sql, pure functions): what they cost counts, and they cannot hold the worker. */
describe('script sandbox: calls answered in the worker count in the run, and do not hold the worker', () => {
  let pool: WorkerPool;
  /** Runaways take 8 s of CPU time here: what must happen meanwhile has time to, on any machine. */
  let patient: WorkerPool;
  let n = 0;

  before(() => {
    const options = { workers: 1, logger: pino({ level: 'silent' }), sqlDir: path.join(tmpdir(), `iotbridge-sql-${process.pid}-host-calls`) };
    pool = new WorkerPool({ ...options, limits: { timeoutMs: 1000, wallTimeoutMs: 20_000, memoryMb: 32 } });
    patient = new WorkerPool({ ...options, limits: { timeoutMs: 8000, wallTimeoutMs: 20_000, memoryMb: 32 } });
  });
  after(() => Promise.all([pool.stop(), patient.stop()]));

  const run = (script: string, extra: Partial<ScriptRun> = {}, on = pool) =>
    on.run({
      accountId: 'acc-1',
      scriptId: `s${n++}`,
      scriptName: 'trigger:test.js',
      script,
      event: {},
      namespaces: { trigger: [], demo: ['echo'] },
      host: async (namespace, fn, args) => ({ namespace, fn, args }),
      ...extra,
    });

  it('stops a run whose sql calls add up past its CPU time, though each is short', async () => {
    const result = await run(`for (var i = 0; i < 50; i++) { sql.select(${JSON.stringify(SLOW)}); log(i); }`, { accountId: 'many-queries' });
    assert.equal(result.status, 'failed', `${result.logs.length} queries ran`);
    assert.match(result.error ?? '', /^timeout: the run used more than 1000 ms of CPU time/);
    assert.ok(result.logs.length < 50, `stopped before its 50 queries: ${result.logs.length} ran`);
  });

  it('fails a run that catches the error of its stopped query, and refuses its later calls', async () => {
    const result = await run(`try { sql.select(${JSON.stringify(RUNAWAY)}); } catch (e) { log(e.message); }
      try { log(hash.crc32('x')); } catch (e) { log(e.message); }`, { accountId: 'catcher' });
    assert.equal(result.status, 'failed');
    assert.match(result.error ?? '', /^timeout/);
    assert.equal(result.logs.length, 2);
    for (const line of result.logs) assert.match(line, /^(sql\.select|hash\.crc32): timeout/);
    const next = await run(`log(sql.select('select 7 as n')[0].n, hash.crc32('x'))`, { accountId: 'catcher' });
    assert.deepEqual([next.status, next.logs], ['success', ['7 2363233923']], 'the account runs queries again');
  });

  it("answers another account's runs while a runaway query, a costly pure call or endless cheap calls run", async () => {
    // json.patchApply: each copy of the whole document doubles it (40 of them: 2^40 copies).
    const doubling = JSON.stringify(Array.from({ length: 40 }, (_, i) => ({ op: 'copy', from: '', path: `/c${i}` })));
    const finished: string[] = [];
    const query = run(`sql.select(${JSON.stringify(RUNAWAY)});`, { accountId: 'runaway-sql' }, patient).then((r) => (finished.push('query'), r));
    const patch = run(`json.patchApply({ a: 1 }, ${doubling});`, { accountId: 'runaway-patch' }, patient).then((r) => (finished.push('patch'), r));
    // Each call cheap enough for the worker's own thread (~1 ms), without end: isolated-vm's clock stops during each.
    const cheap = run(`var s = new Array(8001).join('x'); for (;;) hash.crc64(s);`, { accountId: 'runaway-cheap' }, patient).then((r) => (finished.push('cheap'), r));
    await sleep(100);
    const neighbours = await Promise.all(
      Array.from({ length: 5 }, (_, i) => run(`log(demo.echo(${i}).args[0], geospatial.geodist(0, 0, 0, 1) > 0)`, { accountId: `neighbour-${i}` }, patient)),
    );
    assert.deepEqual(finished, [], 'the neighbours were answered first');
    assert.deepEqual(neighbours.map((r) => [r.status, r.logs]), Array.from({ length: 5 }, (_, i) => ['success', [`${i} true`]]));
    for (const result of await Promise.all([query, cheap])) {
      assert.equal(result.status, 'failed');
      assert.match(result.error ?? '', /^timeout/);
    }
    // The doubling document outgrows the call process's heap or the run's CPU time, whichever comes first.
    const patched = await patch;
    assert.equal(patched.status, 'failed');
    assert.match(patched.error ?? '', /^timeout|json\.patchApply: out of memory: the call needed more than 256 MB/);
  });

  it('refuses a transaction that would outlast its statement', async () => {
    const result = await run(`sql.execute('create table if not exists t (x)');
      try { sql.execute('begin'); } catch (e) { log(e.message); }
      sql.execute('insert into t values (1)');
      try { sql.execute('rollback'); } catch (e) { log(e.message); }
      log(sql.select('select count(*) as n from t')[0].n);`, { accountId: 'transactions' });
    assert.equal(result.status, 'success', result.error ?? '');
    assert.deepEqual(result.logs, [
      'sql.execute: a transaction cannot outlast its statement (BEGIN and SAVEPOINT are undone; each statement is a transaction of its own)',
      'sql.execute: cannot rollback - no transaction is active',
      '1',
    ]);
  });

  it('ends a call process stuck in a query when its worker is killed', { skip: childrenOf(process.pid) === undefined && 'needs /proc' }, async () => {
    const [worker] = patient.pids;
    const stuck = run(`sql.select(${JSON.stringify(RUNAWAY)});`, { accountId: 'stuck' }, patient);
    let callProcesses: number[] = [];
    for (let i = 0; i < 100 && callProcesses.length === 0; i++) {
      await sleep(100);
      callProcesses = (childrenOf(worker!) ?? []).filter(alive);
    }
    assert.equal(callProcesses.length, 1, `the query runs in a call process: ${callProcesses.map((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8')).join(', ')}`);
    // It starts (under tsx, in about a second) and runs the query, which has 8 s of CPU time: only the worker's death can end it now.
    await sleep(3000);
    process.kill(worker!, 'SIGKILL');
    assert.match((await stuck).error ?? '', /script worker died \(SIGKILL\)/);
    for (let i = 0; i < 50 && alive(callProcesses[0]!); i++) await sleep(100);
    assert.equal(alive(callProcesses[0]!), false, 'the call process went with its worker');
  });
});
