import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Decoder } from 'cbor-x';
import { CborMap, CborTag, decodeCbor, encodeCbor, type CborValue } from '../../src/lwm2m/codecs/cbor-wire.js';
import { CodecError, decode, encode } from '../../src/lwm2m/codecs/index.js';
import { deviceRecords, hex, testModels as models, toHex } from '../helpers/lwm2m-models.js';

const LWM2M_CBOR = 11544;
const RAW_CBOR = 60;

describe('CBOR wire (RFC 8949 Appendix A examples)', () => {
  // Preferred serialization: each value encodes to exactly these bytes and decodes back.
  const both: Array<[CborValue, string]> = [
    [0n, '00'], [23n, '17'], [24n, '1818'], [100n, '1864'], [1000n, '1903e8'], [1000000n, '1a000f4240'],
    [1000000000000n, '1b000000e8d4a51000'], [18446744073709551615n, '1bffffffffffffffff'], [-1n, '20'], [-10n, '29'],
    [-100n, '3863'], [-1000n, '3903e7'], [-18446744073709551616n, '3bffffffffffffffff'],
    [0.0, 'f90000'], [-0.0, 'f98000'], [1.0, 'f93c00'], [1.1, 'fb3ff199999999999a'], [1.5, 'f93e00'], [65504.0, 'f97bff'],
    [100000.0, 'fa47c35000'], [3.4028234663852886e38, 'fa7f7fffff'], [1.0e300, 'fb7e37e43c8800759c'], [5.960464477539063e-8, 'f90001'],
    [0.00006103515625, 'f90400'], [-4.0, 'f9c400'], [-4.1, 'fbc010666666666666'], [Infinity, 'f97c00'], [-Infinity, 'f9fc00'],
    [false, 'f4'], [true, 'f5'], [null, 'f6'], [undefined, 'f7'],
    [new CborTag(0, '2013-03-21T20:04:00Z'), 'c074323031332d30332d32315432303a30343a30305a'], [new CborTag(1, 1363896240n), 'c11a514b67b0'],
    [new CborTag(1, 1363896240.5), 'c1fb41d452d9ec200000'], [new Uint8Array(0), '40'], [hex('01020304'), '4401020304'], ['', '60'], ['a', '6161'],
    ['IETF', '6449455446'], ['"\\', '62225c'], ['ü', '62c3bc'], ['水', '63e6b0b4'], [[], '80'], [[1n, 2n, 3n], '83010203'],
    [[1n, [2n, 3n], [4n, 5n]], '8301820203820405'], [new CborMap([]), 'a0'], [new CborMap([[1n, 2n], [3n, 4n]]), 'a201020304'],
    [new CborMap([['a', 1n], ['b', [2n, 3n]]]), 'a26161016162820203'],
  ];
  for (const [value, bytes] of both) {
    it(`${bytes}`, () => {
      assert.equal(toHex(encodeCbor('cbor', value)), bytes);
      assert.deepEqual(decodeCbor('cbor', hex(bytes)), value);
    });
  }

  it('NaN is f97e00', () => {
    assert.equal(toHex(encodeCbor('cbor', NaN)), 'f97e00');
    assert.ok(Number.isNaN(decodeCbor('cbor', hex('f97e00'))));
  });

  it('reads indefinite-length strings, arrays and maps (which cbor-x 1.6 refuses for strings)', () => {
    assert.deepEqual(decodeCbor('cbor', hex('5f42010243030405ff')), hex('0102030405'));
    assert.equal(decodeCbor('cbor', hex('7f657374726561646d696e67ff')), 'streaming');
    assert.deepEqual(decodeCbor('cbor', hex('9f018202039f0405ffff')), [1n, [2n, 3n], [4n, 5n]]);
    assert.deepEqual(decodeCbor('cbor', hex('bf61610161629f0203ffff')), new CborMap([['a', 1n], ['b', [2n, 3n]]]));
    assert.deepEqual(decodeCbor('cbor', hex('9fff')), []);
  });

  it('reads non-preferred forms: a 5 in eight bytes, a 1.5 in single and double precision', () => {
    assert.equal(decodeCbor('cbor', hex('1b0000000000000005')), 5n);
    assert.equal(decodeCbor('cbor', hex('fa3fc00000')), 1.5);
    assert.equal(decodeCbor('cbor', hex('fb3ff8000000000000')), 1.5);
  });

  const malformed: Array<[string, string, RegExp]> = [
    ['an empty payload', '', /empty payload/],
    ['a truncated head', '19 01', /truncated head/],
    ['a string longer than the payload', '45 0102', /string length of 5 runs past the end/],
    ['an array longer than the payload', '9a 05f5e100', /array length of 100000000 runs past/],
    ['a map longer than the payload', 'a2 0102', /map size of 2 runs past/],
    ['reserved additional information', '1c', /reserved additional information 28/],
    ['an indefinite integer', '1f', /indefinite length is not allowed for an integer/],
    ['an unclosed indefinite array', '9f 01', /truncated data item/],
    ['a stray break', 'ff', /unexpected "break"/],
    ['a break in a definite array', '82 01 ff', /"break" inside a definite-length array/],
    ['a map key without value', 'bf 01 ff', /map key without a value/],
    ['a chunk of the wrong type', '5f 6161 ff', /chunk of an indefinite-length string/],
    ['an unsupported simple value', 'f0', /unsupported simple value/],
    ['invalid UTF-8', '62 c328', /not valid UTF-8/],
    ['a duplicate map key', 'a2 01 02 01 03', /duplicate map key 1/],
    ['a duplicate array key', 'a2 8101 02 8101 03', /duplicate map key \[1\]/],
    ['trailing bytes', '00 00', /1 bytes left after/],
    ['deep nesting', '81'.repeat(100000) + '00', /nesting deeper than 32/],
  ];
  for (const [what, bytes, message] of malformed) {
    it(`refuses ${what}`, () => {
      assert.throws(
        () => decodeCbor('cbor', hex(bytes)),
        (error: unknown) => error instanceof CodecError && message.test(error.message),
      );
    });
  }
});

describe('LwM2M CBOR: specification examples (Core 1.2 7.4.4; 1.2.2 7.5.4)', () => {
  // The examples as transcribed in fiumaralabs/lwm2m spec/vectors/spec-examples.json (spec-lwcbor-*).
  it('Read /3/0/0: {[3, 0, 0]: "Open Mobile Alliance"}, and the equivalent nested maps', () => {
    const record = [deviceRecords[0]];
    assert.deepEqual(decode(LWM2M_CBOR, hex('a183030000744f70656e204d6f62696c6520416c6c69616e6365'), { basePath: '/3/0/0', models }), record);
    assert.deepEqual(decode(LWM2M_CBOR, hex('a103a100a100744f70656e204d6f62696c6520416c6c69616e6365'), { basePath: '/3/0/0', models }), record);
    assert.equal(toHex(encode(LWM2M_CBOR, record, { basePath: '/3/0/0' })), 'a183030000744f70656e204d6f62696c6520416c6c69616e6365');
  });

  it('Read /3/0/6: {[3, 0, 6]: {0: 1, 1: 5}}', () => {
    const records = [deviceRecords[4], deviceRecords[5]];
    assert.deepEqual(decode(LWM2M_CBOR, hex('a183030006a200010105'), { basePath: '/3/0/6', models }), records);
    assert.equal(toHex(encode(LWM2M_CBOR, records, { basePath: '/3/0/6' })), 'a183030006a200010105');
  });

  it('Read /3/0: {[3, 0]: {0: …, 13: 1367491215 (Time as a plain integer), …}}, 118 bytes', () => {
    const bytes =
      'a1820300ad00744f70656e204d6f62696c6520416c6c69616e636501764c69676874776569676874204d324d20436c69656e7402693334353030303132330363312e30' +
      '06a20001010507a200190ed80119138808a200187d011903840918640a0f0ba100000d1a5182428f0e662b30323a3030106155';
    assert.deepEqual(decode(LWM2M_CBOR, hex(bytes), { basePath: '/3/0', models }), deviceRecords);
    assert.equal(toHex(encode(LWM2M_CBOR, deviceRecords, { basePath: '/3/0' })), bytes);
  });

  it('Read /1: two Server instances under the key 1', () => {
    const bytes =
      'a101a200a7001865011a000151800219012c03191770051a0001518006f507615501a7001866011a000151800219025803191770051a0001518006f4076155';
    const records = decode(LWM2M_CBOR, hex(bytes), { basePath: '/1', models });
    assert.deepEqual(records.slice(0, 7), [
      { path: '/1/0/0', type: 'integer', value: 101 },
      { path: '/1/0/1', type: 'integer', value: 86400 },
      { path: '/1/0/2', type: 'integer', value: 300 },
      { path: '/1/0/3', type: 'integer', value: 6000 },
      { path: '/1/0/5', type: 'integer', value: 86400 },
      { path: '/1/0/6', type: 'boolean', value: true },
      { path: '/1/0/7', type: 'string', value: 'U' },
    ]);
    assert.equal(records.length, 14);
    assert.equal(toHex(encode(LWM2M_CBOR, records, { basePath: '/1' })), bytes);
  });

  it('Read-Composite response: {[3, 0]: {0: …, 9: 100}, [1, 0, 1]: 86400}', () => {
    const bytes = 'a2820300a200744f70656e204d6f62696c6520416c6c69616e6365091864830100011a00015180';
    const records = [deviceRecords[0], deviceRecords[10], { path: '/1/0/1', type: 'integer', value: 86400 }] as const;
    assert.deepEqual(decode(LWM2M_CBOR, hex(bytes), { models }), records);
    assert.equal(toHex(encode(LWM2M_CBOR, records)), bytes);
  });

  it('Create /2 with instance 5, an array key inside a map: {[2, 5]: {0: 5, 1: 0, [2, 102]: 0, 3: 101}}', () => {
    assert.deepEqual(decode(LWM2M_CBOR, hex('a1820205a4000501008202186600031865'), { basePath: '/2', models }), [
      { path: '/2/5/0', type: 'integer', value: 5 },
      { path: '/2/5/1', type: 'integer', value: 0 },
      { path: '/2/5/2/102', type: 'integer', value: 0 },
      { path: '/2/5/3', type: 'integer', value: 101 },
    ]);
  });
});

describe('LwM2M CBOR: Create without an instance id (Core 1.2.2 7.5.4.6)', () => {
  it('reads instance id 65535 ("no reference to an Object Instance") as a path, not as "the client chooses"', () => {
    assert.deepEqual(
      decode(LWM2M_CBOR, hex('a1820219ffffa4000501008202186600031865'), { basePath: '/2', models }).map((record) => record.path),
      ['/2/65535/0', '/2/65535/1', '/2/65535/2/102', '/2/65535/3'],
    );
  });
});

describe('LwM2M CBOR: other clients’ layouts (Anjay tests/core/io/lwm2m_cbor_in.c and _out.c, object 13 unknown here)', () => {
  const i42 = { path: '/13/26/1', type: 'integer', value: 42 } as const;
  const i21 = { path: '/13/26/2', type: 'integer', value: 21 } as const;
  const cases: Array<[string, string, string, object[]]> = [
    ['single_resource', 'a1830d181a01182a', '/13/26/1', [i42]],
    ['single_resource_indefinite', 'bf9f0d181a01ff182aff', '/13/26/1', [i42]],
    ['single_resource_nested', 'a10da1181aa101182a', '/13/26/1', [i42]],
    ['single_resource_nested_arrays', 'a1810da181181aa18101182a', '/13/26/1', [i42]],
    ['single_resource_nested_arrays_all_indefinite', 'bf9f0dffbf9f181affbf9f01ff182affffff', '/13/26/1', [i42]],
    ['two_resources_1', 'a1820d181aa201182a0215', '/13/26', [i42, i21]],
    ['two_resources_2', 'a2830d181a01182a830d181a0215', '/13/26', [i42, i21]],
    ['two_resources_3', 'a2820d181aa101182a830d181a0215', '/13/26', [i42, i21]],
    ['two_resources_4', 'a2830d181a01182a820d181aa1810215', '/13/26', [i42, i21]],
    ['max_possible_nesting (a decimal fraction)', 'a1810da181181aa18101a18102c48220182d', '/13/26/1/2', [{ path: '/13/26/1/2', type: 'float', value: 4.5 }]],
    ['bytes_indefinite', 'a1830d181a015f4800112233445566774888 99aabbccddeeffff', '/13/26/1', [{ path: '/13/26/1', type: 'opaque', value: hex('00112233445566778899aabbccddeeff') }]],
    ['lwm2m_cbor_out resource_instances_nested_maps', 'bf820d181abf01182a03bf15fb40516b851eb851ec1825f4ffffff', '/13/26', [
      i42, { path: '/13/26/3/21', type: 'float', value: 69.68 }, { path: '/13/26/3/37', type: 'boolean', value: false },
    ]],
    ['lwm2m_cbor_out two_objects_one_instance_two_resources', 'bf0dbf181abf01182a0215ffff0ebf181bbf01182b0216ffffff', '/', [
      i42, i21, { path: '/14/27/1', type: 'integer', value: 43 }, { path: '/14/27/2', type: 'integer', value: 22 },
    ]],
  ];
  for (const [name, bytes, basePath, records] of cases) {
    it(name, () => assert.deepEqual(decode(LWM2M_CBOR, hex(bytes), { basePath }), records));
  }

  it('encodes two resources as {[13, 26]: {1: 42, 2: 21}}, the definite form of two_resources_1', () => {
    assert.equal(toHex(encode(LWM2M_CBOR, [i42, i21], { basePath: '/13/26' })), 'a1820d181aa201182a0215');
  });
});

describe('LwM2M CBOR: values', () => {
  it('round-trips every type, and what it writes cbor-x reads', () => {
    const records = [
      { path: '/33000/0/0', type: 'string', value: '€' },
      { path: '/33000/0/1', type: 'integer', value: -9223372036854775808n },
      { path: '/33000/0/2', type: 'unsigned', value: 18446744073709551615n },
      { path: '/33000/0/3', type: 'float', value: 3 },
      { path: '/33000/0/4', type: 'boolean', value: true },
      { path: '/33000/0/5', type: 'opaque', value: new Uint8Array(0) },
      { path: '/33000/0/6', type: 'time', value: new Date(-1000) },
      { path: '/33000/0/7', type: 'objlnk', value: { objectId: 3, instanceId: 0 } },
      { path: '/33000/0/8', type: 'corelnk', value: '</3/0>' },
      { path: '/33000/0/9/0', type: 'integer', value: 1 },
      { path: '/33000/0/9/1', type: 'integer', value: 2 },
    ] as const;
    const bytes = encode(LWM2M_CBOR, records, { basePath: '/33000/0' });
    assert.deepEqual(decode(LWM2M_CBOR, bytes, { basePath: '/33000/0', models }), records);
    const parsed = new Decoder({ mapsAsObjects: false }).decode(Buffer.from(bytes)) as Map<unknown, Map<unknown, unknown>>;
    assert.deepEqual([...parsed.keys()], [[33000, 0]]);
    assert.equal(parsed.get([...parsed.keys()][0])?.get(2), 18446744073709551615n);
    // A float stays a float even when whole (f9 4200), so untyped readers keep the type.
    assert.ok(toHex(bytes).includes('03f94200'));
    // Object links are text "o:i" (Table C.-2; Anjay lwm2m_cbor_ret_objlnk).
    assert.ok(toHex(bytes).includes('0763333a30'));
  });

  it('reads Time as an integer, tag 1 or a tag 0 date/time string (Table C.-2, RFC 7049 2.4.1)', () => {
    const time = { path: '/3/0/13', type: 'time', value: new Date(1367491215000) } as const;
    for (const bytes of ['a18303000d1a5182428f', 'a18303000dc11a5182428f', 'a18303000dc074323031332d30352d30325431303a34303a31355a']) {
      assert.deepEqual(decode(LWM2M_CBOR, hex(bytes), { basePath: '/3/0/13', models }), [time], bytes);
    }
    // Without a model, the tags say it is a time.
    assert.deepEqual(decode(LWM2M_CBOR, hex('a18303000dc11a5182428f')), [time]);
  });

  it('types unknown resources by the CBOR type', () => {
    assert.deepEqual(decode(LWM2M_CBOR, hex('a5 8309090001 8309090120 830909026178 8309090342 0102 83090904f93e00'.replace(/ /g, ''))), [
      { path: '/9/9/0', type: 'integer', value: 1 },
      { path: '/9/9/1', type: 'integer', value: -1 },
      { path: '/9/9/2', type: 'string', value: 'x' },
      { path: '/9/9/3', type: 'opaque', value: hex('0102') },
      { path: '/9/9/4', type: 'float', value: 1.5 },
    ]);
  });

  const malformed: Array<[string, string, string, RegExp]> = [
    ['a top level that is not a map', '80', '/', /is a CBOR map keyed by object ids/],
    ['a text key', 'a1616101', '/', /must be an id \(0\.\.65535\) or an array of ids, not text "a"/],
    ['an id above 65535', 'a11a0001000001', '/', /must be an id/],
    ['an empty id array', 'a18001', '/', /empty id array/],
    ['a path deeper than a resource instance', 'a1850101010101 01'.replace(/ /g, ''), '/', /deeper than a resource instance/],
    ['a value on an instance', 'a182030001', '/', /\/3\/0 holds a value/],
    ['a value outside the request path', 'a1830400001864', '/3', /outside the request path \/3/],
    ['the same path twice', 'a283030009 01 03 a100a109 02'.replace(/ /g, ''), '/', /\/3\/0\/9 appears twice/],
    ['a string resource given an integer', 'a18303000001', '/', /1 does not fit type string/],
    ['an integer resource given a float', 'a183030009f93e00', '/', /1\.5 does not fit type integer/],
    ['a bad object link', 'a1830300166131', '/', /not an object link/],
    ['truncated', 'a1830300', '/', /array length of 3 runs past the end/],
  ];
  for (const [what, bytes, basePath, message] of malformed) {
    it(`refuses ${what}`, () => {
      assert.throws(
        () => decode(LWM2M_CBOR, hex(bytes), { basePath, models }),
        (error: unknown) => error instanceof CodecError && message.test(error.message),
      );
    });
  }
});

describe('Plain CBOR (Content-Format 60, Core 1.1 7.4.3)', () => {
  it('carries one value; Time under tag 1 as Leshan writes it', () => {
    const cases: Array<[string, string, object]> = [
      ['/3/0/9', '1864', { type: 'integer', value: 100 }],
      ['/3/0/0', '744f70656e204d6f62696c6520416c6c69616e6365', { type: 'string', value: 'Open Mobile Alliance' }],
      ['/3/0/13', 'c11a5182428f', { type: 'time', value: new Date(1367491215000) }],
      ['/6/0/0', 'fb4045ce32a0663c75', { type: 'float', value: 43.61092 }],
      ['/1/0/6', 'f5', { type: 'boolean', value: true }],
      ['/5/0/0', '43abcdef', { type: 'opaque', value: hex('abcdef') }],
      ['/3/0/22/0', '64313a3130', { type: 'objlnk', value: { objectId: 1, instanceId: 10 } }],
      ['/0/0/16', '1bffffffffffffffff', { type: 'unsigned', value: 18446744073709551615n }],
    ];
    for (const [path, bytes, value] of cases) {
      const record = { path, ...value } as Parameters<typeof encode>[1][number];
      assert.deepEqual(decode(RAW_CBOR, hex(bytes), { basePath: path, models }), [record], path);
      assert.equal(toHex(encode(RAW_CBOR, [record], { basePath: path })), bytes, path);
    }
  });

  it('needs a resource path and exactly its record', () => {
    assert.throws(() => decode(RAW_CBOR, hex('01'), { basePath: '/3/0' }), /needs a resource or resource-instance path/);
    assert.throws(() => encode(RAW_CBOR, [], { basePath: '/3/0/9' }), /exactly one value, not 0/);
    assert.throws(() => encode(RAW_CBOR, [deviceRecords[10]], { basePath: '/3/0/10' }), /is not the request path/);
    assert.throws(() => decode(RAW_CBOR, hex('0101'), { basePath: '/3/0/9' }), /bytes left/);
  });
});
