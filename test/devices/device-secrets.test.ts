import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FuzzService, fuzzAccount, fuzzEndpoint, fuzzService } from '../helpers/fuzz.js';
import { MqttDevices } from '../helpers/mqtt.js';

/**
 * Generated device secrets (issue "device log-ins at fleet scale"): shown once, checked in microseconds, never
 * shown again, and still valid after the service is killed with SIGKILL and started again on its data.
 */
describe('generated device secrets, across kill -9', () => {
  let dataDir: string;
  let service: FuzzService;
  const devices = new MqttDevices(() => service.ports.mqtt!);

  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-secrets-'));
    service = await FuzzService.start({ IOTBRIDGE_DATA_DIR: dataDir });
  });
  after(async () => {
    await devices.closeAll();
    await service?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('PUT {"generate": true} answers the secret once; it logs in over MQTT before and after kill -9; it never shows again', async () => {
    const tenant = await fuzzAccount(service, 'fleet');
    const other = await fuzzAccount(service, 'other-fleet');
    const mqtt = await fuzzService(service, tenant.token, { name: 'mqtt', type: 'mqtt' });
    const id = await fuzzEndpoint(service, tenant.token, { key: 'meter-0001', serviceId: mqtt });

    const generated = await service.request('PUT', '/endpoints/k.meter-0001/credentials', { token: tenant.token, body: { generate: true } });
    assert.equal(generated.status, 200, generated.text);
    assert.equal(generated.headers.get('cache-control'), 'no-store');
    const secret = generated.json.password as string;
    assert.match(secret, /^[A-Za-z0-9_-]{32}$/, '192 random bits, URL-safe');
    const again = await service.request('PUT', `/endpoints/${id}/credentials`, { token: tenant.token, body: { generate: true } });
    assert.notEqual(again.json.password, secret, 'each generation is new');
    const current = again.json.password as string;

    const read = await service.request('GET', '/endpoints/k.meter-0001/credentials', { token: tenant.token });
    assert.deepEqual(Object.keys(read.json).sort(), ['kind', 'passwordSet', 'updatedAt']);
    assert.equal(read.json.kind, 'generated');
    assert.equal(await devices.refusal('meter-0001', secret), 4, 'the replaced secret no longer works');
    assert.equal(await devices.refusal('meter-0001', current), 0);
    // Another tenant can neither read nor set it.
    assert.equal((await service.request('GET', `/endpoints/${id}/credentials`, { token: other.token })).status, 404);
    assert.equal((await service.request('PUT', `/endpoints/${id}/credentials`, { token: other.token, body: { generate: true } })).status, 404);
    for (const bad of [{ generate: false }, { generate: 'yes' }, { generate: true, password: 'long-enough-1' }]) {
      assert.equal((await service.request('PUT', `/endpoints/${id}/credentials`, { token: tenant.token, body: bad })).status, 400, JSON.stringify(bad));
    }

    service.child.kill('SIGKILL');
    await new Promise((resolve) => service.child.once('exit', resolve));
    service = await FuzzService.start({ IOTBRIDGE_DATA_DIR: dataDir });
    assert.equal(await devices.refusal('meter-0001', current), 0, 'logs in after kill -9 and restart');
    assert.equal(await devices.refusal('meter-0001', `${current}x`), 4);

    // Nowhere to be read again: the endpoint, lists, history, the export of credentials, the service's log.
    const reads = await Promise.all(
      ['/endpoints/k.meter-0001', '/endpoints?limit=100', '/events?limit=100', '/endpoints/k.meter-0001/credentials'].map((url) => service.request('GET', url, { token: tenant.token })),
    );
    for (const answer of reads) assert.ok(!answer.text.includes(current), answer.text.slice(0, 200));
    assert.ok(!service.outputTail(200).includes(current), 'not in the log');
  });

  it('POST /endpoints creates the endpoint with its credentials in one call; a refused password creates nothing', async () => {
    const tenant = await fuzzAccount(service, 'one-call');
    const mqtt = await fuzzService(service, tenant.token, { name: 'mqtt', type: 'mqtt' });
    const generated = await service.request('POST', '/endpoints', { token: tenant.token, body: { key: 'one-call-1', serviceId: mqtt, credentials: { generate: true } } });
    assert.equal(generated.status, 201, generated.text);
    assert.equal(generated.json.key, 'one-call-1');
    assert.match(generated.json.credentials.password, /^[A-Za-z0-9_-]{32}$/);
    assert.equal(generated.headers.get('cache-control'), 'no-store');
    assert.equal(await devices.refusal('one-call-1', generated.json.credentials.password), 0);

    const chosen = await service.request('POST', '/endpoints', { token: tenant.token, body: { key: 'one-call-2', serviceId: mqtt, credentials: { password: 'chosen-password-2' } } });
    assert.equal(chosen.status, 201, chosen.text);
    assert.deepEqual(chosen.json.credentials, {}, 'a chosen password is not echoed');
    assert.equal(await devices.refusal('one-call-2', 'chosen-password-2'), 0);
    assert.equal((await service.request('GET', '/endpoints/k.one-call-2', { token: tenant.token })).json.credentials, undefined);

    const short = await service.request('POST', '/endpoints', { token: tenant.token, body: { key: 'one-call-3', serviceId: mqtt, credentials: { password: 'short' } } });
    assert.equal(short.status, 400);
    assert.equal((await service.request('GET', '/endpoints/k.one-call-3', { token: tenant.token })).status, 404, 'nothing was created');
    const plain = await service.request('POST', '/endpoints', { token: tenant.token, body: { key: 'one-call-4', serviceId: mqtt } });
    assert.equal(plain.status, 201);
    assert.equal(plain.json.credentials, undefined);
  });
});
