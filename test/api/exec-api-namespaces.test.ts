import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

for (const dialect of DIALECTS) {
  describe(`script namespaces: exec, api (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let account: TestAccount;
    let partner: TestAccount;

    before(async () => {
      service = await startService(dialect.name);
      account = await createAccount(service, 'exec');
      partner = await createAccount(service, 'partner');
      const serviceId = await createService(service, account.token);
      await createEndpoint(service, account.token, { key: 'dev-1', serviceId, tags: ['site:berlin'] });
      await createService(service, partner.token, { name: 'partner-service' });
      // A trigger of this account that others run with exec, and one of the partner's.
      await service.request('POST', '/triggers', {
        token: account.token,
        body: { name: 'doubler', events: [], script: `log('doubling', event.data.data.n); trigger.reply({ doubled: event.data.data.n * 2, by: event.accountId });` },
      });
      await service.request('POST', '/triggers', {
        token: partner.token,
        body: { name: 'partner-inbox', events: [], script: `trigger.reply({ received: event.data.data, from: event.data.from.accountId });` },
      });
    });
    after(() => service?.stop());

    it('exec.sync runs a trigger of the account now and returns its reply; exec.now queues it', async () => {
      const result = await runScript(service, account.token, `
        var r = exec.sync('doubler', { n: 21 });
        log(r.status, JSON.stringify(r.reply));
        log(typeof exec.now('doubler', { n: 5 }));
        try { exec.sync('no-such-trigger', {}); } catch (e) { log(e.message); }
      `);
      assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
      assert.equal(result.logs[0], `success {"doubled":42,"by":"${account.accountId}"}`);
      assert.deepEqual(result.logs.slice(1), ['string', 'exec.sync: No trigger with the id or name "no-such-trigger"']);
      // exec.now ran from the bus: the doubler logged 5.
      const doubler = (await service.request('GET', '/triggers', { token: account.token })).body.items.find((t: { name: string }) => t.name === 'doubler');
      let logs: string[][] = [];
      for (let i = 0; i < 200; i++) {
        logs = (await service.request('GET', `/executions?triggerId=${doubler.id}`, { token: account.token })).body.items.map((e: { logs: string[] }) => e.logs);
        if (logs.some((l) => l[0] === 'doubling 5')) break;
        await sleep(20);
      }
      assert.ok(logs.some((l) => l[0] === 'doubling 5'), JSON.stringify(logs));
      const outputs = await service.request('GET', '/history?type=output', { token: account.token });
      assert.ok(outputs.body.items.length >= 2, 'output events are in the history');
    });

    it("exec with an app token runs the other account's trigger; without one it cannot", async () => {
      const app = await service.request('POST', '/tokens', { token: partner.token, body: { name: 'for exec', type: 'app' } });
      const result = await runScript(service, account.token, `
        var r = exec.sync('partner-inbox', { hello: 1 }, { appToken: '${app.body.token}' });
        log(JSON.stringify(r.reply));
        try { exec.sync('partner-inbox', {}); } catch (e) { log(e.message); }
        try { exec.sync('partner-inbox', {}, { appToken: 'AT:not-a-real-token-00000000' }); } catch (e) { log(e.message); }
        try { exec.sync('partner-inbox', {}, { appToken: '${partner.token}' }); } catch (e) { log(e.message); }
      `);
      assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
      assert.deepEqual(result.logs, [
        `{"received":{"hello":1},"from":"${account.accountId}"}`,
        'exec.sync: No trigger with the id or name "partner-inbox"',
        'exec.sync: The token is not valid, expired or revoked',
        'exec.sync: appToken must be an app token (POST /tokens with "type": "app")',
      ]);
    });

    it('exec.sync refuses to nest without end', async () => {
      await service.request('POST', '/triggers', { token: account.token, body: { name: 'recurse', events: [], script: `var r = exec.sync('recurse', {}); if (r.status === 'failed') trigger.exit(r.error);` } });
      const result = await runScript(service, account.token, `var r = exec.sync('recurse', {}); log(r.status, r.error);`);
      assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
      assert.match(result.logs[0] ?? '', /^failed .*exec\.sync nests at most 3 deep/);
    });

    it("api calls the service's own API as the trigger's account, and no other", async () => {
      const result = await runScript(service, account.token, `
        var e = api.get('/endpoints/k.dev-1');
        log(e.status, e.body.key, e.body.tags.join(','));
        var c = api.post('/endpoints', { key: 'from-api', serviceId: e.body.serviceId });
        log(c.status, c.body.key);
        log(api.put('/endpoints/k.from-api/storage/x', 5).status, api.delete('/endpoints/k.from-api').status);
        var theirs = api.get('/services');
        log(theirs.body.total, JSON.stringify(theirs.body.items.map(function (s) { return s.name; })));
        log(api.get('/services', null).status, api.get('/super/accounts').status, api.get('/no/such/route').status);
        try { api.get('https://example.com/'); } catch (e) { log(e.message); }
      `);
      assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
      assert.deepEqual(result.logs, [
        '200 dev-1 site:berlin',
        '201 from-api',
        '200 204',
        '1 ["svc"]',
        '200 403 404',
        'api.get: path is the API path, such as "/endpoints?tag=site:berlin"',
      ]);
      // Acting in the partner account through the :accountId suffix has no equivalent: the internal call is scoped.
      const probe = await runScript(service, account.token, `log(api.get('/accounts/${partner.accountId}').status);`);
      assert.deepEqual(probe.logs, ['404']);
    });

    it('rejects a forged internal-call header from outside', async () => {
      const response = await service.request('GET', '/services', { token: null, headers: { 'x-iotbridge-internal-call': 'guess' } });
      assert.equal(response.status, 401);
    });
  });
}
