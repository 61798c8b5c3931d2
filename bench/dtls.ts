/**
 * DTLS benchmark: PSK handshakes per second on the CoAPS port, full (cookie exchange, PSK key exchange, extended
 * master secret, TLS_PSK_WITH_AES_128_CCM_8) and resumed (abbreviated, from a session of an earlier connection),
 * and CoAP request round trips per second over DTLS against the same requests over plain CoAP, measured in the
 * same run: CON GET /d/<key>/bench to a plain-CoAP device (the service answers 2.05 and records a coap-request
 * event; no trigger). Clients are tools/dtls-test-client.ts (each its own UDP socket) and CoapEndpoints over it
 * or over plain UDP; service and clients share this process (SQLite), so the figures are what one core does
 * for both ends. Each figure is the median of several rounds.
 *
 *   npm run bench:dtls
 *   BENCH_HANDSHAKES=500 BENCH_WINDOW=16 BENCH_REQUESTS=5000 BENCH_ROUNDS=5 npm run bench:dtls
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { IotBridge } from '../src/app.js';
import { CoapEndpoint, uriPathOptions, type Peer } from '../src/coap/index.js';
import { loadConfig } from '../src/config.js';
import { DtlsTestClient, type DtlsResumableSession } from '../tools/dtls-test-client.js';

const HANDSHAKES = Number(process.env.BENCH_HANDSHAKES ?? 200);
/** Handshakes, or requests, in flight at once. The server allows 16 handshakes in progress per address by default. */
const WINDOW = Number(process.env.BENCH_WINDOW ?? 16);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
/** CoAP clients per transport; each serves one request at a time, and stays under the service's per-peer rate limit. */
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 64);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const KEY = Buffer.from('bench-dtls-psk-0123456789abcdef');
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Runs `count` tasks, WINDOW at once; `worker` is the index of the lane running it. Resolves with tasks per second. */
async function windowed(count: number, task: (i: number, worker: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(WINDOW, count) }, async (_, worker) => {
      while (next < count) await task(next++, worker);
    }),
  );
  return count / ((performance.now() - started) / 1000);
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-bench-dtls-'));
  const token = 'AT:bench-admin-token-000000000';
  const bridge = new IotBridge(
    loadConfig({}, { httpPort: 0, udpPort: 0, tcpPort: 0, coapPort: 0, coapsPort: 0, mqttPort: 0, httpHost: '127.0.0.1', dataDir, adminToken: token }),
    pino({ level: 'warn' }),
  );
  const started = await bridge.start();
  const endpoints: CoapEndpoint[] = [];
  try {
    const { domain } = bridge;
    const scope = await domain.accounts.scopeFor(await domain.tokens.authenticate(token));
    const service = await domain.services.create(scope, { name: 'bench-dtls', type: 'coap' });
    const secured = await domain.endpoints.create(scope, { key: 'bench-psk', serviceId: service.id });
    await domain.security.put(scope, secured.id, { mode: 'psk', identity: 'bench-psk', key: KEY.toString('hex') });
    // A secured endpoint is refused over plain CoAP: the plain-CoAP figure uses a twin without security.
    await domain.endpoints.create(scope, { key: 'bench-plain', serviceId: service.id });
    const coaps: Peer = { address: '127.0.0.1', port: started.ports.coaps! };
    const coap: Peer = { address: '127.0.0.1', port: started.ports.coap! };
    const options = { server: coaps, identity: 'bench-psk', key: KEY };

    let retransmissions = 0;
    const handshake = async (session?: DtlsResumableSession): Promise<DtlsTestClient> => {
      const client = await DtlsTestClient.connect({ ...options, ...(session && { session }) });
      retransmissions += client.stats.flightRetransmissions;
      if (client.stats.resumed !== (session !== undefined)) throw new Error(`expected a ${session ? 'resumed' : 'full'} handshake`);
      return client;
    };
    const fullRound = () =>
      windowed(HANDSHAKES, async () => {
        await (await handshake()).stop(); // close_notify: the server forgets the connection, not the session
      });
    const first = await handshake();
    const session = first.session!;
    await first.stop();
    const resumedRound = () =>
      windowed(HANDSHAKES, async () => {
        await (await handshake(session)).stop();
      });

    // CoAP round trips: CLIENTS endpoints per transport; lane w uses clients w, w + WINDOW, … in turn, one request each at a time.
    const over = async (transport: DtlsTestClient | undefined) => {
      const endpoint = new CoapEndpoint({ ...(transport ? { transport } : { host: '127.0.0.1', port: 0 }), rateLimit: false });
      await endpoint.start();
      endpoints.push(endpoint);
      return endpoint;
    };
    const dtlsClients: CoapEndpoint[] = [];
    const plainClients: CoapEndpoint[] = [];
    for (let i = 0; i < CLIENTS; i++) {
      dtlsClients.push(await over(new DtlsTestClient(options)));
      plainClients.push(await over(undefined));
    }
    const requestRound = (clients: CoapEndpoint[], peer: Peer, key: string) => {
      const turn = new Array<number>(WINDOW).fill(0);
      const lanes = Math.min(WINDOW, clients.length);
      return windowed(REQUESTS, async (_, worker) => {
        const lane = worker % lanes;
        const mine = Math.ceil((clients.length - lane) / lanes);
        const client = clients[lane + lanes * (turn[lane]!++ % mine)]!;
        const response = await client.request(peer, { code: '0.01', options: uriPathOptions(`/d/${key}/bench`) }, { timeout: 10_000 });
        if (response.code !== '2.05') throw new Error(`GET answered ${response.code}`);
      });
    };

    const full: number[] = [];
    const resumed: number[] = [];
    const overDtls: number[] = [];
    const plain: number[] = [];
    await fullRound(); // warm-up
    await resumedRound();
    await requestRound(dtlsClients, coaps, 'bench-psk');
    await requestRound(plainClients, coap, 'bench-plain');
    retransmissions = 0;
    for (let r = 0; r < ROUNDS; r++) {
      full.push(await fullRound());
      resumed.push(await resumedRound());
      overDtls.push(await requestRound(dtlsClients, coaps, 'bench-psk'));
      plain.push(await requestRound(plainClients, coap, 'bench-plain'));
    }
    const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
    console.log(`# IoT Bridge DTLS (CoAPS): ${cpus().length} cores, Node ${process.version}, SQLite, service and clients in one process, median of ${ROUNDS}\n`);
    console.log('| measure | rate | reference | ratio |');
    console.log('|---|---|---|---|');
    console.log(`| full PSK handshake (cookie, key exchange, EMS, CCM_8; ${HANDSHAKES} handshakes, ${WINDOW} in flight) | ${fmt(median(full))}/s | | |`);
    console.log(`| resumed PSK handshake (abbreviated; same load) | ${fmt(median(resumed))}/s | full: ${fmt(median(full))}/s | ${(median(resumed) / median(full)).toFixed(2)} |`);
    console.log(`| CoAP GET round trip over DTLS (${REQUESTS} requests, ${WINDOW} in flight, ${CLIENTS} clients) | ${fmt(median(overDtls))}/s | plain CoAP: ${fmt(median(plain))}/s | ${(median(overDtls) / median(plain)).toFixed(2)} |`);
    console.log(`\nHandshake flight retransmissions in the measured rounds: ${retransmissions}.`);
  } finally {
    for (const endpoint of endpoints) await endpoint.stop();
    await bridge.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
