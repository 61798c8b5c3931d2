/**
 * CoapEndpoint over real UDP on loopback, against the node `coap` client, libcoap's coap-client, raw
 * datagrams, and itself (client side).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Agent, request as coapRequest, type IncomingMessage } from 'coap';
import pino from 'pino';
import {
  block1,
  block2,
  CoapEndpoint,
  CoapError,
  encodeBlock,
  encodeMessage,
  emptyMessage,
  maxAge,
  Method,
  observe,
  option,
  OptionNumber,
  ResponseCode,
  size1,
  uriPath,
  uriPathOptions,
  type CoapEndpointOptions,
  type CoapMessage,
  type CoapResponse,
  type Peer,
} from '../../src/coap/index.js';
import { coapClient, ipv6Available, LIBCOAP_SKIP, RawPeer, rawRequest, sleep } from '../helpers/coap.js';
import { until } from '../helpers/devices.js';

const BIG = Buffer.from(Array.from({ length: 5000 }, (_, i) => 'abcdefghijklmnopqrstuvwxyz0123456789'.charCodeAt(i % 36)));
const HAS_IPV6 = await ipv6Available();

interface Server {
  readonly endpoint: CoapEndpoint;
  readonly port: number;
  readonly at: Peer;
  readonly calls: Map<string, number>;
  readonly uploads: Buffer[];
}

/** An endpoint with a few resources, on the default dual-stack socket. */
async function startServer(options: CoapEndpointOptions = {}): Promise<Server> {
  const endpoint = new CoapEndpoint({ separateResponseAfter: 150, rateLimit: false, ...options });
  const calls = new Map<string, number>();
  const uploads: Buffer[] = [];
  let active = 0;
  endpoint.onRequest((request): CoapResponse | Promise<CoapResponse> => {
    const p = uriPath(request);
    calls.set(p, (calls.get(p) ?? 0) + 1);
    switch (p) {
      case '/hello':
        return { code: ResponseCode.Content, payload: 'hello' };
      case '/echo':
        return { code: ResponseCode.Changed, payload: `${request.code} ${request.payload.toString()}` };
      case '/big':
        return { code: ResponseCode.Content, options: [option(OptionNumber.ContentFormat, 0)], payload: BIG };
      case '/upload':
        uploads.push(request.payload);
        return { code: ResponseCode.Changed, payload: `got ${request.payload.length}` };
      case '/slow':
        return sleep(400).then(() => ({ code: ResponseCode.Content, payload: 'slow' }));
      case '/hold':
        active++;
        calls.set('max-active', Math.max(calls.get('max-active') ?? 0, active));
        return sleep(50).then(() => {
          active--;
          return { code: ResponseCode.Content, payload: 'held' };
        });
      case '/obs':
        return { code: ResponseCode.Content, payload: 'v0', observe: true };
      case '/throw':
        throw new Error('handler bug');
      default:
        return { code: ResponseCode.NotFound };
    }
  });
  await endpoint.start();
  const port = endpoint.address().port;
  return { endpoint, port, at: { address: '127.0.0.1', port }, calls, uploads };
}

function nodeCoap(port: number, method: 'GET' | 'POST' | 'PUT', pathname: string, payload?: string, hostname = '127.0.0.1'): Promise<IncomingMessage> {
  const agent = new Agent({ type: hostname.includes(':') ? 'udp6' : 'udp4' });
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req = coapRequest({ hostname, port, pathname, method, agent });
    req.on('response', resolve);
    req.on('error', reject);
    req.end(payload);
  }).finally(() => agent.close());
}

describe('CoapEndpoint serving', () => {
  let server: Server;
  let dir: string;
  before(async () => {
    server = await startServer({ transmission: { ackTimeout: 200, ackRandomFactor: 1 }, block1: { maxBodySize: 16_384 } });
    dir = await mkdtemp(path.join(tmpdir(), 'iotbridge-coap-'));
  });
  after(async () => {
    await server.endpoint.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers GET and POST from the node coap client', async () => {
    const get = await nodeCoap(server.port, 'GET', '/hello');
    assert.equal(get.code, '2.05');
    assert.equal(get.payload.toString(), 'hello');
    const post = await nodeCoap(server.port, 'POST', '/echo', 'ping');
    assert.equal(post.code, '2.04');
    assert.equal(post.payload.toString(), '0.02 ping');
  });

  it('answers GET and PUT from libcoap coap-client', { skip: LIBCOAP_SKIP }, async () => {
    assert.equal(await coapClient(['-m', 'get', `coap://127.0.0.1:${server.port}/hello`]), 'hello\n');
    assert.equal(await coapClient(['-m', 'put', '-e', 'payload', `coap://127.0.0.1:${server.port}/echo`]), '0.03 payload\n');
  });

  it('answers over IPv6 (::1) on the same dual-stack socket', { skip: HAS_IPV6 ? false : 'no IPv6 loopback here' }, async () => {
    const get = await nodeCoap(server.port, 'GET', '/hello', undefined, '::1');
    assert.equal(get.payload.toString(), 'hello');
    if (!LIBCOAP_SKIP) assert.equal(await coapClient(['-m', 'get', `coap://[::1]:${server.port}/hello`]), 'hello\n');
    const raw = await RawPeer.open('udp6');
    try {
      raw.send(rawRequest({ messageId: 7, options: uriPathOptions('/hello') }), { address: '::1', port: server.port });
      const { message } = await raw.next();
      assert.equal(message.payload.toString(), 'hello');
    } finally {
      await raw.close();
    }
  });

  it('answers a duplicate CON with the identical response and runs the handler once (RFC 7252 4.5)', async () => {
    const raw = await RawPeer.open();
    try {
      const datagram = encodeMessage(rawRequest({ messageId: 0x1234, token: Buffer.from('dedup'), options: uriPathOptions('/echo'), code: Method.POST, payload: Buffer.from('x') }));
      const before = server.calls.get('/echo') ?? 0;
      raw.send(datagram, server.at);
      const first = await raw.next();
      raw.send(datagram, server.at);
      const second = await raw.next();
      assert.deepEqual(second.datagram, first.datagram);
      assert.equal(first.message.type, 'ACK');
      assert.equal(first.message.messageId, 0x1234);
      assert.equal(server.calls.get('/echo'), before + 1);
    } finally {
      await raw.close();
    }
  });

  it('ignores a duplicate NON', async () => {
    const raw = await RawPeer.open();
    try {
      const datagram = encodeMessage(rawRequest({ type: 'NON', messageId: 77, options: uriPathOptions('/echo'), code: Method.POST, payload: Buffer.from('n') }));
      const before = server.calls.get('/echo') ?? 0;
      raw.send(datagram, server.at);
      raw.send(datagram, server.at);
      const got = await raw.drain(300);
      assert.equal(got.length, 1);
      assert.equal(got[0]!.message.type, 'NON', 'RFC 7252 5.2.3: a NON request gets a NON response');
      assert.equal(server.calls.get('/echo'), before + 1);
    } finally {
      await raw.close();
    }
  });

  it('answers a CoAP ping with RST and calls onPing', async () => {
    const raw = await RawPeer.open();
    const pinged: Peer[] = [];
    server.endpoint.onPing((peer) => pinged.push(peer));
    try {
      raw.send(emptyMessage('CON', 0x4242), server.at);
      const { message, datagram } = await raw.next();
      assert.equal(message.type, 'RST');
      assert.equal(message.messageId, 0x4242);
      assert.equal(datagram.length, 4);
      assert.deepEqual(pinged, [raw.peer]);
    } finally {
      await raw.close();
    }
  });

  it('acknowledges a slow request at once, then sends the response as a separate CON until acknowledged (RFC 7252 5.2.2)', async () => {
    const raw = await RawPeer.open();
    try {
      const token = Buffer.from([1, 2, 3, 4]);
      raw.send(rawRequest({ messageId: 500, token, options: uriPathOptions('/slow') }), server.at);
      const ack = await raw.next();
      assert.equal(ack.message.type, 'ACK');
      assert.equal(ack.message.code, '0.00');
      assert.equal(ack.message.messageId, 500);
      const response = await raw.next();
      assert.equal(response.message.type, 'CON');
      assert.equal(response.message.code, '2.05');
      assert.deepEqual(response.message.token, token);
      assert.equal(response.message.payload.toString(), 'slow');
      // Not acknowledged: retransmitted after ACK_TIMEOUT (200 ms here) with the same message ID.
      const again = await raw.next();
      assert.deepEqual(again.datagram, response.datagram);
      assert.ok(again.at - response.at >= 150, `${again.at - response.at} ms`);
      assert.equal(server.endpoint.isVerified(raw.peer), false);
      raw.send(emptyMessage('ACK', response.message.messageId), server.at);
      await until(() => server.endpoint.isVerified(raw.peer), 'peer verified by its ACK', 1000);
      assert.deepEqual(await raw.drain(500), [], 'no more retransmissions');
      // A duplicate of the request still gets the empty ACK.
      raw.send(rawRequest({ messageId: 500, token, options: uriPathOptions('/slow') }), server.at);
      assert.equal((await raw.next()).message.code, '0.00');
    } finally {
      await raw.close();
    }
  });

  it('acknowledges at once a retransmitted request whose handler is still working', async () => {
    const raw = await RawPeer.open();
    try {
      const request = rawRequest({ messageId: 600, token: Buffer.from('impatient'.slice(0, 8)), options: uriPathOptions('/slow') });
      raw.send(request, server.at);
      await sleep(30);
      const sent = Date.now();
      raw.send(request, server.at);
      const ack = await raw.next();
      assert.deepEqual([ack.message.type, ack.message.code], ['ACK', '0.00']);
      assert.ok(ack.at - sent < 100, `empty ACK after ${ack.at - sent} ms, not at the 150 ms threshold`);
      const response = await raw.next();
      assert.equal(response.message.payload.toString(), 'slow');
      raw.send(emptyMessage('ACK', response.message.messageId), server.at);
    } finally {
      await raw.close();
    }
  });

  it('honours No-Response (RFC 7967): nothing for a NON, an empty ACK for a CON', async () => {
    const raw = await RawPeer.open();
    try {
      const noSuccess = option(OptionNumber.NoResponse, 2);
      raw.send(rawRequest({ type: 'NON', messageId: 700, options: [...uriPathOptions('/hello'), noSuccess] }), server.at);
      raw.send(rawRequest({ messageId: 701, options: [...uriPathOptions('/hello'), noSuccess] }), server.at);
      raw.send(rawRequest({ type: 'NON', messageId: 702, options: [...uriPathOptions('/missing'), noSuccess] }), server.at);
      const got = (await raw.drain(300)).map((r) => `${r.message.type} ${r.message.code} ${r.message.messageId}`);
      assert.equal(got.length, 2);
      assert.ok(got.includes('ACK 0.00 701'));
      assert.ok(got.some((g) => g.startsWith('NON 4.04')), 'errors are still reported');
    } finally {
      await raw.close();
    }
  });

  it('turns a handler failure into 5.00', async () => {
    const raw = await RawPeer.open();
    try {
      raw.send(rawRequest({ messageId: 9, options: uriPathOptions('/throw') }), server.at);
      assert.equal((await raw.next()).message.code, '5.00');
    } finally {
      await raw.close();
    }
  });

  it('answers an unrecognised critical option with 4.02 and a proxy request with 5.05 (RFC 7252 5.4.1, 5.10.2)', async () => {
    const raw = await RawPeer.open();
    try {
      raw.send(rawRequest({ messageId: 10, options: [...uriPathOptions('/hello'), option(9, 'x')] }), server.at);
      assert.equal((await raw.next()).message.code, '4.02');
      raw.send(rawRequest({ messageId: 11, options: [option(OptionNumber.ProxyUri, 'coap://example.org/')] }), server.at);
      assert.equal((await raw.next()).message.code, '5.05');
    } finally {
      await raw.close();
    }
  });

  it('reassembles a 5 kB Block1 upload from coap-client -b 64 (RFC 7959 2.3)', { skip: LIBCOAP_SKIP }, async () => {
    const file = path.join(dir, 'upload.bin');
    await writeFile(file, BIG);
    const out = await coapClient(['-m', 'post', '-b', '64', '-f', file, `coap://127.0.0.1:${server.port}/upload`]);
    assert.equal(out, 'got 5000\n');
    assert.deepEqual(server.uploads.at(-1), BIG);
    assert.equal(server.calls.get('/upload'), 1, 'the handler sees one request with the whole body');
  });

  it('serves a 5 kB body to coap-client in Block2 blocks (RFC 7959 2.4)', { skip: LIBCOAP_SKIP }, async () => {
    // coap-client ends its output with a newline.
    const expected = BIG.toString('latin1') + '\n';
    assert.equal(await coapClient(['-m', 'get', `coap://127.0.0.1:${server.port}/big`]), expected);
    assert.equal(await coapClient(['-m', 'get', '-b', '64', `coap://127.0.0.1:${server.port}/big`]), expected, 'early negotiation of 64-byte blocks');
  });

  it('limits responses to an unverified peer to 3x its request, full blocks once it has proven its address (RFC 7252 11.3)', async () => {
    const raw = await RawPeer.open();
    try {
      // Big enough a request that 3x leaves room for more than the smallest block (which is always allowed).
      const request = rawRequest({ messageId: 20, options: [...uriPathOptions('/big'), option(OptionNumber.UriQuery, 'padding=' + 'x'.repeat(24))] });
      raw.send(request, server.at);
      const cut = await raw.next();
      const requestSize = encodeMessage(request).length;
      assert.ok(cut.datagram.length <= 3 * requestSize, `${cut.datagram.length} > 3 × ${requestSize}`);
      assert.deepEqual(block2(cut.message), { num: 0, more: true, szx: 2 }, '64-byte blocks fit in 3 × 42 bytes');
      assert.ok(server.endpoint.stats().amplificationLimited >= 1);
      // The endpoint asks the peer something; its ACK proves the address.
      raw.autoReply = (r) => (r.message.type === 'CON' ? { ...r.message, type: 'ACK', code: '2.05', options: [], payload: Buffer.from('ok') } : undefined);
      const answer = await server.endpoint.request(raw.peer, { code: Method.GET, options: uriPathOptions('/x') });
      assert.equal(answer.payload.toString(), 'ok');
      await raw.drain(50);
      raw.autoReply = undefined;
      raw.send(rawRequest({ messageId: 21, options: uriPathOptions('/big') }), server.at);
      const full = await raw.next();
      assert.deepEqual(block2(full.message), { num: 0, more: true, szx: 6 });
      assert.equal(full.message.payload.length, 1024);
    } finally {
      await raw.close();
    }
  });

  it('answers 4.13 with Size1 for a body announced over the maximum (RFC 7959 2.9.3)', async () => {
    const raw = await RawPeer.open();
    try {
      raw.send(
        rawRequest({
          messageId: 30,
          code: Method.POST,
          options: [...uriPathOptions('/upload'), { number: OptionNumber.Block1, value: encodeBlock({ num: 0, more: true, szx: 6 }) }, option(OptionNumber.Size1, 1 << 20)],
          payload: BIG.subarray(0, 1024),
        }),
        server.at,
      );
      const { message } = await raw.next();
      assert.equal(message.code, '4.13');
      assert.equal(size1(message), 16_384);
    } finally {
      await raw.close();
    }
  });

  it('sends notifications to a device observing with coap-client -s (RFC 7641 4.2)', { skip: LIBCOAP_SKIP }, async () => {
    const output = coapClient(['-m', 'get', '-s', '3', `coap://127.0.0.1:${server.port}/obs`]);
    await until(() => server.endpoint.observers({ path: '/obs' }).length === 1, 'coap-client registered', 3000);
    const [observer] = server.endpoint.observers({ path: '/obs' });
    assert.equal(observer!.peer.address, '127.0.0.1');
    await server.endpoint.notify(observer!, { code: ResponseCode.Content, payload: 'v1' }, { confirmable: true });
    await server.endpoint.notify(observer!, { code: ResponseCode.Content, payload: 'v2' });
    await server.endpoint.notify(observer!, { code: ResponseCode.Content, payload: BIG });
    const out = await output;
    assert.ok(out.startsWith('v0v1v2'), out.slice(0, 20));
    assert.ok(out.includes(BIG.toString('latin1')), 'a large notification arrives whole (Block2)');
  });

  it('keeps answering after 1000 garbage datagrams', async () => {
    const raw = await RawPeer.open();
    const errors = server.endpoint.stats().errors;
    const malformed = server.endpoint.stats().malformed;
    try {
      const valid = encodeMessage(rawRequest({ messageId: 1, options: [...uriPathOptions('/hello'), option(OptionNumber.Block2, 0x16), option(OptionNumber.Observe, 0)] }));
      for (let i = 0; i < 1000; i++) {
        let datagram: Buffer;
        if (i % 2 === 0) {
          datagram = randomBytes(Math.floor(Math.random() * 64));
        } else {
          // A valid message with random bytes flipped: reaches the deeper layers more often than pure noise.
          datagram = Buffer.from(valid);
          for (let j = 0; j < 3; j++) datagram[Math.floor(Math.random() * datagram.length)] = Math.floor(Math.random() * 256);
        }
        raw.send(datagram, server.at);
        if (i % 100 === 0) await sleep(5);
      }
      await raw.drain(300);
      raw.send(rawRequest({ messageId: 0xbeef, token: Buffer.from('after'), options: uriPathOptions('/hello') }), server.at);
      const { message } = await raw.next();
      assert.equal(message.payload.toString(), 'hello');
      const stats = server.endpoint.stats();
      assert.ok(stats.malformed - malformed > 100, `${stats.malformed - malformed} malformed`);
      assert.equal(stats.errors, errors, 'nothing escaped as an internal error');
    } finally {
      await raw.close();
    }
  });
});

describe('CoapEndpoint as a client', () => {
  let server: Server;
  let client: CoapEndpoint;
  before(async () => {
    server = await startServer({ block1: { maxBodySize: 8192 } });
    client = new CoapEndpoint({ host: '127.0.0.1', transmission: { ackTimeout: 100, ackRandomFactor: 1, maxRetransmit: 2 } });
    await client.start();
  });
  after(async () => {
    await client.stop();
    await server.endpoint.stop();
  });

  it('gets a response, and sends and fetches large bodies block-wise within maxMessageSize', async () => {
    const hello = await client.request(server.at, { code: Method.GET, options: uriPathOptions('/hello') });
    assert.equal(hello.code, '2.05');
    assert.equal(hello.payload.toString(), 'hello');
    const upload = await client.request(server.at, { code: Method.POST, options: uriPathOptions('/upload'), payload: BIG }, { maxMessageSize: 300 });
    assert.equal(upload.payload.toString(), 'got 5000');
    assert.equal(block1(upload)?.more, false, 'the final response echoes Block1');
    assert.deepEqual(server.uploads.at(-1), BIG);
    server.endpoint.verifyPeer(client.address().family === 'IPv4' ? { address: '127.0.0.1', port: client.address().port } : client.address());
    const big = await client.request(server.at, { code: Method.GET, options: uriPathOptions('/big') }, { maxMessageSize: 200 });
    assert.deepEqual(big.payload, BIG);
    assert.equal(block2(big), undefined);
  });

  it('resolves 4.13 when the server refuses a large body, and rejects a response over maxBodySize', async () => {
    const tooBig = await client.request(server.at, { code: Method.POST, options: uriPathOptions('/upload'), payload: Buffer.concat([BIG, BIG]) });
    assert.equal(tooBig.code, '4.13');
    assert.equal(size1(tooBig), 8192);
    await assert.rejects(client.request(server.at, { code: Method.GET, options: uriPathOptions('/big') }, { maxBodySize: 3000 }), { code: 'TOO_LARGE' });
  });

  it('keeps NSTART=1 request outstanding per peer, queueing the rest (RFC 7252 4.7)', async () => {
    // A request answered by an empty ACK (the handler outlasted separateResponseAfter, as on a loaded machine) is no
    // longer outstanding (4.7), so the next may start beside it: each such answer allows one more at once.
    const assertMaxActive = (max: number | undefined, nstart: number, separate: number) => {
      if (separate === 0) assert.equal(max, nstart);
      else assert.ok(max !== undefined && max >= 1 && max <= Math.min(4, nstart + separate), `${max} at once, ${separate} answered separately`);
    };
    let separateBefore = server.endpoint.stats().separateResponses;
    const responses = await Promise.all([1, 2, 3, 4].map(() => client.request(server.at, { code: Method.GET, options: uriPathOptions('/hold') })));
    assert.deepEqual(
      responses.map((r) => r.payload.toString()),
      ['held', 'held', 'held', 'held'],
    );
    let separate = server.endpoint.stats().separateResponses - separateBefore;
    assertMaxActive(server.calls.get('max-active'), 1, separate);
    const wider = new CoapEndpoint({ host: '127.0.0.1', transmission: { nstart: 3 } });
    await wider.start();
    try {
      server.calls.set('max-active', 0);
      separateBefore = server.endpoint.stats().separateResponses;
      await Promise.all([1, 2, 3, 4].map(() => wider.request(server.at, { code: Method.GET, options: uriPathOptions('/hold') })));
      separate = server.endpoint.stats().separateResponses - separateBefore;
      assertMaxActive(server.calls.get('max-active'), 3, separate);
    } finally {
      await wider.stop();
    }
  });

  it('takes a separate response: the empty ACK stops retransmission, the CON response is acknowledged', async () => {
    const before = server.endpoint.stats().separateResponses;
    const response = await client.request(server.at, { code: Method.GET, options: uriPathOptions('/slow') });
    assert.equal(response.payload.toString(), 'slow');
    assert.equal(server.endpoint.stats().separateResponses, before + 1);
    await until(() => server.endpoint.stats().outstanding === 0, 'the server saw our ACK', 1000);
  });

  it('retransmits a CON to a silent peer with doubling timeouts, then rejects with TIMEOUT (RFC 7252 4.2)', async () => {
    const silent = await RawPeer.open();
    try {
      const started = Date.now();
      const error = await client.request(silent.peer, { code: Method.GET, options: uriPathOptions('/x') }).catch((e: unknown) => e);
      assert.ok(error instanceof CoapError && error.code === 'TIMEOUT', String(error));
      const got = await silent.drain(0);
      assert.equal(got.length, 3, 'the first transmission and MAX_RETRANSMIT=2 retransmissions');
      assert.ok(got.every((r) => r.datagram.equals(got[0]!.datagram)), 'same message ID and token each time');
      const gaps = got.slice(1).map((r, i) => r.at - got[i]!.at);
      assert.ok(gaps[0]! >= 80 && gaps[1]! >= 160, `gaps ${gaps.join(', ')} ms`);
      assert.ok(Date.now() - started >= 600, 'gives up after the last doubled wait (100 + 200 + 400 ms)');
    } finally {
      await silent.close();
    }
  });

  it('rejects with RESET on RST, ABORTED on abort, TIMEOUT past the overall timeout', async () => {
    const peer = await RawPeer.open();
    try {
      peer.autoReply = (r) => emptyMessage('RST', r.message.messageId);
      await assert.rejects(client.request(peer.peer, { code: Method.GET }), { code: 'RESET' });
      peer.autoReply = undefined;
      const controller = new AbortController();
      const aborted = client.request(peer.peer, { code: Method.GET }, { signal: controller.signal });
      setTimeout(() => controller.abort(), 20);
      await assert.rejects(aborted, { code: 'ABORTED' });
      await assert.rejects(client.request(peer.peer, { code: Method.GET, confirmable: false }, { timeout: 150 }), { code: 'TIMEOUT' });
    } finally {
      await peer.close();
    }
  });

  it('a request waiting for its NSTART slot leaves the queue when aborted or timed out; the next one still gets its turn', async () => {
    const peer = await RawPeer.open();
    try {
      // The first holds the only slot (a silent peer: retransmitted until it gives up, ~700 ms here).
      const first = client.request(peer.peer, { code: Method.GET, options: uriPathOptions('/first') });
      const controller = new AbortController();
      const aborted = client.request(peer.peer, { code: Method.GET, options: uriPathOptions('/aborted') }, { signal: controller.signal });
      const timedOut = client.request(peer.peer, { code: Method.GET, options: uriPathOptions('/timed-out') }, { timeout: 150 });
      const last = client.request(peer.peer, { code: Method.GET, options: uriPathOptions('/last') });
      setTimeout(() => controller.abort(), 20);
      await assert.rejects(aborted, { code: 'ABORTED' });
      await assert.rejects(timedOut, { code: 'TIMEOUT' });
      peer.autoReply = (r) => (r.message.type === 'CON' ? { ...r.message, type: 'ACK', code: '2.05', options: [], payload: Buffer.from('ok') } : undefined);
      // The first's retransmission is answered now (or it gives up on a slow machine); then only the last goes out.
      await first.catch(() => undefined);
      assert.equal((await last).payload.toString(), 'ok');
      const paths = (await peer.drain(0)).map((r) => uriPath(r.message));
      assert.ok(!paths.includes('/aborted') && !paths.includes('/timed-out'), `sent: ${paths.join(', ')}`);
      assert.equal(paths.at(-1), '/last');
    } finally {
      peer.autoReply = undefined;
      await peer.close();
    }
  });

  it('matches a separate response from a device by token and acknowledges it', async () => {
    const device = await RawPeer.open();
    try {
      const pending = client.request(device.peer, { code: Method.GET, options: uriPathOptions('/3/0/0') });
      const { message: request } = await device.next();
      device.send(emptyMessage('ACK', request.messageId), client.address().family === 'IPv4' ? { address: '127.0.0.1', port: client.address().port } : client.address());
      await sleep(250);
      assert.deepEqual(await device.drain(0), [], 'no retransmission after the empty ACK');
      const to = { address: '127.0.0.1', port: client.address().port };
      device.send({ type: 'CON', code: '2.05', messageId: 0x7777, token: request.token, options: [], payload: Buffer.from('Open Mobile Alliance') }, to);
      const response = await pending;
      assert.equal(response.payload.toString(), 'Open Mobile Alliance');
      const ack = await device.next();
      assert.equal(ack.message.type, 'ACK');
      assert.equal(ack.message.messageId, 0x7777);
      // A response nobody waits for is rejected.
      device.send({ type: 'CON', code: '2.05', messageId: 0x7778, token: Buffer.from('unknown'), options: [], payload: Buffer.from('?') }, to);
      assert.equal((await device.next()).message.type, 'RST');
    } finally {
      await device.close();
    }
  });
});

describe('Observe between two endpoints (RFC 7641)', () => {
  let server: Server;
  let client: CoapEndpoint;
  before(async () => {
    server = await startServer();
    client = new CoapEndpoint({ host: '127.0.0.1', transmission: { ackTimeout: 100, ackRandomFactor: 1, maxRetransmit: 2 } });
    await client.start();
  });
  after(async () => {
    await client.stop();
    await server.endpoint.stop();
  });

  it('registers, receives CON and NON notifications in order with whole bodies, and deregisters', async () => {
    const received: CoapMessage[] = [];
    const observation = await client.observe(server.at, { code: Method.GET, options: uriPathOptions('/obs') }, (n) => received.push(n));
    assert.equal(observation.active, true);
    assert.equal(observation.response.payload.toString(), 'v0');
    assert.equal(observe(observation.response), 1);
    const [observer] = server.endpoint.observers({ path: '/obs' });
    assert.ok(observer);
    await server.endpoint.notify(observer, { code: ResponseCode.Content, payload: 'v1' }, { confirmable: true });
    await server.endpoint.notify(observer, { code: ResponseCode.Content, payload: 'v2' });
    await server.endpoint.notify(observer, { code: ResponseCode.Content, payload: BIG });
    await until(() => received.length === 3, 'three notifications', 3000);
    assert.deepEqual(
      received.map((n) => observe(n)),
      [2, 3, 4],
    );
    assert.equal(received[0]!.payload.toString(), 'v1');
    assert.deepEqual(received[2]!.payload, BIG, 'the rest of a large notification is fetched with Block2');
    await observation.cancel();
    assert.equal(observation.active, false);
    assert.deepEqual(server.endpoint.observers({ path: '/obs' }), [], 'GET with Observe: 1 deregistered (RFC 7641 3.6)');
  });

  it('removes an observer that answers a notification with RST, or never acknowledges it', async () => {
    const device = await RawPeer.open();
    try {
      device.send(rawRequest({ messageId: 1, token: Buffer.from('obs1'), options: [option(OptionNumber.Observe, 0), ...uriPathOptions('/obs')] }), server.at);
      assert.equal(observe((await device.next()).message), 1);
      const [observer] = server.endpoint.observers({ peer: device.peer });
      assert.ok(observer);
      device.autoReply = (r) => emptyMessage('RST', r.message.messageId);
      await assert.rejects(server.endpoint.notify(observer, { code: ResponseCode.Content, payload: 'x' }), { code: 'RESET' });
      assert.deepEqual(server.endpoint.observers({ peer: device.peer }), []);
      await assert.rejects(server.endpoint.notify(observer, { code: ResponseCode.Content, payload: 'x' }), { code: 'NO_OBSERVER' });
    } finally {
      await device.close();
    }
  });

  it('drops notifications older than the newest (RFC 7641 3.4), acknowledges CON ones, and rejects after a reactive cancel', async () => {
    const device = await RawPeer.open();
    const to = { address: '127.0.0.1', port: client.address().port };
    try {
      const received: number[] = [];
      const registering = client.observe(device.peer, { code: Method.GET, options: uriPathOptions('/3303/0/5700') }, (n) => received.push(observe(n)!));
      const { message: registration } = await device.next();
      assert.equal(observe(registration), 0);
      const token = registration.token;
      device.send({ type: 'ACK', code: '2.05', messageId: registration.messageId, token, options: [option(OptionNumber.Observe, 10)], payload: Buffer.from('20') }, to);
      const observation = await registering;
      assert.equal(observation.active, true);
      const notify = (type: 'CON' | 'NON', messageId: number, seq: number) =>
        device.send({ type, code: '2.05', messageId, token, options: [option(OptionNumber.Observe, seq)], payload: Buffer.from(String(seq)) }, to);
      notify('NON', 100, 12);
      notify('NON', 101, 11);
      notify('CON', 102, 13);
      const ack = await device.next();
      assert.deepEqual([ack.message.type, ack.message.messageId], ['ACK', 102]);
      await until(() => received.length === 2, 'two fresh notifications', 1000);
      assert.deepEqual(received, [12, 13]);
      assert.ok(client.stats().staleNotifications >= 1);
      await observation.cancel({ proactive: false });
      notify('CON', 103, 14);
      const reset = await device.next();
      assert.deepEqual([reset.message.type, reset.message.messageId], ['RST', 103]);
      assert.deepEqual(received, [12, 13]);
    } finally {
      await device.close();
    }
  });
});

describe('CoapEndpoint abuse bounds', () => {
  it('logs a malformed datagram at debug level with its peer and reason, and counts it', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const server = await startServer({ logger });
    const raw = await RawPeer.open();
    try {
      raw.send(Buffer.from([0x40, 0x01, 0x12, 0x34, 0xff]), server.at);
      const { message } = await raw.next();
      assert.deepEqual([message.type, message.messageId], ['RST', 0x1234], 'a CON with a format error is rejected (RFC 7252 4.2)');
      const line = lines.find((l) => l.msg === 'malformed CoAP datagram dropped');
      assert.ok(line, JSON.stringify(lines));
      assert.equal(line.level, 20);
      assert.equal(line.reason, 'payload marker without payload');
      assert.equal(line.peer, `127.0.0.1:${raw.peer.port}`);
      assert.equal(server.endpoint.stats().malformed, 1);
    } finally {
      await raw.close();
      await server.endpoint.stop();
    }
  });

  it('answers 4.29 with Max-Age over the per-peer rate (RFC 8516)', async () => {
    const server = await startServer({ rateLimit: { rate: 1, burst: 3 } });
    const raw = await RawPeer.open();
    try {
      // The last ones ask for a later Block2 block: the refusal must still be 4.29, not a block-wise error.
      const block = { number: OptionNumber.Block2, value: encodeBlock({ num: 3, more: false, szx: 2 }) };
      for (let i = 0; i < 5; i++) raw.send(rawRequest({ messageId: 100 + i, options: [...uriPathOptions(i < 3 ? '/hello' : '/big'), ...(i < 3 ? [] : [block])] }), server.at);
      const codes: string[] = [];
      let limited: CoapMessage | undefined;
      for (let i = 0; i < 5; i++) {
        const { message } = await raw.next();
        codes.push(message.code);
        if (message.code === '4.29') limited = message;
      }
      assert.deepEqual(codes, ['2.05', '2.05', '2.05', '4.29', '4.29']);
      assert.ok(maxAge(limited!) >= 1);
      assert.equal(server.endpoint.stats().rateLimited, 2);
      const other = await RawPeer.open();
      other.send(rawRequest({ messageId: 1, options: uriPathOptions('/hello') }), server.at);
      assert.equal((await other.next()).message.code, '2.05', 'other peers are not affected');
      await other.close();
    } finally {
      await raw.close();
      await server.endpoint.stop();
    }
  });

  it('bounds Block1 reassembly per peer and in total, and forgets idle transfers', async () => {
    const server = await startServer({ block1: { maxEntriesPerOwner: 1, maxEntries: 2, lifetime: 300 } });
    const peers = await Promise.all([RawPeer.open(), RawPeer.open(), RawPeer.open()]);
    const [a, b, c] = peers;
    let mid = 1;
    const blockRequest = (peer: RawPeer, resource: string, num: number) => {
      peer.send(
        rawRequest({
          messageId: mid++,
          code: Method.POST,
          options: [...uriPathOptions(resource), { number: OptionNumber.Block1, value: encodeBlock({ num, more: true, szx: 2 }) }],
          payload: BIG.subarray(num * 64, num * 64 + 64),
        }),
        server.at,
      );
      return peer.next().then((r) => r.message.code);
    };
    try {
      assert.equal(await blockRequest(a, '/upload', 0), '2.31');
      assert.equal(await blockRequest(a, '/echo', 0), '2.31', "a second transfer of the same peer evicts its first");
      assert.equal(await blockRequest(a, '/upload', 1), '4.08');
      assert.equal(await blockRequest(b, '/upload', 0), '2.31');
      assert.equal(await blockRequest(c, '/upload', 0), '5.03', 'two transfers in total');
      assert.equal(server.endpoint.stats().block1Transfers, 2);
      await sleep(1300);
      assert.equal(server.endpoint.stats().block1Transfers, 0, 'idle transfers are swept');
      assert.equal(await blockRequest(b, '/upload', 1), '4.08');
      assert.equal(await blockRequest(c, '/upload', 0), '2.31');
    } finally {
      await Promise.all(peers.map((p) => p.close()));
      await server.endpoint.stop();
    }
  });
});
