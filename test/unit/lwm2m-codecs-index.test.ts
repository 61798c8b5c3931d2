import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CodecError, decode, decodePaths, encode, encodePaths, formatByName, formatName, parseLinks } from '../../src/lwm2m/codecs/index.js';
import { CONTENT_FORMATS } from '../../src/lwm2m/model.js';
import { deviceRecords, hex, testModels as models, utf8 } from '../helpers/lwm2m-models.js';

describe('codec index', () => {
  it('names every LwM2M Content-Format, the pre-registration TLV and JSON numbers included', () => {
    assert.deepEqual(
      Object.values(CONTENT_FORMATS).map((cf) => [cf, formatName(cf)]),
      [
        [0, 'text'], [40, 'link'], [42, 'opaque'], [60, 'raw-cbor'], [110, 'senml-json'], [112, 'senml-cbor'],
        [11542, 'tlv'], [11543, 'json'], [11544, 'cbor'], [1542, 'tlv'], [1543, 'json'],
      ],
    );
    assert.equal(formatName(50), undefined);
  });

  it('maps names back to the registered numbers', () => {
    for (const name of ['text', 'link', 'opaque', 'raw-cbor', 'senml-json', 'senml-cbor', 'tlv', 'json', 'cbor']) {
      assert.equal(formatName(formatByName(name) ?? -1), name);
    }
    assert.equal(formatByName('tlv'), 11542);
    assert.equal(formatByName('cbor'), 11544);
    assert.equal(formatByName('toString'), undefined);
    assert.equal(formatByName('xml'), undefined);
  });

  it('answers the same records for the Device instance in every multi-value format', () => {
    for (const cf of [11542, 1542, 110, 112, 11543, 1543, 11544]) {
      assert.deepEqual(decode(cf, encode(cf, deviceRecords, { basePath: '/3/0' }), { basePath: '/3/0', models }), deviceRecords, `content format ${cf}`);
    }
  });

  it('refuses unknown formats, link format through the value codecs, and path lists where only SenML has them', () => {
    assert.throws(() => decode(50, utf8('{}')), (error: unknown) => error instanceof CodecError && error.format === undefined && /Content-Format 50/.test(error.message));
    assert.throws(() => encode(99, []), CodecError);
    assert.throws(() => decode(40, utf8('</1/0>')), /use parseLinks/);
    assert.throws(() => encode(40, []), /use formatLinks/);
    assert.throws(() => encodePaths(11542, ['/3/0']), /cannot carry a list of paths/);
    assert.throws(() => decodePaths(11544, hex('a0')), /cannot carry a list of paths/);
    assert.deepEqual(parseLinks('</1/0>'), [{ target: '/1/0', attributes: [] }]);
  });

  it('refuses a malformed base path and records whose path is not a value', () => {
    assert.throws(() => decode(11542, hex('c10964'), { basePath: '3/0' }), /is not an LwM2M path/);
    assert.throws(() => decode(11542, hex('c10964'), { basePath: '/70000' }), /ids are 0\.\.65535/);
    assert.throws(() => encode(110, [{ path: '/3/0', type: 'integer', value: 1 }]), /not a resource or resource instance/);
    assert.throws(() => encode(110, [{ path: '/3/0/9', type: 'none', value: '' }]), /has no value \(type none\)/);
    assert.throws(() => encode(11544, [{ path: '/4/0/0', type: 'integer', value: 1 }], { basePath: '/3' }), /outside the request path \/3/);
  });
});

/** Deterministic pseudo-random numbers (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('malformed input never escapes as anything but a CodecError, and never hangs', () => {
  const seeds: Array<[number, string, Uint8Array]> = [
    [11542, '/3/0', encode(11542, deviceRecords, { basePath: '/3/0' })],
    [11542, '/3', encode(11542, deviceRecords, { basePath: '/3' })],
    [110, '/3/0', encode(110, deviceRecords, { basePath: '/3/0' })],
    [112, '/3/0', encode(112, deviceRecords, { basePath: '/3/0' })],
    [11543, '/3/0', encode(11543, deviceRecords, { basePath: '/3/0' })],
    [11544, '/3/0', encode(11544, deviceRecords, { basePath: '/3/0' })],
    [11544, '/', hex('bf0dbf181abf01182a0215ffff0ebf181bbf01182b0216ffffff')],
    [60, '/3/0/13', encode(60, [deviceRecords[13]], { basePath: '/3/0/13' })],
    [0, '/3/0/13', utf8('1367491215')],
    [40, '/', utf8('</>;rt="oma.lwm2m";ct="110 112",</1/0>;ver=1.1,</3/0>;pmin=10;pmax=60')],
  ];

  const attempt = (cf: number, basePath: string, payload: Uint8Array): void => {
    try {
      if (cf === 40) parseLinks(payload);
      else decode(cf, payload, { basePath, models });
    } catch (error) {
      if (!(error instanceof CodecError)) {
        throw new Error(`content format ${cf}, payload ${Buffer.from(payload).toString('hex')}: ${(error as Error).stack ?? String(error)}`);
      }
    }
  };

  it('survives every truncation of the seed payloads', () => {
    for (const [cf, basePath, payload] of seeds) {
      for (let length = 0; length < payload.length; length++) attempt(cf, basePath, payload.subarray(0, length));
    }
  });

  it('survives 3000 random mutations per format', () => {
    const next = random(0x1ab5eed);
    const started = Date.now();
    for (const [cf, basePath, payload] of seeds) {
      for (let round = 0; round < 3000; round++) {
        const mutated = new Uint8Array(payload);
        const edits = 1 + Math.floor(next() * 4);
        for (let edit = 0; edit < edits; edit++) {
          const at = Math.floor(next() * mutated.length);
          const choice = next();
          if (choice < 0.5) mutated[at] = Math.floor(next() * 256);
          else if (choice < 0.8) mutated[at] = (mutated[at] ?? 0) ^ (1 << Math.floor(next() * 8));
          else mutated[at] = [0x00, 0xff, 0x7f, 0x80, 0x5b, 0x7b, 0x22, 0x3c, 0x3e, 0x2c, 0x3b, 0x9f, 0xbf, 0x1b][Math.floor(next() * 14)] ?? 0;
        }
        attempt(cf, basePath, mutated);
      }
    }
    assert.ok(Date.now() - started < 20_000, 'fuzzing took too long');
  });

  it('survives random bytes in every format', () => {
    const next = random(42);
    for (const [cf, basePath] of seeds) {
      for (let round = 0; round < 500; round++) {
        const bytes = new Uint8Array(Math.floor(next() * 64)).map(() => Math.floor(next() * 256));
        attempt(cf, basePath, bytes);
      }
    }
  });

  it('refuses hostile shapes quickly: deep nesting, huge declared lengths', () => {
    const cases: Array<[number, Uint8Array]> = [
      [110, utf8('['.repeat(100_000))],
      [11543, utf8(`{"e":${'['.repeat(100_000)}`)],
      [112, hex('81'.repeat(100_000))],
      [11544, hex('a101'.repeat(50_000))],
      [11544, hex('a1 9b ffffffffffffffff'.replace(/ /g, ''))],
      [112, hex('9bffffffffffffffff')],
      [11542, hex('d800ffffff')],
      [11542, hex('c8'.repeat(100_000))],
    ];
    for (const [cf, payload] of cases) {
      const started = Date.now();
      assert.throws(() => decode(cf, payload, { models }), CodecError, `content format ${cf}`);
      assert.ok(Date.now() - started < 1000, `content format ${cf} took ${Date.now() - started} ms`);
    }
    const started = Date.now();
    assert.throws(() => parseLinks(`<${'/x'.repeat(200_000)}`), CodecError);
    assert.throws(() => parseLinks(`</x>${';a'.repeat(100_000)}=`), CodecError);
    assert.ok(Date.now() - started < 1000);
  });
});
