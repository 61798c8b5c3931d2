/**
 * CoAP benchmark: CON GET requests answered per second by CoapEndpoint, and by a bare dgram + coap-packet
 * responder (parse, piggy-backed 2.05, send: the least a CoAP server can do) measured in the same run as the
 * reference. The load generator is its own process (a raw dgram client keeping a bounded window of requests
 * in flight, re-issuing any unanswered after 200 ms) so that server and client each get a core. Each figure is
 * the median of several rounds; rounds alternate between the two servers.
 *
 *   npm run bench:coap
 *   BENCH_DURATION=10 BENCH_ROUNDS=5 BENCH_WINDOW=64 npm run bench:coap
 */
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { cpus } from 'node:os';
import { generate, parse } from 'coap-packet';
import { CoapEndpoint, ResponseCode } from '../src/coap/index.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 64);
const PAYLOAD = Buffer.from('22.5 C');

/** The load generator, plain JavaScript run by `node -e`: prints the number of responses in the measured span. */
const LOAD = `
const dgram = require('node:dgram');
const [port, duration, windowSize] = process.argv.slice(1).map(Number);
const socket = dgram.createSocket('udp4');
// CON GET /temperature, 4-byte token (RFC 7252 Appendix A style); message ID patched per request.
const template = Buffer.from([0x44, 0x01, 0, 0, 0xde, 0xad, 0xbe, 0xef, 0xbb, ...Buffer.from('temperature')]);
const inFlight = new Map();
let mid = 0, answered = 0, measuring = false, stopped = false;
function fire() {
  if (stopped) return;
  mid = (mid + 1) & 0xffff;
  const datagram = Buffer.from(template);
  datagram.writeUInt16BE(mid, 2);
  inFlight.set(mid, Date.now());
  socket.send(datagram, port, '127.0.0.1');
}
socket.on('message', (msg) => {
  const id = msg.readUInt16BE(2);
  if (!inFlight.delete(id)) return;
  if (measuring) answered++;
  fire();
});
socket.bind(0, '127.0.0.1', () => {
  for (let i = 0; i < windowSize; i++) fire();
  // Lost datagrams (full socket buffers) would shrink the window for good: re-issue them.
  setInterval(() => {
    const now = Date.now();
    for (const [id, at] of inFlight) if (now - at > 200) { inFlight.delete(id); fire(); }
  }, 100).unref();
  setTimeout(() => { measuring = true; }, 1000);
  setTimeout(() => { stopped = true; process.stdout.write(String(answered)); socket.close(); }, 1000 + duration * 1000);
});
`;

interface Server {
  readonly port: number;
  close(): Promise<void>;
}

async function bareServer(): Promise<Server> {
  const socket = dgram.createSocket('udp4');
  socket.on('message', (msg, rinfo) => {
    try {
      const request = parse(msg);
      const response = generate({ code: '2.05', messageId: request.messageId, token: request.token, ack: true, payload: PAYLOAD });
      socket.send(response, rinfo.port, rinfo.address);
    } catch {
      // garbage: dropped
    }
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { port: socket.address().port, close: () => new Promise((resolve) => socket.close(() => resolve())) };
}

async function endpointServer(): Promise<Server> {
  // Rate limiting stays on (with a limit the load never reaches) so its cost is measured too.
  const endpoint = new CoapEndpoint({ host: '127.0.0.1', rateLimit: { rate: 1e9, burst: 1e9 } });
  endpoint.onRequest(() => ({ code: ResponseCode.Content, payload: PAYLOAD }));
  await endpoint.start();
  return { port: endpoint.address().port, close: () => endpoint.stop() };
}

async function load(port: number): Promise<number> {
  const child = spawn(process.execPath, ['-e', LOAD, String(port), String(DURATION), String(WINDOW)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`load generator exited with ${code}`);
  return Number(out) / DURATION;
}

async function measure(start: () => Promise<Server>): Promise<number> {
  const server = await start();
  try {
    return await load(server.port);
  } finally {
    await server.close();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const format = (rps: number) => `${Math.round(rps).toLocaleString('en-US')} req/s`;

async function main(): Promise<void> {
  console.log(`# IoT Bridge CoAP benchmark: ${cpus().length} cores, Node ${process.version}, ${ROUNDS} rounds of ${DURATION} s, window ${WINDOW}\n`);
  const bare: number[] = [];
  const ours: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    bare.push(await measure(bareServer));
    ours.push(await measure(endpointServer));
    console.log(`round ${round + 1}: bare ${format(bare.at(-1)!)}, CoapEndpoint ${format(ours.at(-1)!)}`);
  }
  const b = median(bare);
  const o = median(ours);
  console.log('\n| server | CON GET answered (median) | ratio to bare |');
  console.log('|---|---|---|');
  console.log(`| bare dgram + coap-packet | ${format(b)} | 1.00 |`);
  console.log(`| CoapEndpoint | ${format(o)} | ${(o / b).toFixed(2)} |`);
}

await main();
