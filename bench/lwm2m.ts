/**
 * LwM2M benchmark: registrations per second and read round-trips per second with N simulated devices
 * (tools/lwm2m-client.ts, each its own UDP socket, all in a process of their own: bench/lwm2m-devices.ts)
 * against the service in this process (SQLite). The
 * reference, measured in the same run, is the same CoAP exchange against a bare CoapEndpoint that answers
 * at once (2.01 to a Register, 2.05 with a TLV payload to a GET): what the transport alone costs, so the
 * ratio shows what registration (endpoint look-up, presence write, on-connect event) and device management
 * (codec, lwm2m-data event, last-known values) add. Bootstraps: simulated devices with no server configured
 * bootstrap with the service's default configuration (Discover, 2 Deletes, 2 Writes, Bootstrap-Read of /1,
 * Finish, an lwm2m-bootstrap event per step); the reference is a bare CoapEndpoint sending the same plan's
 * requests with nothing stored. Median of several rounds.
 *
 *   npm run bench:lwm2m                                   (compiled, as the service runs; `node --import tsx bench/lwm2m.ts` from source)
 *   BENCH_DEVICES=500 BENCH_READS=5000 BENCH_ROUNDS=5 npm run bench:lwm2m
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { IotBridge } from '../src/app.js';
import { CoapEndpoint, option, OptionNumber, uriPathOptions, type Peer } from '../src/coap/index.js';
import { loadConfig } from '../src/config.js';
import type { Endpoint } from '../src/domain/endpoints.js';
import { normalizeBootstrapConfig } from '../src/lwm2m/bootstrap/config.js';
import { bootstrapPlan } from '../src/lwm2m/bootstrap/plan.js';
import { windowed as windowedOf, type DevicesAnswer, type DevicesCommand, type DevicesStart } from './lwm2m-devices.js';

const DEVICES = Number(process.env.BENCH_DEVICES ?? 1000);
const READS = Number(process.env.BENCH_READS ?? 5000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Requests in flight at once (registrations, reads). */
const WINDOW = Number(process.env.BENCH_WINDOW ?? 32);
/** Devices bootstrapped per round. */
const BOOTSTRAPS = Number(process.env.BENCH_BOOTSTRAPS ?? 300);

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Runs `count` tasks with at most WINDOW at once; resolves with tasks per second. */
const windowed = (count: number, task: (i: number) => Promise<void>) => windowedOf(count, WINDOW, task);

/** The devices' process (bench/lwm2m-devices.ts): one command at a time, each answered once. */
class DevicesProcess {
  readonly #child: ChildProcess = fork(new URL(import.meta.url.endsWith('.js') ? './lwm2m-devices.js' : './lwm2m-devices.ts', import.meta.url), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });

  async #ask(command: DevicesCommand): Promise<DevicesAnswer> {
    this.#child.send(command);
    const [answer] = (await once(this.#child, 'message')) as [DevicesAnswer];
    if ('error' in answer) throw new Error(`devices: ${answer.error}`);
    return answer;
  }

  /** Binds the devices → their UDP ports. */
  async start(command: DevicesStart): Promise<number[]> {
    return ((await this.#ask(command)) as { ports: number[] }).ports;
  }

  /** A round of registrations or bootstraps → per second. */
  async rate(command: DevicesCommand): Promise<number> {
    return ((await this.#ask(command)) as { rate: number }).rate;
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode !== null || !this.#child.connected) return;
    const exited = once(this.#child, 'exit');
    this.#child.send({ cmd: 'stop' } satisfies DevicesCommand);
    await exited;
  }
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-bench-lwm2m-'));
  const token = 'AT:bench-admin-token-000000000';
  const bridge = new IotBridge(
    loadConfig({}, { httpPort: 0, udpPort: 0, tcpPort: 0, coapPort: 0, coapsPort: 0, mqttPort: 0, httpHost: '127.0.0.1', dataDir, adminToken: token }),
    pino({ level: 'warn' }),
  );
  const started = await bridge.start();
  const devices = new DevicesProcess();
  const bare = new CoapEndpoint({ host: '127.0.0.1', port: 0, rateLimit: false });
  try {
    const { domain } = bridge;
    const scope = await domain.accounts.scopeFor(await domain.tokens.authenticate(token));
    const service = await domain.services.create(scope, { name: 'bench', type: 'lwm2m' });
    const endpoints: Endpoint[] = [];
    for (let i = 0; i < DEVICES; i++) endpoints.push(await domain.endpoints.create(scope, { key: `bench-${i}`, serviceId: service.id }));

    // The reference: a CoAP server that answers at once, through the same client sockets.
    const tlv = Buffer.from([0xc1, 0x09, 0x5f]);
    bare.onRequest((request) => (request.code === '0.02' ? { code: '2.01', options: uriPathOptions('/rd/x').map((o) => ({ ...o, number: OptionNumber.LocationPath })) } : { code: '2.05', options: [option(OptionNumber.ContentFormat, 11542)], payload: tlv }));
    await bare.start();
    const barePeer: Peer = { address: '127.0.0.1', port: bare.address().port };
    const service_: Peer = { address: '127.0.0.1', port: started.ports.coap! };

    // The devices: in a process of their own (bench/lwm2m-devices.ts), as a fleet is not inside its server.
    const ports = await devices.start({ cmd: 'start', server: service_, devices: DEVICES, keyPrefix: 'bench-', bootstraps: BOOTSTRAPS, bootstrapKeyPrefix: 'bench-bs-' });
    const registerRound = () => devices.rate({ cmd: 'register', window: WINDOW });
    const referenceRegisterRound = () => devices.rate({ cmd: 'register', window: WINDOW, reference: barePeer });

    const management = bridge.devices.lwm2m!;
    const readRound = () =>
      windowed(READS, async (i) => {
        const result = await management.perform(endpoints[i % DEVICES]!, { operation: 'read', path: '/3/0/9', format: 'tlv', timeoutMs: 10_000 });
        if (result.values?.[0]?.value !== 95) throw new Error('unexpected read result');
      });
    // Reference read: the bare endpoint GETs from the devices directly (same socket path, no service).
    const readReference = () =>
      windowed(READS, async (i) => {
        const response = await bare.request({ address: '127.0.0.1', port: ports[i % DEVICES]! }, { code: '0.01', options: [...uriPathOptions('/3/0/9'), option(OptionNumber.Accept, 11542)] });
        if (response.code !== '2.05') throw new Error('reference read failed');
      });

    // Bootstraps: the service's default configuration, devices with no server configured.
    const bootstrapConfig = { servers: [{ uri: `coap://127.0.0.1:${started.ports.coap}`, shortServerId: 1, securityMode: 'nosec' as const }] };
    const bsService = await domain.services.create(scope, { name: 'bench-bootstrap', type: 'lwm2m', options: { bootstrap: bootstrapConfig } });
    for (let i = 0; i < BOOTSTRAPS; i++) await domain.endpoints.create(scope, { key: `bench-bs-${i}`, serviceId: bsService.id });
    // The reference Bootstrap-Server: answers 2.04, then sends the same plan (Discover, Deletes, Writes, Read, Finish).
    const plan = bootstrapPlan(normalizeBootstrapConfig(bootstrapConfig));
    const bareBs = new CoapEndpoint({ host: '127.0.0.1', port: 0, rateLimit: false });
    bareBs.onRequest((_request, peer) => {
      setImmediate(() => void bareSession(peer));
      return { code: '2.04' };
    });
    const bareSession = async (peer: Peer) => {
      await bareBs.request(peer, { code: '0.01', options: [option(OptionNumber.Accept, 40)] });
      for (const step of plan) {
        if (step.operation === 'finish') await bareBs.request(peer, { code: '0.01', options: [...uriPathOptions('/1'), option(OptionNumber.Accept, 11542)] });
        const request =
          step.operation === 'write'
            ? { code: '0.03' as const, options: [...uriPathOptions(step.path), option(OptionNumber.ContentFormat, step.contentFormat)], payload: Buffer.from(step.payload) }
            : { code: step.operation === 'delete' ? ('0.04' as const) : ('0.02' as const), options: uriPathOptions(step.path) };
        await bareBs.request(peer, request);
      }
    };
    await bareBs.start();
    const bareBsPeer: Peer = { address: '127.0.0.1', port: bareBs.address().port };
    const bootstrapRound = (peer: Peer) => () => devices.rate({ cmd: 'bootstrap', window: WINDOW, peer });
    const bootstraps: number[] = [];
    const referenceBootstraps: number[] = [];

    const registrations: number[] = [];
    const referenceRegistrations: number[] = [];
    const reads: number[] = [];
    const referenceReads: number[] = [];
    await registerRound(); // warm-up
    await readRound();
    await bootstrapRound(service_)();
    for (let r = 0; r < ROUNDS; r++) {
      referenceRegistrations.push(await referenceRegisterRound());
      registrations.push(await registerRound());
      referenceReads.push(await readReference());
      reads.push(await readRound());
      referenceBootstraps.push(await bootstrapRound(bareBsPeer)());
      bootstraps.push(await bootstrapRound(service_)());
    }
    await bareBs.stop();
    const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
    console.log(`# IoT Bridge LwM2M: ${cpus().length} cores, Node ${process.version}, SQLite, ${DEVICES} simulated devices in a process of their own, ${WINDOW} requests in flight, median of ${ROUNDS}\n`);
    console.log('| exchange | IoT Bridge | bare CoAP endpoint (reference) | ratio |');
    console.log('|---|---|---|---|');
    console.log(`| Register (re-registration of known devices) | ${fmt(median(registrations))}/s | ${fmt(median(referenceRegistrations))}/s | ${(median(registrations) / median(referenceRegistrations)).toFixed(2)} |`);
    console.log(`| Read /3/0/9 (TLV) round trip | ${fmt(median(reads))}/s | ${fmt(median(referenceReads))}/s | ${(median(reads) / median(referenceReads)).toFixed(2)} |`);
    console.log(`| Bootstrap, Request to Finish (${BOOTSTRAPS} devices, 7 requests each) | ${fmt(median(bootstraps))}/s | ${fmt(median(referenceBootstraps))}/s | ${(median(bootstraps) / median(referenceBootstraps)).toFixed(2)} |`);
  } finally {
    await devices.stop();
    await bare.stop();
    await bridge.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
