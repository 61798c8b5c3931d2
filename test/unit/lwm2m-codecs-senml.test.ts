import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decode as cborX } from 'cbor-x';
import {
  CodecError,
  decode,
  decodePaths,
  encode,
  encodePaths,
  parseSenmlCbor,
  parseSenmlJson,
  resolveSenml,
  serializeSenmlCbor,
  serializeSenmlJson,
} from '../../src/lwm2m/codecs/index.js';
import { deviceRecords, hex, testModels as models, text, toHex, utf8 } from '../helpers/lwm2m-models.js';

// Table numbers are those of Core 1.1.1 section 7.4.5 (the same tables are 7.5.6.-N in Core 1.2.2).
const JSON_CF = 110;
const CBOR_CF = 112;
const NOW = 1_700_000_000;

// Core 1.1 7.4.5 Table 7.4.5-2 (1.2.2 Table 7.5.6.-2) without its line breaks, exactly as Leshan
// LwM2mNodeEncoderTest senml_json_encode_device_object_instance writes it.
const DEVICE_JSON =
  '[{"bn":"/3/0/","n":"0","vs":"Open Mobile Alliance"},{"n":"1","vs":"Lightweight M2M Client"},{"n":"2","vs":"345000123"},' +
  '{"n":"3","vs":"1.0"},{"n":"6/0","v":1},{"n":"6/1","v":5},{"n":"7/0","v":3800},{"n":"7/1","v":5000},{"n":"8/0","v":125},' +
  '{"n":"8/1","v":900},{"n":"9","v":100},{"n":"10","v":15},{"n":"11/0","v":0},{"n":"13","v":1367491215},{"n":"14","vs":"+02:00"},' +
  '{"n":"16","vs":"U"}]';

// Core 1.1 7.4.6 / 1.2.2 7.5.7 and Appendix M: the same instance in SenML CBOR, 196 bytes (as transcribed in
// fiumaralabs/lwm2m spec/vectors/spec-examples.json "spec-senml-cbor-read-3-0").
const DEVICE_CBOR =
  '90a321652f332f302f00613003744f70656e204d6f62696c6520416c6c69616e6365a200613103764c69676874776569676874204d324d20436c69656e74' +
  'a20061320369333435303030313233a20061330363312e30a20063362f300201a20063362f310205a20063372f3002190ed8a20063372f3102191388' +
  'a20063382f3002187da20063382f3102190384a2006139021864a200623130020fa2006431312f300200a200623133021a5182428fa20062313403662b3032' +
  '3a3030a200623136036155';

describe('SenML JSON: specification examples', () => {
  it('decodes and encodes the Device instance (Core 7.4.5) byte for byte', () => {
    assert.deepEqual(decode(JSON_CF, utf8(DEVICE_JSON), { basePath: '/3/0', models }), deviceRecords);
    assert.equal(text(encode(JSON_CF, deviceRecords, { basePath: '/3/0' })), DEVICE_JSON);
  });

  it('accepts the spec’s rendering with line breaks', () => {
    const spaced = DEVICE_JSON.replaceAll('},{', '},\n{');
    assert.deepEqual(decode(JSON_CF, utf8(spaced), { basePath: '/3/0', models }), deviceRecords);
  });

  it('writes a single resource with its path in bn (Core Table 7.4.5-5; Leshan senml_json_encode_single_resource)', () => {
    const json = '[{"bn":"/3/0/0","vs":"Open Mobile Alliance"}]';
    assert.equal(text(encode(JSON_CF, [deviceRecords[0]], { basePath: '/3/0/0' })), json);
    assert.deepEqual(decode(JSON_CF, utf8(json), { basePath: '/3/0/0', models }), [deviceRecords[0]]);
  });

  it('writes a multiple resource with bn "/3/0/7/" (Leshan senml_json_encode_multiple_resource)', () => {
    const json = '[{"bn":"/3/0/7/","n":"0","v":3800},{"n":"1","v":5000}]';
    const records = [deviceRecords[6], deviceRecords[7]];
    assert.equal(text(encode(JSON_CF, records, { basePath: '/3/0/7' })), json);
    assert.deepEqual(decode(JSON_CF, utf8(json), { basePath: '/3/0/7', models }), records);
  });

  it('writes opaque values as unpadded base64url (Leshan senml_json_encode_opaque_resource: ABCDEF is "q83v")', () => {
    const record = { path: '/0/0/3', type: 'opaque', value: hex('abcdef') } as const;
    assert.equal(text(encode(JSON_CF, [record], { basePath: '/0/0/3' })), '[{"bn":"/0/0/3","vd":"q83v"}]');
    assert.deepEqual(decode(JSON_CF, utf8('[{"bn":"/0/0/3","vd":"q83v"}]'), { basePath: '/0/0/3', models }), [record]);
  });

  it('reads and writes the Read-Composite request (Core Table 7.4.5-6) and its response (Table 7.4.5-7)', () => {
    const request = '[{"n":"/3/0/0"},{"n":"/3/0/9"},{"n":"/1/0/1"}]';
    assert.deepEqual(decodePaths(JSON_CF, utf8(request)), ['/3/0/0', '/3/0/9', '/1/0/1']);
    assert.equal(text(encodePaths(JSON_CF, ['/3/0/0', '/3/0/9', '/1/0/1'])), request);
    const response = '[{"n":"/3/0/0", "vs":"Open Mobile Alliance"},\n{"n" :"/3/0/9", "v":95},\n{"n":"/1/0/1", "v":86400}]';
    const records = [
      { path: '/3/0/0', type: 'string', value: 'Open Mobile Alliance' },
      { path: '/3/0/9', type: 'integer', value: 95 },
      { path: '/1/0/1', type: 'integer', value: 86400 },
    ] as const;
    assert.deepEqual(decode(JSON_CF, utf8(response), { models }), records);
    assert.equal(text(encode(JSON_CF, records)), '[{"n":"/3/0/0","vs":"Open Mobile Alliance"},{"n":"/3/0/9","v":95},{"n":"/1/0/1","v":86400}]');
  });

  it('resolves base names in a composite request (Core 1.2.2 Table 7.5.6.-8): /4/0/0, /4/0/1, /4/0/2, /6/0', () => {
    const request = '[{"bn":"/4/0/", "n":"0"},\n{"n":"1"},\n{"n":"2"},\n{"bn":"/6/", "n":"0"}]';
    assert.deepEqual(decodePaths(JSON_CF, utf8(request)), ['/4/0/0', '/4/0/1', '/4/0/2', '/6/0']);
    assert.deepEqual(decodePaths(JSON_CF, utf8('[{"n":"/"},{"n":"/1"},{"n":"/1/2"}]')), ['/', '/1', '/1/2']);
  });

  it('decodes the Write-Composite example (Core Table 7.4.5-9) typed by the IPSO models', () => {
    const payload = '[{"n":"/3311/0/5850", "vb":false},\n{"n":"/3311/1/5850", "vb":false},\n{"n":"/3311/2/5851", "v":20},\n{"n":"/3308/0/5900", "v":18}]';
    assert.deepEqual(decode(JSON_CF, utf8(payload), { models }), [
      { path: '/3311/0/5850', type: 'boolean', value: false },
      { path: '/3311/1/5850', type: 'boolean', value: false },
      { path: '/3311/2/5851', type: 'integer', value: 20 },
      { path: '/3308/0/5900', type: 'float', value: 18 },
    ]);
  });

  it('decodes the Bootstrap-Read of /2 (Core 1.2.2 Table 6.1.7.4.-2)', () => {
    const payload =
      '[{"bn":"/2/","n":"0/0","v":1},{"n":"0/1","v":0},{"n":"0/2/127","v":7},{"n":"0/3","v":127},{"n":"2/0","v":3},{"n":"2/1","v":0},' +
      '{"n":"2/2/127","v":7},{"n":"2/2/310","v":7},{"n":"2/3","v":127}]';
    const records = decode(JSON_CF, utf8(payload), { basePath: '/2', models });
    assert.deepEqual(records.map((record) => record.path), ['/2/0/0', '/2/0/1', '/2/0/2/127', '/2/0/3', '/2/2/0', '/2/2/1', '/2/2/2/127', '/2/2/2/310', '/2/2/3']);
    assert.deepEqual(records[7], { path: '/2/2/2/310', type: 'integer', value: 7 });
  });

  it('reads object links in "vlo" (Core Table 7.4.5-4)', () => {
    const payload = '[{"bn":"/","n":"65/0/0/0","vlo":"66:0"},{"n":"65/0/0/1","vlo":"66:1"},{"n":"65/0/1","vs":"8613800755500"},{"n":"65/0/2","v":1}]';
    assert.deepEqual(decode(JSON_CF, utf8(payload), { basePath: '/65/0', models }), [
      { path: '/65/0/0/0', type: 'objlnk', value: { objectId: 66, instanceId: 0 } },
      { path: '/65/0/0/1', type: 'objlnk', value: { objectId: 66, instanceId: 1 } },
      { path: '/65/0/1', type: 'string', value: '8613800755500' },
      { path: '/65/0/2', type: 'integer', value: 1 },
    ]);
  });
});

describe('SenML times (RFC 8428 4.5.3)', () => {
  it('reads absolute base times with relative offsets (Leshan senml_timestamped_resources, bt above 2^28)', () => {
    const payload = '[{"bn":"/1024/0/1","v":22.9,"bt":268500000},{"v":22.4,"t":-5},{"v":24.1,"t":-50}]';
    assert.deepEqual(decode(JSON_CF, utf8(payload), { basePath: '/1024/0/1', now: NOW }), [
      { path: '/1024/0/1', type: 'float', value: 22.9, time: 268500000 },
      { path: '/1024/0/1', type: 'float', value: 22.4, time: 268499995 },
      { path: '/1024/0/1', type: 'float', value: 24.1, time: 268499950 },
    ]);
  });

  it('keeps a base time across a new base name (Leshan senml_timestamped_resources_with_several_bn)', () => {
    const payload = '[{"bn": "/3303/0/5700", "bt": 1699877805.766, "v": -128.8}, {"bn": "/6/0/0", "t": 0.101, "v": -39.0}]';
    const [first, second] = decode(JSON_CF, utf8(payload), { models, now: NOW });
    assert.deepEqual(first, { path: '/3303/0/5700', type: 'float', value: -128.8, time: 1699877805.766 });
    assert.equal(second?.path, '/6/0/0');
    assert.ok(Math.abs((second?.time ?? 0) - 1699877805.867) < 1e-6);
  });

  it('treats times below 2^28 as relative to now, so the historical-notification example (bt 25462634) lies in the future', () => {
    // Core 1.2.2 Table 7.5.6.-3: bt 25462634 is below 2^28; RFC 8428 reads it as "now + 25462634 s".
    const payload = '[{"bn":"/72/","bt":25462634,"n":"1/2","v":22.4,"t":-5},\n{"n":"1/2","v":22.9,"t":-30},\n{"n":"1/2","v":24.1,"t":-50}]';
    assert.deepEqual(
      decode(JSON_CF, utf8(payload), { basePath: '/72', now: NOW }).map((record) => record.time),
      [NOW + 25462629, NOW + 25462604, NOW + 25462584],
    );
    assert.deepEqual(decode(JSON_CF, utf8('[{"n":"/3/0/9","v":5,"t":-60}]'), { models, now: NOW })[0]?.time, NOW - 60);
    // t 0 is "now": no timestamp of its own.
    assert.deepEqual(decode(JSON_CF, utf8('[{"n":"/3/0/9","v":5,"t":0}]'), { models, now: NOW }), [{ path: '/3/0/9', type: 'integer', value: 5 }]);
  });

  it('writes times as bt, and bt 0 for an untimed record after timed ones', () => {
    const records = [
      { path: '/3303/0/5700', type: 'float', value: 21.5, time: 1700000000 },
      { path: '/3303/0/5700', type: 'float', value: 21.5, time: 1700000000 },
      { path: '/3303/0/5700', type: 'float', value: 22, time: 1700000060 },
      { path: '/3303/0/5701', type: 'string', value: 'Cel' },
    ] as const;
    const json = text(encode(JSON_CF, records.slice(1), { basePath: '/3303/0' }));
    assert.equal(json, '[{"bn":"/3303/0/","bt":1700000000,"n":"5700","v":21.5},{"bt":1700000060,"n":"5700","v":22},{"bt":0,"n":"5701","vs":"Cel"}]');
    assert.deepEqual(decode(JSON_CF, utf8(json), { basePath: '/3303/0', models, now: NOW }), records.slice(1));
    assert.throws(() => encode(JSON_CF, records, { basePath: '/3303/0' }), CodecError, 'the same path twice at the same time');
    assert.throws(() => encode(JSON_CF, [{ path: '/3/0/9', type: 'integer', value: 1, time: 5 }]), /absolute SenML time/);
  });
});

describe('SenML values', () => {
  it('keeps 64-bit integers exact (Leshan senml_json_decode_ulong / senml_json_decode_long)', () => {
    assert.deepEqual(decode(JSON_CF, utf8('[{"n":"/0/0/16","v":18446744073709551615}]'), { models }), [
      { path: '/0/0/16', type: 'unsigned', value: 18446744073709551615n },
    ]);
    assert.deepEqual(decode(JSON_CF, utf8('[{"n":"/1/0/2","v":9223372036854775800}]'), { models }), [
      { path: '/1/0/2', type: 'integer', value: 9223372036854775800n },
    ]);
    assert.equal(text(encode(JSON_CF, [{ path: '/0/0/16', type: 'unsigned', value: 18446744073709551615n }])), '[{"n":"/0/0/16","v":18446744073709551615}]');
  });

  it('reads a time in exponent notation (Leshan senml_json_decode_single_resource_using_exponantial_notation)', () => {
    assert.deepEqual(decode(JSON_CF, utf8('[{"bn":"/3/0/13","v":1.638435E9}]'), { basePath: '/3/0/13', models }), [
      { path: '/3/0/13', type: 'time', value: new Date(1638435000000) },
    ]);
  });

  it('types unknown resources by the field: v integer or float as written, vs string, vb boolean, vd opaque, vlo objlnk', () => {
    const payload = '[{"bn":"/9999/0/","n":"0","v":7},{"n":"1","v":7.5},{"n":"2","vs":"x"},{"n":"3","vb":true},{"n":"4","vd":"AQ"},{"n":"5","vlo":"3:0"}]';
    assert.deepEqual(decode(JSON_CF, utf8(payload)), [
      { path: '/9999/0/0', type: 'integer', value: 7 },
      { path: '/9999/0/1', type: 'float', value: 7.5 },
      { path: '/9999/0/2', type: 'string', value: 'x' },
      { path: '/9999/0/3', type: 'boolean', value: true },
      { path: '/9999/0/4', type: 'opaque', value: hex('01') },
      { path: '/9999/0/5', type: 'objlnk', value: { objectId: 3, instanceId: 0 } },
    ]);
  });

  it('round-trips every type in both encodings', () => {
    const records = [
      { path: '/33000/0/0', type: 'string', value: '' },
      { path: '/33000/0/1', type: 'integer', value: -9223372036854775808n },
      { path: '/33000/0/2', type: 'unsigned', value: 18446744073709551615n },
      { path: '/33000/0/3', type: 'float', value: -0.000123 },
      { path: '/33000/0/4', type: 'boolean', value: false },
      { path: '/33000/0/5', type: 'opaque', value: new Uint8Array([0, 255, 62, 63]) },
      { path: '/33000/0/6', type: 'time', value: new Date(0) },
      { path: '/33000/0/7', type: 'objlnk', value: { objectId: 65535, instanceId: 65535 } },
      { path: '/33000/0/8', type: 'corelnk', value: '</3/0>;ver=1.1' },
      { path: '/33000/0/9/3', type: 'integer', value: 3 },
    ] as const;
    for (const cf of [JSON_CF, CBOR_CF]) {
      assert.deepEqual(decode(cf, encode(cf, records, { basePath: '/33000/0' }), { basePath: '/33000/0', models }), records, `content format ${cf}`);
    }
  });

  it('refuses NaN and infinities, which SenML numbers cannot be (RFC 8428 4.3, 6)', () => {
    for (const value of [NaN, Infinity, -Infinity]) {
      for (const cf of [JSON_CF, CBOR_CF]) {
        assert.throws(() => encode(cf, [{ path: '/6/0/0', type: 'float', value }]), CodecError);
      }
    }
    assert.throws(() => decode(CBOR_CF, hex('81a200662f362f302f3002f97e00'), { models }), /"v" must be a finite number/);
  });
});

describe('SenML CBOR: specification examples', () => {
  it('decodes and encodes the Device instance (Core 7.4.6) byte for byte', () => {
    assert.deepEqual(decode(CBOR_CF, hex(DEVICE_CBOR), { basePath: '/3/0', models }), deviceRecords);
    assert.equal(toHex(encode(CBOR_CF, deviceRecords, { basePath: '/3/0' })), DEVICE_CBOR);
  });

  it('writes opaque as a byte string under label 8 (Leshan senml_cbor_encode_opaque_resource)', () => {
    const record = { path: '/0/0/3', type: 'opaque', value: hex('abcdef') } as const;
    assert.equal(toHex(encode(CBOR_CF, [record], { basePath: '/0/0/3' })), '81a221662f302f302f330843abcdef');
    assert.deepEqual(decode(CBOR_CF, hex('81a221662f302f302f330843abcdef'), { basePath: '/0/0/3', models }), [record]);
  });

  it('writes object links under the text key "vlo" (OMA_LwM2M_for_Developers issue 484, the editor’s example)', () => {
    const cbor = '81a200692f36352f302f302f3063766c6f6436363a30';
    const record = { path: '/65/0/0/0', type: 'objlnk', value: { objectId: 66, instanceId: 0 } } as const;
    assert.equal(toHex(encode(CBOR_CF, [record])), cbor);
    assert.deepEqual(decode(CBOR_CF, hex(cbor), { models }), [record]);
  });

  it('reads base times written as decimal fractions (Leshan senml_cbor_encode_timestamped_nodes: tag 4)', () => {
    const cbor =
      '83a321662f302f302f3022c482001a1dcd6504036c53616d706c65537472696e67a321662f302f302f3122c482001a1dcd650504f4' +
      'a321662f302f302f3222c482001a1dcd6506021901c8';
    assert.deepEqual(decode(CBOR_CF, hex(cbor), { models }), [
      { path: '/0/0/0', type: 'string', value: 'SampleString', time: 500000004 },
      { path: '/0/0/1', type: 'boolean', value: false, time: 500000005 },
      { path: '/0/0/2', type: 'integer', value: 456, time: 500000006 },
    ]);
  });

  it('reads a base time tagged as epoch date/time (leshan issue 1631: [{-3: 1(1720696276)}])', () => {
    assert.deepEqual(decode(CBOR_CF, hex('81a322c11a668fbdd4006c2f333330332f302f353730300201'), { models: undefined }), [
      { path: '/3303/0/5700', type: 'integer', value: 1, time: 1720696276 },
    ]);
  });

  it('reads and writes composite request paths', () => {
    const cbor = toHex(encodePaths(CBOR_CF, ['/3/0/0', '/1']));
    assert.equal(cbor, '82a100662f332f302f30a100622f31');
    assert.deepEqual(decodePaths(CBOR_CF, hex(cbor)), ['/3/0/0', '/1']);
  });

  it('writes what cbor-x reads as the same SenML pack', () => {
    const decoded = cborX(Buffer.from(encode(CBOR_CF, deviceRecords, { basePath: '/3/0' }))) as Array<Record<string, unknown>>;
    assert.equal(decoded.length, 16);
    assert.deepEqual(decoded[13], { 0: '13', 2: 1367491215 });
  });
});

describe('RFC 8428 examples (SenML level)', () => {
  // RFC 8428 section 6: the CBOR rendering of the multiple-measurements pack (bn, bt, bu, bver, then seven
  // readings), as quoted in the tests of fxamacker/cbor and mainflux/senml.
  const RFC_CBOR =
    '87a721781b75726e3a6465763a6f773a3130653230373361303130383030363a22fb41d303a15b00106223614120050067766f6c7461676501615602fb405e066666666666' +
    'a3006763757272656e74062402fb3ff3333333333333a3006763757272656e74062302fb3ff4cccccccccccda3006763757272656e74062202fb3ff6666666666666' +
    'a3006763757272656e74062102f93e00a3006763757272656e74062002fb3ff999999999999aa3006763757272656e74060002fb3ffb333333333333';

  it('parses and re-serializes the section 6 CBOR pack byte for byte', () => {
    const pack = parseSenmlCbor(hex(RFC_CBOR));
    assert.deepEqual(pack[0], { bn: 'urn:dev:ow:10e2073a0108006:', bt: 1276020076.001, bu: 'A', bver: 5, n: 'voltage', u: 'V', v: 120.1 });
    assert.deepEqual(pack[4], { n: 'current', t: -2, v: 1.5 });
    assert.equal(toHex(serializeSenmlCbor(pack)), RFC_CBOR);
  });

  it('resolves it (section 4.6): full names, bt + t, the base unit where a record has none', () => {
    const resolved = resolveSenml('senml-cbor', parseSenmlCbor(hex(RFC_CBOR)));
    assert.deepEqual(resolved[0], { n: 'urn:dev:ow:10e2073a0108006:voltage', u: 'V', v: 120.1, t: 1276020076.001 });
    assert.deepEqual(resolved[1], { n: 'urn:dev:ow:10e2073a0108006:current', u: 'A', v: 1.2, t: 1276020071.001 });
    assert.equal(resolved[6]?.t, 1276020076.001);
  });

  it('reads the JSON form to the same pack', () => {
    const json =
      '[{"bn":"urn:dev:ow:10e2073a0108006:","bt":1.276020076001e+09,"bu":"A","bver":5,"n":"voltage","u":"V","v":120.1},' +
      '{"n":"current","t":-5,"v":1.2},{"n":"current","t":-4,"v":1.3},{"n":"current","t":-3,"v":1.4},{"n":"current","t":-2,"v":1.5},' +
      '{"n":"current","t":-1,"v":1.6},{"n":"current","t":0,"v":1.7}]';
    assert.deepEqual(parseSenmlJson(utf8(json)), parseSenmlCbor(hex(RFC_CBOR)));
  });

  it('section 5.1.1 and 5.1.2 packs (single and multiple datapoints)', () => {
    assert.deepEqual(parseSenmlJson(utf8('[{"n":"urn:dev:ow:10e2073a01080063","u":"Cel","v":23.1}]')), [{ n: 'urn:dev:ow:10e2073a01080063', u: 'Cel', v: 23.1 }]);
    // The same record in CBOR, labels n, u, v (as mainflux/senml ExampleEncodeCBOR_hex writes it).
    assert.equal(toHex(serializeSenmlCbor([{ n: 'urn:dev:ow:10e2073a01080063', u: 'Cel', v: 23.1 }])), '81a300781b75726e3a6465763a6f773a31306532303733613031303830303633016343656c02fb403719999999999a');
    const pack = parseSenmlJson(utf8('[{"bn":"urn:dev:ow:10e2073a01080063:","n":"voltage","u":"V","v":120.1},{"n":"current","u":"A","v":1.2}]'));
    assert.deepEqual(resolveSenml('senml-json', pack), [
      { n: 'urn:dev:ow:10e2073a01080063:voltage', u: 'V', v: 120.1 },
      { n: 'urn:dev:ow:10e2073a01080063:current', u: 'A', v: 1.2 },
    ]);
    assert.equal(serializeSenmlJson(pack), '[{"bn":"urn:dev:ow:10e2073a01080063:","n":"voltage","u":"V","v":120.1},{"n":"current","u":"A","v":1.2}]');
  });

  it('adds a base value (bv) and refuses a newer version or an unknown must-understand label (4.4)', () => {
    assert.deepEqual(resolveSenml('senml-json', parseSenmlJson(utf8('[{"bn":"/3/0/","bv":100,"n":"9","v":-3}]'))), [{ n: '/3/0/9', v: 97n }]);
    assert.throws(() => resolveSenml('senml-json', parseSenmlJson(utf8('[{"bver":11,"n":"/3/0/9","v":1}]'))), /version 11/);
    assert.throws(() => parseSenmlJson(utf8('[{"n":"/3/0/9","v":1,"foo_":2}]')), /must-understand label "foo_"/);
    assert.throws(() => parseSenmlCbor(hex('81a300662f332f302f390201646b65795f01')), /must-understand/);
    assert.deepEqual(parseSenmlJson(utf8('[{"n":"/3/0/9","v":1,"foo":2}]')), [{ n: '/3/0/9', v: 1n }]);
  });
});

describe('SenML: malformed payloads are CodecErrors', () => {
  const json: Array<[string, string, RegExp]> = [
    ['not JSON', '[{"n":"/3/0/9","v":1}', /invalid JSON: expected "," or "]"/],
    ['not an array', '{"n":"/3/0/9"}', /a SenML pack is a JSON array/],
    ['a record that is not an object', '[1]', /record 0 is not a JSON object/],
    ['a value of the wrong JSON type', '[{"n":"/3/0/9","v":"1"}]', /"v" must be a number/],
    ['no value', '[{"n":"/3/0/9"}]', /has no value/],
    ['two values', '[{"n":"/3/0/9","v":1,"vs":"1"}]', /several values/],
    ['a name that is not a path', '[{"n":"urn:dev:x","v":1}]', /not an LwM2M path/],
    ['a value on an instance', '[{"n":"/3/0","v":1}]', /not a resource or resource instance/],
    ['a path outside the request', '[{"n":"/4/0/0","v":1}]', /outside the request path \/3\/0/],
    ['the wrong field for the type', '[{"n":"/3/0/0","v":1}]', /"v" does not fit type string/],
    ['a fraction for an integer', '[{"n":"/3/0/9","v":1.5}]', /not an integer/],
    ['an integer out of range', '[{"n":"/3/0/9","v":9223372036854775808}]', /out of range for integer/],
    ['bad base64url', '[{"n":"/5/0/0","vd":"a+b/"}]', /not base64url/],
    ['a bad object link', '[{"n":"/3/0/22/0","vlo":"70000:1"}]', /not an object link/],
    ['a duplicate', '[{"n":"/3/0/9","v":1},{"n":"/3/0/9","v":2}]', /appears twice/],
    ['a duplicate key', '[{"n":"/3/0/9","v":1,"v":2}]', /duplicate key "v"/],
    ['a number out of range', '[{"n":"/3/0/9","v":1e400}]', /out of range/],
  ];
  for (const [what, payload, message] of json) {
    it(`JSON: ${what}`, () => {
      assert.throws(
        () => decode(JSON_CF, utf8(payload), { basePath: '/3/0', models }),
        (error: unknown) => error instanceof CodecError && message.test(error.message),
      );
    });
  }

  it('a path list with values or times is not a path list (Leshan senml_json_decode_invalid_path_with_value / _with_timestamp)', () => {
    assert.throws(() => decodePaths(JSON_CF, utf8('[{"bn":"/4/0/", "n":"0"},{"n":"1", "v":200}]')), /carries v/);
    assert.throws(() => decodePaths(JSON_CF, utf8('[{"bn":"/4/0/", "n":"0"},{"n":"1", "t":20000000}]')), /carries t/);
  });

  const cbor: Array<[string, string, RegExp]> = [
    ['truncated', '81a2006', /truncated|payload/],
    ['not an array', 'a0', /a SenML pack is a CBOR array/],
    ['a record that is not a map', '8101', /record 0 is not a CBOR map/],
    ['a name that is not text', '81a2000102f4', /"n" must be a text string/],
    ['opaque that is not bytes', '81a200662f352f302f300863616263', /"vd" must be a byte string/],
    ['trailing bytes', '80ff', /bytes left/],
  ];
  for (const [what, payload, message] of cbor) {
    it(`CBOR: ${what}`, () => {
      assert.throws(
        () => decode(CBOR_CF, hex(payload), { models }),
        (error: unknown) => error instanceof CodecError && message.test(error.message),
      );
    });
  }

  it('empty payloads and empty arrays are no records (Leshan senml_json_empty_multi_resource)', () => {
    for (const payload of ['', '[]']) assert.deepEqual(decode(JSON_CF, utf8(payload), { basePath: '/3/0/6', models }), []);
    assert.deepEqual(decode(CBOR_CF, new Uint8Array(0), { basePath: '/3/0/6', models }), []);
    assert.deepEqual(decode(CBOR_CF, hex('80'), { basePath: '/3/0/6', models }), []);
  });
});
