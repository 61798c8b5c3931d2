/**
 * The simulator's Firmware Update object (tools/lwm2m-firmware.ts, object 5) over real UDP on loopback, against a
 * stand-in LwM2M Server made of the project's CoapEndpoint (it takes Registers and sends Write, Read, Observe and
 * Execute), a CoapEndpoint file server (plain and over the project's DTLS transport) and a node:http server.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoapEndpoint, CoapError, option, OptionNumber, UdpTransport, uriPath, uriPathOptions, uriQuery, type CoapMessage, type Peer } from '../../src/coap/index.js';
import { DtlsTransport } from '../../src/dtls/dtls-transport.js';
import { SimulatedClient } from '../../tools/lwm2m-client.js';
import { firmwarePackage, FirmwareState, UpdateResult, type FirmwareOptions } from '../../tools/lwm2m-firmware.js';
import { until } from '../helpers/devices.js';

const TEXT = 0;
const OPAQUE = 42;
const PSK = { identity: 'fw-device', key: Buffer.from('sixteen-byte-key') };
const { idle: IDLE, downloading: DOWNLOADING, downloaded: DOWNLOADED, updating: UPDATING } = FirmwareState;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** The LwM2M Server stand-in: Register 2.01 at /rd/<n> (kept), and the requests a server sends a device. */
class Lwm2mServer {
  readonly coap = new CoapEndpoint({ transport: new UdpTransport({ host: '127.0.0.1', port: 0 }), rateLimit: false });
  readonly registers: { ep: string; links: string; at: number }[] = [];

  constructor() {
    this.coap.onRequest((request) => {
      if (request.code === '0.02' && uriPath(request) === '/rd') {
        const ep = uriQuery(request).find((q) => q.startsWith('ep='))?.slice(3) ?? '';
        this.registers.push({ ep, links: request.payload.toString('utf8'), at: Date.now() });
        return { code: '2.01', options: [option(OptionNumber.LocationPath, 'rd'), option(OptionNumber.LocationPath, String(this.registers.length))] };
      }
      return { code: request.code === '0.02' ? '2.04' : '4.04' };
    });
  }

  get peer(): Peer {
    const { address, port } = this.coap.address();
    return { address, port };
  }

  registersOf(ep: string) {
    return this.registers.filter((r) => r.ep === ep);
  }

  write(device: Peer, path: string, payload: Buffer | string, format: number, options: { maxMessageSize?: number; onExchange?: () => void } = {}): Promise<CoapMessage> {
    return this.coap.request(device, { code: '0.03', options: [...uriPathOptions(path), option(OptionNumber.ContentFormat, format)], payload }, { timeout: 10_000, ...options });
  }

  writeUri = (device: Peer, uri: string) => this.write(device, '/5/0/1', uri, TEXT);
  execute = (device: Peer, path: string) => this.coap.request(device, { code: '0.02', options: uriPathOptions(path) }, { timeout: 5000 });

  async read(device: Peer, path: string, timeout = 5000): Promise<string> {
    const response = await this.coap.request(device, { code: '0.01', options: [...uriPathOptions(path), option(OptionNumber.Accept, TEXT)] }, { timeout });
    assert.equal(response.code, '2.05', `GET ${path}`);
    return response.payload.toString('utf8');
  }

  /** Observes an integer resource in plain text: its value, then each notification's. */
  async watch(device: Peer, path: string): Promise<number[]> {
    const seen: number[] = [];
    const observation = await this.coap.observe(device, { code: '0.01', options: [...uriPathOptions(path), option(OptionNumber.Accept, TEXT)] }, (n) => seen.push(Number(n.payload.toString())), { timeout: 5000 });
    assert.ok(observation.active, `observing ${path}`);
    seen.unshift(Number(observation.response.payload.toString()));
    return seen;
  }
}

/** A CoAP file server: GET /fw/<name> answers a package (block-wise, the endpoint cuts Block2), others 4.04. */
class CoapFileServer {
  readonly coap: CoapEndpoint;
  readonly files = new Map<string, Buffer>();

  constructor(transport: UdpTransport | DtlsTransport) {
    // A real file server answers whole blocks at once: no RFC 7252 11.3 limit for a peer it has not verified.
    this.coap = new CoapEndpoint({ transport, rateLimit: false, amplificationFactor: false });
    this.coap.onRequest((request) => {
      const file = this.files.get(uriPath(request));
      return file ? { code: '2.05', options: [option(OptionNumber.ContentFormat, OPAQUE)], payload: file } : { code: '4.04' };
    });
  }

  uri(scheme: 'coap' | 'coaps', path: string): string {
    return `${scheme}://127.0.0.1:${this.coap.address().port}${path}`;
  }
}

describe('simulated client: Firmware Update object (object 5)', { timeout: 120_000 }, () => {
  const server = new Lwm2mServer();
  const files = new CoapFileServer(new UdpTransport({ host: '127.0.0.1', port: 0 }));
  const secureFiles = new CoapFileServer(new DtlsTransport({ host: '127.0.0.1', port: 0, credentials: { pskKey: async (identity) => (identity.toString() === PSK.identity ? PSK.key : undefined) } }));
  const httpFiles = new Map<string, Buffer>();
  const httpGets: string[] = [];
  /** Requests to /stall get headers and half a body, then nothing: their close is recorded. */
  const stalled: { closed: boolean }[] = [];
  const web = http.createServer((request, response) => {
    httpGets.push(request.url ?? '');
    if (request.url === '/stall') {
      const entry = { closed: false };
      stalled.push(entry);
      response.on('close', () => (entry.closed = true));
      response.writeHead(200, { 'content-length': '4096' });
      response.write(Buffer.alloc(2048));
      return;
    }
    const file = httpFiles.get(request.url ?? '');
    if (!file) response.writeHead(404).end();
    else response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(file.length) }).end(file);
  });
  const clients: SimulatedClient[] = [];
  const httpUri = (path: string) => `http://127.0.0.1:${(web.address() as AddressInfo).port}${path}`;
  let n = 0;

  /** A registered device with a Firmware Update object. */
  const device = async (firmware: FirmwareOptions = {}, name = `fw-${++n}`) => {
    const client = new SimulatedClient({ server: server.peer, endpointName: name, transmission: { ackTimeout: 500, maxRetransmit: 2 }, firmware: { version: '1.0.0', updateMs: 50, ...firmware } });
    clients.push(client);
    await client.start();
    assert.equal(await client.register(), '2.01');
    const { address, port } = client.coap.address();
    return { client, fw: client.firmware!, peer: { address, port }, name };
  };
  /** Pushes `bytes` to Package in one request (Block1 blocks when they do not fit a message). */
  const push = async (peer: Peer, bytes: Buffer) => {
    const response = await server.write(peer, '/5/0/0', bytes, OPAQUE);
    assert.equal(response.code, '2.04');
  };

  before(async () => {
    await server.coap.start();
    await files.coap.start();
    await secureFiles.coap.start();
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    for (const client of clients) await client.stop();
    await server.coap.stop();
    await files.coap.stop();
    await secureFiles.coap.stop();
    web.closeAllConnections();
    await new Promise((resolve) => web.close(resolve));
  });

  it('announces /5/0 and the resources of object 5: State Idle, Update Result 0, protocols, delivery', async () => {
    const { peer, name } = await device({ protocols: [0, 2], delivery: 2 });
    assert.match(server.registersOf(name)[0]!.links, /<\/5\/0>/);
    assert.equal(await server.read(peer, '/5/0/3'), '0');
    assert.equal(await server.read(peer, '/5/0/5'), '0');
    assert.equal(await server.read(peer, '/5/0/8/0'), '0');
    assert.equal(await server.read(peer, '/5/0/8/1'), '2');
    assert.equal(await server.read(peer, '/5/0/9'), '2');
    assert.equal(await server.read(peer, '/3/0/3'), '1.0.0');
  });

  for (const blockSize of [512, 1024]) {
    it(`push: 50 KB Package written in ${blockSize}-byte Block1 blocks, observed Downloading → Downloaded, Update → new version and a new Register`, async () => {
      const { fw, peer, name } = await device();
      const states = await server.watch(peer, '/5/0/3');
      const results = await server.watch(peer, '/5/0/5');
      const pkg = firmwarePackage(50_000, { name: 'sim-fw', version: `2.0.${blockSize}` });
      let exchanges = 0;
      // RFC 7959 2.3: the server's message size decides the block size (600 bytes: 512-byte blocks).
      const response = await server.write(peer, '/5/0/0', pkg, OPAQUE, { maxMessageSize: blockSize === 512 ? 600 : 1152, onExchange: () => exchanges++ });
      assert.equal(response.code, '2.04');
      const count = Math.ceil(pkg.length / blockSize);
      assert.equal(exchanges, count);
      const received = fw.package!;
      assert.equal(received.via, 'push');
      assert.equal(received.sha256, sha256(pkg));
      assert.ok(received.bytes.equals(pkg));
      assert.equal(received.blocks.length, count);
      assert.ok(received.blocks.every((b, i) => b.num === i && b.size === blockSize && b.more === i < count - 1));
      assert.equal(received.blocks.at(-1)!.length, pkg.length - (count - 1) * blockSize);
      await until(() => states.at(-1) === DOWNLOADED, 'State Downloaded notified');
      assert.deepEqual([...states], [IDLE, DOWNLOADING, DOWNLOADED]);
      assert.equal(await server.read(peer, '/5/0/6'), 'sim-fw');
      assert.equal(await server.read(peer, '/5/0/7'), `2.0.${blockSize}`);

      const registered = once(fw, 'registered');
      assert.equal((await server.execute(peer, '/5/0/2')).code, '2.04');
      await until(() => states.at(-1) === UPDATING, 'State Updating notified');
      assert.deepEqual(await registered, ['2.01']);
      assert.equal(server.registersOf(name).length, 2);
      assert.equal(await server.read(peer, '/3/0/3'), `2.0.${blockSize}`);
      assert.equal(await server.read(peer, '/5/0/3'), String(IDLE));
      assert.equal(await server.read(peer, '/5/0/5'), String(UpdateResult.success));
      assert.deepEqual(results, [0]); // Update Result stayed 0 until the reboot, which forgot the observers
      assert.deepEqual(
        fw.transitions.map((t) => [t.state, t.result]),
        [
          [DOWNLOADING, 0],
          [DOWNLOADED, 0],
          [UPDATING, 0],
          [IDLE, UpdateResult.success],
        ],
      );
    });
  }

  it('pull over coap://: Block2 GETs from a CoAP file server, then Update with a given newVersion', async () => {
    const { fw, peer } = await device({ newVersion: '3.1.4' });
    const pkg = firmwarePackage(50_000);
    files.files.set('/fw/pull.bin', pkg);
    const before = files.coap.stats().requests;
    const states = await server.watch(peer, '/5/0/3');
    assert.equal((await server.writeUri(peer, files.uri('coap', '/fw/pull.bin'))).code, '2.04');
    await until(() => fw.state === DOWNLOADED, 'Downloaded');
    assert.equal(fw.package!.via, 'coap');
    assert.equal(fw.package!.sha256, sha256(pkg));
    // One GET per 1024-byte Block2 block (the endpoint serves blocks after 0 from the body it keeps).
    assert.equal(files.coap.stats().requests - before, Math.ceil(pkg.length / 1024));
    assert.equal(await server.read(peer, '/5/0/1'), files.uri('coap', '/fw/pull.bin'));
    await until(() => states.at(-1) === DOWNLOADED, 'State Downloaded notified');
    assert.deepEqual(states, [IDLE, DOWNLOADING, DOWNLOADED]);
    const registered = once(fw, 'registered');
    assert.equal((await server.execute(peer, '/5/0/2')).code, '2.04');
    await registered;
    assert.equal(await server.read(peer, '/3/0/3'), '3.1.4');
    assert.equal(fw.result, UpdateResult.success);
  });

  it('pull over coaps://: Block2 GETs through a DTLS PSK session of its own', async () => {
    const { fw, peer } = await device({ protocols: [0, 1], dtls: PSK });
    const pkg = firmwarePackage(20_000);
    secureFiles.files.set('/fw/secure.bin', pkg);
    assert.equal((await server.writeUri(peer, secureFiles.uri('coaps', '/fw/secure.bin'))).code, '2.04');
    await until(() => fw.state === DOWNLOADED, 'Downloaded over coaps', 10_000);
    assert.equal(fw.package!.via, 'coaps');
    assert.equal(fw.package!.sha256, sha256(pkg));
  });

  it('pull over http:// from a node:http server on loopback', async () => {
    const { fw, peer } = await device({ protocols: [2], delivery: 0 });
    const pkg = firmwarePackage(50_000, { version: '4.0.0' });
    httpFiles.set('/fw.bin', pkg);
    assert.equal((await server.writeUri(peer, httpUri('/fw.bin'))).code, '2.04');
    await until(() => fw.state === DOWNLOADED, 'Downloaded over http');
    assert.equal(fw.package!.via, 'http');
    assert.equal(fw.package!.sha256, sha256(pkg));
    const registered = once(fw, 'registered');
    assert.equal((await server.execute(peer, '/5/0/2')).code, '2.04');
    await registered;
    assert.equal(await server.read(peer, '/3/0/3'), '4.0.0');
  });

  it('integrity: outcome integrity, or a package that is not the expected SHA-256, ends in Idle with Update Result 5', async () => {
    for (const firmware of [{ outcome: 'integrity' }, { expectedSha256: 'ab'.repeat(32) }] satisfies FirmwareOptions[]) {
      const { fw, peer, name } = await device(firmware);
      const states = await server.watch(peer, '/5/0/3');
      const results = await server.watch(peer, '/5/0/5');
      await push(peer, firmwarePackage(3000));
      assert.equal((await server.execute(peer, '/5/0/2')).code, '2.04');
      await until(() => results.at(-1) === UpdateResult.integrityFailure && states.at(-1) === IDLE, 'Update Result 5 and Idle notified');
      assert.deepEqual(states, [IDLE, DOWNLOADING, DOWNLOADED, UPDATING, IDLE]);
      assert.equal(fw.package, undefined);
      assert.equal(await server.read(peer, '/3/0/3'), '1.0.0');
      assert.equal(server.registersOf(name).length, 1);
    }
  });

  it('update failure: Update Result 8, back to Downloaded; a second Update can then succeed', async () => {
    const { fw, peer } = await device({ outcome: 'fail' });
    const results = await server.watch(peer, '/5/0/5');
    const pkg = firmwarePackage(3000, { version: '2.2.2' });
    await push(peer, pkg);
    assert.equal((await server.execute(peer, '/5/0/2')).code, '2.04');
    await until(() => results.at(-1) === UpdateResult.updateFailed, 'Update Result 8 notified');
    assert.equal(fw.state, DOWNLOADED);
    assert.equal(await server.read(peer, '/5/0/3'), String(DOWNLOADED));
    assert.equal(await server.read(peer, '/3/0/3'), '1.0.0');
    assert.equal(fw.package?.sha256, sha256(pkg));
    fw.outcome = 'success';
    const registered = once(fw, 'registered');
    assert.equal((await server.execute(peer, '/5/0/2')).code, '2.04');
    await registered;
    assert.equal(await server.read(peer, '/3/0/3'), '2.2.2');
  });

  it('never-return: Updating is notified, then the device answers nothing and never registers again', async () => {
    const { fw, peer, name } = await device({ outcome: 'never-return' });
    const states = await server.watch(peer, '/5/0/3');
    await push(peer, firmwarePackage(3000));
    const silent = once(fw, 'silent');
    assert.equal((await server.execute(peer, '/5/0/2')).code, '2.04');
    await silent;
    assert.equal(states.at(-1), UPDATING);
    await assert.rejects(server.read(peer, '/5/0/3', 1500), (error: unknown) => error instanceof CoapError && error.code === 'TIMEOUT');
    await sleep(300);
    assert.equal(server.registersOf(name).length, 1);
    assert.ok(fw.silent);
    assert.deepEqual(fw.registrations, []);
  });

  it('Update before a package is Downloaded (Idle, Downloading) is 4.05 Method Not Allowed', async () => {
    const { fw, peer } = await device({ protocols: [2] });
    assert.equal((await server.execute(peer, '/5/0/2')).code, '4.05');
    assert.equal((await server.writeUri(peer, httpUri('/stall'))).code, '2.04');
    await until(() => fw.state === DOWNLOADING, 'Downloading');
    assert.equal((await server.execute(peer, '/5/0/2')).code, '4.05');
    assert.equal(fw.transitions.filter((t) => t.state === UPDATING).length, 0);
  });

  it('invalid URI: a Write that succeeds, then Update Result 7 (unparsable, no host, not loopback, 4.04 / 404)', async () => {
    const { fw, peer } = await device({ protocols: [0, 2] });
    const results = await server.watch(peer, '/5/0/5');
    for (const uri of ['not a uri', 'coap://', 'coap://192.0.2.1/fw.bin', 'http://example.com/fw.bin', files.uri('coap', '/fw/missing.bin'), httpUri('/missing.bin')]) {
      assert.equal((await server.writeUri(peer, '')).code, '2.04'); // reset to Update Result 0
      assert.equal((await server.writeUri(peer, uri)).code, '2.04', uri);
      await until(() => fw.result === UpdateResult.invalidUri && fw.state === IDLE, `Update Result 7 for ${uri}`);
    }
    await until(() => results.at(-1) === UpdateResult.invalidUri, 'Update Result 7 notified');
    assert.deepEqual(httpGets.filter((path) => path.startsWith('/missing')), ['/missing.bin']);
  });

  it('unsupported protocol: Update Result 9 for a scheme not in /5/0/8, and for a push-only device', async () => {
    const { fw, peer } = await device({ protocols: [0] });
    for (const uri of ['ftp://127.0.0.1/fw.bin', httpUri('/fw.bin'), 'https://127.0.0.1/fw.bin', 'coaps://127.0.0.1/fw.bin']) {
      assert.equal((await server.writeUri(peer, uri)).code, '2.04', uri);
      assert.equal(fw.result, UpdateResult.unsupportedProtocol, uri);
      assert.equal(fw.state, IDLE);
      assert.equal((await server.writeUri(peer, '')).code, '2.04');
    }
    const pushOnly = await device({ delivery: 1 });
    assert.equal((await server.writeUri(pushOnly.peer, files.uri('coap', '/fw/pull.bin'))).code, '2.04');
    assert.equal(pushOnly.fw.result, UpdateResult.unsupportedProtocol);
    const pullOnly = await device({ delivery: 0 });
    assert.equal((await server.write(pullOnly.peer, '/5/0/0', firmwarePackage(100), OPAQUE)).code, '4.05');
  });

  it('cancel: an empty Package URI or Package resets to Idle / 0 and drops the package; a running download is aborted; Cancel gives 10', async () => {
    const { fw, peer } = await device({ protocols: [0, 2] });
    const states = await server.watch(peer, '/5/0/3');
    await push(peer, firmwarePackage(5000, { version: '9.9.9' }));
    assert.equal(await server.read(peer, '/5/0/7'), '9.9.9');
    // Not a trigger in Downloaded: rejected (Core E.6.1).
    assert.equal((await server.writeUri(peer, files.uri('coap', '/fw/pull.bin'))).code, '4.00');
    assert.equal((await server.writeUri(peer, '')).code, '2.04');
    assert.equal(fw.state, IDLE);
    assert.equal(fw.result, UpdateResult.initial);
    assert.equal(fw.package, undefined);
    assert.equal(await server.read(peer, '/5/0/7'), '');

    await push(peer, firmwarePackage(5000));
    assert.equal((await server.write(peer, '/5/0/0', Buffer.alloc(0), OPAQUE)).code, '2.04');
    assert.equal(fw.state, IDLE);
    await push(peer, firmwarePackage(5000));
    assert.equal((await server.write(peer, '/5/0/0', Buffer.from([0]), OPAQUE)).code, '2.04');
    assert.equal(fw.state, IDLE);

    const stalls = stalled.length;
    assert.equal((await server.writeUri(peer, httpUri('/stall'))).code, '2.04');
    await until(() => stalled.length > stalls && fw.state === DOWNLOADING, 'download under way');
    assert.equal((await server.writeUri(peer, '')).code, '2.04');
    assert.equal(fw.state, IDLE);
    await until(() => stalled.at(-1)!.closed, 'the HTTP download aborted');
    assert.equal(fw.result, UpdateResult.initial);

    await push(peer, firmwarePackage(5000));
    assert.equal((await server.execute(peer, '/5/0/10')).code, '2.04');
    assert.equal(fw.result, UpdateResult.cancelled);
    assert.equal((await server.execute(peer, '/5/0/10')).code, '4.05');
    await until(() => states.at(-1) === IDLE, 'Idle notified');
    assert.deepEqual(states, [IDLE, DOWNLOADING, DOWNLOADED, IDLE, DOWNLOADING, DOWNLOADED, IDLE, DOWNLOADING, DOWNLOADED, IDLE, DOWNLOADING, IDLE, DOWNLOADING, DOWNLOADED, IDLE]);
  });

  it('connection lost: Update Result 4 when the file server is gone (http refused, coap silent)', async () => {
    const { fw, peer } = await device({ protocols: [0, 2], downloadTimeoutMs: 800 });
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const silent = new UdpTransport({ host: '127.0.0.1', port: 0 });
    await silent.start(() => undefined);
    try {
      for (const uri of [`http://127.0.0.1:${port}/fw.bin`, `coap://127.0.0.1:${silent.address().port}/fw.bin`]) {
        assert.equal((await server.writeUri(peer, uri)).code, '2.04');
        await until(() => fw.result === UpdateResult.connectionLost && fw.state === IDLE, `Update Result 4 for ${uri}`);
        assert.equal((await server.writeUri(peer, '')).code, '2.04');
      }
    } finally {
      await silent.stop();
    }
  });

  it('refuses what is no trigger: Package write while Updating, reads of Package and Update, writes of State', async () => {
    const { peer } = await device({ updateMs: 1000 });
    assert.equal(await server.read(peer, '/5/0/3'), '0');
    assert.equal((await server.coap.request(peer, { code: '0.01', options: uriPathOptions('/5/0/0') })).code, '4.05');
    assert.equal((await server.coap.request(peer, { code: '0.01', options: uriPathOptions('/5/0/2') })).code, '4.05');
    assert.equal((await server.write(peer, '/5/0/3', '2', TEXT)).code, '4.05');
    assert.equal((await server.coap.request(peer, { code: '0.04', options: uriPathOptions('/5/0') })).code, '4.05');
    await push(peer, firmwarePackage(3000));
    assert.equal((await server.execute(peer, '/5/0/2')).code, '2.04');
    assert.equal((await server.write(peer, '/5/0/0', firmwarePackage(100), OPAQUE)).code, '4.05');
    assert.equal((await server.writeUri(peer, '')).code, '4.05');
  });
});
