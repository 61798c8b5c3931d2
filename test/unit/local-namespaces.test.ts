import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LOCAL_NAMESPACES } from '../../src/triggers/namespaces/local/index.js';

const call = (namespace: string, fn: string, ...args: unknown[]) => LOCAL_NAMESPACES[namespace]![fn]!(args, { accountId: 'unit-test' });

describe('hash namespace (check values from the CRC catalogue)', () => {
  it('crc32 of "123456789" is 0xCBF43926 (CRC-32/ISO-HDLC)', () => assert.equal(call('hash', 'crc32', '123456789'), 0xcbf43926));
  it('crc64 of "123456789" is 995dc9bbdf1939fa (CRC-64/XZ)', () => {
    assert.equal(call('hash', 'crc64', '123456789'), '995dc9bbdf1939fa');
    assert.equal(call('hash', 'crc64signed', '123456789'), BigInt.asIntN(64, 0x995dc9bbdf1939fan).toString());
  });
  it('sha256 follows FIPS 180-2 ("abc")', () => assert.equal(call('hash', 'sha256', 'abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'));
  it('hashes byte arrays as bytes', () => assert.equal(call('hash', 'crc32', [0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39]), 0xcbf43926));
});

describe('json namespace (RFC 6902)', () => {
  it('applies the RFC 6902 A.1 and A.4 examples', () => {
    assert.deepEqual(call('json', 'patchApply', { foo: 'bar' }, [{ op: 'add', path: '/baz', value: 'qux' }]), { baz: 'qux', foo: 'bar' });
    assert.deepEqual(call('json', 'patchApply', { baz: 'qux', foo: 'bar' }, [{ op: 'remove', path: '/baz' }]), { foo: 'bar' });
  });
  it('fails a patch whose test does not hold (RFC 6902 A.9)', () => {
    assert.throws(() => call('json', 'patchApply', { baz: 'qux' }, [{ op: 'test', path: '/baz', value: 'bar' }]), /does not apply/);
  });
  it('creates a patch that turns one document into the other', () => {
    const from = { a: 1, b: [1, 2] };
    const to = { a: 2, b: [1, 2, 3], c: 'x' };
    assert.deepEqual(call('json', 'patchApply', from, call('json', 'patchCreate', from, to)), to);
  });
});

describe('date namespace', () => {
  it('formats in a timezone, with daylight saving', () => {
    assert.equal(call('date', 'format', '2026-07-01T12:00:00Z', 'YYYY-MM-DD HH:mm:ss Z', 'Europe/Berlin'), '2026-07-01 14:00:00 +02:00');
    assert.equal(call('date', 'format', '2026-12-01T12:00:00Z', 'YYYY-MM-DD HH:mm Z', 'Europe/Berlin'), '2026-12-01 13:00 +01:00');
    assert.equal(call('date', 'format', 0), '1970-01-01T00:00:00.000+00:00');
    assert.equal(call('date', 'format', '2026-03-01T00:30:00Z', 'YYYY-MM-DD HH:mm Z', 'America/St_Johns'), '2026-02-28 21:00 -03:30');
  });
  it('gives now in a zone and rejects unknown zones', () => {
    const now = call('date', 'now', 'Asia/Tokyo') as string;
    assert.match(now, /\+09:00$/);
    assert.ok(Math.abs(Date.parse(now) - Date.now()) < 5000);
    assert.throws(() => call('date', 'now', 'Mars/Olympus'), /unknown timezone/);
  });
});

describe('network, geospatial, convert, string namespaces', () => {
  it('checks addresses against CIDRs (IPv4 and IPv6)', () => {
    assert.equal(call('network', 'isIpInCidrs', '10.1.2.3', ['192.168.0.0/16', '10.0.0.0/8']), true);
    assert.equal(call('network', 'isIpInCidrs', '11.1.2.3', ['10.0.0.0/8']), false);
    assert.equal(call('network', 'isIpInCidrs', '2001:db8::7', ['2001:db8::/32']), true);
    assert.equal(call('network', 'isIpInCidrs', '192.0.2.7', ['192.0.2.7']), true);
  });
  it('splits host and port', () => {
    assert.deepEqual(call('network', 'splitHostPort', 'coap.example.com:5683'), { host: 'coap.example.com', port: 5683 });
    assert.deepEqual(call('network', 'splitHostPort', '[2001:db8::1]:5684'), { host: '2001:db8::1', port: 5684 });
    assert.deepEqual(call('network', 'splitHostPort', '2001:db8::1'), { host: '2001:db8::1', port: null });
  });
  it('decodes MCC/MNC, also under the old name convert.mccmnc', () => {
    assert.deepEqual(call('network', 'decodeMccMnc', '26201'), { mcc: '262', mnc: '01' });
    assert.deepEqual(call('convert', 'mccmnc', 310410), { mcc: '310', mnc: '410' });
  });
  it('measures great-circle distances (Paris–London ≈ 343.5 km)', () => {
    const d = call('geospatial', 'geodist', 48.8566, 2.3522, 51.5074, -0.1278) as number;
    assert.ok(Math.abs(d - 343_500) < 1500, String(d));
  });
  it('converts numbers, text and IMEIs', () => {
    assert.equal(call('convert', 'hexToInt', 'ff38'), 65336);
    assert.equal(call('convert', 'hexToInt', 'ff38', true), -200);
    assert.equal(call('convert', 'intToHex', 255), 'ff');
    assert.equal(call('convert', 'intToHex', -200, 2), 'ff38');
    assert.equal(call('convert', 'binToStr', '48656c6c6f'), 'Hello');
    assert.equal(call('convert', 'strToBin', 'Hi'), '4869');
    // IMEI 49-015420-323751-8 from 3GPP TS 23.003 Annex B; its IMEISV with SVN 00.
    assert.equal(call('convert', 'imeisvToimei', '4901542032375100'), '490154203237518');
    assert.deepEqual(call('convert', 'flattenObject', { a: { b: 1, c: { d: 'x' } }, e: [5] }), { 'a.b': 1, 'a.c.d': 'x', 'e.0': 5 });
  });
  it('parses delimited strings, with intHex', () => {
    assert.deepEqual(call('string', 'delimitedStringToObject', 'a=1,b=x, c = 2.5'), { a: 1, b: 'x', c: 2.5 });
    assert.deepEqual(call('convert', 'delimitedStringToObject', 'rssi:1F;snr:0x0A', ';', ':', { intHex: true }), { rssi: 31, snr: 10 });
    assert.deepEqual(call('string', 'delimitedStringToObject', '__proto__=1,a=2'), { a: 2 });
  });
});

describe('convert codecs (vectors from the specifications)', () => {
  it('decodes CBOR (RFC 8949 Appendix A) and encodes it back', () => {
    assert.equal(call('convert', 'cborToObject', '1903e8'), 1000);
    assert.deepEqual(call('convert', 'cborToObject', '83010203'), [1, 2, 3]);
    assert.deepEqual(call('convert', 'cborToObject', 'a26161016162820203'), { a: 1, b: [2, 3] });
    assert.equal(call('convert', 'cborToObject', '6449455446'), 'IETF');
    assert.equal(call('convert', 'cborToObject', '4401020304'), '01020304', 'byte strings come back as hex');
    assert.equal(call('convert', 'cborToObject', '1bffffffffffffffff'), '18446744073709551615', 'integers past 2^53 as strings');
    assert.equal(call('convert', 'objectToCbor', { a: 1, b: [2, 3] }), 'a26161016162820203', 'preferred serialization, as RFC 8949 Appendix A');
    assert.equal(call('convert', 'objectToCbor', 1000), '1903e8');
    assert.throws(() => call('convert', 'cborToObject', '1f'), /not valid CBOR/);
  });

  it('decodes MessagePack (the msgpack.org example)', () => {
    assert.deepEqual(call('convert', 'msgPackToObject', '82a7636f6d70616374c3a6736368656d6100'), { compact: true, schema: 0 });
  });

  it('decodes and encodes protobuf (the encoding guide: Test1.a = 150 is 08 96 01)', () => {
    const proto = 'syntax = "proto3"; package demo; message Test1 { int32 a = 1; string b = 2; }';
    assert.deepEqual(call('convert', 'protobufToObject', '089601', proto, 'demo.Test1'), { a: 150 });
    assert.equal(call('convert', 'objectToProtobuf', { a: 150 }, proto, 'demo.Test1'), '089601');
    assert.deepEqual(call('convert', 'protobufToObject', call('convert', 'objectToProtobuf', { a: 1, b: 'x' }, proto, 'demo.Test1'), proto, 'demo.Test1'), { a: 1, b: 'x' });
    assert.throws(() => call('convert', 'protobufToObject', '08', proto, 'demo.Nope'), /no message type/);
  });

  it('parses XML and CSV', () => {
    assert.deepEqual(call('convert', 'xmlToObject', '<m id="7"><t>21.5</t><u>C</u></m>'), { m: { '@id': 7, t: 21.5, u: 'C' } });
    assert.deepEqual(call('convert', 'csvToObjects', 'imei,rssi\n490154203237518,-71\n'), [{ imei: '490154203237518', rssi: '-71' }]);
    assert.deepEqual(call('convert', 'csvToObjects', 'a;b\n1;2', { delimiter: ';', columns: false }), [['a', 'b'], ['1', '2']]);
  });
});

describe('script cache', () => {
  it('never keeps an entry longer than 86400 s (SPEC maxTtl), whatever TTL a script asks for', async () => {
    const { MemoryCache, clampTtl } = await import('../../src/triggers/cache.js');
    assert.deepEqual([clampTtl(undefined), clampTtl(10 ** 9), clampTtl(0), clampTtl(1.2)], [86_400, 86_400, 1, 2]);
    const cache = new MemoryCache();
    await cache.set('a', 'k', 'v', 10 ** 9);
    assert.equal(await cache.get('a', 'k'), 'v');
    assert.equal(await cache.get('b', 'k'), null, 'keys are per account');
  });
});
