import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createAccount, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

const RUNAWAY = 'with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c';

/** Process ids of this process's script workers (the service runs in the test process); undefined without /proc. */
function scriptWorkerPids(): number[] | undefined {
  try {
    const pids: number[] = [];
    for (const task of readdirSync(`/proc/${process.pid}/task`)) {
      for (const pid of readFileSync(`/proc/${process.pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean)) {
        if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('worker.')) pids.push(Number(pid));
      }
    }
    return pids.sort();
  } catch {
    return undefined;
  }
}

/**
 * The attack as it was made on the running service: one account's script runs a SQL query without end while
 * another account asks its trigger for answers (POST /events with awaitReply). The query ran on the script
 * worker's thread: the other account got no answer, and the worker was killed after the wall time.
 */
for (const dialect of DIALECTS) {
  describe(`one account's runaway script does not stall another's (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let attacker: TestAccount;
    let neighbour: TestAccount;

    before(async () => {
      // The defaults (one script worker, 1 s of CPU time, 30 s of wall time), as the attack found them.
      service = await startService(dialect.name);
      attacker = await createAccount(service, 'attacker');
      neighbour = await createAccount(service, 'neighbour');
    });
    after(() => service?.stop());

    const trigger = async (account: TestAccount, name: string, script: string): Promise<string> => {
      const created = await service.request('POST', '/triggers', { token: account.token, body: { name, events: [name], script } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body.id as string;
    };
    const ask = (account: TestAccount, type: string, data: unknown) =>
      service.request('POST', '/events', { token: account.token, body: { type, data, awaitReply: true, replyTimeoutMs: 5000 } });

    it("answers another account's events while one account's sql query runs away, and stops the query at the CPU limit", async () => {
      const runaway = await trigger(attacker, 'runaway', `trigger.reply('running'); sql.select('${RUNAWAY}');`);
      await trigger(neighbour, 'question', `trigger.reply({ doubled: event.data.n * 2 });`);
      assert.deepEqual((await ask(neighbour, 'question', { n: 0 })).body.reply, { doubled: 0 }, 'the neighbour is answered to begin with');
      const workers = scriptWorkerPids();

      // The attacker's script answers, then starts its query: the neighbour asks while it runs.
      assert.equal((await ask(attacker, 'runaway', {})).body.reply, 'running');
      for (let n = 1; n <= 3; n++) {
        const answered = await ask(neighbour, 'question', { n });
        assert.deepEqual(answered.body.reply, { doubled: n * 2 }, `question ${n} answered while the attacker's query runs`);
      }

      const deadline = Date.now() + 20_000;
      let execution: Record<string, any> | undefined;
      while (!execution && Date.now() < deadline) {
        [execution] = (await service.request('GET', `/executions?triggerId=${runaway}`, { token: attacker.token })).body.items as Record<string, any>[];
        if (!execution) await sleep(50);
      }
      assert.ok(execution, 'the runaway run ended');
      assert.equal(execution.status, 'failed');
      assert.match(execution.error, /^timeout: the run used more than 1000 ms of CPU time/);
      assert.deepEqual(scriptWorkerPids(), workers, 'the script worker was not killed');

      // Both accounts run scripts and queries as before.
      assert.deepEqual((await ask(neighbour, 'question', { n: 4 })).body.reply, { doubled: 8 });
      await trigger(attacker, 'count', `sql.execute('create table if not exists t (x)'); trigger.reply(sql.select('select count(*) as n from t')[0].n);`);
      assert.equal((await ask(attacker, 'count', {})).body.reply, 0);
    });

    it("answers another account's events while one account's many runs spin at their CPU limit", async () => {
      const spin = await trigger(attacker, 'spin', 'for (;;) {}');
      await trigger(neighbour, 'again', `trigger.reply({ tripled: event.data.n * 3 });`);
      for (let i = 0; i < 40; i++) assert.equal((await service.request('POST', '/events', { token: attacker.token, body: { type: 'spin', data: {} } })).status, 202);
      for (let n = 1; n <= 5; n++) {
        const answered = await ask(neighbour, 'again', { n });
        assert.deepEqual(answered.body.reply, { tripled: n * 3 }, `question ${n} answered while 40 runs spin`);
      }
      // Proven: the spins still queued would each take their second of CPU before the service stops.
      assert.equal((await service.request('DELETE', `/triggers/${spin}`, { token: attacker.token })).status, 204);
    });
  });
}
