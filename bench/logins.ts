/**
 * Log-in storm benchmark (issue "device log-ins at fleet scale"). What a fleet operator lives through after
 * any outage: every device reconnects at once.
 *
 *   1. The compiled service (`node dist/src/cli.js serve`, SQLite) in a process of its own. N devices (default
 *      10,000) are provisioned through the API with generated secrets: `POST /endpoints/bulk`, 100 per request,
 *      20 requests at once; then `POST /endpoints` with credentials one by one (20 at once) for a smaller set,
 *      and a set with passwords people chose (PBKDF2), also in bulk.
 *   2. The service is killed with SIGKILL and started again on the same data; once it listens, all N devices
 *      connect at once (MQTT 3.1.1 CONNECT written by hand, so the client costs little), from several loopback
 *      source addresses (127.0.0.2, 127.0.0.3, …). A device refused as busy (CONNACK 3) or cut off tries again
 *      after 1–2 s, as devices do. Measured: log-ins/s until all are in, busy answers, other refusals, the time
 *      until the last one is in. Then the same for the devices with chosen passwords, after another kill -9.
 *   3. The reference, in the same run: Mosquitto 2 (/usr/sbin/mosquitto, its own process and port) with a
 *      password file of the same N users (`mosquitto_passwd -U`), killed with SIGKILL, started again, and the
 *      same storm.
 *
 *   npm run bench:logins
 *   BENCH_LOGINS_DEVICES=2000 BENCH_LOGINS_CHOSEN=500 npm run bench:logins
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuSecondsOf, serviceNodeArgs } from './reference/processes.js';
import { rawConnect } from './reference/mqtt-connect.js';

const DEVICES = Number(process.env.BENCH_LOGINS_DEVICES ?? 10_000);
/** Devices whose passwords a person chose (PBKDF2): their own storm. */
const CHOSEN = Number(process.env.BENCH_LOGINS_CHOSEN ?? 2_000);
/** Devices created one request each (`POST /endpoints` with credentials). */
const SINGLE = Number(process.env.BENCH_LOGINS_SINGLE ?? 2_000);
const SOURCES = Number(process.env.BENCH_LOGINS_SOURCES ?? 10);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const BULK_SIZE = 100;
const CONCURRENT_REQUESTS = 20;
/** A storm that has not let every device in by then is reported as such. */
const STORM_LIMIT_MS = Number(process.env.BENCH_LOGINS_LIMIT_MS ?? 300_000);
/** A CONNECT unanswered for this long is given up and tried again, as a device's connect timeout would. */
const CONNACK_TIMEOUT_MS = 10_000;
const MOSQUITTO = process.env.BENCH_MOSQUITTO ?? '/usr/sbin/mosquitto';
const ADMIN_TOKEN = `AT:${randomBytes(18).toString('base64url')}`;

/** The Node flags `npm start` gives the service (package.json), so that it runs here as it does there. */
const START_FLAGS: string[] = (() => {
  const { scripts } = JSON.parse(readFileSync(path.resolve('package.json'), 'utf8')) as { scripts: Record<string, string> };
  return /\bnode ((?:--\S+ )*)dist\/src\/cli\.js/.exec(scripts.start ?? '')?.[1]?.trim().split(' ').filter(Boolean) ?? [];
})();

interface Device {
  readonly key: string;
  readonly password: string;
}

/** What `POST /endpoints/bulk` answers, as far as the benchmark reads it. */
interface BulkAnswer {
  readonly failed: number;
  readonly items: readonly { status: number; endpoint: { key: string; credentials: { password?: string } } }[];
}

interface StormResult {
  readonly devices: number;
  readonly seconds: number;
  readonly allIn: boolean;
  readonly attempts: number;
  readonly busy: number;
  readonly refused: number;
  readonly errors: number;
  readonly timeouts: number;
  /** Seconds after the storm began by which half, and 99 %, of the devices were in. */
  readonly p50: number;
  readonly p99: number;
  /** CPU the server (all its threads) and this benchmark's devices used per device that got in. */
  readonly serverCpuMsPerLogin: number | undefined;
  readonly clientCpuMsPerLogin: number;
}

/**
 * Waits until the process is idle (under 5 % of a core over half a second, at most 30 s): the devices'
 * disconnections are handled before the next kill -9, so that no round starts with the last one's backlog.
 */
async function quiesce(pid: number | undefined): Promise<void> {
  const deadline = Date.now() + 30_000;
  let before = cpuSecondsOf(pid);
  while (before !== undefined && Date.now() < deadline) {
    await sleep(500);
    const now = cpuSecondsOf(pid);
    if (now === undefined || now - before < 0.025) return;
    before = now;
  }
}

const sourceAddress = (i: number) => `127.0.0.${2 + (i % SOURCES)}`;

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function waitForPort(port: number, child: ChildProcess, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode}) before it listened`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ port, host: '127.0.0.1' }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await sleep(50);
  }
  throw new Error(`${what} did not listen on ${port} within 60 s`);
}

/** One CONNECT → the CONNACK return code, or what went wrong. The socket stays open when the device got in. */
async function attempt(device: Device, clientId: string, port: number, source: string, open: net.Socket[]): Promise<number | 'error' | 'timeout'> {
  const { code, socket } = await rawConnect({ port, source, clientId, username: device.key, password: device.password, timeoutMs: CONNACK_TIMEOUT_MS });
  if (socket) open.push(socket);
  return code;
}

/** Every device connects at once; each one that is not let in tries again after 1–2 s, until all are in. */
async function storm(devices: readonly Device[], port: number, label: string, serverPid: number | undefined): Promise<{ result: StormResult; open: net.Socket[] }> {
  const serverCpuBefore = cpuSecondsOf(serverPid);
  const clientCpuBefore = process.cpuUsage();
  const open: net.Socket[] = [];
  const counts = { attempts: 0, busy: 0, refused: 0, errors: 0, timeouts: 0 };
  const started = performance.now();
  const deadline = started + STORM_LIMIT_MS;
  const inAt: number[] = [];
  const device = async (i: number): Promise<void> => {
    const clientId = `${label}-${i}`;
    while (performance.now() < deadline) {
      counts.attempts++;
      const outcome = await attempt(devices[i]!, clientId, port, sourceAddress(i), open);
      if (outcome === 0) {
        inAt.push((performance.now() - started) / 1000);
        return;
      }
      if (outcome === 3) counts.busy++;
      else if (outcome === 'error') counts.errors++;
      else if (outcome === 'timeout') counts.timeouts++;
      else counts.refused++;
      await sleep(1000 + Math.random() * 1000);
    }
  };
  await Promise.all(devices.map((_, i) => device(i)));
  const at = (share: number) => inAt[Math.min(inAt.length - 1, Math.floor(share * inAt.length))] ?? 0;
  const serverCpuAfter = cpuSecondsOf(serverPid);
  const clientCpu = process.cpuUsage(clientCpuBefore);
  const result = {
    devices: devices.length,
    seconds: inAt.at(-1) ?? 0,
    allIn: inAt.length === devices.length,
    p50: at(0.5),
    p99: at(0.99),
    serverCpuMsPerLogin: serverCpuBefore === undefined || serverCpuAfter === undefined ? undefined : ((serverCpuAfter - serverCpuBefore) * 1000) / devices.length,
    clientCpuMsPerLogin: (clientCpu.user + clientCpu.system) / 1000 / devices.length,
    ...counts,
  };
  return { result, open };
}

function closeAll(sockets: net.Socket[]): void {
  for (const socket of sockets) socket.destroy();
  sockets.length = 0;
}

/** The service, compiled, as `npm start` runs it. */
class BridgeProcess {
  child: ChildProcess | undefined;
  constructor(
    readonly dataDir: string,
    readonly httpPort: number,
    readonly mqttPort: number,
  ) {}

  async start(): Promise<number> {
    const compiled = import.meta.url.endsWith('.js');
    const cli = new URL(compiled ? '../src/cli.js' : '../src/cli.ts', import.meta.url).pathname;
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('IOTBRIDGE_')));
    const startedAt = performance.now();
    const nodeArgs = [...START_FLAGS, ...serviceNodeArgs()];
    this.child = spawn(process.execPath, [...(compiled ? [] : ['--import', 'tsx']), ...nodeArgs, cli, 'serve'], {
      env: {
        ...inherited,
        IOTBRIDGE_DATA_DIR: this.dataDir,
        IOTBRIDGE_HTTP_HOST: '127.0.0.1',
        IOTBRIDGE_HTTP_PORT: String(this.httpPort),
        IOTBRIDGE_MQTT_HOST: '127.0.0.1',
        IOTBRIDGE_MQTT_PORT: String(this.mqttPort),
        IOTBRIDGE_COAP_HOST: '127.0.0.1',
        IOTBRIDGE_COAP_PORT: '0',
        IOTBRIDGE_COAPS_PORT: '0',
        IOTBRIDGE_UDP_PORT: '0',
        IOTBRIDGE_TCP_PORT: '0',
        IOTBRIDGE_ADMIN_TOKEN: ADMIN_TOKEN,
        IOTBRIDGE_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    await waitForPort(this.mqttPort, this.child, 'the service');
    await waitForPort(this.httpPort, this.child, 'the service');
    return (performance.now() - startedAt) / 1000;
  }

  /** SIGKILL by default; SIGTERM stops the service as an operator would. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  }

  async api<T = unknown>(method: string, url: string, token: string, body?: unknown): Promise<T> {
    const response = await fetch(`http://127.0.0.1:${this.httpPort}${url}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${text}`);
    return (text === '' ? {} : JSON.parse(text)) as T;
  }
}

/** Mosquitto 2 with a password file, on a port of its own. */
class MosquittoProcess {
  child: ChildProcess | undefined;
  constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  async prepare(devices: readonly Device[]): Promise<number> {
    const passwords = path.join(this.dir, 'passwd');
    await writeFile(passwords, devices.map((device) => `${device.key}:${device.password}\n`).join(''), { mode: 0o644 });
    const startedAt = performance.now();
    const hashed = spawnSync('mosquitto_passwd', ['-U', passwords], { stdio: 'inherit' });
    if (hashed.status !== 0) throw new Error('mosquitto_passwd -U failed');
    const seconds = (performance.now() - startedAt) / 1000;
    await writeFile(
      path.join(this.dir, 'mosquitto.conf'),
      [`listener ${this.port} 127.0.0.1`, 'allow_anonymous false', `password_file ${passwords}`, 'persistence false', 'log_dest none', 'max_connections -1', ''].join('\n'),
    );
    return seconds;
  }

  async start(): Promise<void> {
    // Started as root, Mosquitto runs as the user mosquitto: it must be able to read its files.
    await chmod(this.dir, 0o755);
    this.child = spawn(MOSQUITTO, ['-c', path.join(this.dir, 'mosquitto.conf')], { stdio: ['ignore', 'ignore', 'inherit'] });
    await waitForPort(this.port, this.child, 'Mosquitto');
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}

async function inParallel(count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, async () => {
    while (next < count) await task(next++);
  }));
}

/** Provisions `count` devices with `credentials(i)` in bulk requests → the devices and the rate. */
async function provisionBulk(bridge: BridgeProcess, token: string, serviceId: string, prefix: string, count: number, credentials: (i: number) => { password: string } | { generate: true }): Promise<{ devices: Device[]; perSecond: number }> {
  const devices: Device[] = [];
  const started = performance.now();
  await inParallel(Math.ceil(count / BULK_SIZE), CONCURRENT_REQUESTS, async (batch) => {
    const first = batch * BULK_SIZE;
    const items = Array.from({ length: Math.min(BULK_SIZE, count - first) }, (_, j) => ({ key: `${prefix}-${first + j}`, serviceId, credentials: credentials(first + j) }));
    const answer = await bridge.api<BulkAnswer>('POST', '/endpoints/bulk', token, { items });
    if (answer.failed !== 0) throw new Error(`bulk: ${JSON.stringify(answer.items.find((item) => item.status !== 201))}`);
    for (const [j, item] of answer.items.entries()) {
      const given = items[j]!.credentials;
      devices[first + j] = { key: item.endpoint.key, password: 'password' in given ? given.password : item.endpoint.credentials.password! };
    }
  });
  return { devices, perSecond: count / ((performance.now() - started) / 1000) };
}

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/** Each figure the median over the rounds; the counts of refusals and errors summed, and "all in" only if every round was. */
function medianOf(rounds: readonly StormResult[]): StormResult {
  const of = (pick: (r: StormResult) => number) => median(rounds.map(pick));
  const sum = (pick: (r: StormResult) => number) => rounds.reduce((total, r) => total + pick(r), 0);
  const cpu = rounds.map((r) => r.serverCpuMsPerLogin).filter((v): v is number => v !== undefined);
  return {
    devices: rounds[0]?.devices ?? 0,
    seconds: of((r) => r.seconds),
    allIn: rounds.every((r) => r.allIn),
    attempts: sum((r) => r.attempts),
    busy: sum((r) => r.busy),
    refused: sum((r) => r.refused),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
    p50: of((r) => r.p50),
    p99: of((r) => r.p99),
    serverCpuMsPerLogin: cpu.length === rounds.length ? median(cpu) : undefined,
    clientCpuMsPerLogin: of((r) => r.clientCpuMsPerLogin),
  };
}

const rate = (result: StormResult) => Math.round(result.devices / Math.max(result.seconds, 0.001));
const row = (name: string, result: StormResult) =>
  `| ${name} | ${result.devices.toLocaleString('en')} | ${rate(result).toLocaleString('en')}/s | ${result.p50.toFixed(1)} s | ${result.p99.toFixed(1)} s | ${result.seconds.toFixed(1)} s | ${result.allIn ? 'all' : 'NOT ALL'} | ${result.busy} | ${result.refused} | ${result.errors + result.timeouts} | ${result.serverCpuMsPerLogin?.toFixed(2) ?? '–'} ms | ${result.clientCpuMsPerLogin.toFixed(2)} ms |`;

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'iotbridge-bench-logins-'));
  const bridge = new BridgeProcess(path.join(dir, 'data'), await freePort(), await freePort());
  const mosquitto = new MosquittoProcess(dir, await freePort());
  try {
    await bridge.start();
    const { accountId } = await bridge.api<{ accountId: string }>('POST', '/accounts', ADMIN_TOKEN, { name: 'bench-logins' });
    const { token } = await bridge.api<{ token: string }>('POST', '/tokens', `${ADMIN_TOKEN}:${accountId}`, { name: 'bench' });
    const { id: serviceId } = await bridge.api<{ id: string }>('POST', '/services', token, { name: 'fleet', type: 'mqtt' });

    console.log(`provisioning ${DEVICES} devices with generated secrets (bulk, ${BULK_SIZE} per request, ${CONCURRENT_REQUESTS} at once)…`);
    const generated = await provisionBulk(bridge, token, serviceId, 'gen', DEVICES, () => ({ generate: true }));
    console.log(`provisioning ${CHOSEN} devices with chosen passwords (bulk)…`);
    const chosen = await provisionBulk(bridge, token, serviceId, 'chosen', CHOSEN, (i) => ({ password: `chosen-password-${i}` }));
    console.log(`provisioning ${SINGLE} devices one request each (POST /endpoints with credentials, ${CONCURRENT_REQUESTS} at once)…`);
    const singleStarted = performance.now();
    await inParallel(SINGLE, CONCURRENT_REQUESTS, async (i) => {
      await bridge.api('POST', '/endpoints', token, { key: `single-${i}`, serviceId, credentials: { generate: true } });
    });
    const singlePerSecond = SINGLE / ((performance.now() - singleStarted) / 1000);

    const passwdSeconds = await mosquitto.prepare(generated.devices);
    await mosquitto.start();
    await quiesce(bridge.child?.pid);
    await bridge.kill();
    // Rounds alternate: each is kill -9, start again, every device at once; IoT Bridge first in odd rounds.
    const bridgeRounds: StormResult[] = [];
    const referenceRounds: StormResult[] = [];
    const restarts: number[] = [];
    const bridgeRound = async () => {
      await bridge.kill();
      restarts.push(await bridge.start());
      const { result, open } = await storm(generated.devices, bridge.mqttPort, 'gen', bridge.child?.pid);
      closeAll(open);
      bridgeRounds.push(result);
      console.log(row('IoT Bridge, generated secrets', result));
      await quiesce(bridge.child?.pid);
      await bridge.kill();
    };
    const referenceRound = async () => {
      await mosquitto.kill();
      await mosquitto.start();
      const { result, open } = await storm(generated.devices, mosquitto.port, 'mosq', mosquitto.child?.pid);
      closeAll(open);
      referenceRounds.push(result);
      console.log(row('Mosquitto 2, password file', result));
      await quiesce(mosquitto.child?.pid);
      await mosquitto.kill();
    };
    for (let round = 0; round < RUNS; round++) {
      console.log(`round ${round + 1} of ${RUNS}: kill -9, restart, ${DEVICES} devices at once…`);
      if (round % 2 === 0) {
        await bridgeRound();
        await referenceRound();
      } else {
        await referenceRound();
        await bridgeRound();
      }
    }

    console.log(`kill -9, restart, ${CHOSEN} devices with chosen passwords at once…`);
    await bridge.start();
    const chosenStorm = await storm(chosen.devices, bridge.mqttPort, 'chosen', bridge.child?.pid);
    closeAll(chosenStorm.open);
    console.log(row('IoT Bridge, chosen passwords', chosenStorm.result));
    await bridge.kill('SIGTERM');

    const bridgeStorm = medianOf(bridgeRounds);
    const referenceStorm = medianOf(referenceRounds);
    console.log(`\nLog-in storm after kill -9 and restart, median of ${RUNS} rounds (the chosen-password storm: one round); ${SOURCES} loopback source`);
    console.log(`addresses; a device refused or cut off tries again after 1–2 s. IoT Bridge (SQLite) started again in ${median(restarts).toFixed(1)} s.\n`);
    console.log('| | devices | log-ins/s until all in | half in after | 99 % in after | last one in after | in | busy answers | other refusals | errors, timeouts | server CPU per log-in | CPU of the devices per log-in |');
    console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
    console.log(row('IoT Bridge, generated secrets', bridgeStorm));
    console.log(row('IoT Bridge, chosen passwords (PBKDF2)', chosenStorm.result));
    console.log(row('Mosquitto 2, password file (`mosquitto_passwd -U`)', referenceStorm));
    console.log(`\nratio, generated secrets : Mosquitto = ${(rate(bridgeStorm) / rate(referenceStorm)).toFixed(2)} (per round: ${bridgeRounds.map((r, i) => (rate(r) / rate(referenceRounds[i]!)).toFixed(2)).join(', ')})`);
    console.log('\n| provisioning through the API, 20 requests at once | devices/s |');
    console.log('|---|---|');
    console.log(`| POST /endpoints/bulk (${BULK_SIZE} per request), generated secrets | ${Math.round(generated.perSecond).toLocaleString('en')} |`);
    console.log(`| POST /endpoints/bulk (${BULK_SIZE} per request), chosen passwords | ${Math.round(chosen.perSecond).toLocaleString('en')} |`);
    console.log(`| POST /endpoints with credentials, one device per request, generated | ${Math.round(singlePerSecond).toLocaleString('en')} |`);
    console.log(`| (Mosquitto: mosquitto_passwd -U of the ${DEVICES.toLocaleString('en')} users) | ${Math.round(DEVICES / passwdSeconds).toLocaleString('en')} |`);
  } finally {
    await bridge.kill();
    await mosquitto.kill();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
