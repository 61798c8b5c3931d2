/**
 * Cluster benchmark (docs/cluster.md): 1, 2 and 3 service processes on one PostgreSQL database and one Redis,
 * on this machine.
 *   - Events: API clients post `reading` events (POST /events, 202 once durable) round the nodes; a trivial
 *     trigger runs on each. Measured: events/s from the first post until every node's
 *     iotbridge_events_handled_total adds up to all of them. The reference is one process on the same
 *     PostgreSQL without Redis (the embedded bus), in the same run.
 *   - MQTT across nodes: a device publishes QoS 1 messages to node 1; a trigger forwards each to a sink device
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
/** Posts in flight at once, over all nodes. */
const CONCURRENCY = Number(process.env.BENCH_CLUSTER_CONCURRENCY ?? 64);
/** Un-acked QoS 1 publishes the MQTT device keeps in flight. */
const WINDOW = 20;
const ENDPOINTS = 100;
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
async function eventsRound(nodes: readonly Node[], endpointIds: readonly string[]): Promise<number> {
  const before = await handledOf(nodes);
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < EVENTS; i = next++) await nodes[i % nodes.length]!.api('POST', '/events', { type: 'reading', endpoint: endpointIds[i % endpointIds.length], data: { n: i } });
    }),
  );
  while ((await handledOf(nodes)) - before < EVENTS) await new Promise((resolve) => setTimeout(resolve, 20));
  return EVENTS / ((performance.now() - started) / 1000);
}

async function eventsFigure(count: number, redis: boolean): Promise<number> {
  const { nodes, close } = await startNodes(count, redis);
  try {
    const service = await nodes[0]!.api<{ id: string }>('POST', '/services', { name: 'bench', type: 'udp' });
    const items = Array.from({ length: ENDPOINTS }, (_, i) => ({ key: `dev-${i}`, serviceId: service.id }));
    const bulk = await nodes[0]!.api<{ items: { endpoint: { id: string } }[] }>('POST', '/endpoints/bulk', { items });
    const endpointIds = bulk.items.map((item) => item.endpoint.id);
    await nodes[0]!.api('POST', '/triggers', { name: 'trivial', events: ['reading'], script: 'var doubled = event.data.n * 2;' });
    await eventsRound(nodes, endpointIds); // warm-up
    const figures: number[] = [];
    for (let r = 0; r < ROUNDS; r++) figures.push(await eventsRound(nodes, endpointIds));
    return median(figures);
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
    const bulk = await nodes[0]!.api<{ items: { endpoint: { id: string } }[] }>('POST', '/endpoints/bulk', {
      items: ['source', 'sink'].map((key) => ({ key, serviceId: service.id, credentials: { password: PASSWORD } })),
    });
    const sinkId = bulk.items[1]!.endpoint.id;
    await nodes[0]!.api('POST', '/triggers', { name: 'forward', events: ['mqtt-publish'], script: `mqtt.publish(${JSON.stringify(sinkId)}, 'sink/in', event.data.text, {qos: 1});` });
    const connect = async (node: Node, key: string) => {
      const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${node.ports.mqtt}`, { username: key, password: PASSWORD, clientId: key, reconnectPeriod: 0 });
      clients.push(client);
      return client;
    };
    const sink = await connect(nodes[sinkNode]!, 'sink');
    await sink.subscribeAsync('sink/in', { qos: 1 });
    const source = await connect(nodes[0]!, 'source');
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
        Array.from({ length: WINDOW }, async () => {
          for (let i = next++; i < MESSAGES; i = next++) await source.publishAsync('source/up', `${tag}-${i}`, { qos: 1 });
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
  const cluster: number[] = [];
  for (const count of [1, 2, 3]) cluster.push(await eventsFigure(count, true));
  const sameNode = await mqttFigure(0);
  const crossNode = await mqttFigure(1);
  console.log(`# IoT Bridge cluster: ${cpus().length} cores, Node ${process.version}, PostgreSQL + Redis on this machine; ${EVENTS} events and ${MESSAGES} MQTT messages a round, median of ${ROUNDS}\n`);
  console.log('| events through a trivial trigger (POST /events round the nodes, 64 in flight) | events/s | ratio to one process without Redis |');
  console.log('|---|---|---|');
  console.log(`| one process, PostgreSQL, embedded bus (reference) | ${rate(reference)} | 1.00 |`);
  cluster.forEach((value, i) => console.log(`| cluster of ${i + 1} node${i === 0 ? '' : 's'} (bus shards leased in PostgreSQL, notices over Redis) | ${rate(value)} | ${(value / reference).toFixed(2)} |`));
  console.log('\n| MQTT QoS 1, device → trigger → mqtt.publish → sink device | messages/s | ratio to same node |');
  console.log('|---|---|---|');
  console.log(`| sink on the same node | ${rate(sameNode)} | 1.00 |`);
  console.log(`| sink on the other node (through Redis) | ${rate(crossNode)} | ${(crossNode / sameNode).toFixed(2)} |`);
}

await main();
