import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

for (const dialect of DIALECTS) {
  describe(`script namespaces: trigger, accumulator, queue (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let account: TestAccount;
    let other: TestAccount;
    const run = (script: string) => runScript(service, account.token, script);

    before(async () => {
      service = await startService(dialect.name, { scriptWorkers: 2 });
      account = await createAccount(service, 'trigger-ns');
      other = await createAccount(service, 'other');
      const serviceId = await createService(service, account.token);
      // Events of one endpoint are handled in order: a waiting run and the run that signals it must be on different endpoints.
      await createEndpoint(service, account.token, { key: 'gateway', serviceId });
      await createEndpoint(service, account.token, { key: 'door', serviceId });
    });
    after(() => service?.stop());

    it('trigger.reply answers POST /events with awaitReply', async () => {
      const created = await service.request('POST', '/triggers', {
        token: account.token,
        body: { name: 'echo', events: ['question'], script: `trigger.reply({ answer: event.data.q * 2, from: 'trigger' });` },
      });
      assert.equal(created.status, 201);
      const asked = await service.request('POST', '/events', { token: account.token, body: { type: 'question', data: { q: 21 }, awaitReply: true } });
      assert.equal(asked.status, 202);
      assert.deepEqual(asked.body.reply, { answer: 42, from: 'trigger' });
      const unanswered = await service.request('POST', '/events', { token: account.token, body: { type: 'nobody-listens', awaitReply: true, replyTimeoutMs: 200 } });
      assert.equal(unanswered.body.reply, null);
      const plain = await service.request('POST', '/events', { token: account.token, body: { type: 'question', data: { q: 1 } } });
      assert.equal('reply' in plain.body, false);
    });

    it('trigger.wait blocks until trigger.signal from another run; waitReset forgets a kept signal', async () => {
      const waiting = runScript(service, account.token, `var v = trigger.wait('door', 5000); log('got', JSON.stringify(v));`, { endpoint: 'k.gateway' });
      await sleep(500);
      const signal = await runScript(service, account.token, `log(trigger.signal('door', { open: true }));`, { endpoint: 'k.door' });
      assert.deepEqual(signal.logs, ['1']);
      assert.deepEqual((await waiting).logs, ['got {"open":true}']);

      await run(`trigger.signal('kept', 7);`);
      assert.deepEqual((await run(`log(trigger.wait('kept', 100));`)).logs, ['7'], 'a signal nobody waited for is kept for the next wait');
      await run(`trigger.signal('forgotten', 1);`);
      assert.deepEqual((await run(`log(trigger.waitReset('forgotten'), trigger.wait('forgotten', 100));`)).logs, ['true null']);
      // Signals do not cross accounts.
      await runScript(service, other.token, `trigger.signal('shared-name', 'theirs');`);
      assert.deepEqual((await run(`log(trigger.wait('shared-name', 100));`)).logs, ['null']);
    });

    it('trigger.ratelimit allows `limit` calls per period', async () => {
      const result = await run(`var r = []; for (var i = 0; i < 5; i++) r.push(trigger.ratelimit('sms', 3, 60)); log(r.join(','));`);
      assert.deepEqual(result.logs, ['true,true,true,false,false']);
      assert.deepEqual((await runScript(service, other.token, `log(trigger.ratelimit('sms', 3, 60));`)).logs, ['true'], 'limits are per account');
    });

    it('trigger.addContext and addGroup show on the execution', async () => {
      const trigger = await service.request('POST', '/triggers', {
        token: account.token,
        body: { name: 'annotated', events: ['annotate'], script: `trigger.addContext('imei', '490154203237518'); trigger.addContext({ step: 2 }); trigger.addGroup('fota-42'); trigger.addGroup('fota-42');` },
      });
      const posted = await service.request('POST', '/events', { token: account.token, body: { type: 'annotate' } });
      let execution;
      for (let i = 0; i < 200 && !execution; i++) {
        execution = (await service.request('GET', `/executions?eventId=${posted.body.id}`, { token: account.token })).body.items[0];
        if (!execution) await sleep(20);
      }
      assert.ok(execution);
      assert.equal(execution.triggerId, trigger.body.id);
      assert.deepEqual([execution.context, execution.groups], [{ imei: '490154203237518', step: 2 }, ['fota-42']]);
    });

    it('accumulator sums values in time buckets', async () => {
      const result = await run(`
        accumulator.inc('kwh', 1.5, 60, 3600); accumulator.inc('kwh', 2, 60, 3600);
        var a = accumulator.get('kwh', 60, 300);
        log(a.total, a.buckets.length, a.buckets[a.buckets.length - 1].value, a.buckets[0].value);
        try { accumulator.inc('kwh', 1, 60, 30); } catch (e) { log(e.message); }
      `);
      assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
      assert.deepEqual(result.logs, ['3.5 5 3.5 0', 'accumulator.inc: window must be at least one interval']);
      assert.deepEqual((await runScript(service, other.token, `log(accumulator.get('kwh', 60, 300).total);`)).logs, ['0']);
    });

    it('queue keeps items in order, per account, across runs', async () => {
      const result = await run(`
        log(queue.put('jobs', { n: 1 }), queue.put('jobs', { n: 2 }), queue.put('jobs', 'three'));
        log(JSON.stringify(queue.get('jobs')));
      `);
      assert.deepEqual(result.logs, ['1 2 3', '{"n":1}']);
      assert.deepEqual((await runScript(service, other.token, `log(JSON.stringify(queue.get('jobs')));`)).logs, ['null']);
      const flushed = await run(`log(JSON.stringify(queue.flush('jobs')), JSON.stringify(queue.get('jobs')));`);
      assert.deepEqual(flushed.logs, ['[{"n":2},"three"] null']);
    });

    it('trigger.import evaluates a library trigger of the account per run', async () => {
      const library = await service.request('POST', '/triggers', {
        token: account.token,
        body: { name: 'geo-utils', events: [], library: true, script: `var calls = 0; exports.km = function (m) { calls++; return Math.round(m / 1000); }; exports.calls = function () { return calls; };` },
      });
      assert.equal(library.status, 201);
      const result = await run(`
        var geo = trigger.import('geo-utils');
        log(geo.km(343500), geo.km(1000), geo.calls(), trigger.import('geo-utils') === geo);
        try { trigger.import('missing-lib'); } catch (e) { log(e.message); }
      `);
      assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
      assert.deepEqual(result.logs, ['344 1 2 true', 'trigger.librarySource: No trigger with the id or name "missing-lib"']);
      assert.deepEqual((await run(`log(trigger.import('geo-utils').calls());`)).logs, ['0'], 'library state does not outlive a run');
      assert.deepEqual((await runScript(service, other.token, `try { trigger.import('geo-utils'); } catch (e) { log(e.message); }`)).logs, [
        'trigger.librarySource: No trigger with the id or name "geo-utils"',
      ]);
      // A library runs on no event.
      const executions = await service.request('GET', `/executions?triggerId=${library.body.id}`, { token: account.token });
      assert.equal(executions.body.total, 0);
    });
  });
}
