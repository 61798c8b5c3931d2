import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/**
 * An endpoint's events run their triggers one after another in the order the events were accepted, though the
 * bus hands several waiting events over at once and the engine gives their runs to the script worker together
 * (docs/performance.md, "turns"): each run sees what the one before it wrote.
 */
for (const dialect of DIALECTS) {
  describe(`trigger runs of an endpoint's events, in order (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let account: TestAccount;

    before(async () => {
      service = await startService(dialect.name, { scriptWorkers: 1 });
      account = await createAccount(service, 'trigger-order');
      const serviceId = await createService(service, account.token);
      await createEndpoint(service, account.token, { key: 'meter', serviceId });
      await createEndpoint(service, account.token, { key: 'warm-up', serviceId });
    });
    after(() => service?.stop());

    const executions = async (triggerId: string) =>
      (await service.request('GET', `/executions?triggerId=${triggerId}&limit=1000`, { token: account.token })).body.items as Record<string, unknown>[];

    it('runs each event\'s triggers after the runs of the events before it, reads of the service and runs that need none alike', async () => {
      const append = (entry: string) => `var l = endpoint.storageGet(null, 'order') || []; l.push(${entry}); endpoint.storageSet(null, 'order', l);`;
      // Two triggers per event, run in the order of their names: the first calls the service for every third event only, so the worker runs the
      // others on its own thread, the second reads and writes the endpoint's storage every time.
      const first = await service.request('POST', '/triggers', { token: account.token, body: { name: 'a: every third', events: ['tick'], script: `if (event.data.n % 3 === 0) { ${append("'a' + event.data.n")} } log(event.data.n);` } });
      const second = await service.request('POST', '/triggers', { token: account.token, body: { name: 'b: every one', events: ['tick'], script: append("'b' + event.data.n") } });
      assert.deepEqual([first.status, second.status], [201, 201]);
      // Quick events first: the bus hands over several at once when handling is quick.
      await Promise.all(Array.from({ length: 100 }, () => service.request('POST', '/events', { token: account.token, body: { type: 'warm', endpoint: 'k.warm-up' } })));
      const count = 60;
      // One after another, so their order is known; the runs (two calls to the service each) are slower, so events wait.
      for (let n = 0; n < count; n++) {
        const posted = await service.request('POST', '/events', { token: account.token, body: { type: 'tick', endpoint: 'k.meter', data: { n } } });
        assert.equal(posted.status, 202);
      }
      const deadline = Date.now() + 30_000;
      while ((await executions(second.body.id as string)).length < count && Date.now() < deadline) await sleep(50);
      const runs = [...(await executions(first.body.id as string)), ...(await executions(second.body.id as string))];
      assert.deepEqual(runs.filter((run) => run.status !== 'success'), [], 'every run succeeded');
      const stored = await runScript(service, account.token, `log(JSON.stringify(endpoint.storageGet('k.meter', 'order')));`);
      const expected = Array.from({ length: count }, (_, n) => [...(n % 3 === 0 ? [`a${n}`] : []), `b${n}`]).flat();
      assert.deepEqual(JSON.parse(stored.logs[0]!), expected);
    });
  });
}
