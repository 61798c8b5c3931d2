/**
 * Cluster benchmark (docs/cluster.md): 1, 2 and 3 service processes on one PostgreSQL database and one Redis,
 * on this machine.
 *   - Events: API clients post `reading` events (POST /events, 202 once durable) round the nodes; a trivial
 *     trigger runs on each. Measured: events/s from the first post until every node's
 *     iotbridge_events_handled_total adds up to all of them. The reference is one process on the same
 *     PostgreSQL without Redis (the embedded bus), in the same run.
 *   - MQTT across nodes: devices (20) publish QoS 1 messages to node 1; a trigger forwards each to a sink device
 *     with `mqtt.publish`; the sink is connected to node 1 (same node) or node 2 (through Redis). Measured:
 *     messages/s until the sink has them all.
 * All processes share this machine's cores (2 here): more nodes here add coordination, not CPU. Each figure is
 * the median of BENCH_ROUNDS rounds.
 *
 *   npm run bench:cluster                (compiles into dist/ first and runs the compiled service)
 *   BENCH_CLUSTER_EVENTS=10000 BENCH_ROUNDS=5 npm run bench:cluster
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import mqtt from 'mqtt';
import pg from 'pg';

const EVENTS = Number(process.env.BENCH_CLUSTER_EVENTS ?? 6000);
const MESSAGES = Number(process.env.BENCH_CLUSTER_MESSAGES ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/**
 * Posts in flight at once, over all nodes: each figure at both. Accepts commit one at a time across the cluster
 * (docs/cluster.md), so with few clients each waits for the other nodes' commits; with many, a commit carries more.
 */
const CONCURRENCIES = (process.env.BENCH_CLUSTER_CONCURRENCY ?? '64,256').split(',').map(Number);
const ENDPOINTS = 100;
/** Cluster sizes measured, e.g. BENCH_CLUSTER_NODES=2 for one. */
const SIZES = (process.env.BENCH_CLUSTER_NODES ?? '1,2,3').split(',').map(Number);
/** MQTT devices publishing at once: a trigger runs in order per device, so one device is one trigger at a time. */
const SOURCES = Number(process.env.BENCH_CLUSTER_SOURCES ?? 20);
const TOKEN = 'AT:bench-admin-token-000000000';
const PASSWORD = 'bench-cluster-secret';
const POSTGRES_URL = process.env.IOTBRIDGE_TEST_POSTGRES_URL ?? `postgres://${userInfo().username}@127.0.0.1:5432/test`;
const REDIS_URL = process.env.IOTBRIDGE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** One service process, compiled, as `npm start` runs it. */
class Node {
  readonly ports: Record<string, number>;
  readonly #child: ChildProcess;
  readonly #dataDir: string;

  private constructor(child: ChildProcess, ports: Record<string, number>, dataDir: string) {
    this.#child = child;
    this.ports = ports;
    this.#dataDir = dataDir;
  }

  static async start(name: string, env: Record<string, string>): Promise<Node> {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-bench-cluster-'));
    const cli = new URL(import.meta.url.endsWith('.js') ? '../src/cli.js' : '../src/cli.ts', import.meta.url).pathname;
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('IOTBRIDGE_')));
    const child = spawn(process.execPath, [...(cli.endsWith('.ts') ? ['--import', 'tsx'] : []), cli, 'serve'], {
      env: {
        ...inherited,
        IOTBRIDGE_DATA_DIR: dataDir,
        IOTBRIDGE_NODE_ID: name,
        IOTBRIDGE_HTTP_HOST: '127.0.0.1',
        IOTBRIDGE_MQTT_HOST: '127.0.0.1',
        IOTBRIDGE_COAP_HOST: '127.0.0.1',
        IOTBRIDGE_PROMETHEUS_HOST: '127.0.0.1',
        ...Object.fromEntries(['HTTP', 'MQTT', 'COAP', 'COAPS', 'UDP', 'TCP', 'PROMETHEUS'].map((port) => [`IOTBRIDGE_${port}_PORT`, '0'])),
        IOTBRIDGE_ADMIN_TOKEN: TOKEN,
        IOTBRIDGE_LOG_LEVEL: 'info',
        IOTBRIDGE_ENDPOINT_SEND_RATE: '100000',
        IOTBRIDGE_ACCOUNT_SEND_RATE: '100000',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const ports = await new Promise<Record<string, number>>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out = (out + chunk.toString()).slice(-100_000);
        const line = out.split('\n').find((l) => l.includes('"ports"'));
        if (line) resolve((JSON.parse(line) as { ports: Record<string, number> }).ports);
      });
      child.once('exit', (code) => reject(new Error(`node ${name} exited with ${code}`)));
    });
    child.stdout.resume();
    return new Node(child, ports, dataDir);
  }

  async api<T = Record<string, unknown>>(method: string, url: string, body?: unknown): Promise<T> {
    const response = await fetch(`http://127.0.0.1:${this.ports.http}${url}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${text}`);
    return (text === '' ? {} : JSON.parse(text)) as T;
  }

  async handled(): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${this.ports.prometheus}/metrics`)).text();
    return Number(/^iotbridge_events_handled_total (\d+)/m.exec(text)?.[1] ?? 0);
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.#child.once('exit', resolve));
    this.#child.kill('SIGTERM');
    await exited;
    await rm(this.#dataDir, { recursive: true, force: true });
  }
}

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Nodes on a new database; with `redis`, a cluster. */
async function startNodes(count: number, redis: boolean): Promise<{ nodes: Node[]; close: () => Promise<void> }> {
  const name = `iotbridge_bench_${process.pid}_${Date.now()}`;
  await adminQuery(`create database ${name}`);
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  const nodes: Node[] = [];
  // One after another: the first applies the migrations.
  for (let i = 1; i <= count; i++) nodes.push(await Node.start(`bench-${i}`, { IOTBRIDGE_DATABASE_URL: url.toString(), ...(redis ? { IOTBRIDGE_REDIS_URL: REDIS_URL } : {}) }));
  if (redis) await settled(nodes);
  return {
    nodes,
    close: async () => {
      for (const node of nodes) await node.stop();
      await adminQuery(`drop database if exists ${name} with (force)`);
    },
  };
}

/** Until the nodes have shared out the bus's shards (each /ready says its share). */
async function settled(nodes: readonly Node[]): Promise<void> {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 250))) {
    const shares = await Promise.all(nodes.map(async (node) => (await node.api<{ shards?: number; liveNodes?: number }>('GET', '/ready'))));
    if (shares.every((share) => share.liveNodes === nodes.length) && shares.reduce((sum, share) => sum + (share.shards ?? 0), 0) === 64) return;
  }
  throw new Error('the nodes did not share the bus');
}

async function handledOf(nodes: readonly Node[]): Promise<number> {
  return (await Promise.all(nodes.map((node) => node.handled()))).reduce((a, b) => a + b, 0);
}

/** Events/s through a trivial trigger, posted round the nodes. */
async function eventsRound(nodes: readonly Node[], endpointIds: readonly string[], concurrency: number): Promise<number> {
  const before = await handledOf(nodes);
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < EVENTS; i = next++) await nodes[i % nodes.length]!.api('POST', '/events', { type: 'reading', endpoint: endpointIds[i % endpointIds.length], data: { n: i } });
    }),
  );
  const posted = performance.now();
  while ((await handledOf(nodes)) - before < EVENTS) {
    if (process.env.BENCH_DEBUG) console.error(Math.round(performance.now() - posted), (await Promise.all(nodes.map((node) => node.handled()))).join(' '));
    await new Promise((resolve) => setTimeout(resolve, process.env.BENCH_DEBUG ? 1000 : 20));
  }
  return EVENTS / ((performance.now() - started) / 1000);
}

/** Events/s at each of CONCURRENCIES. */
async function eventsFigure(count: number, redis: boolean): Promise<number[]> {
  const { nodes, close } = await startNodes(count, redis);
  try {
    const service = await nodes[0]!.api<{ id: string }>('POST', '/services', { name: 'bench', type: 'udp' });
    const items = Array.from({ length: ENDPOINTS }, (_, i) => ({ key: `dev-${i}`, serviceId: service.id }));
    const bulk = await nodes[0]!.api<{ items: { endpoint: { id: string } }[] }>('POST', '/endpoints/bulk', { items });
    const endpointIds = bulk.items.map((item) => item.endpoint.id);
    await nodes[0]!.api('POST', '/triggers', { name: 'trivial', events: ['reading'], script: 'var doubled = event.data.n * 2;' });
    await eventsRound(nodes, endpointIds, CONCURRENCIES[0]!); // warm-up
    const figures: number[] = [];
    for (const concurrency of CONCURRENCIES) {
      const rounds: number[] = [];
      for (let r = 0; r < ROUNDS; r++) rounds.push(await eventsRound(nodes, endpointIds, concurrency));
      figures.push(median(rounds));
    }
    return figures;
  } finally {
    await close();
  }
}

/** MQTT messages/s from a device on node 1, forwarded by a trigger to a sink on node 1 or node 2. */
async function mqttFigure(sinkNode: 0 | 1): Promise<number> {
  const { nodes, close } = await startNodes(2, true);
  const clients: mqtt.MqttClient[] = [];
  try {
    const service = await nodes[0]!.api<{ id: string }>('POST', '/services', { name: 'bench-mqtt', type: 'mqtt' });
    const keys = ['sink', ...Array.from({ length: SOURCES }, (_, i) => `source-${i}`)];
    const bulk = await nodes[0]!.api<{ items: { endpoint: { id: string } }[] }>('POST', '/endpoints/bulk', {
      items: keys.map((key) => ({ key, serviceId: service.id, credentials: { password: PASSWORD } })),
    });
    const sinkId = bulk.items[0]!.endpoint.id;
    await nodes[0]!.api('POST', '/triggers', { name: 'forward', events: ['mqtt-publish'], script: `mqtt.publish(${JSON.stringify(sinkId)}, 'sink/in', event.data.text, {qos: 1});` });
    const connect = async (node: Node, key: string) => {
      const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${node.ports.mqtt}`, { username: key, password: PASSWORD, clientId: key, reconnectPeriod: 0 });
      clients.push(client);
      return client;
    };
    const sink = await connect(nodes[sinkNode]!, 'sink');
    await sink.subscribeAsync('sink/in', { qos: 1 });
    const sources = await Promise.all(keys.slice(1).map((key) => connect(nodes[0]!, key)));
    let received = 0;
    let onAll: () => void = () => undefined;
    sink.on('message', () => {
      if (++received === MESSAGES) onAll();
    });
    const round = async (tag: string) => {
      received = 0;
      const all = new Promise<void>((resolve) => (onAll = resolve));
      const started = performance.now();
      let next = 0;
      await Promise.all(
        sources.map(async (source, n) => {
          for (let i = next++; i < MESSAGES; i = next++) await source.publishAsync(`source-${n}/up`, `${tag}-${i}`, { qos: 1 });
        }),
      );
      await all;
      return MESSAGES / ((performance.now() - started) / 1000);
    };
    await round('warm-up');
    const figures: number[] = [];
    for (let r = 0; r < ROUNDS; r++) figures.push(await round(`r${r}`));
    return median(figures);
  } finally {
    for (const client of clients) client.end(true);
    await close();
  }
}

async function main(): Promise<void> {
  const rate = (value: number) => `${Math.round(value).toLocaleString('en-US')}`;
  const reference = await eventsFigure(1, false);
  const cluster: number[][] = [];
  for (const count of SIZES) cluster.push(await eventsFigure(count, true));
  const mqttToo = process.env.BENCH_CLUSTER_MQTT !== '0';
  const sameNode = mqttToo ? await mqttFigure(0) : 0;
  const crossNode = mqttToo ? await mqttFigure(1) : 0;
  console.log(`# IoT Bridge cluster: ${cpus().length} cores, Node ${process.version}, PostgreSQL + Redis on this machine; ${EVENTS} events and ${MESSAGES} MQTT messages a round, median of ${ROUNDS}\n`);
  const columns = CONCURRENCIES.map((c) => `${c} posts in flight: events/s (ratio)`);
  console.log(`| events through a trivial trigger (POST /events round the nodes) | ${columns.join(' | ')} |`);
  console.log(`|---|${columns.map(() => '---|').join('')}`);
  const row = (figures: number[]) => figures.map((value, i) => `${rate(value)} (${(value / reference[i]!).toFixed(2)})`).join(' | ');
  console.log(`| one process, PostgreSQL, embedded bus (reference) | ${row(reference)} |`);
  cluster.forEach((figures, i) => console.log(`| cluster of ${SIZES[i]} node${SIZES[i] === 1 ? '' : 's'} (bus shards leased in PostgreSQL, notices over Redis) | ${row(figures)} |`));
  if (!mqttToo) return;
  console.log(`\n| MQTT QoS 1, ${SOURCES} devices → trigger → mqtt.publish → sink device | messages/s | ratio to same node |`);
  console.log('|---|---|---|');
  console.log(`| sink on the same node | ${rate(sameNode)} | 1.00 |`);
  console.log(`| sink on the other node (through Redis) | ${rate(crossNode)} | ${(crossNode / sameNode).toFixed(2)} |`);
}

await main();
