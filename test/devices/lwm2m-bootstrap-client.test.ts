/**
 * The simulator's bootstrap mode (tools/lwm2m-bootstrap-client.ts) over real UDP on loopback, against a minimal
 * Bootstrap-Server made of the project's CoapEndpoint that sends the requests of src/lwm2m/bootstrap/plan.ts,
 * and a second CoapEndpoint standing in for the LwM2M Server the device then registers with.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  CoapEndpoint,
  contentFormat,
  option,
  OptionNumber,
  uriPath,
  uriPathOptions,
  uriQuery,
  UdpTransport,
  type CoapMessage,
  type Peer,
} from '../../src/coap/index.js';
import { normalizeBootstrapConfig, WRITE_AS, WRITE_ENCODINGS, type BootstrapConfig } from '../../src/lwm2m/bootstrap/config.js';
import { bootstrapPlan, securityRecords, serverRecords, type BootstrapStep } from '../../src/lwm2m/bootstrap/plan.js';
import { decode, encode, parseLinks } from '../../src/lwm2m/codecs/index.js';
import type { Lwm2mRecord } from '../../src/lwm2m/model.js';
import { CLIENT_PROFILES, DEFAULT_VALUES, SimulatedClient, type SimulatedClientOptions } from '../../tools/lwm2m-client.js';
import { ipv6Available } from '../helpers/coap.js';
import { until } from '../helpers/devices.js';

const TLV = 11542;
const LINK = 40;
const HAS_IPV6 = await ipv6Available();
/** A device with no server configured: no /0 and no /1, only its Device object and a sensor. */
const UNCONFIGURED: readonly Lwm2mRecord[] = DEFAULT_VALUES.filter((record) => !record.path.startsWith('/1/'));

/** What the Bootstrap-Server did with one device: its Bootstrap-Request query, and each request with its answer. */
interface Run {
  readonly query: string[];
  readonly exchanges: { readonly request: string; readonly code: string; readonly contentFormat?: number | undefined; readonly response: CoapMessage }[];
}

type Script = (bs: BootstrapServer, peer: Peer, pct: number | undefined) => Promise<void>;

/** A Bootstrap-Server: on POST /bs?ep=… it answers 2.04, then runs the device's script (by default its plan). */
class BootstrapServer {
  readonly coap: CoapEndpoint;
  readonly configs = new Map<string, BootstrapConfig>();
  readonly scripts = new Map<string, Script>();
  readonly runs = new Map<string, Promise<Run>>();
  #current: Run | undefined;

  constructor(host: string) {
    this.coap = new CoapEndpoint({ transport: new UdpTransport({ host, port: 0 }), rateLimit: false });
    this.coap.onRequest((request, peer) => {
      const query = uriQuery(request);
      const ep = query.find((q) => q.startsWith('ep='))?.slice(3);
      if (request.code !== '0.02' || uriPath(request) !== '/bs' || ep === undefined) return { code: '4.00' };
      const pct = query.find((q) => q.startsWith('pct='));
      const script = this.scripts.get(ep) ?? ((bs: BootstrapServer, to: Peer, preferred: number | undefined) => bs.send(to, bootstrapPlan(this.configs.get(ep)!, { pct: preferred })));
      const run: Run = { query, exchanges: [] };
      // Answer the Bootstrap-Request first, then configure the device.
      this.runs.set(
        ep,
        new Promise((resolve, reject) =>
          setImmediate(() => {
            this.#current = run;
            script(this, peer, pct === undefined ? undefined : Number(pct.slice(4))).then(() => resolve(run), reject);
          }),
        ),
      );
      return { code: '2.04' };
    });
  }

  get peer(): Peer {
    const { address, port } = this.coap.address();
    return { address, port };
  }

  /** Sends plan steps (or raw requests) in order; each answer is recorded in the current run. */
  async send(peer: Peer, steps: readonly BootstrapStep[]): Promise<void> {
    for (const step of steps) {
      const options = [...uriPathOptions(step.path), ...(step.operation === 'write' ? [option(OptionNumber.ContentFormat, step.contentFormat)] : [])];
      const code = step.operation === 'delete' ? '0.04' : step.operation === 'write' ? '0.03' : '0.02';
      await this.request(peer, `${step.method} ${step.path}`, { code, options, payload: step.operation === 'write' ? Buffer.from(step.payload) : Buffer.alloc(0) });
    }
  }

  async request(peer: Peer, what: string, request: Parameters<CoapEndpoint['request']>[1]): Promise<CoapMessage> {
    const response = await this.coap.request(peer, request, { timeout: 5000 });
    this.#current!.exchanges.push({ request: what, code: response.code, contentFormat: contentFormat(response), response });
    return response;
  }

  get = (peer: Peer, path: string, format: number) => this.request(peer, `GET ${path} ${format}`, { code: '0.01', options: [...uriPathOptions(path), option(OptionNumber.Accept, format)] });
  finish = (peer: Peer) => this.request(peer, 'POST /bs', { code: '0.02', options: uriPathOptions('/bs') });
}

/** The LwM2M Server stand-in: answers Register 2.01 at /rd/<n> and keeps what it got. */
class RegistrationServer {
  readonly coap: CoapEndpoint;
  readonly registers: { query: string[]; links: string; from: Peer }[] = [];

  constructor(host: string) {
    this.coap = new CoapEndpoint({ transport: new UdpTransport({ host, port: 0 }), rateLimit: false });
    this.coap.onRequest((request, peer) => {
      if (request.code !== '0.02' || uriPath(request) !== '/rd') return { code: '4.04' };
      this.registers.push({ query: uriQuery(request), links: request.payload.toString('utf8'), from: peer });
      return { code: '2.01', options: [option(OptionNumber.LocationPath, 'rd'), option(OptionNumber.LocationPath, String(this.registers.length))] };
    });
  }

  uri(): string {
    const { address, port } = this.coap.address();
    return `coap://${address.includes(':') ? `[${address}]` : address}:${port}`;
  }

  registerOf(ep: string) {
    return this.registers.find((r) => r.query.includes(`ep=${ep}`));
  }
}

const valueOf = (record: Lwm2mRecord | undefined) => (record?.value instanceof Uint8Array ? Buffer.from(record.value).toString('hex') : record?.value);
const valuesUnder = (client: SimulatedClient, prefix: string) =>
  Object.fromEntries([...client.values].filter(([path]) => path.startsWith(prefix)).map(([path, record]) => [path, valueOf(record)]));
const expected = (records: readonly Lwm2mRecord[]) => Object.fromEntries(records.map((record) => [record.path, valueOf(record)]));

describe('simulated client: LwM2M bootstrap', () => {
  const bs = new BootstrapServer('127.0.0.1');
  const lwm2m = new RegistrationServer('127.0.0.1');
  const clients: SimulatedClient[] = [];
  let n = 0;

  before(async () => {
    await bs.coap.start();
    await lwm2m.coap.start();
  });
  after(async () => {
    for (const client of clients) await client.stop();
    await bs.coap.stop();
    await lwm2m.coap.stop();
  });

  const device = async (options: Partial<SimulatedClientOptions> = {}) => {
    const client = new SimulatedClient({ endpointName: `bs-device-${++n}`, values: UNCONFIGURED, ...options });
    clients.push(client);
    await client.start();
    return client;
  };
  const configure = (client: SimulatedClient, body: Record<string, unknown>) => {
    const config = normalizeBootstrapConfig(body);
    bs.configs.set(client.options.endpointName, config);
    return config;
  };
  const server = (extra: Record<string, unknown> = {}) => ({ uri: lwm2m.uri(), shortServerId: 1, lifetime: 120, binding: 'U', securityMode: 'nosec', ...extra });

  /** Checks the device holds exactly the account the configuration wrote, then registers it and checks the Register. */
  async function assertBootstrappedAndRegisters(client: SimulatedClient, config: BootstrapConfig, lwm2mVersion = '1.1') {
    const [account] = config.servers;
    assert.deepEqual(valuesUnder(client, '/0/1/'), expected(securityRecords(account!, 1)));
    assert.deepEqual(valuesUnder(client, '/1/'), expected(serverRecords(account!, 1)));
    assert.equal(client.values.get('/0/0/1')?.value, true, 'the Bootstrap-Server Account is kept at /0/0');
    assert.equal(await client.register(), '2.01');
    const register = lwm2m.registerOf(client.options.endpointName);
    assert.ok(register, 'the LwM2M Server got the Register');
    assert.ok(register.query.includes(`lt=${account!.lifetime}`), register.query.join('&'));
    assert.ok(register.query.includes(`b=${account!.binding}`), register.query.join('&'));
    assert.ok(register.query.includes(`lwm2m=${lwm2mVersion}`), register.query.join('&'));
    assert.ok(register.links.includes('</1/1>') && !register.links.includes('</0/'), `no Security instance in the Register: ${register.links}`);
    assert.equal(client.location, `/rd/${lwm2m.registers.length}`);
  }

  for (const writeAs of WRITE_AS) {
    for (const writeEncoding of WRITE_ENCODINGS) {
      it(`writeAs ${writeAs} × ${writeEncoding}: the device ends with the account and registers with it`, async () => {
        const client = await device();
        const config = configure(client, { servers: [server()], writeAs, writeEncoding });
        const result = await client.bootstrap(bs.peer, { timeoutMs: 10_000 });
        const run = await bs.runs.get(client.options.endpointName)!;
        assert.equal(result.requestCode, '2.04');
        assert.equal(result.finished, true);
        assert.deepEqual(result.finishCodes, ['2.04']);
        assert.ok(run.exchanges.every((e) => e.code === (e.request.startsWith('DELETE') ? '2.02' : '2.04')), JSON.stringify(run.exchanges.map((e) => [e.request, e.code])));
        assert.equal(run.exchanges.length, bootstrapPlan(config).length);
        assert.deepEqual(result.server, { serverInstance: 1, securityInstance: 1, shortServerId: 1, uri: lwm2m.uri(), securityMode: 3, lifetime: 120, binding: 'U' });
        await assertBootstrappedAndRegisters(client, config);
      });
    }
  }

  it('without writeEncoding the writes follow the pct of the Bootstrap-Request (SenML CBOR here)', async () => {
    const client = await device({ formats: [112] });
    const config = configure(client, { servers: [server({ binding: 'UQ', lifetime: 600 })] });
    const result = await client.bootstrap(bs.peer, { pct: 112, timeoutMs: 10_000 });
    const run = await bs.runs.get(client.options.endpointName)!;
    assert.ok(run.query.includes('pct=112'), run.query.join('&'));
    assert.equal(result.finished, true);
    assert.deepEqual(
      run.exchanges.filter((e) => e.request.startsWith('PUT')).map((e) => e.request),
      ['PUT /0/1', 'PUT /1/1'],
    );
    assert.equal(await client.register(), '2.01');
    const register = lwm2m.registerOf(client.options.endpointName)!;
    // 1.1: Queue Mode is the Q parameter, not a binding letter.
    assert.ok(register.query.includes('b=U') && register.query.includes('Q') && register.query.includes('lt=600'), register.query.join('&'));
    assert.equal(config.writeEncoding, undefined);
  });

  it('a text-only primitive device (formats: []) is bootstrapped in plain text, one resource at a time', async () => {
    const client = await device({ formats: [] });
    const config = configure(client, { servers: [server()], writeEncoding: 'text' });
    const result = await client.bootstrap(bs.peer, { timeoutMs: 10_000 });
    const run = await bs.runs.get(client.options.endpointName)!;
    assert.equal(result.finished, true);
    assert.equal(run.exchanges.filter((e) => e.request.startsWith('PUT')).length, 7 + 4);
    await assertBootstrappedAndRegisters(client, config);
  });

  it('a text-only device refuses TLV writes (4.15) and then answers Bootstrap-Finish 4.06; without a good finish it times out', async () => {
    const client = await device({ formats: [] });
    configure(client, { servers: [server()], writeEncoding: 'tlv' });
    const result = await client.bootstrap(bs.peer, { timeoutMs: 1500 });
    const run = await bs.runs.get(client.options.endpointName)!;
    assert.deepEqual(
      run.exchanges.map((e) => `${e.request} ${e.code}`),
      ['DELETE /0 2.02', 'DELETE /1 2.02', 'PUT /0/1 4.15', 'PUT /1/1 4.15', 'POST /bs 4.06'],
    );
    assert.equal(result.finished, false);
    assert.deepEqual(result.finishCodes, ['4.06']);
    assert.equal(result.server, undefined);
  });

  it('a 1.0 TLV client: no pct sent, TLV writes, Register with lwm2m=1.0', async () => {
    const client = await device({ ...CLIENT_PROFILES['1.0-tlv'] });
    const config = configure(client, { servers: [server({ lifetime: 90 })] });
    const result = await client.bootstrap(bs.peer, { pct: 110, timeoutMs: 10_000 });
    const run = await bs.runs.get(client.options.endpointName)!;
    assert.deepEqual(run.query, [`ep=${client.options.endpointName}`], '1.0 has no pct');
    assert.equal(result.finished, true);
    assert.ok(run.exchanges.filter((e) => e.request.startsWith('PUT')).every((e) => e.code === '2.04'));
    await assertBootstrappedAndRegisters(client, config, '1.0');
  });

  it('an inconsistent configuration gets 4.06 at Bootstrap-Finish; corrected, the next finish gets 2.04', async () => {
    const client = await device();
    // dontWriteNoSecSecRecs: no Security instance is written, and this device has none to keep.
    const config = configure(client, { servers: [server()], tuning: { dontWriteNoSecSecRecs: true } });
    bs.scripts.set(client.options.endpointName, async (b, peer) => {
      await b.send(peer, bootstrapPlan(config));
      const records = securityRecords(config.servers[0]!, 1);
      await b.send(peer, [{ operation: 'write', method: 'PUT', path: '/0/1', contentFormat: TLV, payload: encode(TLV, records, { basePath: '/0/1' }), records }]);
      await b.finish(peer);
    });
    const result = await client.bootstrap(bs.peer, { timeoutMs: 10_000 });
    const run = await bs.runs.get(client.options.endpointName)!;
    assert.deepEqual(
      run.exchanges.map((e) => `${e.request} ${e.code}`),
      ['DELETE /1 2.02', 'PUT /1/1 2.04', 'POST /bs 4.06', 'PUT /0/1 2.04', 'POST /bs 2.04'],
    );
    assert.deepEqual(result.finishCodes, ['4.06', '2.04']);
    assert.equal(result.finished, true);
    await assertBootstrappedAndRegisters(client, config);
  });

  it('Bootstrap-Read of /1 (and /1/x), Discover in link format, Delete keeps the Bootstrap-Server Account and /3/0', async () => {
    const client = await device({ values: DEFAULT_VALUES });
    const config = configure(client, { servers: [server({ shortServerId: 7 })], deleteFirst: false });
    let links: string[] = [];
    bs.scripts.set(client.options.endpointName, async (b, peer) => {
      const before = await b.get(peer, '/', LINK);
      links = parseLinks(before.payload).map((link) => `<${link.target}>${link.attributes.map((a) => `;${a.name}=${a.value}`).join('')}`);
      await b.get(peer, '/1', TLV);
      await b.send(peer, bootstrapPlan(config).filter((step) => step.operation === 'write'));
      await b.get(peer, '/1/1', 110);
      await b.get(peer, '/0', TLV);
      await b.get(peer, '/3', TLV);
      await b.get(peer, '/0', LINK);
      await b.get(peer, '/5', LINK);
      await b.request(peer, 'DELETE /0/0', { code: '0.04', options: uriPathOptions('/0/0') });
      await b.request(peer, 'DELETE /1/0', { code: '0.04', options: uriPathOptions('/1/0') });
      await b.finish(peer);
    });
    const result = await client.bootstrap(bs.peer, { timeoutMs: 10_000 });
    const run = await bs.runs.get(client.options.endpointName)!;
    const answer = (request: string) => run.exchanges.find((e) => e.request === request)!;
    assert.equal(result.finished, true);

    // Bootstrap-Discover of / (Core 1.1 example form): lwm2m version, the Bootstrap-Server's Security instance bare.
    assert.equal(answer(`GET / ${LINK}`).contentFormat, LINK);
    assert.deepEqual(links, ['</>;lwm2m=1.1', `</0/0>`, '</1/0>;ssid=101', '</3/0>', '</3303/0>']);
    // Bootstrap-Read /1 before the writes: the factory server instance.
    const read = answer(`GET /1 ${TLV}`);
    assert.equal(read.code, '2.05');
    assert.equal(decode(TLV, read.response.payload, { basePath: '/1' }).length, 3);
    const instance = answer('GET /1/1 110');
    assert.equal(instance.code, '2.05');
    assert.deepEqual(
      decode(110, instance.response.payload, { basePath: '/1/1' }).map((r) => [r.path, r.value]),
      serverRecords(config.servers[0]!, 1).map((r) => [r.path, r.value]),
    );
    assert.equal(answer(`GET /0 ${TLV}`).code, '4.01', 'Security is never read back');
    assert.equal(answer(`GET /3 ${TLV}`).code, '4.05', 'Bootstrap-Read is for objects 1 and 2');
    const security = parseLinks(answer(`GET /0 ${LINK}`).response.payload);
    assert.deepEqual(
      security.map((link) => [link.target, link.attributes.map((a) => `${a.name}=${a.value}`)]),
      [['/', ['lwm2m=1.1']], ['/0/0', []], ['/0/1', ['ssid=7', `uri=${lwm2m.uri()}`]]],
    );
    assert.ok(answer(`GET /0 ${LINK}`).response.payload.toString().includes(`uri="${lwm2m.uri()}"`), 'uri is a quoted string');
    assert.equal(answer(`GET /5 ${LINK}`).code, '4.04');
    assert.equal(answer('DELETE /0/0').code, '4.00', 'the Bootstrap-Server Account is not deleted');
    assert.equal(answer('DELETE /1/0').code, '2.02');
    assert.equal(client.values.get('/0/0/1')?.value, true);
    assert.deepEqual(result.accounts.map((a) => a.shortServerId), [7]);
  });

  it('Bootstrap-Delete / removes every instance but the Bootstrap-Server Account and /3/0; normal Write to a missing instance stays 4.04', async () => {
    const client = await device({ values: DEFAULT_VALUES });
    const config = configure(client, { servers: [server()], deleteFirst: false });
    bs.scripts.set(client.options.endpointName, async (b, peer) => {
      await b.request(peer, 'DELETE /', { code: '0.04' });
      await b.send(peer, bootstrapPlan(config));
    });
    const result = await client.bootstrap(bs.peer, { timeoutMs: 10_000 });
    assert.equal(result.finished, true);
    assert.deepEqual(
      [...new Set([...client.values.keys()].map((path) => path.split('/').slice(0, 3).join('/')))].sort(),
      ['/0/0', '/0/1', '/1/1', '/3/0'],
    );
    assert.deepEqual(result.requests.slice(0, 2), ['DELETE /', 'PUT /0/1']);
    // After the bootstrap, the same peer's writes are Device Management Writes again.
    const late = await bs.coap.request(clientPeer(client), {
      code: '0.03',
      options: [...uriPathOptions('/1/9/1'), option(OptionNumber.ContentFormat, 0)],
      payload: Buffer.from('60'),
    });
    assert.equal(late.code, '4.04');
  });

  it('PSK: identity and key land in the Security instance; register() refuses coaps:// (no DTLS in the simulator)', async () => {
    const client = await device();
    configure(client, {
      servers: [server({ uri: lwm2m.uri().replace('coap:', 'coaps:'), securityMode: 'psk', pskIdentity: 'sim-psk', pskKey: '0123456789abcdef' })],
      writeEncoding: 'senml_json',
    });
    const result = await client.bootstrap(bs.peer, { timeoutMs: 10_000 });
    assert.equal(result.finished, true);
    assert.equal(result.server?.securityMode, 0);
    assert.equal(client.values.get('/0/1/2')?.value, 0);
    assert.equal(Buffer.from(client.values.get('/0/1/3')!.value as Uint8Array).toString(), 'sim-psk');
    assert.equal(valueOf(client.values.get('/0/1/5')), '0123456789abcdef');
    await assert.rejects(client.register(), /no DTLS/);
  });

  it('register() refuses a server URI that is not loopback', async () => {
    const client = await device();
    configure(client, { servers: [server({ uri: 'coap://192.0.2.1:5683' })] });
    assert.equal((await client.bootstrap(bs.peer, { timeoutMs: 10_000 })).finished, true);
    await assert.rejects(client.register(), /loopback/);
  });

  it('a Bootstrap-Server that never answers: the bootstrap fails after the timeout', async () => {
    const silent = new CoapEndpoint({ transport: new UdpTransport({ host: '127.0.0.1', port: 0 }), rateLimit: false });
    silent.onRequest(() => new Promise(() => {}));
    await silent.start();
    try {
      const client = await device({ transmission: { ackTimeout: 200, maxRetransmit: 1 } });
      const started = Date.now();
      const result = await client.bootstrap({ address: '127.0.0.1', port: silent.address().port }, { timeoutMs: 800 });
      assert.equal(result.finished, false);
      assert.equal(result.requestCode, undefined);
      assert.ok(Date.now() - started < 5000);
      await assert.rejects(client.register(), /no LwM2M server/);
    } finally {
      await silent.stop();
    }
  });

  it('IPv6 loopback: bootstrap from [::1] and register at coap://[::1]:port', { skip: !HAS_IPV6 && 'no IPv6 loopback' }, async () => {
    const bs6 = new BootstrapServer('::1');
    const lwm2m6 = new RegistrationServer('::1');
    await bs6.coap.start();
    await lwm2m6.coap.start();
    try {
      // The socket's family comes from options.server: here the (IPv6) LwM2M Server it will be given anyway.
      const client = await device({ server: { address: '::1', port: 9 } });
      bs6.configs.set(client.options.endpointName, normalizeBootstrapConfig({ servers: [{ uri: lwm2m6.uri(), shortServerId: 3, securityMode: 'nosec' }] }));
      const result = await client.bootstrap(bs6.peer, { timeoutMs: 10_000 });
      assert.equal(result.finished, true);
      assert.equal(client.values.get('/0/0/0')?.value, `coap://[::1]:${bs6.peer.port}`);
      assert.equal(await client.register(), '2.01');
      await until(() => lwm2m6.registerOf(client.options.endpointName) !== undefined, 'the IPv6 Register');
      await assert.rejects(client.bootstrap(bs.peer), /not reachable/);
    } finally {
      await bs6.coap.stop();
      await lwm2m6.coap.stop();
    }
  });

  function clientPeer(client: SimulatedClient): Peer {
    return { address: '127.0.0.1', port: client.coap.address().port };
  }
});
