import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SimulatedClient, type SimulatedClientOptions } from '../../tools/lwm2m-client.js';
import { waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { startService, type TestService } from '../helpers/service.js';

/** libcoap's example client built on each TLS library Debian ships it with (libcoap3-bin). */
const CLIENTS = ['coap-client-openssl', 'coap-client-gnutls'] as const;
const missing = CLIENTS.filter((client) => spawnSync(client, ['-h']).error !== undefined);
const skip = missing.length === 0 ? false : process.env.CI ? false : `${missing.join(', ')} not installed (apt-get install libcoap3-bin)`;

const KEY = 'sixteen-byte-key';
const KEY_HEX = Buffer.from(KEY).toString('hex');

interface Run {
  readonly code: number | null;
  readonly output: string;
}

/** One bounded run of a libcoap client against the service (loopback only). */
function coapClient(client: string, args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(client, ['-B', '5', ...args]);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('CoAPS: CoAP and LwM2M over DTLS 1.2', { skip }, () => {
  let service: TestService;
  let tenant: TestAccount;
  let other: TestAccount;
  let coapServiceId: string;
  let lwm2mServiceId: string;
  let dir: string;
  const clients: SimulatedClient[] = [];
  const url = (pathAndQuery: string) => `coaps://127.0.0.1:${service.ports.coaps}${pathAndQuery}`;
  const secure = (ref: string, identity: string, key = KEY_HEX, token = tenant.token) => service.request('PUT', `/endpoints/${ref}/security`, { token, body: { mode: 'psk', identity, key } });
  const events = async (endpointId: string, type: string) => {
    const found = await service.request('GET', `/history?endpoint=${endpointId}&type=${type}&limit=50`, { token: tenant.token });
    return (found.body.items as { type: string; data: Record<string, unknown> }[]).filter((e) => e.type === type).map((e) => e.data);
  };
  const lwm2mDevice = async (endpointName: string, options: Partial<SimulatedClientOptions> = {}) => {
    const client = new SimulatedClient({ server: { address: '127.0.0.1', port: service.ports.coaps! }, endpointName, lwm2mVersion: '1.1', transmission: { ackTimeout: 1000, maxRetransmit: 2 }, ...options });
    clients.push(client);
    await client.start();
    return client;
  };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'iotbridge-coaps-'));
    service = await startService('sqlite');
    tenant = await createAccount(service, 'coaps');
    other = await createAccount(service, 'coaps-other');
    coapServiceId = await createService(service, tenant.token, { name: 'coap', type: 'coap' });
    lwm2mServiceId = await createService(service, tenant.token, { name: 'lwm2m', type: 'lwm2m' });
  });
  after(async () => {
    for (const client of clients) await client.stop();
    await service?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  for (const client of CLIENTS) {
    it(`${client}: PSK handshake, a POST and a block-wise POST reach the device's service as coap-request events`, async () => {
      const key = `psk-${client}`;
      const endpoint = await createEndpoint(service, tenant.token, { key, serviceId: coapServiceId });
      assert.equal((await secure(endpoint.id, key)).status, 200);
      const small = await coapClient(client, ['-m', 'post', '-u', key, '-k', KEY, '-e', '21.5', url(`/d/${key}/temperature`)]);
      assert.equal(small.code, 0, small.output);
      const big = 'x'.repeat(3000);
      const blockwise = await coapClient(client, ['-m', 'post', '-b', '256', '-u', key, '-k', KEY, '-e', big, url(`/d/${key}/log`)]);
      assert.equal(blockwise.code, 0, blockwise.output);
      const received = await waitFor(async () => {
        const found = await events(endpoint.id, 'coap-request');
        return found.length === 2 ? found : undefined;
      }, 'both requests');
      const byPath = new Map(received.map((e) => [e.path, e]));
      assert.equal(byPath.get('/temperature')?.text, '21.5');
      assert.equal(String(byPath.get('/log')?.text).length, 3000, 'the block-wise body arrived whole');
    });
  }

  it('a wrong key fails the handshake; an identity speaking for another endpoint, or a secured endpoint over plain CoAP, gets 4.03', async () => {
    const mine = await createEndpoint(service, tenant.token, { key: 'psk-owner', serviceId: coapServiceId });
    const victim = await createEndpoint(service, tenant.token, { key: 'psk-victim', serviceId: coapServiceId });
    assert.equal((await secure(mine.id, 'psk-owner')).status, 200);
    assert.equal((await secure(victim.id, 'psk-victim', Buffer.from('another-key-0001').toString('hex'))).status, 200);
    const wrongKey = await coapClient('coap-client-openssl', ['-m', 'post', '-u', 'psk-owner', '-k', 'not-the-right-k', '-e', '1', url('/d/psk-owner/x')]);
    assert.ok(!/2\.0\d/.test(wrongKey.output), wrongKey.output);
    const impersonating = await coapClient('coap-client-openssl', ['-m', 'post', '-u', 'psk-owner', '-k', KEY, '-e', '1', url('/d/psk-victim/x')]);
    assert.match(impersonating.output, /4\.03/);
    const plain = await coapClient('coap-client-notls', ['-m', 'post', '-e', '1', `coap://127.0.0.1:${service.ports.coap}/d/psk-owner/x`]);
    assert.match(plain.output, /4\.03/);
    assert.deepEqual(await events(victim.id, 'coap-request'), [], 'nothing reached the victim');
    assert.deepEqual(await events(mine.id, 'coap-request'), []);
    // Another account cannot take the identity, nor set its own key on this endpoint.
    const theirs = await createService(service, other.token, { name: 'theirs', type: 'coap' });
    const their = await createEndpoint(service, other.token, { key: 'their-device', serviceId: theirs });
    assert.equal((await secure(their.id, 'psk-owner', KEY_HEX, other.token)).status, 409);
    assert.equal((await secure(mine.id, 'their-identity', KEY_HEX, other.token)).status, 404);
  });

  it('a service with allowNoSec false refuses plain CoAP and takes its devices over DTLS', async () => {
    const strict = await createService(service, tenant.token, { name: 'strict', type: 'coap', options: { allowNoSec: false } });
    const endpoint = await createEndpoint(service, tenant.token, { key: 'strict-1', serviceId: strict });
    const plain = await coapClient('coap-client-notls', ['-m', 'post', '-e', '1', `coap://127.0.0.1:${service.ports.coap}/d/strict-1/x`]);
    assert.match(plain.output, /4\.03/);
    assert.equal((await secure(endpoint.id, 'strict-1')).status, 200);
    const over = await coapClient('coap-client-gnutls', ['-m', 'post', '-u', 'strict-1', '-k', KEY, '-e', '2', url('/d/strict-1/x')]);
    assert.equal(over.code, 0, over.output);
    await waitFor(async () => (await events(endpoint.id, 'coap-request')).length === 1 || undefined, 'the request over DTLS');
  });

  it('certificate mode: both clients verify the server against GET /coaps/certificate (ECDHE_ECDSA)', async () => {
    const pemResponse = await fetch(`${service.baseUrl}/coaps/certificate`);
    assert.equal(pemResponse.status, 200);
    const pem = await pemResponse.text();
    const der = Buffer.from(await (await fetch(`${service.baseUrl}/coaps/certificate?format=der`)).arrayBuffer());
    const parsed = new X509Certificate(pem);
    assert.ok(parsed.raw.equals(der));
    assert.equal(pemResponse.headers.get('x-certificate-sha256'), parsed.fingerprint256);
    assert.ok(!pem.includes('PRIVATE KEY'));
    const file = path.join(dir, 'server.pem');
    await writeFile(file, pem);
    for (const client of CLIENTS) {
      const run = await coapClient(client, ['-v', '6', '-m', 'get', '-C', file, url('/d/nobody/x')]);
      // The handshake verified the server; without a device certificate (not yet) the request itself is refused.
      assert.match(run.output, /4\.03/, `${client}: ${run.output}`);
    }
  });

  it('X.509 mode: a device certificate issued by a CA the service trusts, naming the endpoint, is let in; others get 4.03', async () => {
    const openssl = (args: string[]) => {
      const run = spawnSync('openssl', args, { cwd: dir, timeout: 15_000 });
      assert.equal(run.status, 0, run.stderr?.toString());
    };
    const makeCa = (name: string) => openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '2', '-subj', `/CN=${name}`]);
    const makeDevice = (name: string, ca: string) => {
      openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`]);
      openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.pem`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-out', `${name}.pem`, '-days', '1']);
    };
    makeCa('fleet-ca');
    makeCa('rogue-ca');
    makeDevice('x509-device', 'fleet-ca');
    makeDevice('x509-other', 'fleet-ca');
    makeDevice('x509-rogue', 'rogue-ca');
    const { readFile } = await import('node:fs/promises');
    const caPem = await readFile(path.join(dir, 'fleet-ca.pem'), 'utf8');
    const badOption = await service.request('POST', '/services', { token: tenant.token, body: { name: 'bad-trust', type: 'coap', options: { trustedCertificates: ['not a certificate'] } } });
    assert.equal(badOption.status, 400, JSON.stringify(badOption.body));
    const fleet = await createService(service, tenant.token, { name: 'fleet', type: 'coap', options: { trustedCertificates: [caPem], allowNoSec: false } });
    const endpoint = await createEndpoint(service, tenant.token, { key: 'x509-device', serviceId: fleet });
    const rogue = await createEndpoint(service, tenant.token, { key: 'x509-rogue', serviceId: fleet });
    for (const e of [endpoint, rogue]) assert.equal((await service.request('PUT', `/endpoints/${e.id}/security`, { token: tenant.token, body: { mode: 'x509' } })).status, 200);
    const serverPem = path.join(dir, 'server.pem');
    await writeFile(serverPem, await (await fetch(`${service.baseUrl}/coaps/certificate`)).text());
    const withCert = (name: string, target: string) => coapClient('coap-client-openssl', ['-m', 'post', '-c', path.join(dir, `${name}.pem`), '-j', path.join(dir, `${name}.key`), '-C', serverPem, '-e', name, url(`/d/${target}/x`)]);
    const good = await withCert('x509-device', 'x509-device');
    assert.doesNotMatch(good.output, /4\.0\d/, good.output);
    await waitFor(async () => (await events(endpoint.id, 'coap-request')).length === 1 || undefined, 'the request of the certified device');
    assert.match((await withCert('x509-other', 'x509-device')).output, /4\.03/, 'a certificate naming another endpoint');
    assert.match((await withCert('x509-rogue', 'x509-rogue')).output, /4\.03/, 'a certificate from an untrusted CA');
    assert.deepEqual(await events(rogue.id, 'coap-request'), []);
  });

  it('an LwM2M client registers over DTLS with its PSK, is read and observed; its identity cannot register another name', async () => {
    const endpoint = await createEndpoint(service, tenant.token, { key: 'lwm2m-psk', serviceId: lwm2mServiceId });
    await createEndpoint(service, tenant.token, { key: 'lwm2m-other', serviceId: lwm2mServiceId });
    assert.equal((await secure(endpoint.id, 'lwm2m-psk')).status, 200);
    const device = await lwm2mDevice('lwm2m-psk', { dtls: { identity: 'lwm2m-psk', key: Buffer.from(KEY) } });
    assert.equal(await device.register(), '2.01');
    const read = await service.request('POST', `/endpoints/${endpoint.id}/lwm2m/read`, { token: tenant.token, body: { path: '/3/0/9', timeout: 3000 } });
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(read.body.values[0].value, 95);
    const observed = await service.request('POST', `/endpoints/${endpoint.id}/lwm2m/observe`, { token: tenant.token, body: { path: '/3303/0/5700', timeout: 3000 } });
    assert.equal(observed.body.observing, true);
    assert.equal(await device.changeValue('/3303/0/5700', 25.5), 1);
    await waitFor(async () => (await events(endpoint.id, 'lwm2m-data')).some((e) => e.token === observed.body.token && JSON.stringify(e.values).includes('25.5')) || undefined, 'the notification over DTLS');
    assert.equal(await device.update(), '2.04');
    const impostor = await lwm2mDevice('lwm2m-other', { dtls: { identity: 'lwm2m-psk', key: Buffer.from(KEY) } });
    assert.equal(await impostor.register(), '4.03');
    const plain = new SimulatedClient({ server: { address: '127.0.0.1', port: service.ports.coap! }, endpointName: 'lwm2m-psk', transmission: { ackTimeout: 500, maxRetransmit: 1 } });
    clients.push(plain);
    await plain.start();
    assert.equal(await plain.register(), '4.03', 'a secured endpoint does not register over plain CoAP');
  });

  it('the server certificate is kept across a restart, and a Super-Admin rotates it without one', async () => {
    const before = (await (await fetch(`${service.baseUrl}/coaps/certificate`)).text()).trim();
    service = await service.restart();
    const after = (await (await fetch(`${service.baseUrl}/coaps/certificate`)).text()).trim();
    assert.equal(after, before);
    assert.equal((await service.request('POST', '/coaps/certificate/rotate', { token: tenant.token })).status, 403, 'an account user may not');
    const rotated = await service.request('POST', '/coaps/certificate/rotate');
    assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
    const now = await (await fetch(`${service.baseUrl}/coaps/certificate`)).text();
    assert.notEqual(now.trim(), before);
    assert.equal(new X509Certificate(now).fingerprint256, rotated.body.fingerprintSha256);
    const file = path.join(dir, 'rotated.pem');
    await writeFile(file, now);
    const run = await coapClient('coap-client-openssl', ['-m', 'get', '-C', file, url('/d/nobody/x')]);
    assert.match(run.output, /4\.03/, `the next handshake presents the new certificate: ${run.output}`);
  });
});
