// payloadFields (src/devices/payload.ts) reads text as a fatal UTF-8 TextDecoder does, without calling one.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { payloadFields } from '../../src/devices/payload.js';

/** The definition it replaced: WHATWG UTF-8, fatal, BOM dropped; then no control characters but tab, CR, LF. */
function reference(bytes: Buffer): string | undefined {
  if (bytes.length === 0) return '';
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    // eslint-disable-next-line no-control-regex
    return /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text) ? undefined : text;
  } catch {
    return undefined;
  }
}

const CASES: [string, Buffer][] = [
  ['empty', Buffer.alloc(0)],
  ['JSON', Buffer.from('{"t":21.5,"h":40}')],
  ['tab, CR, LF', Buffer.from('a\tb\r\nc')],
  ['a NUL', Buffer.from('a\u0000b')],
  ['DEL', Buffer.from('a\u007fb')],
  ['a byte order mark first', Buffer.from('\ufeffhello')],
  ['only a byte order mark', Buffer.from([0xef, 0xbb, 0xbf])],
  ['a byte order mark later', Buffer.from('hi\ufeff')],
  ['astral', Buffer.from('🌡️ 21 °C')],
  ['an encoded surrogate (CESU)', Buffer.from([0xed, 0xa0, 0x80])],
  ['overlong NUL', Buffer.from([0xc0, 0x80])],
  ['truncated sequence', Buffer.from([0x61, 0xe2, 0x82])],
  ['a lone continuation byte', Buffer.from([0x80])],
  ['above U+10FFFF', Buffer.from([0xf4, 0x90, 0x80, 0x80])],
  ['binary', Buffer.from([0x01, 0x02, 0xff, 0x00])],
  ['C1 control U+0085', Buffer.from('a\u0085b')],
];

describe('payloadFields', () => {
  for (const [name, bytes] of CASES) {
    it(`reads ${name} as the fatal decoder does`, () => {
      const fields = payloadFields(bytes);
      assert.equal(fields.payload, bytes.toString('hex'));
      assert.equal(fields.payloadBase64, bytes.toString('base64'));
      const expected = reference(bytes);
      assert.equal(fields.text, expected);
      assert.equal('text' in fields, expected !== undefined);
    });
  }

  it('agrees with the decoder on 20,000 random short byte strings', () => {
    let state = 7;
    const next = () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) & 0xff;
    for (let i = 0; i < 20_000; i++) {
      // Mostly text-like bytes, with multi-byte leads and continuations often enough to matter.
      const bytes = Buffer.from(Array.from({ length: 1 + (i % 9) }, () => [0x41, 0x0a, next(), 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0xef, 0xbb, 0xbf][next() % 13]!));
      assert.equal(payloadFields(bytes).text, reference(bytes), bytes.toString('hex'));
    }
  });
});
