import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Value } from 'typebox/value';
import { AppError } from '../../src/errors.js';
import {
  BootstrapConfigBody,
  normalizeBootstrapConfig,
  WRITE_AS,
  WRITE_ENCODINGS,
  type BootstrapConfig,
} from '../../src/lwm2m/bootstrap/config.js';
import { bootstrapEncoding, bootstrapPlan, securityRecords, serverRecords, type BootstrapStep } from '../../src/lwm2m/bootstrap/plan.js';
import { decode } from '../../src/lwm2m/codecs/index.js';
import type { Lwm2mRecord } from '../../src/lwm2m/model.js';
import { ObjectRegistry } from '../../src/lwm2m/objects/registry.js';
import { testModels as models, toHex } from '../helpers/lwm2m-models.js';

/** The body of the API as the brief gives it; it must work exactly as written. */
const EXAMPLE = {
  servers: [{ uri: 'coap://host:5683', shortServerId: 1, lifetime: 300, binding: 'U', securityMode: 'nosec' }],
  serverInstance: 1,
  securityInstance: 1,
  writeAs: 'instances',
  writeEncoding: 'tlv',
  tuning: { dontWriteNoSecSecRecs: false },
};

const PSK_SERVER = { uri: 'coaps://[::1]:5684', shortServerId: 2, securityMode: 'psk', pskIdentity: 'device-7', pskKey: '000102030405060708090A0B0C0D0E0F' };

const config = (body: unknown): BootstrapConfig => normalizeBootstrapConfig(body);
const writes = (steps: readonly BootstrapStep[]) => steps.filter((step) => step.operation === 'write');
const outline = (steps: readonly BootstrapStep[]) => steps.map((step) => `${step.method} ${step.path}`);

describe('bootstrap configuration', () => {
  it('takes the example body as written and fills the defaults', () => {
    assert.ok(Value.Check(BootstrapConfigBody, EXAMPLE), 'the API schema takes it');
    const normalized = config(EXAMPLE);
    assert.deepEqual(normalized, {
      servers: [{ uri: 'coap://host:5683', shortServerId: 1, lifetime: 300, binding: 'U', securityMode: 'nosec', notificationStoring: true }],
      serverInstance: 1,
      securityInstance: 1,
      writeAs: 'instances',
      writeEncoding: 'tlv',
      tuning: { dontWriteNoSecSecRecs: false },
      deleteFirst: true,
    });
    assert.deepEqual(config(JSON.parse(JSON.stringify(normalized))), normalized, 'a stored configuration normalizes to itself');
  });

  it('defaults: lifetime 300, binding U, instances 1, writeAs instances, no writeEncoding (pct decides), deleteFirst', () => {
    const normalized = config({ servers: [{ uri: 'coap://127.0.0.1', shortServerId: 7, securityMode: 'nosec' }] });
    assert.deepEqual(normalized, {
      servers: [{ uri: 'coap://127.0.0.1', shortServerId: 7, lifetime: 300, binding: 'U', securityMode: 'nosec', notificationStoring: true }],
      serverInstance: 1,
      securityInstance: 1,
      writeAs: 'instances',
      tuning: { dontWriteNoSecSecRecs: false },
      deleteFirst: true,
    });
  });

  it('keeps PSK credentials (key as lower-case hex) and the optional server resources', () => {
    const normalized = config({ servers: [{ ...PSK_SERVER, notificationStoring: false, defaultMinPeriod: 0, defaultMaxPeriod: 60, binding: 'UQ' }] });
    assert.deepEqual(normalized.servers[0], {
      uri: 'coaps://[::1]:5684',
      shortServerId: 2,
      lifetime: 300,
      binding: 'UQ',
      securityMode: 'psk',
      pskIdentity: 'device-7',
      pskKey: '000102030405060708090a0b0c0d0e0f',
      notificationStoring: false,
      defaultMinPeriod: 0,
      defaultMaxPeriod: 60,
    });
  });

  const nosec = (extra: Record<string, unknown> = {}) => ({ uri: 'coap://host:5683', shortServerId: 1, securityMode: 'nosec', ...extra });
  const psk = (extra: Record<string, unknown> = {}) => ({ ...PSK_SERVER, ...extra });
  const rejected: [string, unknown, string][] = [
    ['a URI that does not parse', { servers: [nosec({ uri: 'not a uri' })] }, 'servers[0].uri'],
    ['a scheme other than coap/coaps', { servers: [nosec({ uri: 'http://host:5683' })] }, 'servers[0].uri'],
    ['a URI without host', { servers: [nosec({ uri: 'coap:/x' })] }, 'servers[0].uri'],
    ['a URI with a path', { servers: [nosec({ uri: 'coap://host:5683/rd' })] }, 'servers[0].uri'],
    ['a URI with a query', { servers: [nosec({ uri: 'coap://host?x=1' })] }, 'servers[0].uri'],
    ['a URI with user information', { servers: [nosec({ uri: 'coap://me@host' })] }, 'servers[0].uri'],
    ['port 0', { servers: [nosec({ uri: 'coap://host:0' })] }, 'servers[0].uri'],
    ['nosec on coaps://', { servers: [nosec({ uri: 'coaps://host' })] }, 'servers[0].uri'],
    ['psk on coap://', { servers: [psk({ uri: 'coap://host' })] }, 'servers[0].uri'],
    ['two servers with one shortServerId', { servers: [nosec(), nosec({ uri: 'coap://other' })] }, 'servers[1].shortServerId'],
    ['a binding letter outside U T S N Q', { servers: [nosec({ binding: 'UX' })] }, 'servers[0].binding'],
    ['a binding letter twice', { servers: [nosec({ binding: 'UU' })] }, 'servers[0].binding'],
    ['a binding of Q alone', { servers: [nosec({ binding: 'Q' })] }, 'servers[0].binding'],
    ['psk without pskIdentity', { servers: [psk({ pskIdentity: undefined })] }, 'servers[0].pskIdentity'],
    ['psk without pskKey', { servers: [psk({ pskKey: undefined })] }, 'servers[0].pskKey'],
    ['a pskIdentity over 128 bytes of UTF-8 (65 characters, 130 bytes)', { servers: [psk({ pskIdentity: 'é'.repeat(65) })] }, 'servers[0].pskIdentity'],
    ['a pskKey of odd length', { servers: [psk({ pskKey: 'abc' })] }, 'servers[0].pskKey'],
    ['a pskKey that is not hex', { servers: [psk({ pskKey: 'zz' })] }, 'servers[0].pskKey'],
    ['a pskKey over 64 bytes', { servers: [psk({ pskKey: 'ab'.repeat(65) })] }, 'servers[0].pskKey'],
    ['a pskKey on a NoSec server', { servers: [nosec({ pskKey: 'abcd' })] }, 'servers[0].pskKey'],
    ['a pskIdentity on a NoSec server', { servers: [nosec({ pskIdentity: 'x' })] }, 'servers[0].pskIdentity'],
    ['defaultMinPeriod above defaultMaxPeriod', { servers: [nosec({ defaultMinPeriod: 60, defaultMaxPeriod: 10 })] }, 'servers[0].defaultMinPeriod'],
    ['serverInstance + servers past 65534', { servers: [nosec(), nosec({ shortServerId: 2 })], serverInstance: 65_534 }, 'serverInstance'],
    ['securityInstance + servers past 65534', { servers: [nosec(), nosec({ shortServerId: 2 })], securityInstance: 65_534 }, 'securityInstance'],
    // What the schema itself says (normalize checks it too, for stored configurations).
    ['no servers', { servers: [] }, 'servers'],
    ['nine servers', { servers: Array.from({ length: 9 }, (_, i) => nosec({ shortServerId: i + 1 })) }, 'servers'],
    ['an unknown field', { servers: [nosec({ colour: 'red' })] }, 'servers[0].colour'],
    ['shortServerId 0', { servers: [nosec({ shortServerId: 0 })] }, 'servers[0].shortServerId'],
    ['lifetime 0', { servers: [nosec({ lifetime: 0 })] }, 'servers[0].lifetime'],
    ['an unknown securityMode', { servers: [nosec({ securityMode: 'rpk' })] }, 'servers[0].securityMode'],
    ['an unknown writeEncoding', { servers: [nosec()], writeEncoding: 'json' }, 'writeEncoding'],
    ['a body that is not an object', 'servers', 'body'],
  ];
  for (const [what, body, field] of rejected) {
    it(`rejects ${what} (IOTB_REQUEST_VALIDATION naming ${field})`, () => {
      assert.throws(
        () => normalizeBootstrapConfig(body),
        (error: unknown) => {
          assert.ok(error instanceof AppError, String(error));
          assert.equal(error.code, 'IOTB_REQUEST_VALIDATION');
          assert.equal(error.status, 400);
          assert.ok(error.message.startsWith(`${field}: `), error.message);
          assert.deepEqual(error.details, { field });
          return true;
        },
      );
    });
  }
});

describe('bootstrap plan', () => {
  const intended = (normalized: BootstrapConfig): Lwm2mRecord[] =>
    normalized.servers.flatMap((server, i) => [...securityRecords(server, normalized.securityInstance + i), ...serverRecords(server, normalized.serverInstance + i)]);
  const twoServers = config({
    servers: [psk({}), { uri: 'coap://127.0.0.1:5683', shortServerId: 9, securityMode: 'nosec', lifetime: 60, binding: 'UQ', defaultMinPeriod: 1, defaultMaxPeriod: 30 }],
    serverInstance: 3,
    securityInstance: 10,
  });
  function psk(extra: Record<string, unknown>) {
    return { ...PSK_SERVER, ...extra };
  }
  const FORMATS = { tlv: 11542, text: 0, senml_cbor: 112, senml_json: 110 } as const;

  for (const writeAs of WRITE_AS) {
    for (const writeEncoding of WRITE_ENCODINGS) {
      it(`writeAs ${writeAs} × ${writeEncoding}: every write decodes back to exactly the intended records`, () => {
        const normalized = { ...twoServers, writeAs, writeEncoding };
        const steps = bootstrapPlan(normalized, { pct: 110 });
        const perResource = writeAs === 'resources' || writeEncoding === 'text';
        const records = intended(normalized);
        assert.deepEqual(outline(steps).slice(0, 2), ['DELETE /0', 'DELETE /1']);
        assert.deepEqual(steps.at(-1), { operation: 'finish', method: 'POST', path: '/bs' });
        const written = writes(steps);
        assert.deepEqual(
          written.map((step) => step.path),
          perResource ? records.map((record) => record.path) : ['/0/10', '/1/3', '/0/11', '/1/4'],
          'security then server, server by server',
        );
        for (const step of written) {
          assert.equal(step.contentFormat, FORMATS[writeEncoding]);
          assert.equal(step.method, 'PUT');
          assert.deepEqual(decode(step.contentFormat, step.payload, { basePath: step.path, models }), step.records, `${step.path} decodes to its records`);
        }
        assert.deepEqual(written.flatMap((step) => step.records), records);
        // With the shipped (1.2) object definitions the values come back the same (Lifetime is typed unsigned there).
        const shipped = new ObjectRegistry();
        const values = (list: readonly Lwm2mRecord[]) => list.map((r) => [r.path, r.value instanceof Uint8Array ? toHex(r.value) : r.value]);
        const decoded = written.flatMap((step) => decode(step.contentFormat, step.payload, { basePath: step.path, models: shipped }));
        assert.deepEqual(values(decoded), values(records));
      });
    }
  }

  it('TLV of a NoSec Security instance and its Server instance, byte for byte', () => {
    const steps = writes(bootstrapPlan(config(EXAMPLE)));
    assert.deepEqual(outline(steps), ['PUT /0/1', 'PUT /1/1']);
    // PUT /0/1: Resource TLVs (type 11 in bits 7-6, 8-bit id), no Object Instance wrapper under an instance path
    // (Core 1.1 7.4.3 / TS 1.0 6.4.3):
    //   c8 00 10 + "coap://host:5683"  res 0, length in the next byte (bits 4-3 = 01): 16 bytes of URI
    //   c1 01 00                       res 1 Bootstrap-Server, 1 byte: false
    //   c1 02 03                       res 2 Security Mode, 1 byte: 3 (NoSec)
    //   c0 03 / c0 04 / c0 05          res 3, 4, 5 opaque, length 0 (empty identity, server key, secret key)
    //   c1 0a 01                       res 10 Short Server ID: 1
    assert.equal(toHex(steps[0]!.payload), 'c80010' + Buffer.from('coap://host:5683').toString('hex') + 'c10100' + 'c10203' + 'c003c004c005' + 'c10a01');
    // PUT /1/1: c1 00 01 (SSID 1), c2 01 01 2c (Lifetime 300 in 2 bytes), c1 06 01 (Notification Storing true), c1 07 55 ("U").
    assert.equal(toHex(steps[1]!.payload), 'c10001' + 'c201012c' + 'c10601' + 'c10755');
  });

  it('PSK: Security Mode 0, identity as UTF-8 bytes, the key as its bytes', () => {
    const [security] = writes(bootstrapPlan(config({ servers: [psk({ pskIdentity: 'capteur-é' })], writeEncoding: 'tlv' })));
    const decoded = decode(security!.contentFormat, security!.payload, { basePath: '/0/1', models });
    const byPath = new Map(decoded.map((record) => [record.path, record.value]));
    assert.equal(byPath.get('/0/1/0'), 'coaps://[::1]:5684');
    assert.equal(byPath.get('/0/1/2'), 0);
    assert.equal(Buffer.from(byPath.get('/0/1/3') as Uint8Array).toString('utf8'), 'capteur-é');
    assert.equal(toHex(byPath.get('/0/1/4') as Uint8Array), '');
    assert.equal(toHex(byPath.get('/0/1/5') as Uint8Array), '000102030405060708090a0b0c0d0e0f');
    assert.equal(byPath.get('/0/1/10'), 2);
  });

  it('without writeEncoding, follows the pct of SenML JSON, SenML CBOR and TLV, else writes TLV', () => {
    const normalized = config({ servers: [{ uri: 'coap://host', shortServerId: 1, securityMode: 'nosec' }] });
    const formatOf = (pct?: number) => writes(bootstrapPlan(normalized, { pct }))[0]!.contentFormat;
    assert.equal(formatOf(110), 110);
    assert.equal(formatOf(112), 112);
    assert.equal(formatOf(11542), 11542);
    assert.equal(formatOf(undefined), 11542);
    assert.equal(formatOf(11543), 11542, 'LwM2M JSON is not a bootstrap pct');
    assert.equal(formatOf(0), 11542, 'plain text is not a bootstrap pct');
    assert.equal(formatOf(60), 11542);
    assert.equal(bootstrapEncoding({ writeEncoding: 'senml_cbor' }, 110), 'senml_cbor', 'a configured encoding wins over pct');
    assert.equal(writes(bootstrapPlan({ ...normalized, writeEncoding: 'text' }, { pct: 112 }))[0]!.contentFormat, 0);
  });

  it('dontWriteNoSecSecRecs: NoSec servers get no Security write and /0 is kept; PSK servers still get theirs', () => {
    const tuned = (servers: unknown[]) => config({ servers, tuning: { dontWriteNoSecSecRecs: true } });
    const nosecServer = { uri: 'coap://127.0.0.1:5683', shortServerId: 1, securityMode: 'nosec' };
    assert.deepEqual(outline(bootstrapPlan(tuned([nosecServer]))), ['DELETE /1', 'PUT /1/1', 'POST /bs']);
    assert.deepEqual(outline(bootstrapPlan(tuned([psk({}), { ...nosecServer, shortServerId: 5 }]))), ['DELETE /1', 'PUT /0/1', 'PUT /1/1', 'PUT /1/2', 'POST /bs']);
    assert.deepEqual(outline(bootstrapPlan(tuned([psk({})]))), ['DELETE /0', 'DELETE /1', 'PUT /0/1', 'PUT /1/1', 'POST /bs'], 'no NoSec server: nothing kept');
    assert.deepEqual(outline(bootstrapPlan(config({ servers: [nosecServer] }))), ['DELETE /0', 'DELETE /1', 'PUT /0/1', 'PUT /1/1', 'POST /bs'], 'off by default');
  });

  it('deleteFirst false sends no Bootstrap-Delete', () => {
    const steps = bootstrapPlan(config({ servers: [{ uri: 'coap://h', shortServerId: 1, securityMode: 'nosec' }], deleteFirst: false, writeAs: 'resources' }));
    assert.ok(steps.every((step) => step.operation !== 'delete'));
    assert.equal(steps.length, 7 + 4 + 1);
  });

  it('writes Default Min/Max Period only when configured, and the Server instance with SSID, lifetime, storing, binding', () => {
    const [, server] = writes(bootstrapPlan(twoServers)).slice(2);
    assert.deepEqual(
      server!.records.map((r) => [r.path, r.value]),
      [['/1/4/0', 9], ['/1/4/1', 60], ['/1/4/2', 1], ['/1/4/3', 30], ['/1/4/6', true], ['/1/4/7', 'UQ']],
    );
  });
});
