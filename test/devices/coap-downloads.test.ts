import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { blockSize, decodeBlock, encodeBlock, option, OptionNumber, optionValue, uriPathOptions, type CoapOption, type Peer } from '../../src/coap/index.js';
import { RawPeer, rawRequest } from '../helpers/coap.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/** Debian's libcoap3-bin clients: plain CoAP, and DTLS on OpenSSL. */
const NOTLS = 'coap-client-notls';
const OPENSSL = 'coap-client-openssl';
const missing = [NOTLS, OPENSSL].filter((client) => spawnSync(client, ['-h']).error !== undefined);
const skipLibcoap = missing.length === 0 ? false : `${missing.join(', ')} not installed (apt-get install libcoap3-bin)`;

const KEY = 'sixteen-byte-key';

interface Run {
  readonly code: number | null;
  readonly output: string;
  readonly ms: number;
}

/** One run of a libcoap client, its own wait bounded by -B and ours by a kill. */
function libcoap(client: string, args: readonly string[], waitSeconds = 20): Promise<Run> {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(client, ['-B', String(waitSeconds), ...args]);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('latin1')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('latin1')));
    const timer = setTimeout(() => child.kill('SIGKILL'), (waitSeconds + 10) * 1000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output, ms: Date.now() - started });
    });
  });
}

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/**
 * A UDP relay between one client and the service that holds each request `delayMs`: libcoap fetches blocks as
 * fast as loopback answers, and the service answers a peer over 100 requests/s (bursts of 200) with 4.29, which
 * libcoap does not retry. Real devices are far slower than that; the relay makes this one as polite.
 */
class PacedRelay {
  readonly #front = dgram.createSocket('udp4');
  readonly #back = dgram.createSocket('udp4');
  #client: dgram.RemoteInfo | undefined;

  private constructor(target: Peer, delayMs: number) {
    this.#front.on('message', (datagram, from) => {
      this.#client = from;
      setTimeout(() => this.#back.send(datagram, target.port, target.address), delayMs);
    });
    this.#back.on('message', (datagram) => {
      if (this.#client) this.#front.send(datagram, this.#client.port, this.#client.address);
    });
  }

  static async open(target: Peer, delayMs: number): Promise<PacedRelay> {
    const relay = new PacedRelay(target, delayMs);
    await Promise.all([relay.#front, relay.#back].map((socket) => new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))));
    return relay;
  }

  get port(): number {
    return this.#front.address().port;
  }

  close(): void {
    this.#front.close();
    this.#back.close();
  }
}

for (const dialect of DIALECTS) {
  describe(`download links over CoAP and CoAPS (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let dir: string;
    let raw: RawPeer;
    let server: Peer;
    let messageId = 1;
    const image = randomBytes(100 * 1024);

    const put = (name: string, content: Buffer) => service.bridge.domain.files.replace(tenant.accountId, { name }, Readable.from([content]), { maxBytes: 1 << 26 });
    const link = async (name: string, body: Record<string, unknown> = {}) => {
      const created = await service.request('POST', `/file/${encodeURIComponent(name)}/links`, { token: tenant.token, body });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body as { token: string; urls: { http: string; coap: string; coaps?: string } };
    };
    /** A hand-made GET of /download/<token>[/…] with these extra options, answered to our raw socket. */
    const get = async (pathSegments: string, extra: CoapOption[] = [], code: '0.01' | '0.02' = '0.01') => {
      raw.send(rawRequest({ messageId: messageId++, code, options: [...uriPathOptions(pathSegments), ...extra] }), server);
      return (await raw.next(5000)).message;
    };

    before(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'iotbridge-downloads-'));
      service = await startService(dialect.name);
      tenant = await createAccount(service, 'coap-downloads');
      await put('firmware/image.bin', image);
      raw = await RawPeer.open();
      server = { address: '127.0.0.1', port: service.ports.coap! };
    });
    after(async () => {
      await raw?.close();
      await service?.stop();
      await rm(dir, { recursive: true, force: true });
    });

    it('libcoap fetches a 100 KiB file block-wise (Block2, 64-byte blocks, 1600 requests) and gets the same bytes', { skip: skipLibcoap }, async () => {
      const { token } = await link('firmware/image.bin');
      const relay = await PacedRelay.open(server, 10);
      try {
        const out = path.join(dir, 'notls-64.bin');
        const run = await libcoap(NOTLS, ['-m', 'get', '-b', '64', '-o', out, `coap://127.0.0.1:${relay.port}/download/${token}`], 60);
        assert.equal(run.code, 0, run.output);
        assert.equal(sha256(await readFile(out)), sha256(image));
      } finally {
        relay.close();
      }
    });

    it('libcoap without a block size gets a file too: the service picks the size (capped for an unverified address, RFC 7252 11.3) and libcoap follows', { skip: skipLibcoap }, async () => {
      const small = randomBytes(20 * 1024);
      await put('firmware/small image.bin', small);
      const { urls } = await link('firmware/small image.bin', { appendFileName: true });
      // libcoap percent-decodes the name into Uri-Path options, which the service compares with the file's.
      assert.match(urls.coap, /\/firmware\/small%20image\.bin$/);
      const out = path.join(dir, 'notls-default.bin');
      const run = await libcoap(NOTLS, ['-m', 'get', '-o', out, urls.coap]);
      assert.equal(run.code, 0, run.output);
      assert.equal(sha256(await readFile(out)), sha256(small));
    });

    it('libcoap over CoAPS (PSK of an endpoint of the account) fetches the file in 1024-byte blocks', { skip: skipLibcoap }, async () => {
      const serviceId = await createService(service, tenant.token, { name: 'dl-coap', type: 'coap' });
      const endpoint = await createEndpoint(service, tenant.token, { key: 'dl-device', serviceId });
      const secured = await service.request('PUT', `/endpoints/${endpoint.id}/security`, { token: tenant.token, body: { mode: 'psk', identity: 'dl-device', key: Buffer.from(KEY).toString('hex') } });
      assert.equal(secured.status, 200, JSON.stringify(secured.body));
      const { urls } = await link('firmware/image.bin');
      assert.ok(urls.coaps);
      const out = path.join(dir, 'openssl.bin');
      const run = await libcoap(OPENSSL, ['-m', 'get', '-b', '1024', '-u', 'dl-device', '-k', KEY, '-o', out, urls.coaps]);
      assert.equal(run.code, 0, run.output);
      assert.equal(sha256(await readFile(out)), sha256(image));
    });

    it('a libcoap client gives up within its -B bound on an unknown token (4.04)', { skip: skipLibcoap }, async () => {
      const run = await libcoap(NOTLS, ['-m', 'get', `coap://127.0.0.1:${service.ports.coap}/download/${'A'.repeat(32)}`], 3);
      assert.match(run.output, /4\.04/);
      assert.ok(run.ms < 8000, `${run.ms} ms`);
    });

    it('serves a block in the middle (a resumed transfer) read by byte range, with ETag and Size2', async () => {
      const { token } = await link('firmware/image.bin');
      const response = await get(`/download/${token}`, [{ number: OptionNumber.Block2, value: encodeBlock({ num: 37, more: false, szx: 4 }) }, option(OptionNumber.Size2, 0)]);
      assert.equal(response.code, '2.05');
      const block = decodeBlock(optionValue(response, OptionNumber.Block2)!);
      // The service may answer a smaller block than asked (RFC 7959 2.4): the same offset, fewer bytes.
      const offset = block.num * blockSize(block.szx);
      assert.equal(offset, 37 * 256);
      assert.ok(block.szx <= 4);
      assert.equal(block.more, true);
      assert.ok(response.payload.equals(image.subarray(offset, offset + blockSize(block.szx))));
      assert.ok(optionValue(response, OptionNumber.ETag)!.equals(Buffer.from(sha256(image).slice(0, 16), 'hex')));
      assert.equal(optionValue(response, OptionNumber.Size2)!.readUIntBE(0, optionValue(response, OptionNumber.Size2)!.length), image.length);
      assert.equal(optionValue(response, OptionNumber.ContentFormat)?.[0], 42);
      // The last block: M clear, the remainder only.
      const lastNum = Math.floor((image.length - 1) / 16);
      const last = await get(`/download/${token}`, [{ number: OptionNumber.Block2, value: encodeBlock({ num: lastNum, more: false, szx: 0 }) }]);
      assert.equal(last.code, '2.05');
      assert.deepEqual(decodeBlock(optionValue(last, OptionNumber.Block2)!), { num: lastNum, more: false, szx: 0 });
      assert.ok(last.payload.equals(image.subarray(lastNum * 16)));
      assert.equal(optionValue(last, OptionNumber.Size2), undefined, 'Size2 only on block 0 or when asked');
    });

    it('answers 4.02 past the end, 4.00 for a malformed Block2, 4.05 for other methods, 4.04 for unknown, wrongly named and stale links', async () => {
      const { token } = await link('firmware/image.bin');
      const past = await get(`/download/${token}`, [{ number: OptionNumber.Block2, value: encodeBlock({ num: image.length / 64, more: false, szx: 2 }) }]);
      assert.equal(past.code, '4.02');
      const reserved = await get(`/download/${token}`, [{ number: OptionNumber.Block2, value: Buffer.from([0x07]) }]);
      assert.equal(reserved.code, '4.00');
      const tooLong = await get(`/download/${token}`, [{ number: OptionNumber.Block2, value: Buffer.from([1, 2, 3, 4]) }]);
      assert.ok(['4.00', '4.02'].includes(tooLong.code), tooLong.code);
      assert.equal((await get(`/download/${token}`, [], '0.02')).code, '4.05');
      for (const bad of [`/download/${'A'.repeat(32)}`, '/download', '/download/x/y', `/download/${token}/firmware/other.bin`, `/download/${token}/image.bin`]) {
        assert.equal((await get(bad)).code, '4.04', bad);
      }
      const named = await get(`/download/${token}/firmware/image.bin`, [{ number: OptionNumber.Block2, value: encodeBlock({ num: 0, more: false, szx: 0 }) }]);
      assert.equal(named.code, '2.05');
      assert.ok(named.payload.equals(image.subarray(0, 16)));

      await put('stale.bin', Buffer.from('first content'));
      const pinned = await link('stale.bin');
      assert.equal((await get(`/download/${pinned.token}`)).payload.toString(), 'first content');
      await put('stale.bin', Buffer.from('second content'));
      const stale = await get(`/download/${pinned.token}`);
      assert.equal(stale.code, '4.04');
      assert.match(stale.payload.toString(), /replaced or removed/);
    });

    it('serves an empty file and a small one in a single response', async () => {
      await put('empty.bin', Buffer.alloc(0));
      const empty = await get(`/download/${(await link('empty.bin')).token}`);
      assert.equal(empty.code, '2.05');
      assert.equal(empty.payload.length, 0);
      await put('small.txt', Buffer.from('hello'));
      const small = await get(`/download/${(await link('small.txt')).token}`);
      assert.equal(small.code, '2.05');
      assert.equal(small.payload.toString(), 'hello');
      assert.equal(optionValue(small, OptionNumber.Block2), undefined);
    });
  });
}
