import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoapEndpoint, option, OptionNumber, uriPath, uriQueryOptions, UdpTransport } from '../../src/coap/index.js';
import { CLIENT_PROFILES, DEFAULT_VALUES, SimulatedClient, type SimulatedClientOptions } from '../../tools/lwm2m-client.js';
import { generateSelfSigned } from '../../src/dtls/self-signed.js';
import { waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/** A device with no LwM2M server configured: no /1 instances (and the simulator keeps no /0 until bootstrapped). */
const UNCONFIGURED = DEFAULT_VALUES.filter((record) => !record.path.startsWith('/1/'));

type BootstrapEvent = { stage: string; operation?: string; path?: string; code?: string; contentFormat?: number; reason?: string; source?: string; encoding?: string };

for (const dialect of DIALECTS) {
  describe(`LwM2M bootstrap server (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let serviceId: string;
    const clients: SimulatedClient[] = [];

    const uri = () => `coap://127.0.0.1:${service.ports.coap}`;
    const nosec = (extra: Record<string, unknown> = {}) => ({ uri: uri(), shortServerId: 1, lifetime: 300, binding: 'U', securityMode: 'nosec', ...extra });
    const device_ = (key: string) => device(key);
    const device = async (key: string, options: Partial<SimulatedClientOptions> = {}) => {
      const client = new SimulatedClient({ endpointName: key, values: UNCONFIGURED, transmission: { ackTimeout: 1000, maxRetransmit: 2 }, ...options });
      clients.push(client);
      await client.start();
      return client;
    };
    const bootstrapPeer = () => ({ address: '127.0.0.1', port: service.ports.coap! });
    const events = async (endpointId: string): Promise<BootstrapEvent[]> => {
      const found = await service.request('GET', `/history?endpoint=${endpointId}&type=lwm2m-bootstrap&limit=100`, { token: tenant.token });
      return (found.body.items as { type: string; data: BootstrapEvent }[]).filter((e) => e.type === 'lwm2m-bootstrap').reverse().map((e) => e.data);
    };
    const ended = (endpointId: string) => waitFor(async () => (await events(endpointId)).find((e) => e.stage === 'finished' || e.stage === 'failed'), 'the end of the bootstrap');
    const put = (ref: string, body: unknown, token = tenant.token) => service.request('PUT', `/endpoints/${ref}/bootstrap`, { token, body });

    before(async () => {
      service = await startService(dialect.name, { lwm2mBootstrapStepTimeoutMs: 2000 });
      tenant = await createAccount(service, 'bootstrap');
      other = await createAccount(service, 'bootstrap-other');
      serviceId = await createService(service, tenant.token, { name: 'lwm2m', type: 'lwm2m' });
    });
    after(async () => {
      for (const client of clients) await client.stop();
      await service?.stop();
    });

    it('PUT, GET and DELETE /endpoints/{ref}/bootstrap with the body of the issue; PSK keys are write-only', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'bs-api', serviceId });
      const body = {
        servers: [{ uri: 'coap://host:5683', shortServerId: 1, lifetime: 300, binding: 'U', securityMode: 'nosec' }],
        serverInstance: 1,
        securityInstance: 1,
        writeAs: 'instances',
        writeEncoding: 'tlv',
        tuning: { dontWriteNoSecSecRecs: false },
      };
      const saved = await put('k.bs-api', body);
      assert.equal(saved.status, 200, JSON.stringify(saved.body));
      assert.equal(saved.body.source, 'endpoint');
      assert.deepEqual(saved.body.config.servers[0], { ...body.servers[0], notificationStoring: true });
      const read = await service.request('GET', `/endpoints/${endpoint.id}/bootstrap`, { token: tenant.token });
      assert.deepEqual(read.body.config, saved.body.config);
      const psk = await put(endpoint.id, { servers: [{ uri: 'coaps://host:5684', shortServerId: 2, securityMode: 'psk', pskIdentity: 'dev-1', pskKey: '000102030405060708090a0b0c0d0e0f' }] });
      assert.equal(psk.status, 200, JSON.stringify(psk.body));
      const shown = (await service.request('GET', `/endpoints/${endpoint.id}/bootstrap`, { token: tenant.token })).body.config.servers[0];
      assert.equal(shown.pskKey, undefined);
      assert.equal(shown.pskKeySet, true);
      assert.equal(shown.pskIdentity, 'dev-1');
      assert.equal((await service.request('DELETE', `/endpoints/${endpoint.id}/bootstrap`, { token: tenant.token })).status, 204);
      const gone = await service.request('GET', `/endpoints/${endpoint.id}/bootstrap`, { token: tenant.token });
      assert.equal(gone.status, 404);
      assert.equal(gone.body.error.code, 'IOTB_BOOTSTRAP_CONFIG_NOT_FOUND');
      assert.equal((await service.request('DELETE', `/endpoints/${endpoint.id}/bootstrap`, { token: tenant.token })).status, 404);
    });

    it('bad configurations get 400 naming the field; another account gets 404 on every route', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'bs-bad', serviceId });
      for (const [body, field] of [
        [{ servers: [] }, 'servers'],
        [{ servers: [nosec({ securityMode: 'psk' })] }, 'servers[0]'],
        [{ servers: [nosec({ uri: 'http://host' })] }, 'servers[0].uri'],
        [{ servers: [nosec(), nosec()] }, 'servers[1].shortServerId'],
        [{ servers: [nosec()], writeEncoding: 'xml' }, 'writeEncoding'],
        [{ servers: [nosec()], extra: true }, 'extra'],
      ] as const) {
        const refused = await put(endpoint.id, body);
        assert.equal(refused.status, 400, JSON.stringify(body));
        assert.ok(JSON.stringify(refused.body.error).includes(field), `${JSON.stringify(refused.body)} names ${field}`);
      }
      assert.equal((await put(endpoint.id, { servers: [nosec()] })).status, 200);
      for (const ref of [endpoint.id, 'k.bs-bad']) {
        assert.equal((await put(ref, { servers: [nosec()] }, other.token)).status, 404);
        assert.equal((await service.request('GET', `/endpoints/${ref}/bootstrap`, { token: other.token })).status, 404);
        assert.equal((await service.request('DELETE', `/endpoints/${ref}/bootstrap`, { token: other.token })).status, 404);
      }
      assert.equal((await service.request('GET', `/endpoints/${endpoint.id}/bootstrap`, { token: tenant.token })).status, 200, 'still there');
      const badDefault = await service.request('POST', '/services', { token: tenant.token, body: { name: 'bad-default', type: 'lwm2m', options: { bootstrap: { servers: [nosec({ uri: 'coaps://x' })] } } } });
      assert.equal(badDefault.status, 400, JSON.stringify(badDefault.body));
      assert.match(badDefault.body.error.message, /options\.bootstrap/);
    });

    for (const writeAs of ['instances', 'resources'] as const) {
      for (const writeEncoding of ['tlv', 'text', 'senml_cbor', 'senml_json'] as const) {
        it(`a device with no server bootstraps (${writeAs} × ${writeEncoding}) and registers with the server it was given`, async () => {
          const key = `bs-${writeAs}-${writeEncoding}`;
          const endpoint = await createEndpoint(service, tenant.token, { key, serviceId });
          assert.equal((await put(endpoint.id, { servers: [nosec({ lifetime: 120 })], writeAs, writeEncoding, serverInstance: 0, securityInstance: 1 })).status, 200);
          const client = await device(key, writeEncoding === 'text' ? { formats: [] } : {});
          const result = await client.bootstrap(bootstrapPeer(), { timeoutMs: 10_000 });
          assert.equal(result.requestCode, '2.04');
          assert.equal(result.finished, true, JSON.stringify(result));
          assert.deepEqual([result.server?.uri, result.server?.shortServerId, result.server?.lifetime], [uri(), 1, 120]);
          const end = await ended(endpoint.id);
          assert.equal(end.stage, 'finished', JSON.stringify(end));
          const steps = (await events(endpoint.id)).filter((e) => e.stage === 'step');
          const writes = steps.filter((e) => e.operation === 'write');
          assert.ok(writes.length >= 2 && writes.every((e) => e.code === '2.04'), JSON.stringify(steps));
          const expectedFormat = { tlv: 11542, text: 0, senml_cbor: 112, senml_json: 110 }[writeEncoding];
          assert.ok(writes.every((e) => e.contentFormat === expectedFormat), JSON.stringify(writes));
          if (writeAs === 'resources' || writeEncoding === 'text') assert.ok(writes.every((e) => e.path!.split('/').length === 4), 'one write per resource');
          else assert.deepEqual(writes.map((e) => e.path), ['/0/1', '/1/0']);
          assert.equal(await client.register(), '2.01');
          const objects = await service.request('GET', `/endpoints/${endpoint.id}/lwm2m/objects`, { token: tenant.token });
          assert.equal(objects.body.registered, true);
          assert.equal(objects.body.registration.lifetime, 120);
          const details = (await service.request('GET', `/endpoints/${endpoint.id}`, { token: tenant.token })).body.statusDetails;
          assert.equal(details.lastBootstrap.status, 'finished');
        });
      }
    }

    it("the service's default applies to devices without their own; pct picks the encoding; a 1.0 device gets TLV", async () => {
      const withDefault = await createService(service, tenant.token, { name: 'with-default', type: 'lwm2m', options: { bootstrap: { servers: [nosec()] } } });
      const modern = await createEndpoint(service, tenant.token, { key: 'bs-default-cbor', serviceId: withDefault });
      const old = await createEndpoint(service, tenant.token, { key: 'bs-default-old', serviceId: withDefault });
      const shown = await service.request('GET', `/endpoints/${modern.id}/bootstrap`, { token: tenant.token });
      assert.equal(shown.body.source, 'service');
      const cbor = await device('bs-default-cbor');
      assert.equal((await cbor.bootstrap(bootstrapPeer(), { pct: 112, timeoutMs: 10_000 })).finished, true);
      assert.equal((await events(modern.id)).find((e) => e.stage === 'started')?.encoding, 'senml_cbor');
      assert.ok((await events(modern.id)).filter((e) => e.operation === 'write').every((e) => e.contentFormat === 112));
      const tlvOnly = await device('bs-default-old', { ...CLIENT_PROFILES['1.0-tlv'] });
      assert.equal((await tlvOnly.bootstrap(bootstrapPeer(), { timeoutMs: 10_000 })).finished, true);
      assert.ok((await events(old.id)).filter((e) => e.operation === 'write').every((e) => e.contentFormat === 11542));
      assert.ok(!(await events(old.id)).some((e) => e.operation === 'read'), 'no Bootstrap-Read on 1.0');
      assert.equal(await tlvOnly.register(), '2.01');
    });

    it('no configuration, or an unknown name: 4.04 and nothing written; a device refusing the format fails before Bootstrap-Finish', async () => {
      const bare = await createEndpoint(service, tenant.token, { key: 'bs-none', serviceId });
      const client = await device('bs-none');
      const result = await client.bootstrap(bootstrapPeer(), { timeoutMs: 2000 });
      assert.equal(result.requestCode, '4.04');
      assert.equal(result.finished, false);
      const failed = await ended(bare.id);
      assert.match(failed.reason!, /no bootstrap configuration/);
      const stranger = await device('bs-nobody-knows');
      assert.equal((await stranger.bootstrap(bootstrapPeer(), { timeoutMs: 2000 })).requestCode, '4.04');

      const picky = await createEndpoint(service, tenant.token, { key: 'bs-picky', serviceId });
      assert.equal((await put(picky.id, { servers: [nosec()], writeEncoding: 'tlv' })).status, 200);
      const textOnly = await device('bs-picky', { formats: [] });
      const refused = await textOnly.bootstrap(bootstrapPeer(), { timeoutMs: 3000 });
      assert.equal(refused.finished, false);
      assert.deepEqual(refused.finishCodes, [], 'no Bootstrap-Finish was sent');
      const end = await ended(picky.id);
      assert.equal(end.stage, 'failed');
      assert.match(end.reason!, /Bootstrap-Write \/0\/1 answered 4\.15/);
      const details = (await service.request('GET', `/endpoints/${picky.id}`, { token: tenant.token })).body.statusDetails;
      assert.deepEqual([details.lastBootstrap.status, typeof details.lastBootstrap.reason], ['failed', 'string']);
    });

    it('bad Bootstrap-Requests get 4.00; a 1.0 device answering Discover in the old form is still bootstrapped', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'bs-raw', serviceId });
      assert.equal((await put(endpoint.id, { servers: [nosec()] })).status, 200);
      const seen: string[] = [];
      const raw = new CoapEndpoint({ transport: new UdpTransport({ host: '127.0.0.1', port: 0 }), rateLimit: false });
      raw.onRequest((request) => {
        seen.push(`${request.code} ${uriPath(request)}`);
        if (request.code === '0.01' && uriPath(request) === '/') return { code: '2.05', options: [option(OptionNumber.ContentFormat, 40)], payload: 'lwm2m="1.0",</0/0>,</3/0>' };
        if (request.code === '0.04') return { code: '2.02' };
        return { code: request.code === '0.01' ? '4.05' : '2.04' };
      });
      await raw.start();
      try {
        const bs = (query: string[]) => raw.request(bootstrapPeer(), { code: '0.02', options: [option(OptionNumber.UriPath, 'bs'), ...uriQueryOptions(query)] });
        assert.equal((await bs([])).code, '4.00', 'no ep');
        assert.equal((await bs(['ep=bs-raw', 'pct=json'])).code, '4.00', 'pct is not a number');
        assert.equal((await bs(['ep=bs-raw'])).code, '2.04');
        const end = await ended(endpoint.id);
        assert.equal(end.stage, 'finished', JSON.stringify(end));
        assert.deepEqual(seen, ['0.01 /', '0.04 /0', '0.04 /1', '0.03 /0/1', '0.03 /1/1', '0.02 /bs'], 'no Bootstrap-Read on a 1.0 device');
      } finally {
        await raw.stop();
      }
    });

    it('a certificate-mode account is written with the device certificate, the CoAPS server certificate and the key (PKCS#8); the key is write-only', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'bs-x509', serviceId });
      const device = generateSelfSigned({ commonName: 'bs-x509', lifetimeDays: 2 });
      const other = generateSelfSigned({ commonName: 'someone-else', lifetimeDays: 2 });
      const mismatched = await put(endpoint.id, { servers: [{ uri: 'coaps://127.0.0.1:5684', shortServerId: 4, securityMode: 'x509', certificate: device.certificatePem, privateKey: other.privateKeyPem }] });
      assert.equal(mismatched.status, 400);
      assert.match(mismatched.body.error.message, /privateKey: does not match the certificate/);
      const saved = await put(endpoint.id, { servers: [{ uri: 'coaps://127.0.0.1:5684', shortServerId: 4, securityMode: 'x509', certificate: device.certificatePem, privateKey: device.privateKeyPem }] });
      assert.equal(saved.status, 200, JSON.stringify(saved.body));
      assert.deepEqual([saved.body.config.servers[0].privateKey, saved.body.config.servers[0].privateKeySet], [undefined, true]);
      const client = await device_('bs-x509');
      const result = await client.bootstrap(bootstrapPeer(), { timeoutMs: 10_000 });
      assert.equal(result.finished, true, JSON.stringify(result));
      assert.equal(result.server?.securityMode, 2);
      const bytes = (path: string) => Buffer.from(client.values.get(path)?.value as Uint8Array);
      const serverDer = Buffer.from(await (await fetch(`${service.baseUrl}/coaps/certificate?format=der`)).arrayBuffer());
      assert.ok(bytes('/0/1/3').equals(device.certificateDer), 'the device certificate');
      assert.ok(bytes('/0/1/4').equals(serverDer), 'the server certificate to verify the server with');
      assert.ok(bytes('/0/1/5').equals(device.privateKey.export({ type: 'pkcs8', format: 'der' })), 'the device key, PKCS#8');
      assert.ok(!JSON.stringify(await events(endpoint.id)).includes(device.privateKeyPem.slice(40, 80)));
    });

    it('a PSK account is written with its identity and key; the configured instance moves off the Bootstrap-Server account', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'bs-psk', serviceId });
      // securityInstance 0 is where the simulator keeps its Bootstrap-Server account.
      const saved = await put(endpoint.id, { servers: [{ uri: 'coaps://127.0.0.1:5684', shortServerId: 7, securityMode: 'psk', pskIdentity: 'bs-psk', pskKey: 'a1b2c3d4' }], securityInstance: 0 });
      assert.equal(saved.status, 200);
      const client = await device('bs-psk');
      const result = await client.bootstrap(bootstrapPeer(), { timeoutMs: 10_000 });
      assert.equal(result.finished, true, JSON.stringify(result));
      assert.equal(result.server?.securityMode, 0);
      assert.equal(result.server?.securityInstance, 1);
      assert.equal(Buffer.from(client.values.get('/0/1/3')?.value as Uint8Array).toString(), 'bs-psk');
      assert.equal(Buffer.from(client.values.get('/0/1/5')?.value as Uint8Array).toString('hex'), 'a1b2c3d4');
      assert.ok((await events(endpoint.id)).some((e) => e.operation === 'adjust'));
      const history = JSON.stringify(await events(endpoint.id));
      assert.ok(!history.includes('a1b2c3d4') && !history.includes(Buffer.from('a1b2c3d4', 'hex').toString('base64')), 'the key is in no event');
    });
  });
}
