import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { generate, parse } from 'coap-packet';
import {
  blockSize,
  checkOptions,
  CoapFormatError,
  codeByte,
  codeOf,
  decodeBlock,
  decodeMessage,
  decodeUint,
  encodeBlock,
  encodedSize,
  encodeMessage,
  encodeUint,
  formatBlock,
  isNewerNotification,
  option,
  OptionNumber,
  szxFor,
  uriPath,
  uriPathOptions,
  uriQuery,
  uriQueryOptions,
  withOption,
  type CoapMessage,
} from '../../src/coap/index.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const text = (s: string) => Buffer.from(s).toString('hex');

describe('CoAP message codec (RFC 7252 3)', () => {
  // The exchanges of RFC 7252 2.2 (Figures 4–6) and Appendix A (Figures 16, 17), header fields as written there.
  const vectors: { name: string; wire: Buffer; message: CoapMessage }[] = [
    {
      name: 'A, Figure 16: CON [0x7d34] GET /temperature, no token',
      wire: hex(`40 01 7d34 bb ${text('temperature')}`),
      message: { type: 'CON', code: '0.01', messageId: 0x7d34, token: Buffer.alloc(0), options: [option(11, 'temperature')], payload: Buffer.alloc(0) },
    },
    {
      name: 'A, Figure 16: ACK [0x7d34] 2.05 "22.3 C"',
      wire: hex(`60 45 7d34 ff ${text('22.3 C')}`),
      message: { type: 'ACK', code: '2.05', messageId: 0x7d34, token: Buffer.alloc(0), options: [], payload: Buffer.from('22.3 C') },
    },
    {
      name: 'A, Figure 17: CON [0x7d35] GET /temperature, token 0x20',
      wire: hex(`41 01 7d35 20 bb ${text('temperature')}`),
      message: { type: 'CON', code: '0.01', messageId: 0x7d35, token: hex('20'), options: [option(11, 'temperature')], payload: Buffer.alloc(0) },
    },
    {
      name: '2.2, Figure 4: ACK [0xbc91] 4.04 "Not found", token 0x72',
      wire: hex(`61 84 bc91 72 ff ${text('Not found')}`),
      message: { type: 'ACK', code: '4.04', messageId: 0xbc91, token: hex('72'), options: [], payload: Buffer.from('Not found') },
    },
    {
      name: '2.2, Figure 5: separate CON [0x23bb] 2.05, token 0x73',
      wire: hex(`41 45 23bb 73 ff ${text('22.5 C')}`),
      message: { type: 'CON', code: '2.05', messageId: 0x23bb, token: hex('73'), options: [], payload: Buffer.from('22.5 C') },
    },
    {
      name: '2.2, Figure 6: NON [0x7a11] GET /temperature, token 0x74',
      wire: hex(`51 01 7a11 74 bb ${text('temperature')}`),
      message: { type: 'NON', code: '0.01', messageId: 0x7a11, token: hex('74'), options: [option(11, 'temperature')], payload: Buffer.alloc(0) },
    },
    {
      name: 'Empty ACK [0x7a10] (Figure 5)',
      wire: hex('60 00 7a10'),
      message: { type: 'ACK', code: '0.00', messageId: 0x7a10, token: Buffer.alloc(0), options: [], payload: Buffer.alloc(0) },
    },
    {
      name: 'RST answering a ping',
      wire: hex('70 00 0001'),
      message: { type: 'RST', code: '0.00', messageId: 1, token: Buffer.alloc(0), options: [], payload: Buffer.alloc(0) },
    },
    {
      name: 'extended delta (Size1 after Uri-Path: 49 = 13 + 0x24) and repeated Uri-Path',
      wire: hex(`42 02 0102 abcd b1 61 01 62 d2 24 0400`),
      message: {
        type: 'CON',
        code: '0.02',
        messageId: 0x0102,
        token: hex('abcd'),
        options: [option(11, 'a'), option(11, 'b'), option(OptionNumber.Size1, 1024)],
        payload: Buffer.alloc(0),
      },
    },
  ];

  for (const { name, wire, message } of vectors) {
    it(`decodes ${name}`, () => assert.deepEqual(decodeMessage(wire), message));
    it(`encodes ${name}`, () => assert.deepEqual(encodeMessage(message), wire));
    it(`agrees with coap-packet on ${name}`, () => {
      const theirs = parse(wire);
      assert.equal(theirs.code, message.code);
      assert.equal(theirs.messageId, message.messageId);
      assert.deepEqual(theirs.token, message.token);
      assert.deepEqual(theirs.payload, message.payload);
      assert.equal(theirs.options.length, message.options.length);
    });
  }

  it('encodes like coap-packet, extended option lengths (14: 269 + n) included', () => {
    const message: CoapMessage = {
      type: 'NON',
      code: '2.05',
      messageId: 4242,
      token: hex('0102030405060708'),
      options: [option(OptionNumber.ContentFormat, 50), option(OptionNumber.ProxyUri, 'x'.repeat(300)), option(OptionNumber.ETag, hex('a1b2'))],
      payload: Buffer.from('{"v":1}'),
    };
    const theirs = generate({
      code: '2.05',
      messageId: 4242,
      token: message.token,
      options: message.options.map((o) => ({ name: o.number, value: o.value })),
      payload: message.payload,
    });
    assert.deepEqual(encodeMessage(message), theirs);
    const decoded = decodeMessage(theirs);
    assert.deepEqual(
      decoded.options.map((o) => o.number),
      [OptionNumber.ETag, OptionNumber.ContentFormat, OptionNumber.ProxyUri],
      'options come out sorted by number',
    );
    assert.equal(encodedSize(8, message.options, message.payload.length), theirs.length);
  });

  it('keeps the order of repeated options when sorting', () => {
    const message: CoapMessage = {
      type: 'CON',
      code: '0.01',
      messageId: 1,
      token: Buffer.alloc(0),
      options: [option(OptionNumber.UriQuery, 'b=2'), ...uriPathOptions('/rd/5a3f'), option(OptionNumber.UriQuery, 'a=1')],
      payload: Buffer.alloc(0),
    };
    const decoded = decodeMessage(encodeMessage(message));
    assert.equal(uriPath(decoded), '/rd/5a3f');
    assert.deepEqual(uriQuery(decoded), ['b=2', 'a=1']);
  });

  it('maps codes to and from their byte', () => {
    for (let byte = 0; byte < 256; byte++) assert.equal(codeByte(codeOf(byte)), byte);
    assert.equal(codeOf(0x45), '2.05');
    assert.equal(codeOf(0x9d), '4.29');
  });

  it('refuses to encode a token over 8 bytes or a datagram over the maximum', () => {
    const base: CoapMessage = { type: 'CON', code: '0.01', messageId: 1, token: Buffer.alloc(9), options: [], payload: Buffer.alloc(0) };
    assert.throws(() => encodeMessage(base), RangeError);
    assert.throws(() => encodeMessage({ ...base, token: Buffer.alloc(0), payload: Buffer.alloc(2000) }, 1152), RangeError);
  });

  describe('rejects malformed datagrams with CoapFormatError', () => {
    const malformed: [string, Buffer][] = [
      ['an empty datagram', Buffer.alloc(0)],
      ['a truncated header', hex('40 01 00')],
      ['version 2', hex('80 01 0001')],
      ['token length 9 (reserved)', hex('49 01 0001 010203040506070809')],
      ['token length 15 (reserved)', hex('4f 01 0001')],
      ['a truncated token', hex('44 01 0001 0102')],
      ['option delta 15 outside the payload marker', hex('40 01 0001 f1 00')],
      ['option length 15', hex('40 01 0001 bf')],
      ['an option value running past the end', hex('40 01 0001 b5 7465')],
      ['a truncated extended delta', hex('40 01 0001 d0')],
      ['a truncated two-byte extended length', hex('40 01 0001 0e 01')],
      ['a payload marker with an empty payload', hex('40 01 0001 ff')],
      ['an Empty message with a token', hex('41 00 0001 aa')],
      ['an Empty message with a payload', hex('40 00 0001 ff 01')],
      ['an option number over 65535', hex('40 01 0001 e0 ffff e0 0001')],
    ];
    for (const [name, wire] of malformed) {
      it(name, () => assert.throws(() => decodeMessage(wire), CoapFormatError));
    }
  });
});

describe('CoAP options', () => {
  it('encodes unsigned integers in the fewest bytes (RFC 7252 3.2)', () => {
    const cases: [number, string][] = [
      [0, ''],
      [1, '01'],
      [255, 'ff'],
      [256, '0100'],
      [60, '3c'],
      [0xffffff, 'ffffff'],
      [0x1000000, '01000000'],
    ];
    for (const [n, wire] of cases) {
      assert.equal(encodeUint(n).toString('hex'), wire);
      assert.equal(decodeUint(hex(wire)), n);
    }
    assert.equal(decodeUint(hex('0005')), 5, 'leading zeros are accepted on receipt');
    assert.throws(() => encodeUint(-1), RangeError);
    assert.throws(() => decodeUint(hex('0102030405')), RangeError);
  });

  it('builds and reads Uri-Path and Uri-Query', () => {
    const options = [...uriPathOptions('/3/0/1'), ...uriQueryOptions({ ep: 'dev1', lt: 300 })];
    assert.deepEqual(
      options.map((o) => [o.number, o.value.toString()]),
      [
        [11, '3'],
        [11, '0'],
        [11, '1'],
        [15, 'ep=dev1'],
        [15, 'lt=300'],
      ],
    );
    assert.equal(uriPath({ options: [] }), '/');
    assert.deepEqual(uriPathOptions('//a//b/'), uriPathOptions('/a/b'));
    assert.equal(withOption(options, OptionNumber.UriQuery, undefined).length, 3);
  });

  it('applies RFC 7252 5.4: unknown critical options fail, unknown elective ones pass, bad elective ones drop', () => {
    const ok = [option(OptionNumber.UriPath, 'a'), option(2048, 'x')];
    assert.deepEqual(checkOptions(ok), { ok: true, options: ok });
    assert.deepEqual(checkOptions([option(9, 'x')]), { ok: false, badOption: 9 }, 'OSCORE (9) is critical and not recognised');
    assert.deepEqual(checkOptions([option(OptionNumber.UriHost, 'a'), option(OptionNumber.UriHost, 'b')]), { ok: false, badOption: 3 }, 'a repeated critical option (5.4.5)');
    assert.deepEqual(checkOptions([option(OptionNumber.UriPort, hex('010203'))]), { ok: false, badOption: 7 }, 'a critical option out of format (5.4.3)');
    const badElective = checkOptions([option(OptionNumber.Observe, hex('01020304')), option(OptionNumber.ContentFormat, 0), option(OptionNumber.ContentFormat, 1)]);
    assert.ok(badElective.ok);
    assert.deepEqual(
      badElective.options.map((o) => o.number),
      [OptionNumber.ContentFormat],
      'over-long Observe and the repeated Content-Format are dropped',
    );
  });
});

describe('Block option (RFC 7959 2.2)', () => {
  // NUM/M/SZX combinations as RFC 7959 writes them in its figures, e.g. "Block2: 0/1/128" in Figure 2.
  const vectors: [string, number, boolean, number, string][] = [
    ['0/0/16', 0, false, 0, ''],
    ['0/1/64', 0, true, 2, '0a'],
    ['0/1/128', 0, true, 3, '0b'],
    ['1/1/128', 1, true, 3, '1b'],
    ['2/0/128', 2, false, 3, '23'],
    ['4/1/32', 4, true, 1, '49'],
    ['0/1/1024', 0, true, 6, '0e'],
    ['15/0/1024', 15, false, 6, 'f6'],
    ['16/1/16', 16, true, 0, '0108'],
    ['4095/0/256', 4095, false, 4, 'fff4'],
    ['4096/1/512', 4096, true, 5, '01000d'],
    ['1048575/0/1024', 0xfffff, false, 6, 'fffff6'],
  ];
  for (const [written, num, more, szx, wire] of vectors) {
    it(`${written} is ${wire || '(empty)'}`, () => {
      assert.equal(encodeBlock({ num, more, szx }).toString('hex'), wire);
      assert.deepEqual(decodeBlock(hex(wire)), { num, more, szx });
      assert.equal(formatBlock({ num, more, szx }), written);
    });
  }

  it('rejects SZX 7 and values over 3 bytes', () => {
    assert.throws(() => decodeBlock(hex('07')), /SZX 7/);
    assert.throws(() => decodeBlock(hex('01000000')), /3 bytes/);
    assert.throws(() => encodeBlock({ num: 0, more: false, szx: 7 }), RangeError);
    assert.throws(() => encodeBlock({ num: 0x100000, more: false, szx: 0 }), RangeError);
  });

  it('sizes blocks as 2^(SZX+4)', () => {
    assert.deepEqual([0, 1, 2, 3, 4, 5, 6].map(blockSize), [16, 32, 64, 128, 256, 512, 1024]);
    assert.equal(szxFor(1024), 6);
    assert.equal(szxFor(1000), 5);
    assert.equal(szxFor(64), 2);
    assert.equal(szxFor(10), 0, 'never below the smallest block');
  });
});

describe('Observe ordering (RFC 7641 3.4)', () => {
  it('compares sequence numbers in 24-bit serial arithmetic, or by the 128 s rule', () => {
    assert.equal(isNewerNotification(1, 0, 2, 1000), true);
    assert.equal(isNewerNotification(5, 0, 3, 1000), false, 'an older value arriving late');
    assert.equal(isNewerNotification(5, 0, 5, 1000), false, 'the same value again');
    assert.equal(isNewerNotification(0xffffff, 0, 0, 1000), true, 'wrap-around');
    assert.equal(isNewerNotification(10, 0, 10 + (1 << 23), 1000), false, 'too far ahead reads as behind');
    assert.equal(isNewerNotification(5, 0, 3, 128_001), true, 'anything after 128 s is newer');
  });
});
