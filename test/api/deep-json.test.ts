import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

// Security issue 14, finding 5: 10,000-deep JSON in `options` or event `data` overflowed the stack while
// being stored (JSON.stringify) and answered 500. It is refused with 400 as it comes in.

/** `{"a":{"a":…}}` nested `depth` levels, as raw JSON text (building the object would itself need the stack). */
function deepJson(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

function deepArray(depth: number): string {
  return `${'['.repeat(depth)}${']'.repeat(depth)}`;
}

for (const dialect of DIALECTS) {
  describe(`JSON nested too deep (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let a: TestAccount;
    let serviceId: string;

    before(async () => {
      service = await startService(dialect.name);
      a = await createAccount(service, 'deep-json');
      serviceId = await createService(service, a.token, { name: 'deep', type: 'udp' });
      await createEndpoint(service, a.token, { key: 'deep-1', serviceId });
    });
    after(async () => {
      await service?.stop();
    });

    const send = (method: string, path: string, body: string) =>
      fetch(`${service.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' }, body }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));

    it('answers 400 with the one error body for 10,000-deep bodies on every kind of route, and nothing is stored', async () => {
      const attempts: [string, string, string][] = [
        ['POST', '/events', `{"type":"deep","data":${deepJson(10_000)}}`],
        ['POST', '/events', `{"type":"deep","data":{"list":${deepArray(10_000)}}}`],
        ['POST', '/services', `{"name":"deep","type":"udp","options":${deepJson(10_000)}}`],
        ['PATCH', '/endpoints/k.deep-1', `{"statusDetails":{"x":${deepJson(10_000)}}}`],
        ['PUT', '/endpoints/k.deep-1/storage/blob', deepJson(10_000)],
        ['POST', '/triggers', `{"name":"deep","events":["x"],"script":"1","globals":{"g":{"value":${deepJson(10_000)},"protected":false}}}`],
      ];
      for (const [method, path, body] of attempts) {
        const answer = await send(method, path, body);
        assert.equal(answer.status, 400, `${method} ${path}: ${JSON.stringify(answer.body).slice(0, 200)}`);
        assert.equal(answer.body.error.code, 'IOTB_REQUEST_VALIDATION');
        assert.match(answer.body.error.message, /nests deeper than 100 levels/);
      }
      const endpoint = await service.request('GET', '/endpoints/k.deep-1', { token: a.token });
      assert.deepEqual(endpoint.body.statusDetails, {});
      assert.equal((await service.request('GET', '/history?type=deep', { token: a.token })).body.items.length, 0);
    });

    it('accepts JSON 100 levels deep', async () => {
      const answer = await send('POST', '/events', `{"type":"deep-ok","data":${deepJson(98)}}`);
      assert.equal(answer.status, 202, JSON.stringify(answer.body).slice(0, 200));
    });

    it("a script's call with arguments nested too deep fails that run with a clear error; the next run works", async () => {
      const failed = await runScript(service, a.token, `var v = 1; for (var i = 0; i < 5000; i++) v = {a: v}; endpoint.update('k.deep-1', {statusDetails: {x: v}});`);
      assert.equal(failed.status, 'failed');
      assert.match(failed.error ?? '', /nest deeper than 100 levels|Maximum call stack/, failed.error ?? '');
      const fine = await runScript(service, a.token, `endpoint.update('k.deep-1', {statusDetails: {x: {y: 1}}});`);
      assert.equal(fine.status, 'success', JSON.stringify(fine));
    });
  });
}
