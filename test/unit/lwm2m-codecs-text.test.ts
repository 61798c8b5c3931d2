import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CodecError, decode, encode } from '../../src/lwm2m/codecs/index.js';
import { plainDecimal } from '../../src/lwm2m/codecs/text.js';
import { hex, testModels as models, text, utf8 } from '../helpers/lwm2m-models.js';

const TEXT = 0;
const OPAQUE = 42;

describe('Plain text (Core 7.4.1, Appendix C Table C.-2)', () => {
  // [path, payload, record type and value]: examples of Table C.-2 and of Leshan LwM2mNodeDecoderTest /
  // LwM2mNodeEncoderTest (text_* tests), on the test objects' resources of each type.
  const vectors: Array<[string, string, string, unknown]> = [
    ['/3/0/0', 'Open Mobile Alliance', 'string', 'Open Mobile Alliance'], // Transport Figure 6.4.4.-1: Read /3/0/0
    ['/3/0/0', 'MyManufacturer', 'string', 'MyManufacturer'], // Leshan text_manufacturer_resource
    ['/3/0/9', '100', 'integer', 100], // Leshan text_battery_resource
    ['/33000/0/1', '-750', 'integer', -750], // Table C.-2 Integer
    ['/33000/0/1', '-9223372036854775808', 'integer', -9223372036854775808n],
    ['/33000/0/2', '18', 'unsigned', 18], // Table C.-2 Unsigned Integer
    ['/33000/0/2', '18446744073709551615', 'unsigned', 18446744073709551615n],
    ['/33000/0/3', '56.4', 'float', 56.4], // Leshan text_encode_single_resource_float
    ['/33000/0/3', '0.00000000006667', 'float', 6.667e-11], // Table C.-2 Float, written without exponent
    ['/33000/0/4', '0', 'boolean', false], // Table C.-2 Boolean
    ['/33000/0/4', '1', 'boolean', true],
    ['/3/0/13', '1367491215', 'time', new Date(1367491215000)], // Transport Figure 6.4.4.-1: Write /3/0/13; Leshan text_encode_single_resource_date
    ['/33000/0/6', '1476186613', 'time', new Date(1476186613000)], // Table C.-2 Time: Tue 11-Oct-16 11:50:13 UTC
    ['/33000/0/6', '-1', 'time', new Date(-1000)],
    ['/5/0/0', 'AQIDBAU=', 'opaque', new Uint8Array([1, 2, 3, 4, 5])], // Leshan text_decode_opaque_from_base64_string (7.4.1: base64)
    ['/5/0/0', '', 'opaque', new Uint8Array(0)],
    ['/5/0/0', '+/8=', 'opaque', new Uint8Array([251, 255])],
    ['/65/0/0/1', '66:1', 'objlnk', { objectId: 66, instanceId: 1 }], // Table C.-2 Objlnk "o:i"
    ['/33000/0/8', '</3/0>;ver=1.1,</1/0>', 'corelnk', '</3/0>;ver=1.1,</1/0>'],
    ['/33000/0/0', '', 'string', ''],
    ['/33000/0/0', 'grüße 👋', 'string', 'grüße 👋'],
  ];
  for (const [path, payload, type, value] of vectors) {
    it(`${path} ${JSON.stringify(payload)} is ${type}`, () => {
      const record = { path, type, value } as Parameters<typeof encode>[1][number];
      assert.deepEqual(decode(TEXT, utf8(payload), { basePath: path, models }), [record]);
      assert.equal(text(encode(TEXT, [record], { basePath: path })), payload);
    });
  }

  it('is a string when the model does not know the resource', () => {
    assert.deepEqual(decode(TEXT, utf8('100'), { basePath: '/9999/0/1' }), [{ path: '/9999/0/1', type: 'string', value: '100' }]);
  });

  it('writes floats as plain decimals, the shortest that reads back the same', () => {
    assert.equal(plainDecimal(6.667e-11), '0.00000000006667');
    assert.equal(plainDecimal(-1.5e-7), '-0.00000015');
    assert.equal(plainDecimal(1e21), '1000000000000000000000');
    assert.equal(plainDecimal(1.2345e22), '12345000000000000000000');
    assert.equal(plainDecimal(0.1), '0.1');
    assert.equal(Number(plainDecimal(Number.MIN_VALUE)), Number.MIN_VALUE);
    assert.equal(Number(plainDecimal(Number.MAX_VALUE)), Number.MAX_VALUE);
    assert.deepEqual(decode(TEXT, utf8('1.5e3'), { basePath: '/6/0/0', models }), [{ path: '/6/0/0', type: 'float', value: 1500 }]);
  });

  const invalid: Array<[string, string, RegExp]> = [
    ['/5/0/0', '!,-INVALID$_\'', /is not base64/], // Leshan text_decode_should_throw_an_exception_for_invalid_base64
    ['/5/0/0', 'AQ=D', /is not base64/],
    ['/5/0/0', 'AQIDB', /is not base64/],
    ['/3/0/9', '1.5', /is not an integer number/],
    ['/3/0/9', ' 100', /is not an integer number/],
    ['/3/0/9', '9223372036854775808', /out of range for integer/],
    ['/33000/0/2', '-1', /is not an unsigned number/],
    ['/33000/0/2', '18446744073709551616', /out of range for unsigned/],
    ['/6/0/0', 'NaN', /is not a decimal number/],
    ['/6/0/0', '1e999', /is not a finite number/],
    ['/1/0/6', 'true', /is not a boolean/],
    ['/3/0/13', '2013-05-02', /is not a time/],
    ['/3/0/13', '99999999999999', /out of range/],
    ['/65/0/0/0', '66:65536', /is not an object link/],
    ['/65/0/0/0', '66', /is not an object link/],
    ['/1/0/8', '', /has no value \(type none\)/],
  ];
  for (const [path, payload, message] of invalid) {
    it(`refuses ${JSON.stringify(payload)} for ${path}`, () => {
      assert.throws(
        () => decode(TEXT, utf8(payload), { basePath: path, models }),
        (error: unknown) => error instanceof CodecError && message.test(error.message),
      );
    });
  }

  it('refuses broken UTF-8, non-resource paths, several records, NaN and wrong value types (Leshan text_encode_multiple_instances)', () => {
    assert.throws(() => decode(TEXT, hex('c328'), { basePath: '/3/0/0', models }), /not valid UTF-8/);
    assert.throws(() => decode(TEXT, utf8('x'), { basePath: '/3/0', models }), /needs a resource or resource-instance path, not \/3\/0/);
    assert.throws(() => decode(TEXT, utf8('x')), /not \//);
    const records = [
      { path: '/3/0/6/0', type: 'integer', value: 1 },
      { path: '/3/0/6/1', type: 'integer', value: 5 },
    ] as const;
    assert.throws(() => encode(TEXT, records, { basePath: '/3/0/6' }), /needs a resource or resource-instance path|exactly one value/);
    assert.throws(() => encode(TEXT, [{ path: '/6/0/0', type: 'float', value: NaN }], { basePath: '/6/0/0' }), /cannot be represented/);
    assert.throws(() => encode(TEXT, [{ path: '/3/0/9', type: 'integer', value: '100' }], { basePath: '/3/0/9' }), /"100" is not an integer/);
    assert.throws(() => encode(TEXT, [{ path: '/3/0/13', type: 'time', value: new Date(NaN) }], { basePath: '/3/0/13' }), /invalid Date/);
  });
});

describe('Opaque (Core 7.4.2)', () => {
  it('carries the bytes of one opaque resource as they are', () => {
    const bytes = hex('00ff10');
    const record = { path: '/5/0/0', type: 'opaque', value: bytes } as const;
    assert.deepEqual(decode(OPAQUE, bytes, { basePath: '/5/0/0', models }), [record]);
    assert.deepEqual(encode(OPAQUE, [record], { basePath: '/5/0/0' }), bytes);
    assert.deepEqual(decode(OPAQUE, new Uint8Array(0), { basePath: '/9/9/9' }), [{ path: '/9/9/9', type: 'opaque', value: new Uint8Array(0) }]);
  });

  it('refuses resources of other types and non-resource paths', () => {
    assert.throws(() => decode(OPAQUE, hex('01'), { basePath: '/3/0/9', models }), /\/3\/0\/9 is integer, not opaque/);
    assert.throws(() => encode(OPAQUE, [{ path: '/3/0/9', type: 'integer', value: 1 }], { basePath: '/3/0/9' }), /only opaque values/);
    assert.throws(() => decode(OPAQUE, hex('01'), { basePath: '/5' }), CodecError);
  });
});
