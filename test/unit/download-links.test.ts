import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRange } from '../../src/api/routes/downloads.js';
import { blockSize, decodeBlock, encodedSize, option, OptionNumber, optionValue } from '../../src/coap/index.js';
import { fitBlock } from '../../src/coap/blockwise.js';
import { downloadUrl } from '../../src/domain/file-links.js';

const TOKEN = 'abcdefghijklmnopqrstuvwxyz012345';

describe('downloadUrl', () => {
  const link = { token: TOKEN, name: 'firmware/v1.2/app image#1?.bin' };

  it('leaves out default ports unless includePortInUrl, and keeps others', () => {
    assert.equal(downloadUrl(link, { scheme: 'http', host: 'iot.example.com', port: 80 }), `http://iot.example.com/download/${TOKEN}`);
    assert.equal(downloadUrl(link, { scheme: 'https', host: 'iot.example.com', port: 443 }), `https://iot.example.com/download/${TOKEN}`);
    assert.equal(downloadUrl(link, { scheme: 'coap', host: 'iot.example.com', port: 5683 }), `coap://iot.example.com/download/${TOKEN}`);
    assert.equal(downloadUrl(link, { scheme: 'coaps', host: 'iot.example.com', port: 5684 }), `coaps://iot.example.com/download/${TOKEN}`);
    assert.equal(downloadUrl(link, { scheme: 'coap', host: 'iot.example.com', port: 5683, includePortInUrl: true }), `coap://iot.example.com:5683/download/${TOKEN}`);
    assert.equal(downloadUrl(link, { scheme: 'coap', host: 'iot.example.com', port: 5684 }), `coap://iot.example.com:5684/download/${TOKEN}`, "CoAPS's port is not CoAP's default");
    assert.equal(downloadUrl(link, { scheme: 'http', host: '127.0.0.2', port: 8080 }), `http://127.0.0.2:8080/download/${TOKEN}`);
  });

  it('brackets IPv6 hosts, given with or without brackets', () => {
    assert.equal(downloadUrl(link, { scheme: 'coap', host: '2001:db8::1', port: 5683 }), `coap://[2001:db8::1]/download/${TOKEN}`);
    assert.equal(downloadUrl(link, { scheme: 'http', host: '[::1]', port: 8080 }), `http://[::1]:8080/download/${TOKEN}`);
  });

  it('appends the file name with each segment percent-encoded (appendFileName)', () => {
    const url = downloadUrl(link, { scheme: 'coaps', host: 'h', port: 5684, appendFileName: true });
    assert.equal(url, `coaps://h/download/${TOKEN}/firmware/v1.2/app%20image%231%3F.bin`);
    // A URL parser gives back the segments as they were.
    const parsed = new URL(url.replace(/^coaps/, 'http'));
    assert.deepEqual(parsed.pathname.split('/').slice(3).map(decodeURIComponent), ['firmware', 'v1.2', 'app image#1?.bin']);
    assert.equal(downloadUrl({ token: TOKEN, name: 'é/ü.bin' }, { scheme: 'http', host: 'h', port: 80, appendFileName: true }), `http://h/download/${TOKEN}/%C3%A9/%C3%BC.bin`);
  });
});

describe('parseRange (HTTP Range: bytes=…)', () => {
  it('reads the three forms', () => {
    assert.deepEqual(parseRange('bytes=0-99'), { start: 0, end: 99 });
    assert.deepEqual(parseRange('bytes=500-'), { start: 500 });
    assert.deepEqual(parseRange('bytes=-500'), { last: 500 });
    assert.deepEqual(parseRange('Bytes = 1 - 2'), { start: 1, end: 2 });
    assert.deepEqual(parseRange('bytes=-0'), { last: 0 }, 'kept: unsatisfiable, 416');
  });

  it('ignores what it does not take (RFC 9110 14.2): other units, several ranges, bad syntax, overflow', () => {
    for (const header of [undefined, '', 'bytes=', 'bytes=-', 'bytes=5-2', 'items=0-1', 'bytes=0-1,3-4', 'bytes=a-b', 'bytes=1.5-2', `bytes=${'9'.repeat(30)}-`, 'bytes=-99999999999999999999', 'bytes 0-1']) {
      assert.equal(parseRange(header), undefined, String(header));
    }
  });
});

describe('fitBlock (a Block2 block cut by the handler, RFC 7959 2.4)', () => {
  const payload = Buffer.alloc(1024, 7);
  const options = [option(OptionNumber.ETag, Buffer.alloc(8, 1)), option(OptionNumber.Size2, 100_000)];

  it('sends a block that fits as it is', () => {
    const fitted = fitBlock(8, options, payload, { num: 3, more: true, szx: 6 }, 1152);
    assert.ok(fitted.ok);
    assert.deepEqual(fitted.block, { num: 3, more: true, szx: 6 });
    assert.deepEqual(decodeBlock(optionValue(fitted, OptionNumber.Block2)!), { num: 3, more: true, szx: 6 });
    assert.equal(fitted.payload.length, 1024);
    assert.ok(optionValue(fitted, OptionNumber.ETag));
  });

  it('cuts a block over the limit to its first smaller block that fits, renumbered, with M set', () => {
    const fitted = fitBlock(8, options, payload, { num: 3, more: false, szx: 6 }, 170);
    assert.ok(fitted.ok);
    const block = fitted.block!;
    assert.ok(block.szx < 6);
    assert.equal(block.num * blockSize(block.szx), 3 * 1024, 'the same offset');
    assert.equal(block.more, true, 'the rest of the block follows');
    assert.ok(encodedSize(8, fitted.options, fitted.payload.length) <= 170);
    assert.equal(fitted.payload.length, blockSize(block.szx));
  });

  it('keeps M clear when a short last block fits after cutting', () => {
    const fitted = fitBlock(8, options, Buffer.alloc(40), { num: 10, more: false, szx: 6 }, 170);
    assert.ok(fitted.ok);
    assert.equal(fitted.block!.more, false);
    assert.equal(fitted.payload.length, 40);
  });

  it('sends the 16-byte block even over the limit, and never a block number over 20 bits', () => {
    const tiny = fitBlock(8, options, payload, { num: 1, more: true, szx: 6 }, 10);
    assert.ok(tiny.ok);
    assert.equal(tiny.block!.szx, 0);
    const far = fitBlock(8, options, payload, { num: 0xfffff, more: true, szx: 6 }, 170);
    assert.ok(far.ok);
    assert.deepEqual(far.block, { num: 0xfffff, more: true, szx: 6 });
  });
});
