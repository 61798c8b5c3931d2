/**
 * The load generator of bench/coap.ts, plain JavaScript in a process of its own so that the server under test
 * and the generator each get a core. Raw dgram CoAP clients on loopback: SOCKETS sockets, each keeping
 * IN_FLIGHT confirmable requests outstanding (a new one as soon as one is answered), for a warm-up second and
 * then `duration` seconds measured. Socket i sends to `paths[i % paths.length]`.
 *
 * As a CoAP client would: a request not acknowledged within `retransmitMs` is sent again, identical (same
 * message ID and token, so the server de-duplicates it), up to `maxRetransmit` times, then counted lost and
 * replaced; an empty ACK (separate response coming) stops the retransmissions, and the separate response,
 * matched by token, is acknowledged when confirmable.
 *
 *   node bench/coap-load.mjs '{"port":5683,"duration":5,"sockets":100,"inFlight":2,"method":"POST","paths":["/d/a/t"],"payload":"22.5"}'
 *
 * Writes one JSON line: responses in the measured span by kind (`ok`: 2.xx, `refused`: 4.29, `errors`: any
 * other code, `reset`: RST), `lost`, `retransmitted`, `separate` (answered after an empty ACK), per code,
 * the p50/p99 latency of the 2.xx ones (ms, first transmission to response), and `okTotal`, 2.xx answers over
 * the whole run, warm-up included.
 */
import { Buffer } from 'node:buffer';
import dgram from 'node:dgram';
import { performance } from 'node:perf_hooks';
import { clearInterval, setInterval, setTimeout } from 'node:timers';

const config = JSON.parse(process.argv[2] ?? '{}');
const { port, duration, sockets: socketCount = 1, inFlight = 64, method = 'GET', paths = ['/temperature'], payload = '', retransmitMs = 500, maxRetransmit = 4, warmup = 1 } = config;
const METHODS = { GET: 1, POST: 2, PUT: 3, DELETE: 4 };
const CON = 0;
const ACK = 2;
const RST = 3;
const TOO_MANY_REQUESTS = (4 << 5) | 29;

/** Uri-Path options (number 11), RFC 7252 3.1 encoding. */
function uriPath(path) {
  const parts = [];
  let previous = 0;
  for (const segment of path.split('/').filter(Boolean)) {
    const value = Buffer.from(segment);
    const delta = 11 - previous;
    previous = 11;
    const nibble = (n) => (n < 13 ? [n, []] : n < 269 ? [13, [n - 13]] : [14, [(n - 269) >> 8, (n - 269) & 0xff]]);
    const [d, dExt] = nibble(delta);
    const [l, lExt] = nibble(value.length);
    parts.push(Buffer.from([(d << 4) | l, ...dExt, ...lExt]), value);
  }
  return Buffer.concat(parts);
}

/** A CON request with a 4-byte token; message ID (bytes 2–3) and token (4–7) are written per request. */
function template(path) {
  const body = Buffer.from(payload);
  return Buffer.concat([Buffer.from([0x44, METHODS[method], 0, 0, 0, 0, 0, 0]), uriPath(path), body.length > 0 ? Buffer.concat([Buffer.from([0xff]), body]) : Buffer.alloc(0)]);
}

const counts = { ok: 0, refused: 0, errors: 0, reset: 0, lost: 0, retransmitted: 0, separate: 0, okTotal: 0 };
const codes = {};
const latencies = [];
let measuring = false;
let stopped = false;

const clients = Array.from({ length: socketCount }, (_, i) => ({
  socket: dgram.createSocket('udp4'),
  template: template(paths[i % paths.length]),
  mid: Math.floor(Math.random() * 0x10000),
  token: Math.floor(Math.random() * 0x100000000),
  byMid: new Map(),
  byToken: new Map(),
}));

function fire(client) {
  if (stopped) return;
  client.mid = (client.mid + 1) & 0xffff;
  client.token = (client.token + 1) >>> 0;
  const datagram = Buffer.from(client.template);
  datagram.writeUInt16BE(client.mid, 2);
  datagram.writeUInt32BE(client.token, 4);
  const now = performance.now();
  const request = { mid: client.mid, token: client.token, datagram, firstSent: now, lastSent: now, tries: 0, acked: false };
  client.byMid.set(request.mid, request);
  client.byToken.set(request.token, request);
  client.socket.send(datagram, port, '127.0.0.1');
}

function complete(client, request, code) {
  client.byMid.delete(request.mid);
  client.byToken.delete(request.token);
  const ok = code !== 'RST' && code >> 5 === 2;
  if (ok) counts.okTotal++;
  if (measuring) {
    const name = code === 'RST' ? 'RST' : `${code >> 5}.${String(code & 31).padStart(2, '0')}`;
    codes[name] = (codes[name] ?? 0) + 1;
    if (code === 'RST') counts.reset++;
    else if (ok) {
      counts.ok++;
      latencies.push(performance.now() - request.firstSent);
    } else if (code === TOO_MANY_REQUESTS) counts.refused++;
    else counts.errors++;
  }
  fire(client);
}

for (const client of clients) {
  client.socket.on('message', (message) => {
    if (message.length < 4) return;
    const type = (message[0] >> 4) & 3;
    const code = message[1];
    const mid = message.readUInt16BE(2);
    if (type === ACK || type === RST) {
      const request = client.byMid.get(mid);
      if (!request) return;
      if (type === RST) complete(client, request, 'RST');
      else if (code === 0) request.acked = true; // empty ACK: the response follows separately
      else complete(client, request, code);
      return;
    }
    // A separate response (CON or NON), matched by token; a CON one is acknowledged.
    if (type === CON) client.socket.send(Buffer.from([0x60, 0, message[2], message[3]]), port, '127.0.0.1');
    if ((message[0] & 0x0f) !== 4 || code >> 5 < 2) return;
    const request = client.byToken.get(message.readUInt32BE(4));
    if (!request) return;
    if (measuring) counts.separate++;
    complete(client, request, code);
  });
}

await Promise.all(clients.map((client) => new Promise((resolve) => client.socket.bind(0, '127.0.0.1', resolve))));
for (const client of clients) for (let i = 0; i < inFlight; i++) fire(client);

const sweeper = setInterval(() => {
  const now = performance.now();
  for (const client of clients) {
    for (const request of [...client.byMid.values()]) {
      if (request.acked) {
        // Acknowledged, waiting for its separate response: given up after 30 s.
        if (now - request.firstSent > 30_000) {
          client.byMid.delete(request.mid);
          client.byToken.delete(request.token);
          if (measuring) counts.lost++;
          fire(client);
        }
        continue;
      }
      if (now - request.lastSent < retransmitMs) continue;
      if (request.tries >= maxRetransmit) {
        client.byMid.delete(request.mid);
        client.byToken.delete(request.token);
        if (measuring) counts.lost++;
        fire(client);
        continue;
      }
      request.tries++;
      request.lastSent = now;
      if (measuring) counts.retransmitted++;
      client.socket.send(request.datagram, port, '127.0.0.1');
    }
  }
}, Math.max(10, Math.min(100, retransmitMs / 4)));

setTimeout(() => (measuring = true), warmup * 1000);
setTimeout(
  () => {
    measuring = false;
    stopped = true;
    clearInterval(sweeper);
    latencies.sort((a, b) => a - b);
    const at = (p) => (latencies.length === 0 ? null : latencies[Math.min(latencies.length - 1, Math.floor((latencies.length * p) / 100))]);
    process.stdout.write(`${JSON.stringify({ ...counts, codes, p50: at(50), p99: at(99), seconds: duration })}\n`);
    for (const client of clients) client.socket.close();
  },
  (warmup + duration) * 1000,
);
