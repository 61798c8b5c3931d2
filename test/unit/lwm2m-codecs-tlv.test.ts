import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CodecError, decode, encode, parseTlv } from '../../src/lwm2m/codecs/index.js';
import { deviceRecords, hex, testModels as models, toHex } from '../helpers/lwm2m-models.js';

const TLV = 11542;

// Section numbers are those of OMA-TS-LightweightM2M-V1_0 (Leshan's comments number the same examples 4.3.x,
// after an earlier draft; Core 1.2.2 has them in 7.5.5).
// OMA-TS-LightweightM2M-V1_0 6.4.3.1: Read /3/0 answered with the resources of the Device instance. Bytes as in
// eclipse-leshan/leshan LwM2mNodeDecoderTest ENCODED_DEVICE_WITHOUT_INSTANCE (the Core 1.2.2 rendering of this
// example misspells "Lightweigt", which breaks its length bytes; Leshan's bytes are the consistent ones).
const DEVICE =
  'c800144f70656e204d6f62696c6520416c6c69616e6365c801164c69676874776569676874204d324d20436c69656e74c80209333435303030313233c303312e30' +
  '860641000141010588070842000ed842011388870841007d42010384c10964c10a0f830b410000c40d5182428fc60e2b30323a3030c11055';
// TS 1.0 6.4.3.2 A: the same instance wrapped in an Object Instance TLV (Read /3); Leshan ENCODED_DEVICE_WITH_INSTANCE.
const DEVICE_WITH_INSTANCE = `080079${DEVICE}`;
// TS 1.0 6.4.3.2 B / Core 1.2.2 7.5.5.2 B: two Access Control instances, ACL[310] with a 16-bit identifier (type 0x61).
const ACL = '08000ec10001c101008302417f07c1037f080212c10003c101008702417f0761013601c1037f';
// TS 1.0 6.4.3.2 C: one Server instance; the spec prints length 0x0D, Leshan ENCODED_SERVER has the consistent 0x0F.
const SERVER = '08000fc10001c40100015180c10601c10755';
// TS 1.0 6.4.3.3 example 1: Read /65/0 of the object-link figure (Appendix C); Leshan ENCODED_OBJ65.
const OBJ65 = '88000c440000420000440100420001c8010d38363133383030373535353030c40212345678';
// TS 1.0 6.4.3.3 example 2: Read /66, second link the null link FFFF:FFFF; Leshan ENCODED_OBJ66 (lengths corrected to 0x26).
const OBJ66 =
  '080026c8000b6d79536572766963652031c8010f496e7465726e65742e31352e323334c40200430000' +
  '080126c8000b6d79536572766963652032c8010f496e7465726e65742e31352e323335c402ffffffff';

describe('TLV: specification examples', () => {
  it('decodes and encodes the Device instance (TS 1.0 6.4.3.1) byte for byte', () => {
    assert.deepEqual(decode(TLV, hex(DEVICE), { basePath: '/3/0', models }), deviceRecords);
    assert.equal(toHex(encode(TLV, deviceRecords, { basePath: '/3/0' })), DEVICE);
  });

  it('reads the Object Instance form (6.4.3.2 A) at /3, and at /3/0 where the wrapper must match', () => {
    assert.deepEqual(decode(TLV, hex(DEVICE_WITH_INSTANCE), { basePath: '/3', models }), deviceRecords);
    assert.deepEqual(decode(TLV, hex(DEVICE_WITH_INSTANCE), { basePath: '/3/0', models }), deviceRecords);
    assert.equal(toHex(encode(TLV, deviceRecords, { basePath: '/3' })), DEVICE_WITH_INSTANCE);
    assert.throws(() => decode(TLV, hex(DEVICE_WITH_INSTANCE), { basePath: '/3/1', models }), CodecError);
  });

  it('decodes and encodes the Access Control instances (6.4.3.2 B)', () => {
    const acl = [
      { path: '/2/0/0', type: 'integer', value: 1 },
      { path: '/2/0/1', type: 'integer', value: 0 },
      { path: '/2/0/2/127', type: 'integer', value: 7 },
      { path: '/2/0/3', type: 'integer', value: 127 },
      { path: '/2/2/0', type: 'integer', value: 3 },
      { path: '/2/2/1', type: 'integer', value: 0 },
      { path: '/2/2/2/127', type: 'integer', value: 7 },
      { path: '/2/2/2/310', type: 'integer', value: 1 },
      { path: '/2/2/3', type: 'integer', value: 127 },
    ] as const;
    assert.deepEqual(decode(TLV, hex(ACL), { basePath: '/2', models }), acl);
    assert.equal(toHex(encode(TLV, acl, { basePath: '/2' })), ACL);
  });

  it('decodes and encodes the Server instance (6.4.3.2 C), 86400 in 4 bytes, a boolean in 1', () => {
    const server = [
      { path: '/1/0/0', type: 'integer', value: 1 },
      { path: '/1/0/1', type: 'integer', value: 86400 },
      { path: '/1/0/6', type: 'boolean', value: true },
      { path: '/1/0/7', type: 'string', value: 'U' },
    ] as const;
    assert.deepEqual(decode(TLV, hex(SERVER), { basePath: '/1', models }), server);
    assert.equal(toHex(encode(TLV, server, { basePath: '/1' })), SERVER);
  });

  it('decodes and encodes object links (6.4.3.3), including the null link 65535:65535', () => {
    const obj65 = [
      { path: '/65/0/0/0', type: 'objlnk', value: { objectId: 66, instanceId: 0 } },
      { path: '/65/0/0/1', type: 'objlnk', value: { objectId: 66, instanceId: 1 } },
      { path: '/65/0/1', type: 'string', value: '8613800755500' },
      { path: '/65/0/2', type: 'integer', value: 305419896 },
    ] as const;
    assert.deepEqual(decode(TLV, hex(OBJ65), { basePath: '/65/0', models }), obj65);
    assert.equal(toHex(encode(TLV, obj65, { basePath: '/65/0' })), OBJ65);
    const obj66 = decode(TLV, hex(OBJ66), { basePath: '/66', models });
    assert.deepEqual(obj66[2], { path: '/66/0/2', type: 'objlnk', value: { objectId: 67, instanceId: 0 } });
    assert.deepEqual(obj66[5], { path: '/66/1/2', type: 'objlnk', value: { objectId: 65535, instanceId: 65535 } });
    assert.equal(toHex(encode(TLV, obj66, { basePath: '/66' })), OBJ66);
  });
});

describe('TLV: request paths and layouts', () => {
  // Leshan LwM2mNodeDecoderTest tlv_power_source__array_values / __multiple_resource: both answers to Read /3/0/6.
  it('reads a multiple resource as bare Resource Instances or wrapped in a Multiple Resource TLV', () => {
    const expected = [
      { path: '/3/0/6/0', type: 'integer', value: 1 },
      { path: '/3/0/6/1', type: 'integer', value: 5 },
    ] as const;
    assert.deepEqual(decode(TLV, hex('410001410105'), { basePath: '/3/0/6', models }), expected);
    assert.deepEqual(decode(TLV, hex('8606410001410105'), { basePath: '/3/0/6', models }), expected);
    assert.equal(toHex(encode(TLV, expected, { basePath: '/3/0/6' })), '8606410001410105');
  });

  it('reads a single resource, a resource instance, and a resource wrapped in its instance (Leshan tlv_resource_with_undesired_object_instance)', () => {
    assert.deepEqual(decode(TLV, hex('c10964'), { basePath: '/3/0/9', models }), [{ path: '/3/0/9', type: 'integer', value: 100 }]);
    assert.deepEqual(decode(TLV, hex('410105'), { basePath: '/3/0/6/1', models }), [{ path: '/3/0/6/1', type: 'integer', value: 5 }]);
    assert.deepEqual(decode(TLV, hex('080009c80106636c69656e74'), { basePath: '/3/0/1', models }), [
      { path: '/3/0/1', type: 'string', value: 'client' },
    ]);
    assert.equal(toHex(encode(TLV, [{ path: '/3/0/6/1', type: 'integer', value: 5 }], { basePath: '/3/0/6/1' })), '410105');
    assert.equal(toHex(encode(TLV, [{ path: '/3/0/9', type: 'integer', value: 100 }], { basePath: '/3/0/9' })), 'c10964');
  });

  it('keeps unknown resources as opaque bytes, and an empty payload is no records', () => {
    assert.deepEqual(decode(TLV, hex('c1050a'), { basePath: '/3/0', models }), [{ path: '/3/0/5', type: 'opaque', value: hex('0a') }]);
    assert.deepEqual(decode(TLV, hex('c10964'), { basePath: '/3/0' }), [{ path: '/3/0/9', type: 'opaque', value: hex('64') }]);
    assert.deepEqual(decode(TLV, new Uint8Array(0), { basePath: '/3/0', models }), []);
    assert.equal(encode(TLV, [], { basePath: '/3' }).length, 0);
  });

  it('needs an object (or deeper) path: TLV has no object ids', () => {
    assert.throws(() => decode(TLV, hex('c10964')), /needs an object/);
    assert.throws(() => encode(TLV, deviceRecords), /needs an object/);
  });
});

describe('TLV: headers and value sizes', () => {
  const all = (path: string, type: string, value: unknown) => ({ path, type, value }) as Parameters<typeof encode>[1][number];

  it('uses the 8-bit, 16-bit and 24-bit length fields only when the length needs them', () => {
    for (const [length, header] of [
      [7, 'c705'],
      [8, 'c80508'],
      [255, 'c805ff'],
      [256, 'd0050100'],
      [65535, 'd005ffff'],
      [65536, 'd805010000'],
      [70000, 'd805011170'],
    ] as const) {
      const record = all('/33000/0/5', 'opaque', new Uint8Array(length).fill(0xab));
      const bytes = encode(TLV, [record], { basePath: '/33000/0' });
      assert.equal(toHex(bytes.subarray(0, header.length / 2)), header, `length ${length}`);
      assert.equal(bytes.length, header.length / 2 + length);
      assert.deepEqual(decode(TLV, bytes, { basePath: '/33000/0', models }), [record]);
    }
  });

  it('uses a 16-bit identifier above 255', () => {
    assert.equal(toHex(encode(TLV, [all('/3303/0/5701', 'string', 'C')], { basePath: '/3303/0' })), 'e1164543');
    assert.deepEqual(parseTlv(hex('e1164543')), [{ kind: 'resource', id: 5701, value: hex('43'), offset: 0 }]);
  });

  it('writes signed integers in 1, 2, 4 or 8 bytes, big-endian two’s complement', () => {
    // Values at the edges of each size, as the Zephyr content_oma_tlv tests put them.
    for (const [value, bytes] of [
      [0, '00'], [127, '7f'], [-128, '80'], [128, '0080'], [-129, 'ff7f'], [32767, '7fff'], [-32768, '8000'], [32768, '00008000'],
      [2147483647, '7fffffff'], [-2147483648, '80000000'], [2147483648, '0000000080000000'],
      [9223372036854775807n, '7fffffffffffffff'], [-9223372036854775808n, '8000000000000000'],
    ] as const) {
      const record = all('/33000/0/1', 'integer', value);
      const encoded = encode(TLV, [record], { basePath: '/33000/0/1' });
      assert.equal(toHex(encoded).slice(-bytes.length), bytes, `${value}`);
      assert.deepEqual(decode(TLV, encoded, { basePath: '/33000/0/1', models }), [record]);
    }
  });

  it('writes unsigned integers up to 2^64-1 and refuses what does not fit', () => {
    const max = all('/33000/0/2', 'unsigned', 18446744073709551615n);
    const encoded = encode(TLV, [max], { basePath: '/33000/0' });
    assert.equal(toHex(encoded), 'c80208ffffffffffffffff');
    assert.deepEqual(decode(TLV, encoded, { basePath: '/33000/0', models }), [max]);
    assert.equal(toHex(encode(TLV, [all('/33000/0/2', 'unsigned', 255)], { basePath: '/33000/0' })), 'c102ff');
    assert.throws(() => encode(TLV, [all('/33000/0/2', 'unsigned', -1)], { basePath: '/33000/0' }), CodecError);
    assert.throws(() => encode(TLV, [all('/33000/0/1', 'integer', 2n ** 63n)], { basePath: '/33000/0' }), CodecError);
    assert.throws(() => encode(TLV, [all('/33000/0/1', 'integer', 1.5)], { basePath: '/33000/0' }), CodecError);
  });

  it('writes floats in 4 bytes when exact, else 8, and reads both', () => {
    assert.equal(toHex(encode(TLV, [all('/33000/0/3', 'float', 1.5)], { basePath: '/33000/0' })), 'c4033fc00000');
    assert.equal(toHex(encode(TLV, [all('/33000/0/3', 'float', 0.1)], { basePath: '/33000/0' })), 'c803083fb999999999999a');
    // Zephyr always writes doubles: 8-byte -123.125 (content_oma_tlv, put_float).
    assert.deepEqual(decode(TLV, hex('c80308c05ec80000000000'), { basePath: '/33000/0', models }), [all('/33000/0/3', 'float', -123.125)]);
    for (const value of [-0, Infinity, -Infinity]) {
      assert.deepEqual(decode(TLV, encode(TLV, [all('/33000/0/3', 'float', value)], { basePath: '/33000/0' }), { basePath: '/33000/0', models }), [all('/33000/0/3', 'float', value)]);
    }
    const nan = decode(TLV, encode(TLV, [all('/33000/0/3', 'float', NaN)], { basePath: '/33000/0' }), { basePath: '/33000/0', models });
    assert.ok(Number.isNaN(nan[0]?.value));
  });

  it('round-trips every type', () => {
    const records = [
      all('/33000/0/0', 'string', 'grüße 👋'),
      all('/33000/0/0', 'string', ''),
      all('/33000/0/4', 'boolean', false),
      all('/33000/0/5', 'opaque', new Uint8Array(0)),
      all('/33000/0/6', 'time', new Date(-86400_000)),
      all('/33000/0/7', 'objlnk', { objectId: 0, instanceId: 65535 }),
      all('/33000/0/8', 'corelnk', '</3/0>;ver=1.1'),
    ];
    for (const record of records) {
      assert.deepEqual(decode(TLV, encode(TLV, [record], { basePath: '/33000/0' }), { basePath: '/33000/0', models }), [record]);
    }
    // Time written as seconds: a number works too, and sub-second parts are dropped.
    assert.equal(toHex(encode(TLV, [all('/3/0/13', 'time', 1367491215.9)], { basePath: '/3/0/13' })), 'c40d5182428f');
  });
});

describe('TLV: malformed payloads are CodecErrors', () => {
  const cases: Array<[string, string, string, RegExp]> = [
    ['a truncated header', '/3/0', 'c8', /truncated TLV header/],
    ['a 16-bit id cut short', '/3/0', 'e116', /truncated TLV header/],
    ['a length past the end', '/3/0', 'c80914', /length 20 but only 0 bytes/],
    ['a 24-bit length past the end', '/3/0', 'd809ffffff00', /length 16777215/],
    ['a child longer than its instance', '/3', '080003c80910', /in its objectInstance/],
    ['an instance inside an instance', '/3', '080003080000', /objectInstance cannot be inside a objectInstance/],
    ['a resource inside a multiple resource', '/3/0', '8306c10964', /resource cannot be inside a multipleResource/],
    ['a resource instance at instance level', '/3/0', '410001', /does not belong under \/3\/0/],
    ['an integer of 3 bytes', '/3/0', 'c309010203', /an integer \(1, 2, 4 or 8 bytes\)/],
    ['a boolean of 2', '/1/0', 'c10602', /a boolean/],
    ['an object link of 3 bytes', '/65/0', '8800054300004200', /an object link \(4 bytes\)/],
    ['a float of 2 bytes', '/6/0', 'c2000000', /a float/],
    ['broken UTF-8', '/3/0', 'c100ff', /not valid UTF-8/],
    ['two resources with the same id', '/3/0', 'c10964c10964', /appears twice/],
    ['two (empty) instances with the same id', '/2', '080000080000', /\/2\/0 appears twice/],
    ['a resource that is not the one requested', '/3/0/9', 'c10a64', /resource 10 is not the requested resource 9/],
    ['an instance that is not the one requested', '/3/0', '080103c10964', /object instance 1 is not the requested/],
  ];
  for (const [what, basePath, payload, message] of cases) {
    it(what, () => {
      assert.throws(
        () => decode(TLV, hex(payload), { basePath, models }),
        (error: unknown) => error instanceof CodecError && message.test(error.message),
      );
    });
  }

  it('says where the problem is', () => {
    assert.throws(() => decode(TLV, hex('c10964c8'), { basePath: '/3/0', models }), { name: 'CodecError', offset: 3, format: 'tlv' });
  });
});
