import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LOCAL_NAMESPACES } from '../../src/triggers/namespaces/local/index.js';
import { SERVICE_NAMESPACES } from '../../src/protocols/index.js';
import { docComments } from '../../src/triggers/namespace-catalog.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { startService, type TestService } from '../helpers/service.js';

// What the web UI's trigger editor needs of the API: the namespaces scripts can call (for completions) and a
// test-run of a definition that is not saved yet. One dialect: neither touches storage beyond what the
// triggers' own tests cover for both.
describe('trigger editor API: GET /triggers/namespaces, POST /triggers/run', () => {
  let service: TestService;
  let account: TestAccount;
  let other: TestAccount;

  before(async () => {
    service = await startService('sqlite', { scriptTimeoutMs: 500 });
    account = await createAccount(service, 'editor');
    other = await createAccount(service, 'other');
    const serviceId = await createService(service, account.token);
    await createEndpoint(service, account.token, { key: 'sensor-1', serviceId });
  });
  after(() => service?.stop());

  it('lists every registered namespace function, with signatures from the doc comments', async () => {
    assertError(await service.request('GET', '/triggers/namespaces', { token: null }), 401, 'IOTB_AUTH_TOKEN_MISSING', 'no token');
    const listed = await service.request('GET', '/triggers/namespaces', { token: account.token });
    assert.equal(listed.status, 200);
    const items = listed.body.items as { name: string; runsIn: string; functions: { name: string; signature: string | null; description: string | null }[] }[];
    const byName = new Map(items.map((item) => [item.name, item]));
    const registered = new Map<string, Set<string>>();
    for (const namespace of SERVICE_NAMESPACES) for (const fn of Object.keys(namespace.functions)) registered.set(namespace.name, (registered.get(namespace.name) ?? new Set()).add(fn));
    for (const [namespace, functions] of Object.entries(LOCAL_NAMESPACES)) for (const fn of Object.keys(functions)) registered.set(namespace, (registered.get(namespace) ?? new Set()).add(fn));
    assert.deepEqual([...byName.keys()].sort(), [...registered.keys()].sort(), 'every namespace, no other');
    for (const [namespace, functions] of registered) {
      assert.deepEqual(byName.get(namespace)!.functions.map((fn) => fn.name).sort(), [...functions].sort(), `every function of ${namespace}`);
    }
    assert.equal(byName.get('endpoint')!.runsIn, 'service');
    assert.equal(byName.get('hash')!.runsIn, 'sandbox');
    const get = byName.get('endpoint')!.functions.find((fn) => fn.name === 'get')!;
    assert.deepEqual(get, { name: 'get', signature: 'endpoint.get(endpoint)', description: '→ the endpoint or null.' });
    const crc = byName.get('hash')!.functions.find((fn) => fn.name === 'crc32')!;
    assert.equal(crc.signature, 'hash.crc32(input)');
    const storeSet = byName.get('endpoint')!.functions.find((fn) => fn.name === 'storeSet')!;
    assert.match(storeSet.description ?? '', /the same as storageGet/);
    // Most functions are documented; the few that are not still are listed, with null signatures.
    const documented = items.flatMap((item) => item.functions).filter((fn) => fn.signature !== null).length;
    assert.ok(documented > items.flatMap((item) => item.functions).length / 2, `${documented} documented`);
  });

  it('reads signatures with nested parentheses and quotes', () => {
    const docs = docComments(`/** net.split("a:1" | "[::1]:5683", (x)) → {host}. */\nconst a = 1;\n/** Not a function. */\n/**\n * ns.fn(a)\n * spans lines.\n */`);
    assert.deepEqual(docs.get('net.split'), { signature: 'net.split("a:1" | "[::1]:5683", (x))', description: '→ {host}.' });
    assert.deepEqual(docs.get('ns.fn'), { signature: 'ns.fn(a)', description: 'spans lines.' });
    assert.equal(docs.size, 2);
  });

  const draft = (script: string, extra: Record<string, unknown> = {}) => ({ name: 'draft', events: ['reading'], script, ...extra });

  it('test-runs an unsaved definition: logs, reply, globals, duration; recorded as a test execution', async () => {
    const ran = await service.request('POST', '/triggers/run', {
      token: account.token,
      body: {
        trigger: draft(`log('t is', event.data.t, 'limit', limit); trigger.reply({ hot: event.data.t > limit });`, { globals: { limit: { value: 20, protected: true } } }),
        event: { type: 'reading', endpoint: 'k.sensor-1', data: { t: 25 } },
      },
    });
    assert.equal(ran.status, 200, JSON.stringify(ran.body));
    assert.equal(ran.body.execution.status, 'success');
    assert.deepEqual(ran.body.execution.logs, ['t is 25 limit 20']);
    assert.equal(ran.body.execution.test, true);
    assert.equal(typeof ran.body.execution.durationMs, 'number');
    assert.equal(ran.body.replied, true);
    assert.deepEqual(ran.body.reply, { hot: true });
    const recorded = await service.request('GET', `/executions?triggerId=${ran.body.execution.triggerId}`, { token: account.token });
    assert.equal(recorded.body.items.length, 1);
    assert.equal(recorded.body.items[0].id, ran.body.execution.id);

    const silent = await service.request('POST', '/triggers/run', { token: account.token, body: { trigger: draft(`log(1);`), event: { type: 'reading' } } });
    assert.equal(silent.body.replied, false);
    assert.equal(silent.body.reply, null);
    assert.notEqual(silent.body.execution.triggerId, ran.body.execution.triggerId, 'each unsaved run has its own id');
  });

  it('a script error comes back with its line; the wall timeout holds as for saved triggers', async () => {
    const failed = await service.request('POST', '/triggers/run', { token: account.token, body: { trigger: draft(`var a = 1;\nnope();`), event: { type: 'reading' } } });
    assert.equal(failed.status, 200);
    assert.equal(failed.body.execution.status, 'failed');
    assert.match(failed.body.execution.error, /nope/);
    assert.equal(failed.body.execution.line, 2);
    const slow = await service.request('POST', '/triggers/run', { token: account.token, body: { trigger: draft(`for (;;) {}`), event: { type: 'reading' } } });
    assert.equal(slow.body.execution.status, 'failed');
    assert.match(slow.body.execution.error, /timeout|time/i);
  });

  it('an edit of a saved trigger runs the draft, recorded against that trigger; the saved version is untouched', async () => {
    const saved = await service.request('POST', '/triggers', { token: account.token, body: draft(`log('saved');`) });
    assert.equal(saved.status, 201);
    const before = await service.request('POST', `/triggers/${saved.body.id}/run`, { token: account.token, body: { type: 'reading' } });
    assert.deepEqual(before.body.logs, ['saved']);
    const ran = await service.request('POST', '/triggers/run', { token: account.token, body: { triggerId: saved.body.id, trigger: draft(`log('edited');`), event: { type: 'reading' } } });
    assert.deepEqual(ran.body.execution.logs, ['edited']);
    assert.equal(ran.body.execution.triggerId, saved.body.id);
    const after = await service.request('POST', `/triggers/${saved.body.id}/run`, { token: account.token, body: { type: 'reading' } });
    assert.deepEqual(after.body.logs, ['saved'], 'the compiled saved version is not replaced by the draft');
  });

  it('stays in the acting account and refuses bad input', async () => {
    const saved = await service.request('POST', '/triggers', { token: account.token, body: draft(`log(1);`) });
    assertError(
      await service.request('POST', '/triggers/run', { token: other.token, body: { triggerId: saved.body.id, trigger: draft(`log(1);`), event: { type: 'reading' } } }),
      404,
      'IOTB_TRIGGER_NOT_FOUND',
      "another account's trigger",
    );
    assertError(
      await service.request('POST', '/triggers/run', { token: other.token, body: { trigger: draft(`log(1);`), event: { type: 'reading', endpoint: 'k.sensor-1' } } }),
      404,
      'IOTB_ENDPOINT_NOT_FOUND',
      "another account's endpoint",
    );
    const theirs = await service.request('POST', '/triggers/run', { token: other.token, body: { trigger: draft(`log(endpoint.get('k.sensor-1'));`), event: { type: 'reading' } } });
    assert.deepEqual(theirs.body.execution.logs, ['null'], 'namespaces act as the acting account');
    assertError(await service.request('POST', '/triggers/run', { token: null, body: { trigger: draft(''), event: { type: 'x' } } }), 401, 'IOTB_AUTH_TOKEN_MISSING', 'no token');
    const bad = [
      { trigger: draft('', { name: '' }), event: { type: 'x' } },
      { trigger: draft(''), event: { type: '' } },
      { trigger: draft('', { filters: [{ type: 'no-such-filter' }] }), event: { type: 'x' } },
      { trigger: draft(''), event: { type: 'x' }, extra: true },
      { trigger: draft('') },
      { trigger: draft('', { globals: { event: { value: 1, protected: false } } }), event: { type: 'x' } },
    ];
    for (const body of bad) assertError(await service.request('POST', '/triggers/run', { token: account.token, body }), 400, 'IOTB_REQUEST_VALIDATION', JSON.stringify(body));
  });
});
