/**
 * FOTA campaign benchmark: N simulated LwM2M devices (tools/lwm2m-client.ts with the Firmware Update object, each
 * its own UDP socket) updated by one campaign (`POST /fota/jobs` through the domain) in push mode (package written
 * block-wise to /5/0/0) and pull mode (the device fetches a CoAP download link block-wise), at a given concurrency,
 * against the service in this process (SQLite). Devices per minute from the job's creation to its last
 * `lwm2m-fota-complete`, and the process's peak RSS and heap during the campaign.
 *
 * The reference, measured in the same run on a second set of N simulated devices: a bare FOTA driver on the
 * project's CoapEndpoint acting as the devices' LwM2M server, doing only the exchanges a push update needs (Write
 * /5/0/0 block-wise, Execute /5/0/2, wait for the Register after the reboot) with nothing stored, observed or
 * emitted: what the protocol alone costs. Median of several rounds, alternating.
 *
 *   npm run bench:fota
 *   BENCH_DEVICES=1000 BENCH_CONCURRENCY=100 BENCH_PACKAGE_BYTES=16384 BENCH_ROUNDS=3 npm run bench:fota
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import pino from 'pino';
import { IotBridge } from '../src/app.js';
import { CoapEndpoint, option, OptionNumber, uriPath, uriPathOptions, uriQuery, type Peer } from '../src/coap/index.js';
import { loadConfig } from '../src/config.js';
import { SimulatedClient } from '../tools/lwm2m-client.js';
import { firmwarePackage } from '../tools/lwm2m-firmware.js';

const DEVICES = Number(process.env.BENCH_DEVICES ?? 1000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 100);
const PACKAGE_BYTES = Number(process.env.BENCH_PACKAGE_BYTES ?? 16_384);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

/** Samples the process's memory every 100 ms while `work` runs: its peak RSS and heap. */
async function withPeakMemory<T>(work: () => Promise<T>): Promise<{ result: T; rss: number; heap: number }> {
  let rss = 0;
  let heap = 0;
  const sample = () => {
    const usage = process.memoryUsage();
    rss = Math.max(rss, usage.rss);
    heap = Math.max(heap, usage.heapUsed);
  };
  const timer = setInterval(sample, 100);
  try {
    const result = await work();
    sample();
    return { result, rss, heap };
  } finally {
    clearInterval(timer);
  }
}

/** The reference: an LwM2M server that takes Registers and pushes a package to each device, nothing else. */
class BareFotaServer {
  readonly coap = new CoapEndpoint({ host: '127.0.0.1', port: 0, rateLimit: false, amplificationFactor: false });
  readonly #waiting = new Map<string, () => void>();
  readonly #peers = new Map<string, Peer>();

  constructor() {
    this.coap.onRequest((request, peer) => {
      if (request.code === '0.02' && uriPath(request) === '/rd') {
        const ep = uriQuery(request).find((q) => q.startsWith('ep='))?.slice(3) ?? '';
        this.#peers.set(ep, peer);
        const waiter = this.#waiting.get(ep);
        this.#waiting.delete(ep);
        setImmediate(() => waiter?.());
        return { code: '2.01', options: [option(OptionNumber.LocationPath, 'rd'), option(OptionNumber.LocationPath, ep)] };
      }
      return { code: '2.04' };
    });
  }

  get peer(): Peer {
    return { address: '127.0.0.1', port: this.coap.address().port };
  }

  /** Write /5/0/0 block-wise, Execute /5/0/2, wait for the device's Register. */
  async update(ep: string, image: Buffer): Promise<void> {
    const device = this.#peers.get(ep)!;
    const written = await this.coap.request(device, { code: '0.03', options: [...uriPathOptions('/5/0/0'), option(OptionNumber.ContentFormat, 42)], payload: image }, { timeout: 30_000, maxMessageSize: 1024 + 128 });
    if (written.code !== '2.04') throw new Error(`write ${ep}: ${written.code}`);
    const back = new Promise<void>((resolve) => this.#waiting.set(ep, resolve));
    const executed = await this.coap.request(device, { code: '0.02', options: uriPathOptions('/5/0/2') }, { timeout: 30_000 });
    if (executed.code !== '2.04') throw new Error(`execute ${ep}: ${executed.code}`);
    await back;
  }
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-bench-fota-'));
  const token = 'AT:bench-admin-token-000000000';
  const bridge = new IotBridge(
    loadConfig({}, { httpPort: 0, udpPort: 0, tcpPort: 0, coapPort: 0, coapsPort: -1, mqttPort: 0, httpHost: '127.0.0.1', dataDir, adminToken: token, publicHost: '127.0.0.1' }),
    pino({ level: process.env.BENCH_LOG ?? 'warn' }),
  );
  const started = await bridge.start();
  const bare = new BareFotaServer();
  const clients: SimulatedClient[] = [];
  try {
    const { domain } = bridge;
    const fota = bridge.devices.fota!;
    const scope = await domain.accounts.scopeFor(await domain.tokens.authenticate(token));
    const service = await domain.services.create(scope, { name: 'bench', type: 'lwm2m' });
    for (let i = 0; i < DEVICES; i++) await domain.endpoints.create(scope, { key: `bench-${i}`, serviceId: service.id });
    const image = firmwarePackage(PACKAGE_BYTES, { version: '2.0.0' });
    await domain.files.put(scope.accountId, { name: 'bench.bin' }, Readable.from([image]), { maxBytes: PACKAGE_BYTES });
    await bare.coap.start();

    const firmware = { version: '1.0.0', updateMs: 50, delivery: 2 as const, protocols: [0] };
    const ours: SimulatedClient[] = [];
    const theirs: SimulatedClient[] = [];
    for (let i = 0; i < DEVICES; i++) {
      const mine = new SimulatedClient({ server: { address: '127.0.0.1', port: started.ports.coap! }, endpointName: `bench-${i}`, lifetime: 3600, firmware });
      const reference = new SimulatedClient({ server: bare.peer, endpointName: `bare-${i}`, lifetime: 3600, firmware });
      await mine.start();
      await reference.start();
      ours.push(mine);
      theirs.push(reference);
      clients.push(mine, reference);
    }
    for (let i = 0; i < DEVICES; i += 50) await Promise.all([...ours.slice(i, i + 50), ...theirs.slice(i, i + 50)].map((c) => c.register()));

    // What the process holds before any campaign (service, 2N registered simulated devices): the campaigns' cost is above it.
    const baseline = process.memoryUsage();
    const campaign = async (mode: 'push' | 'pull'): Promise<number> => {
      const begun = performance.now();
      const job = await fota.create(scope, { file: 'bench.bin', mode, concurrency: CONCURRENCY, timeout: 120 }, { keyPrefix: 'bench-' });
      for (;;) {
        const { counts, state } = await fota.job(scope, job.id);
        if (state !== 'running') {
          if (counts.success !== DEVICES) {
            const reasons = new Map<string, number>();
            for (let offset = 0; offset < DEVICES; offset += 500) {
              for (const device of (await fota.devices(scope, job.id, { offset, limit: 500 })).items) {
                if (device.outcome !== 'success') reasons.set(`${device.failedStep}: ${device.reason}`, (reasons.get(`${device.failedStep}: ${device.reason}`) ?? 0) + 1);
              }
            }
            throw new Error(`${mode} campaign: ${JSON.stringify(counts)} ${JSON.stringify([...reasons])}`);
          }
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return DEVICES / ((performance.now() - begun) / 60_000);
    };
    const reference = async (): Promise<number> => {
      const begun = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(CONCURRENCY, DEVICES) }, async () => {
          while (next < DEVICES) await bare.update(`bare-${next++}`, image);
        }),
      );
      return DEVICES / ((performance.now() - begun) / 60_000);
    };

    const push: number[] = [];
    const pull: number[] = [];
    const bareRates: number[] = [];
    let peak = { rss: 0, heap: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const pushed = await withPeakMemory(() => campaign('push'));
      const pulled = await withPeakMemory(() => campaign('pull'));
      push.push(pushed.result);
      pull.push(pulled.result);
      bareRates.push(await reference());
      peak = { rss: Math.max(peak.rss, pushed.rss, pulled.rss), heap: Math.max(peak.heap, pushed.heap, pulled.heap) };
      console.error(`round ${round + 1}: push ${push.at(-1)!.toFixed(0)}/min, pull ${pull.at(-1)!.toFixed(0)}/min, bare push ${bareRates.at(-1)!.toFixed(0)}/min`);
    }
    const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
    console.log(`# IoT Bridge FOTA: ${cpus().length} cores, Node ${process.version}, SQLite, ${DEVICES} simulated devices, ${(PACKAGE_BYTES / 1024).toFixed(0)} KiB package, concurrency ${CONCURRENCY}, median of ${ROUNDS}\n`);
    console.log('| campaign | IoT Bridge | bare push driver (reference) | ratio |');
    console.log('|---|---|---|---|');
    console.log(`| push (Write /5/0/0 block-wise, Execute, re-Register, verify) | ${fmt(median(push))} devices/min | ${fmt(median(bareRates))} devices/min | ${(median(push) / median(bareRates)).toFixed(2)} |`);
    console.log(`| pull over CoAP (download link, Block2) | ${fmt(median(pull))} devices/min | — | ${(median(pull) / median(bareRates)).toFixed(2)} of bare push |`);
    console.log(
      `\nMemory (service and ${DEVICES * 2} simulated devices in one process): before the campaigns RSS ${mib(baseline.rss)}, heap ${mib(baseline.heapUsed)}; ` +
        `peak during them RSS ${mib(peak.rss)} (+${mib(peak.rss - baseline.rss)}), heap ${mib(peak.heap)} (+${mib(peak.heap - baseline.heapUsed)}).`,
    );
  } finally {
    for (const client of clients) await client.stop().catch(() => undefined);
    await bare.coap.stop();
    await bridge.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
