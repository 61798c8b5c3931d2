import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeFrame, firstFrame, FrameDecoder, FrameError, type Framing } from '../../src/tcp/framing.js';

const line: Framing = { kind: 'delimiter', delimiter: Buffer.from('\n') };
const crlf: Framing = { kind: 'delimiter', delimiter: Buffer.from('\r\n') };
const u16: Framing = { kind: 'length', bytes: 2, includesHeader: false };

const texts = (frames: Buffer[]) => frames.map((f) => f.toString());

describe('TCP framing', () => {
  it('cuts delimited frames wherever the chunks split them, the delimiter included', () => {
    const decoder = new FrameDecoder(crlf, 100);
    assert.deepEqual(texts(decoder.push(Buffer.from('he'))), []);
    assert.deepEqual(texts(decoder.push(Buffer.from('llo\r'))), []);
    assert.deepEqual(texts(decoder.push(Buffer.from('\nworld\r\nnext'))), ['hello', 'world']);
    assert.equal(decoder.buffered, 4);
    assert.deepEqual(texts(decoder.push(Buffer.from('\r\n\r\n'))), ['next'], 'an empty frame is a keep-alive, not a message');
    assert.equal(decoder.buffered, 0);
  });

  it('reads 1-, 2- and 4-byte big-endian length headers, with or without the header counted', () => {
    for (const bytes of [1, 2, 4] as const) {
      for (const includesHeader of [false, true]) {
        const framing: Framing = { kind: 'length', bytes, includesHeader };
        const stream = Buffer.concat([encodeFrame(framing, Buffer.from('abc')), encodeFrame(framing, Buffer.from('de'))]);
        const decoder = new FrameDecoder(framing, 100);
        // One byte at a time: the hardest split there is.
        const frames = [...stream].flatMap((byte) => decoder.push(Buffer.from([byte])));
        assert.deepEqual(texts(frames), ['abc', 'de'], `${bytes} bytes, includesHeader ${includesHeader}`);
      }
    }
    assert.deepEqual([...encodeFrame(u16, Buffer.from('abc'))], [0, 3, 0x61, 0x62, 0x63]);
    assert.deepEqual([...encodeFrame({ kind: 'length', bytes: 4, includesHeader: true }, Buffer.from('a'))], [0, 0, 0, 5, 0x61]);
  });

  it('refuses an oversized frame from its length header, before its bytes arrive', () => {
    const decoder = new FrameDecoder(u16, 10);
    assert.throws(() => decoder.push(Buffer.from([0x00, 0x0b])), FrameError);
    assert.throws(() => new FrameDecoder({ kind: 'length', bytes: 1, includesHeader: true }, 10).push(Buffer.from([0])), FrameError, 'a length shorter than its own header');
  });

  it('refuses a delimited frame once it outgrows the limit without a delimiter', () => {
    const decoder = new FrameDecoder(line, 8);
    assert.deepEqual(decoder.push(Buffer.from('12345678')), []);
    assert.throws(() => decoder.push(Buffer.from('9')), FrameError);
    assert.throws(() => new FrameDecoder(line, 4).push(Buffer.from('12345\n')), FrameError);
  });

  it('finds the first frame of a connection and how many bytes it took', () => {
    assert.deepEqual(firstFrame(Buffer.from('\ndev-1\nrest'), line, 100), { frame: Buffer.from('dev-1'), consumed: 7 });
    assert.equal(firstFrame(Buffer.from([0, 5, 1]), u16, 100), 'more');
    assert.throws(() => firstFrame(Buffer.from('x'.repeat(20)), line, 10), FrameError);
  });
});
