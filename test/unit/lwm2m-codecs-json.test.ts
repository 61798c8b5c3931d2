import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CodecError, decode, encode } from '../../src/lwm2m/codecs/index.js';
import { deviceRecords, testModels as models, text, utf8 } from '../helpers/lwm2m-models.js';

const JSON_CF = 11543;
const NOW = 1_700_000_000;

// OMA-TS-LightweightM2M-V1_0 6.4.4 (Core 1.2.2 7.5.6.1): Read /3/0 in LwM2M JSON, without line breaks, as
// eclipse-leshan/leshan LwM2mNodeEncoderTest json_encode_device_object_instance writes it.
const DEVICE =
  '{"bn":"/3/0/","e":[{"n":"0","sv":"Open Mobile Alliance"},{"n":"1","sv":"Lightweight M2M Client"},{"n":"2","sv":"345000123"},' +
  '{"n":"3","sv":"1.0"},{"n":"6/0","v":1},{"n":"6/1","v":5},{"n":"7/0","v":3800},{"n":"7/1","v":5000},{"n":"8/0","v":125},' +
  '{"n":"8/1","v":900},{"n":"9","v":100},{"n":"10","v":15},{"n":"11/0","v":0},{"n":"13","v":1367491215},{"n":"14","sv":"+02:00"},' +
  '{"n":"16","sv":"U"}]}';

describe('LwM2M JSON (TS 1.0 6.4.4)', () => {
  it('decodes and encodes the Device instance byte for byte', () => {
    assert.deepEqual(decode(JSON_CF, utf8(DEVICE), { basePath: '/3/0', models }), deviceRecords);
    assert.equal(text(encode(JSON_CF, deviceRecords, { basePath: '/3/0' })), DEVICE);
    assert.deepEqual(decode(1543, utf8(DEVICE.replaceAll('},{', '},\n{')), { basePath: '/3/0', models }), deviceRecords);
  });

  it('resolves names against bn "/", against no bn, and against a bn without leading slash (Leshan json_* tests)', () => {
    const rooted = DEVICE.replace('"bn":"/3/0/"', '"bn":"/"').replaceAll('"n":"', '"n":"3/0/');
    assert.deepEqual(decode(JSON_CF, utf8(rooted), { basePath: '/3/0', models }), deviceRecords);
    const absolute = DEVICE.replace('"bn":"/3/0/",', '').replaceAll('"n":"', '"n":"/3/0/');
    assert.deepEqual(decode(JSON_CF, utf8(absolute), { basePath: '/3/0', models }), deviceRecords);
    assert.deepEqual(decode(JSON_CF, utf8('{"bn":"1024/0/", "e":[{"n":"0","sv":"a string"},{"n":"1","v":10.5},{"n":"2","bv":true}]}'), { basePath: '/1024/0' }), [
      { path: '/1024/0/0', type: 'string', value: 'a string' },
      { path: '/1024/0/1', type: 'float', value: 10.5 },
      { path: '/1024/0/2', type: 'boolean', value: true },
    ]);
  });

  it('concatenates bn and n as strings, even inside an id (Leshan json_cut_basename_name_in_the_middle_of_an_id)', () => {
    assert.deepEqual(
      decode(JSON_CF, utf8('{"bn":"3/0/1","e":[{"n":"1/0","v":0},{"n":"1/1","v":0}]}'), { basePath: '/3/0/11', models }).map((record) => record.path),
      ['/3/0/11/0', '/3/0/11/1'],
    );
  });

  it('reads times as bt + t, absolute when positive (Leshan json_timestamped_resources: bt 25462634)', () => {
    const payload = '{"bn":"/1024/0/1","e":[{"v":22.9,"t":-30},{"v":22.4,"t":-5},{"v":24.1,"t":-50}],"bt":25462634}';
    assert.deepEqual(decode(JSON_CF, utf8(payload), { basePath: '/1024/0/1', now: NOW }), [
      { path: '/1024/0/1', type: 'float', value: 22.9, time: 25462604 },
      { path: '/1024/0/1', type: 'float', value: 22.4, time: 25462629 },
      { path: '/1024/0/1', type: 'float', value: 24.1, time: 25462584 },
    ]);
    // Without bt, a negative t is relative to now.
    assert.equal(decode(JSON_CF, utf8('{"e":[{"n":"/3/0/9","v":1,"t":-60}]}'), { models, now: NOW })[0]?.time, NOW - 60);
  });

  it('writes absolute times in t (Leshan json_encode_timestamped_resources / _instances)', () => {
    const resource = [22.9, 22.4, 24.1].map((value, i) => ({ path: '/1024/0/1', type: 'float', value, time: 500 + 10 * i }) as const);
    assert.equal(text(encode(JSON_CF, resource, { basePath: '/1024/0/1' })), '{"bn":"/1024/0/1","e":[{"v":22.9,"t":500},{"v":22.4,"t":510},{"v":24.1,"t":520}]}');
    const instance = [
      { path: '/1024/0/1', type: 'float', value: 22.9, time: 110 },
      { path: '/1024/0/0', type: 'string', value: 'a string', time: 120 },
      { path: '/1024/0/1', type: 'float', value: 22.4, time: 120 },
      { path: '/1024/0/1', type: 'float', value: 24.1, time: 130 },
    ] as const;
    const json = '{"bn":"/1024/0/","e":[{"n":"1","v":22.9,"t":110},{"n":"0","sv":"a string","t":120},{"n":"1","v":22.4,"t":120},{"n":"1","v":24.1,"t":130}]}';
    assert.equal(text(encode(JSON_CF, instance, { basePath: '/1024/0' })), json);
    assert.deepEqual(decode(JSON_CF, utf8(json), { basePath: '/1024/0' }), instance);
  });

  it('carries object links in "ov", opaque as base64 in "sv", 64-bit integers exactly', () => {
    const records = [
      { path: '/33000/0/7', type: 'objlnk', value: { objectId: 66, instanceId: 1 } },
      { path: '/33000/0/5', type: 'opaque', value: new Uint8Array([1, 2, 3, 4, 5]) },
      { path: '/33000/0/2', type: 'unsigned', value: 18446744073709551615n },
      { path: '/33000/0/1', type: 'integer', value: -9223372036854775808n },
      { path: '/33000/0/6', type: 'time', value: new Date(1476186613000) },
      { path: '/33000/0/4', type: 'boolean', value: false },
    ] as const;
    const json = text(encode(JSON_CF, records, { basePath: '/33000/0' }));
    assert.equal(
      json,
      '{"bn":"/33000/0/","e":[{"n":"7","ov":"66:1"},{"n":"5","sv":"AQIDBAU="},{"n":"2","v":18446744073709551615},{"n":"1","v":-9223372036854775808},' +
        '{"n":"6","v":1476186613},{"n":"4","bv":false}]}',
    );
    assert.deepEqual(decode(JSON_CF, utf8(json), { basePath: '/33000/0', models }), records);
  });

  it('reads unmodelled numbers by their form: integers as integer (unsigned above int64), others as float', () => {
    const json = '{"bn":"/33001/0/","e":[{"n":"0","v":-5},{"n":"1","v":18446744073709551615},{"n":"2","v":2.5}]}';
    assert.deepEqual(
      decode(JSON_CF, utf8(json), { basePath: '/33001/0' }).map((record) => [record.path, record.type, record.value]),
      [
        ['/33001/0/0', 'integer', -5],
        ['/33001/0/1', 'unsigned', 18446744073709551615n],
        ['/33001/0/2', 'float', 2.5],
      ],
    );
  });

  it('refuses NaN and infinities, which JSON cannot carry', () => {
    assert.throws(() => encode(JSON_CF, [{ path: '/6/0/0', type: 'float', value: NaN }], { basePath: '/6/0' }), CodecError);
    assert.throws(() => encode(JSON_CF, [{ path: '/6/0/0', type: 'float', value: -Infinity }], { basePath: '/6/0' }), CodecError);
  });

  const malformed: Array<[string, string, RegExp]> = [
    ['an empty object (Leshan json_empty_object)', '{}', /"e" \(the array of entries\) is missing/],
    ['not an object', '[]', /is a JSON object/],
    ['a missing value (Leshan json_missing_value_for_resource)', '{"bn":"/3/0/","e":[{"n":"0"}]}', /no value/],
    ['two values for one resource (Leshan json_invalid_instance_2_resources_with_the_same_id)', '{"bn":"/3/0/","e":[{"n":"1","sv":"client1"},{"n":"1","sv":"client2"}]}', /appears twice/],
    ['two instances of a resource with one id', '{"bn":"/3/0/11/","e":[{"n":"1","v":2},{"n":"1","v":0}]}', /appears twice/],
    ['a bn that is not a string', '{"bn":3,"e":[]}', /"bn" must be a string/],
    ['an entry that is not an object', '{"e":[1]}', /entry 0 is not a JSON object/],
    ['a string where a number is due', '{"bn":"/3/0/","e":[{"n":"9","sv":"100"}]}', /"sv" with "100" does not fit type integer/],
    ['bad base64 for opaque', '{"bn":"/5/0/","e":[{"n":"0","sv":"!,-INVALID$_\'"}]}', /not base64/],
    ['truncated JSON', '{"bn":"/3/0/","e":[{"n":"9","v":1', /invalid JSON/],
    ['a lone string', '"x', /unterminated string/],
    ['trailing garbage', '{"e":[]} x', /unexpected text after the JSON value/],
  ];
  for (const [what, payload, message] of malformed) {
    it(`refuses ${what}`, () => {
      assert.throws(
        () => decode(JSON_CF, utf8(payload), { basePath: '/', models }),
        (error: unknown) => error instanceof CodecError && message.test(error.message),
      );
    });
  }

  it('reads an empty entry list as no records, also for a multiple resource (Leshan json_empty_multi_resource)', () => {
    assert.deepEqual(decode(JSON_CF, utf8('{"e":[]}'), { basePath: '/3/0/6', models }), []);
    assert.deepEqual(decode(JSON_CF, utf8('{"bn":"3/0/6", "e":[]}'), { basePath: '/3/0/6', models }), []);
  });
});
