import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunResult } from '../../src/triggers/sandbox/protocol.js';
import { RunSequence, WorkerPool, type ScriptRun } from '../../src/triggers/sandbox/worker-pool.js';

/** The sandbox on its own: real worker processes, real isolated-vm isolates. */
describe('script sandbox (worker processes + isolated-vm)', () => {
  let pool: WorkerPool;
  let n = 0;

  before(() => {
    pool = new WorkerPool({
      workers: 2,
      // Wall time for a call process to start on a busy machine (under tsx, a second or more), less than demo.slow's 10 s.
      limits: { timeoutMs: 200, wallTimeoutMs: 6000, memoryMb: 32 },
      logger: pino({ level: 'silent' }),
      sqlDir: path.join(tmpdir(), `iotbridge-sql-${process.pid}`),
    });
  });
  after(() => pool.stop());

  const run = (script: string, extra: Partial<ScriptRun> = {}) =>
    pool.run({
      accountId: 'acc-1',
      scriptId: `s${n++}`,
      scriptName: 'trigger:test.js',
      script,
      event: { type: 'reading', data: { t: 21.5 } },
      namespaces: { trigger: [], demo: ['echo', 'fail', 'slow', 'hold'] },
      host: async (namespace, fn, args) => {
        if (fn === 'echo') return { namespace, fn, args };
        if (fn === 'slow') return new Promise((resolve) => setTimeout(() => resolve('late'), 10_000));
        throw new Error('no such thing');
      },
      ...extra,
    });

  it('runs a script with its globals and collects what it logs', async () => {
    const result = await run(`log('temperature', event.data.t); console.log({ a: 1 });`);
    assert.equal(result.status, 'success', result.error ?? '');
    assert.deepEqual(result.logs, ['temperature 21.5', '{"a":1}']);
    assert.ok(result.durationMs >= 0);
  });

  it('calls host namespaces in synchronous style and raises host errors in the script', async () => {
    const result = await run(`
      var r = demo.echo(1, 'two', { three: 3 });
      log(JSON.stringify(r));
      try { demo.fail(); } catch (e) { log('caught: ' + e.message); }
    `);
    assert.equal(result.status, 'success', result.error ?? '');
    assert.deepEqual(result.logs, ['{"namespace":"demo","fn":"echo","args":[1,"two",{"three":3}]}', 'caught: demo.fail: no such thing']);
  });

  it('fails an execution on trigger.exit with its message, even when the script catches it', async () => {
    const result = await run(`log('before'); try { trigger.exit('no position fix'); } catch (e) {} log('after');`);
    assert.deepEqual([result.status, result.error], ['failed', 'no position fix']);
    assert.deepEqual(result.logs, ['before', 'after']);
  });

  it('reports an uncaught error with its script line', async () => {
    const result = await run(`var a = 1;\nvar b = 2;\nthrow new Error('bad reading');`);
    assert.deepEqual([result.status, result.error, result.line], ['failed', 'bad reading', 3]);
    const syntax = await run(`var = ;`);
    assert.equal(syntax.status, 'failed');
    assert.match(syntax.error ?? '', /SyntaxError|Unexpected/);
  });

  it('stops an infinite loop at the CPU limit', async () => {
    const result = await run(`while (true) {}`);
    assert.equal(result.status, 'failed');
    assert.match(result.error ?? '', /^timeout/);
    assert.equal((await run(`log('still fine')`)).status, 'success', 'the account runs again afterwards');
  });

  it('stops a memory bomb at the memory limit, and the pool keeps working', async () => {
    const result = await run(`var a = []; while (true) { a.push(new Array(100000).fill('x' + a.length)); }`, { accountId: 'bomber' });
    assert.equal(result.status, 'failed');
    assert.match(result.error ?? '', /memory limit|timeout/);
    const after = await run(`log('ok')`, { accountId: 'bomber' });
    assert.deepEqual([after.status, after.logs], ['success', ['ok']]);
  });

  it('ends a run stuck in a host call at the wall time limit', async () => {
    const result = await run(`demo.slow();`);
    assert.equal(result.status, 'failed');
    assert.match(result.error ?? '', /^wall time limit/);
  });

  it('offers no way out: require, process, host references, constructor chains, Function, eval', async () => {
    const attempts = [
      `typeof require !== 'undefined' && require('fs')`,
      `typeof process !== 'undefined' && process.exit(1)`,
      `typeof __iotbCall !== 'undefined' || typeof __iotbLog !== 'undefined' || typeof __iotbExit !== 'undefined'`,
      `this.constructor.constructor('return typeof process !== "undefined" ? process : null')()`,
      `Function('return typeof require !== "undefined" ? require : null')()`,
      `eval('typeof globalThis.process !== "undefined" ? globalThis.process : null')`,
      `demo.echo.constructor('return typeof process !== "undefined" ? process : null')()`,
      `(function(){ return this })().constructor.constructor('return typeof module !== "undefined" ? module : null')()`,
      `Object.getPrototypeOf(demo.echo).constructor('return typeof Buffer !== "undefined" ? Buffer : null')()`,
    ];
    for (const expression of attempts) {
      const result = await run(`var found = (function () { try { return ${expression}; } catch (e) { return null; } })(); log(String(!!found));`);
      assert.equal(result.status, 'success', `${expression}: ${result.error}`);
      assert.deepEqual(result.logs, ['false'], expression);
    }
  });

  it('does not carry state from one run to the next (prototype pollution, globals)', async () => {
    await run(`Object.prototype.polluted = 'yes'; globalThis.leftover = 42; Array.prototype.push = null;`);
    const result = await run(`log(String(({}).polluted), String(typeof leftover), typeof [].push);`);
    assert.deepEqual(result.logs, ['undefined undefined function']);
    const frozen = await run(`try { log = null; } catch (e) {} try { demo.echo = null; } catch (e) {} log(typeof log, typeof demo.echo);`);
    assert.deepEqual(frozen.logs, ['function function']);
  });

  it('removes what a run added to the global object however it was added, and keeps the built-in bindings', async () => {
    const same = { scriptId: 'adds-globals@1' };
    const adds = `log([typeof implicit, typeof viaDefine, typeof viaDefines, typeof viaReflect, typeof viaEval, typeof viaGetter].join(' '), typeof JSON, typeof Math, typeof Date);
      implicit = 1;
      Object.defineProperty(globalThis, 'viaDefine', { value: 1, configurable: true });
      Object.defineProperties(globalThis, { viaDefines: { value: 1, configurable: true } });
      Reflect.defineProperty(globalThis, 'viaReflect', { value: 1, configurable: true });
      (0, eval)('var viaEval = 1');
      globalThis.__defineGetter__('viaGetter', function () { return 1; });
      JSON = null; try { delete globalThis.Math; } catch (e) {} globalThis.Date = 1;`;
    const clean = 'undefined undefined undefined undefined undefined undefined object object function';
    assert.deepEqual((await run(adds, same)).logs, [clean]);
    assert.deepEqual((await run(adds, same)).logs, [clean]);
    const watched = await run(`log(Object.defineProperty.name, Object.defineProperty.length, Reflect.defineProperty.length, Object.defineProperties.length, Object.defineProperty({}, 'a', { value: 5 }).a)`);
    assert.deepEqual(watched.logs, ['defineProperty 3 3 2 5'], 'the functions the runner watches behave as before');
  });

  it('gives the next run a usable global object after one made it non-extensible', async () => {
    await run(`Object.preventExtensions(globalThis);`);
    const after = await run(`implicitAfterFreeze = 2; log(implicitAfterFreeze);`);
    assert.deepEqual([after.status, after.logs], ['success', ['2']]);
  });

  it('fails the runs of a worker that dies with the reason, and replaces the worker', async () => {
    const before = pool.pids;
    const pending = run(`demo.slow();`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const pid of before) process.kill(pid, 'SIGKILL');
    const result = await pending;
    assert.equal(result.status, 'failed');
    assert.match(result.error ?? '', /script worker died \(SIGKILL\)/);
    const again = await run(`log('back')`);
    assert.deepEqual([again.status, again.logs], ['success', ['back']]);
    assert.ok(pool.pids.every((pid) => !before.includes(pid)), 'new worker processes');
  });

  it('runs the same compiled script many times with nothing carried over, even what cannot be deleted', async () => {
    const script = `var count = (typeof count === 'number' ? count : 0) + 1; implicit = (typeof implicit === 'number' ? implicit : 0) + 1; log(count, implicit, typeof stuck);`;
    const same = { scriptId: 'reused@1' };
    assert.deepEqual((await run(script, same)).logs, ['1 1 undefined']);
    assert.deepEqual((await run(script, same)).logs, ['1 1 undefined']);
    await run(`Object.defineProperty(globalThis, 'stuck', { value: 1, configurable: false });`);
    assert.deepEqual((await run(script, same)).logs, ['1 1 undefined'], 'a context that could not be cleaned is replaced');
    const frozen = await run(`'use strict'; try { Object.prototype.x = 1; } catch (e) { log(e.constructor.name); } try { JSON.parse = null; } catch (e) { log(e.constructor.name); }`);
    assert.deepEqual(frozen.logs, ['TypeError', 'TypeError']);
  });

  it('runs many scripts of one account at once on a cold worker (isolates still starting are waited for)', async () => {
    const results = await Promise.all(Array.from({ length: 24 }, (_, i) => run(`log(${i} * 2)`, { accountId: 'burst', scriptId: 'burst@1' })));
    assert.deepEqual(results.map((r) => r.status), Array(24).fill('success'), JSON.stringify(results.find((r) => r.status !== 'success')));
    assert.deepEqual(results.map((r) => r.logs[0]), Array.from({ length: 24 }, (_, i) => String(i * 2)));
  });

  it('runs a script on the worker alone while it needs nothing from the service, and from the start when it does', async () => {
    let hostCalls = 0;
    const extra = (t: number): Partial<ScriptRun> => ({
      scriptId: 'sometimes-host@1',
      event: { data: { t } },
      host: async (_namespace, fn, args) => {
        hostCalls++;
        return { fn, args };
      },
    });
    // A discarded attempt would show as a doubled line, a caught refusal or a leftover global.
    const script = `log('before', event.data.t, typeof leftover, geospatial.geodist(0, 0, 0, 0));
      if (event.data.t > 30) { try { log(JSON.stringify(demo.echo(event.data.t))); } catch (e) { log('caught ' + e.message); } }
      globalThis.leftover = 1; log('after');`;
    assert.deepEqual((await run(script, extra(20))).logs, ['before 20 undefined 0', 'after']);
    assert.equal(hostCalls, 0);
    const needing = await run(script, extra(35));
    assert.deepEqual([needing.status, needing.logs], ['success', ['before 35 undefined 0', '{"fn":"echo","args":[35]}', 'after']]);
    assert.equal(hostCalls, 1, 'the host is called once');
    assert.deepEqual((await run(script, extra(21))).logs, ['before 21 undefined 0', 'after']);
    assert.equal(hostCalls, 1);
  });

  it('starts a run again in a clean context when its discarded attempt left something that cannot be removed', async () => {
    const result = await run(`log('a'); try { trigger.exit('stopped'); } catch (e) {}
      Object.defineProperty(globalThis, 'pinned', { value: 1, configurable: false }); demo.echo(1); log(typeof pinned);`);
    assert.deepEqual([result.status, result.error, result.logs], ['failed', 'stopped', ['a', 'number']]);
    assert.deepEqual((await run(`log(typeof pinned)`)).logs, ['undefined']);
  });

  it('runs short scripts of an account while another of its runs waits for the service', async () => {
    let release!: () => void;
    const waiting = run(`log(demo.hold())`, {
      accountId: 'busy',
      host: () => new Promise((resolve) => (release = () => resolve('released'))),
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const quick = await Promise.all(Array.from({ length: 12 }, (_, i) => run(`log(${i} + 1)`, { accountId: 'busy', scriptId: 'quick@1' })));
    assert.deepEqual(quick.map((r) => r.logs[0]), Array.from({ length: 12 }, (_, i) => String(i + 1)));
    release();
    assert.deepEqual((await waiting).logs, ['released']);
  });

  it('fails a run whose event is not JSON without holding up the runs sent with it', async () => {
    const [bad, good] = await Promise.all([run(`log('never')`, { event: { data: { big: 1n } } }), run(`log('fine')`)]);
    assert.deepEqual([bad.status, bad.logs], ['failed', []]);
    assert.match(bad.error ?? '', /not JSON/);
    assert.deepEqual([good.status, good.logs], ['success', ['fine']]);
  });

  it('gives each run the namespaces of its own list (lists are sent to a worker once)', async () => {
    const probe = `log(typeof demo, typeof other)`;
    const other = { namespaces: { trigger: [], other: ['thing'] } };
    assert.deepEqual((await run(probe)).logs, ['object undefined']);
    assert.deepEqual((await run(probe, other)).logs, ['undefined object']);
    assert.deepEqual((await run(probe)).logs, ['object undefined']);
  });

  it('never repeats a write to the account database when a run starts again on an isolate thread', async () => {
    const result = await run(
      `sql.execute('create table if not exists once_only (x integer)'); sql.execute('insert into once_only values (1)');
       demo.echo(1); log(sql.select('select count(*) as n from once_only')[0].n);`,
      { accountId: 'sql-once' },
    );
    assert.equal(result.status, 'success', result.error ?? '');
    assert.deepEqual(result.logs, ['1']);
  });

  it('a run stopped at its CPU limit leaves nothing to the account\'s next run', async () => {
    const stopped = await run(`globalThis.partial = 1; while (true) {}`, { accountId: 'stopped' });
    assert.match(stopped.error ?? '', /timeout/);
    assert.deepEqual((await run(`log(typeof partial)`, { accountId: 'stopped' })).logs, ['undefined']);
  });

  it("a script's long first run does not hold another account's runs on the same worker", async () => {
    const single = new WorkerPool({ workers: 1, limits: { timeoutMs: 500, wallTimeoutMs: 3000, memoryMb: 32 }, logger: pino({ level: 'silent' }), sqlDir: path.join(tmpdir(), `iotbridge-sql-${process.pid}-single`) });
    try {
      const base = { scriptName: 'trigger:test.js', event: {}, namespaces: { trigger: [], demo: ['echo'] }, host: async () => 'answered' };
      await single.run({ ...base, accountId: 'warm-up', scriptId: 'warm@1', script: 'log(1)' });
      const finished: string[] = [];
      const looping = single.run({ ...base, accountId: 'looping', scriptId: 'loop@1', script: 'while (true) {}' }).then((r) => finished.push(`looping ${r.status}`));
      const other = single.run({ ...base, accountId: 'neighbour', scriptId: 'quick@1', script: 'log(demo.echo())' }).then((r) => finished.push(`neighbour ${r.status}`));
      await Promise.all([looping, other]);
      assert.deepEqual(finished, ['neighbour success', 'looping failed']);
    } finally {
      await single.stop();
    }
  });

  /** Runs of one script sent in the same turn: the worker runs them together, in one call into the isolate. */
  const together = (scriptId: string, script: string, events: unknown[], extra: Partial<ScriptRun> = {}) =>
    Promise.all(events.map((data) => run(script, { accountId: `batch-${scriptId}`, scriptId, event: { data }, ...extra })));

  it('runs runs of one script sent together as a batch, each with its own event and nothing carried over', async () => {
    const results = await together('batch-plain@1', `log(event.data.n, typeof previous); globalThis.previous = event.data.n;`, Array.from({ length: 40 }, (_, n) => ({ n })));
    assert.deepEqual(results.map((r) => [r.status, r.logs]), Array.from({ length: 40 }, (_, n) => ['success', [`${n} undefined`]]));
    // A batch gives its runs equal shares of its time: identical durations show the runs did go as one.
    const durations = results.map((r) => r.durationMs);
    assert.ok(new Set(durations).size < durations.length, `some runs shared a batch: ${durations.join(', ')}`);
  });

  it('settles every run of a batch on its own terms: errors, exits, service calls, spoiled contexts', async () => {
    let hostCalls = 0;
    const script = `var k = event.data.k;
      log('run', k, typeof spoiled);
      if (k === 'throw') throw new Error('bad reading ' + k);
      if (k === 'timed-out') throw new Error('the meter timed out');
      if (k === 'value') throw 'a string';
      if (k === 'object') throw { code: 7 };
      if (k === 'exit') trigger.exit('exited on purpose');
      if (k === 'host') log(JSON.stringify(demo.echo(k)));
      if (k === 'spoil') Object.defineProperty(globalThis, 'spoiled', { value: 1, configurable: false });`;
    const kinds = ['ok', 'throw', 'ok', 'timed-out', 'value', 'object', 'exit', 'host', 'ok', 'spoil', 'ok', 'ok'];
    const results = await together('batch-mixed@1', script, kinds.map((k) => ({ k })), {
      host: async (namespace, fn, args) => {
        hostCalls++;
        return { fn, args };
      },
    });
    const byKind = (k: string) => results.filter((_, i) => kinds[i] === k);
    for (const r of byKind('ok')) assert.deepEqual([r.status, r.logs], ['success', ['run ok undefined']], 'no run sees what another left');
    assert.deepEqual(byKind('throw').map((r) => [r.status, r.error, r.line]), [['failed', 'bad reading throw', 3]]);
    assert.deepEqual(byKind('timed-out').map((r) => [r.status, r.error]), [['failed', 'the meter timed out']], 'a script error that says "timed out" is not a CPU timeout');
    assert.deepEqual(byKind('value').map((r) => [r.status, r.error]), [['failed', 'a string']]);
    assert.deepEqual(byKind('object').map((r) => r.status), ['failed']);
    assert.deepEqual(byKind('exit').map((r) => [r.status, r.error, r.logs]), [['failed', 'exited on purpose', ['run exit undefined']]]);
    assert.deepEqual(byKind('host').map((r) => [r.status, r.logs]), [['success', ['run host undefined', '{"fn":"echo","args":["host"]}']]]);
    assert.equal(hostCalls, 1, 'the run that needs the service runs once with it, its attempt in the batch left no trace');
    assert.deepEqual(byKind('spoil').map((r) => r.status), ['success']);
    // A run on its own gets the same descriptions as one in a batch.
    const alone = await run(script, { accountId: 'batch-alone', scriptId: 'batch-mixed@1', event: { data: { k: 'object' } } });
    assert.equal(alone.error, byKind('object')[0]!.error);
  });

  it('stops a batch that runs too long, and only its looping run fails', async () => {
    const results = await together('batch-loop@1', `log(event.data.i); if (event.data.i === 3) while (true) {}`, Array.from({ length: 8 }, (_, i) => ({ i })));
    assert.deepEqual(
      results.map((r) => [r.status, r.logs]),
      Array.from({ length: 8 }, (_, i) => [i === 3 ? 'failed' : 'success', [String(i)]]),
    );
    assert.match(results[3]!.error ?? '', /timeout/);
  });

  describe('sequences (an endpoint\'s runs, handed over at once)', () => {
    /** A host whose calls note when they start and end, each taking `ms(args)` milliseconds. */
    const timedHost = (ms: (args: unknown[]) => number) => {
      const log: string[] = [];
      const host = async (_namespace: string, fn: string, args: unknown[]) => {
        log.push(`start ${String(args[0])}`);
        await sleep(ms(args));
        log.push(`end ${String(args[0])}`);
        return fn;
      };
      return { log, host };
    };

    it('runs a sequence one after another in the order given, host calls and all, runs that need nothing from the service among them', async () => {
      // Earlier calls take longer: runs that overlapped would end in another order.
      const { log, host } = timedHost((args) => 60 - Number(args[0]) * 4);
      const sequence = new RunSequence();
      const script = `var n = event.data.n; if (n % 3 === 0) demo.echo(n); log(n);`;
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, n) => run(script, { accountId: 'seq-order', scriptId: 'seq-order@1', event: { data: { n } }, host, sequence })),
      );
      assert.deepEqual(results.map((r) => [r.status, r.logs]), Array.from({ length: 12 }, (_, n) => ['success', [String(n)]]));
      assert.deepEqual(log, [0, 3, 6, 9].flatMap((n) => [`start ${n}`, `end ${n}`]));
    });

    it('keeps the order across scripts of one sequence (several triggers of one event)', async () => {
      const { log, host } = timedHost((args) => (String(args[0]).startsWith('a') ? 30 : 5));
      const sequence = new RunSequence();
      const runs: Promise<RunResult>[] = [];
      for (let n = 0; n < 5; n++) {
        for (const name of ['a', 'b']) {
          runs.push(run(`demo.echo('${name}' + event.data.n);`, { accountId: 'seq-scripts', scriptId: `seq-${name}@1`, event: { data: { n } }, host, sequence }));
        }
      }
      assert.deepEqual((await Promise.all(runs)).map((r) => r.status), Array(10).fill('success'));
      assert.deepEqual(log, [0, 1, 2, 3, 4].flatMap((n) => [`start a${n}`, `end a${n}`, `start b${n}`, `end b${n}`]));
    });

    it('starts a run of a sequence at once when the one before has ended, and goes on after a failed one', async () => {
      const sequence = new RunSequence();
      const first = await run(`throw new Error('first')`, { accountId: 'seq-later', sequence });
      const second = await run(`log('second')`, { accountId: 'seq-later', sequence });
      assert.deepEqual([first.status, second.status, second.logs], ['failed', 'success', ['second']]);
    });

    it('does not take a worker for stuck while a sequence\'s runs wait their turn longer than one run may take', async () => {
      // Stuck means a run past its wall time plus 2 s: five runs of 700 ms each wait longer than that in all.
      const short = new WorkerPool({ workers: 1, limits: { timeoutMs: 200, wallTimeoutMs: 1000, memoryMb: 32 }, logger: pino({ level: 'silent' }), sqlDir: path.join(tmpdir(), `iotbridge-sql-${process.pid}`) });
      try {
        const { log, host } = timedHost(() => 700);
        const sequence = new RunSequence();
        const results = await Promise.all(
          Array.from({ length: 5 }, (_, n) =>
            short.run({ accountId: 'seq-long', scriptId: 'seq-long@1', scriptName: 'trigger:long.js', script: `demo.echo(event.n)`, event: { n }, namespaces: { demo: ['echo'] }, host, sequence }),
          ),
        );
        assert.deepEqual(results.map((r) => [r.status, r.error]), Array(5).fill(['success', null]));
        assert.deepEqual(log, [0, 1, 2, 3, 4].flatMap((n) => [`start ${n}`, `end ${n}`]));
      } finally {
        await short.stop();
      }
    });

    it('fails the runs of a sequence waiting behind a run whose worker dies, and runs later ones on the new worker', async () => {
      const sequence = new RunSequence();
      const pending = [run(`demo.slow();`, { accountId: 'seq-dies', sequence }), run(`log('two')`, { accountId: 'seq-dies', sequence }), run(`log('three')`, { accountId: 'seq-dies', sequence })];
      await sleep(300);
      const before = pool.pids;
      for (const pid of before) process.kill(pid, 'SIGKILL');
      const results = await Promise.all(pending);
      assert.deepEqual(results.map((r) => r.status), ['failed', 'failed', 'failed']);
      for (const r of results) assert.match(r.error ?? '', /script worker died/);
      const again = await run(`log('after')`, { accountId: 'seq-dies', sequence });
      assert.deepEqual([again.status, again.logs], ['success', ['after']]);
    });
  });

  it('keeps accounts in separate isolates', async () => {
    const a = await run(`log(typeof leak)`, { accountId: 'tenant-a', globals: { leak: 'a-secret' } });
    const b = await run(`log(typeof leak)`, { accountId: 'tenant-b', globals: {} });
    assert.deepEqual([a.logs, b.logs], [['string'], ['undefined']]);
  });
});
