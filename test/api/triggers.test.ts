import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

for (const dialect of DIALECTS) {
  describe(`triggers run by real events (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let account: TestAccount;
    let settleTrigger: string;

    before(async () => {
      service = await startService(dialect.name, { scriptTimeoutMs: 200 });
      account = await createAccount(service, 'triggers');
      const settle = await service.request('POST', '/triggers', { token: account.token, body: { name: 'settle', events: ['settle'], script: '' } });
      settleTrigger = settle.body.id as string;
      const serviceId = await createService(service, account.token);
      await createEndpoint(service, account.token, { key: 'berlin-1', serviceId, tags: ['site:berlin'] });
      await createEndpoint(service, account.token, { key: 'paris-1', serviceId, tags: ['site:paris'] });
    });
    after(() => service?.stop());

    const executions = async (triggerId: string, count: number) => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const list = await service.request('GET', `/executions?triggerId=${triggerId}`, { token: account.token });
        assert.equal(list.status, 200);
        if (list.body.items.length >= count || Date.now() > deadline) return list.body.items as Record<string, any>[];
        await sleep(25);
      }
    };

    /**
     * Waits until the events posted before, for these endpoints (none: the account's own), have been handled: a
     * `settle` event behind them in the same order has run. Proves "ran nothing" without waiting out a timeout.
     */
    let settled = 0;
    const settle = async (...endpoints: Array<string | undefined>) => {
      for (const endpoint of endpoints.length === 0 ? [undefined] : endpoints) {
        await service.request('POST', '/events', { token: account.token, body: { type: 'settle', endpoint } });
        settled += 1;
        assert.equal((await executions(settleTrigger, settled)).length, settled, 'the settle event ran');
      }
    };
    const executionsNow = async (triggerId: string) => (await service.request('GET', `/executions?triggerId=${triggerId}`, { token: account.token })).body.items as unknown[];

    it('runs a trigger on a matching event and records the execution with its logs', async () => {
      const created = await service.request('POST', '/triggers', {
        token: account.token,
        body: {
          name: 'hot in berlin',
          events: ['reading'],
          filters: [{ type: 'has-tag', value: 'site:berlin' }, { type: '>', field: 'data.t', value: 30 }],
          script: `log('hot', event.endpointKey, event.data.t, threshold);`,
          globals: { threshold: { value: 30, protected: false } },
        },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.deepEqual([created.body.enabled, created.body.library, created.body.version], [true, false, 1]);
      const id = created.body.id as string;

      const post = (endpoint: string, t: number) => service.request('POST', '/events', { token: account.token, body: { type: 'reading', endpoint, data: { t } } });
      await post('k.berlin-1', 25); // too cool
      await post('k.paris-1', 35); // wrong site
      const hot = await post('k.berlin-1', 35);
      const [execution] = await executions(id, 1);
      assert.ok(execution);
      assert.deepEqual(
        { status: execution.status, eventId: execution.eventId, eventType: execution.eventType, logs: execution.logs, test: execution.test, error: execution.error },
        { status: 'success', eventId: hot.body.id, eventType: 'reading', logs: ['hot berlin-1 35 30'], test: false, error: null },
      );
      await settle('k.berlin-1', 'k.paris-1');
      assert.equal((await executionsNow(id)).length, 1, 'the filtered-out events ran nothing');
    });

    it('records trigger.exit and uncaught errors as failed, with message and line', async () => {
      const exit = await service.request('POST', '/triggers', { token: account.token, body: { name: 'exit', events: ['alarm'], script: `trigger.exit('no fix');` } });
      const thrower = await service.request('POST', '/triggers', { token: account.token, body: { name: 'thrower', events: ['alarm'], script: `var x = 1;\nnull.boom;` } });
      await service.request('POST', '/events', { token: account.token, body: { type: 'alarm' } });
      const [exited] = await executions(exit.body.id, 1);
      assert.deepEqual([exited?.status, exited?.error], ['failed', 'no fix']);
      const [thrown] = await executions(thrower.body.id, 1);
      assert.equal(thrown?.status, 'failed');
      assert.match(thrown?.error, /null/);
      assert.equal(thrown?.line, 2);
      const failed = await service.request('GET', '/executions?status=failed', { token: account.token });
      assert.ok(failed.body.items.length >= 2 && failed.body.items.every((e: { status: string }) => e.status === 'failed'));
    });

    it('fails an endless script at the CPU limit while the service keeps answering', async () => {
      const loop = await service.request('POST', '/triggers', { token: account.token, body: { name: 'loop', events: ['spin'], script: `while (true) {}` } });
      await service.request('POST', '/events', { token: account.token, body: { type: 'spin' } });
      assert.equal((await service.request('GET', '/health')).status, 200);
      const [execution] = await executions(loop.body.id, 1);
      assert.equal(execution?.status, 'failed');
      assert.match(execution?.error, /^timeout/);
    });

    it('test-runs a trigger against an event in the body, recorded as a test', async () => {
      const trigger = await service.request('POST', '/triggers', {
        token: account.token,
        body: { name: 'manual', events: ['never'], enabled: false, script: `log(event.type, event.endpointKey, JSON.stringify(event.data));` },
      });
      const run = await service.request('POST', `/triggers/${trigger.body.id}/run`, { token: account.token, body: { type: 'probe', endpoint: 'k.paris-1', data: { a: 1 } } });
      assert.equal(run.status, 200, JSON.stringify(run.body));
      assert.deepEqual([run.body.status, run.body.logs, run.body.test], ['success', ['probe paris-1 {"a":1}'], true]);
    });

    it('replaces, disables and deletes triggers, and the engine follows at once', async () => {
      const created = await service.request('POST', '/triggers', { token: account.token, body: { name: 'v', events: ['ping'], script: `log('v1')` } });
      const id = created.body.id as string;
      const replaced = await service.request('PUT', `/triggers/${id}`, { token: account.token, body: { name: 'v', events: ['ping'], script: `log('v2')` } });
      assert.equal(replaced.body.version, 2);
      await service.request('POST', '/events', { token: account.token, body: { type: 'ping' } });
      const [first] = await executions(id, 1);
      assert.deepEqual(first?.logs, ['v2'], 'the new version runs');

      await service.request('PUT', `/triggers/${id}`, { token: account.token, body: { name: 'v', events: ['ping'], script: `log('v3')`, enabled: false } });
      await service.request('POST', '/events', { token: account.token, body: { type: 'ping' } });
      await settle();
      assert.equal((await executionsNow(id)).length, 1, 'a disabled trigger does not run');
      assert.equal((await service.request('DELETE', `/triggers/${id}`, { token: account.token })).status, 204);
      assert.equal((await service.request('GET', `/triggers/${id}`, { token: account.token })).status, 404);
      const bad = await service.request('POST', '/triggers', { token: account.token, body: { name: 'x', events: ['a'], script: '', globals: { event: { value: 1, protected: false } } } });
      assert.equal(bad.status, 400);
    });

    it("keeps accounts' triggers and executions apart", async () => {
      const other = await createAccount(service, 'other');
      const mine = await service.request('GET', '/triggers', { token: account.token });
      const id = mine.body.items[0].id as string;
      assert.equal((await service.request('GET', `/triggers/${id}`, { token: other.token })).status, 404);
      assert.equal((await service.request('PUT', `/triggers/${id}`, { token: other.token, body: { name: 'x', events: ['a'], script: '' } })).status, 404);
      assert.equal((await service.request('DELETE', `/triggers/${id}`, { token: other.token })).status, 404);
      assert.equal((await service.request('POST', `/triggers/${id}/run`, { token: other.token, body: { type: 'x' } })).status, 404);
      assert.deepEqual((await service.request('GET', '/triggers', { token: other.token })).body.items, []);
      assert.deepEqual((await service.request('GET', '/executions', { token: other.token })).body.items, []);
      assert.deepEqual((await service.request('GET', `/executions?triggerId=${id}`, { token: other.token })).body.items, []);
      // An event of the other account does not run this account's triggers.
      const hotBefore = (await service.request('GET', '/executions?limit=1000', { token: account.token })).body.total;
      await service.request('POST', '/events', { token: other.token, body: { type: 'reading', data: { t: 99 } } });
      await service.request('POST', '/events', { token: other.token, body: { type: 'alarm' } });
      await sleep(300);
      assert.equal((await service.request('GET', '/executions?limit=1000', { token: account.token })).body.total, hotBefore);
    });
  });
}
