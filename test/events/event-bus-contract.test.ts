// The EventBus contract (src/events/event-bus.ts), one set of cases run against every implementation: the embedded
// bus (DurableEventBus) on SQLite as the service builds it (the hot path) and on PostgreSQL, and the cluster bus
// (ClusterEventBus: PostgreSQL shards + Redis notices) with one node and with two nodes sharing the work.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import pino, { type Logger } from 'pino';
import { ClusterEventBus } from '../../src/events/cluster-bus.js';
import { createEvent, partitionOf, type Event } from '../../src/events/event.js';
import { DurableEventBus, MAX_EVENTS_AT_ONCE, type EventBatchConsumer, type EventBus, type EventConsumer } from '../../src/events/event-bus.js';
import type { StoredEvent } from '../../src/events/event-store.js';
import { PgBusShardStore } from '../../src/store/bus-shard-store.js';
import { openDatabase } from '../../src/store/database.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { RedisBusNotifier } from '../../src/store/redis-bus-notifier.js';
import { sqlStores } from '../../src/store/stores.js';
import { redisSkip, TEST_REDIS_URL } from '../helpers/redis.js';
import { DIALECTS, throwAwayPostgres } from '../helpers/service.js';

const silent = pino({ level: 'silent' });
// With CI set a missing PostgreSQL or Redis fails the file instead of skipping it (redisSkip does the same).
const skipPostgres = DIALECTS.find((dialect) => dialect.name === 'postgres')!.skip;
const skipRedis = skipPostgres || (await redisSkip());
/** This run's Redis channel: parallel test files' nodes never hear each other. */
const PREFIX = `iotbridge-test-${randomUUID()}:`;

/** One node: a bus on the shared store, and what closes what it opened. */
interface Node {
  readonly bus: EventBus;
  /** Stops the bus (if it runs) and closes the node's connections; once. */
  close(): Promise<void>;
}

/** `close` run once, however often it is called. */
function once(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => (closing ??= close());
}

/** A consumer of one event at a time (`subscribe`), or of a partition's waiting events at once (`subscribeBatches`). */
type Consumer = EventConsumer | { readonly batches: EventBatchConsumer };

function subscribe(bus: EventBus, consumers: readonly Consumer[]): void {
  for (const consumer of consumers) {
    if (typeof consumer === 'function') bus.subscribe(consumer);
    else bus.subscribeBatches(consumer.batches);
  }
}

/** Where buses of one implementation are made: every node started from it shares one store. */
interface Backend {
  /** A new bus instance on the shared store, `consumers` subscribed, started; `name` is its cluster node name. */
  startNode(name: string, consumers: readonly Consumer[], logger?: Logger): Promise<Node>;
  /** Resolves once the running nodes share the work (a cluster's shards); at once for the embedded bus. */
  settled(nodes: readonly Node[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * One throw-away PostgreSQL database for the runs on PostgreSQL, one after another: the embedded bus, then the
 * cluster (which starts where the embedded bus's cursor is, as after an upgrade to a cluster). Commits do not wait
 * for the disk: durability against power loss is not what these cases test, and it costs seconds.
 */
let postgres: Promise<{ url: string; drop: () => Promise<void> }> | undefined;
function postgresUrl(): Promise<string> {
  postgres ??= (async () => {
    const created = await throwAwayPostgres();
    const client = new pg.Client({ connectionString: created.url });
    await client.connect();
    await client.query(`alter database "${new URL(created.url).pathname.slice(1)}" set synchronous_commit = off`).finally(() => client.end());
    return created;
  })();
  return postgres.then((created) => created.url);
}
after(async () => {
  await (await postgres)?.drop();
});

/** The embedded bus on one database (the store of `IotBridge` without a cluster). */
async function embedded(databaseUrl: string | undefined): Promise<Backend> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-bus-contract-'));
  const database = openDatabase({ dataDir, databaseUrl });
  await migrateToLatest(database);
  return {
    async startNode(_name, consumers, logger = silent) {
      // A new store instance each time, as a restarted process makes.
      const bus = new DurableEventBus(sqlStores(database, { dataDir }).events, { parallelism: 8, logger });
      subscribe(bus, consumers);
      await bus.start();
      return { bus, close: once(() => bus.stop()) };
    },
    settled: async () => {},
    async close() {
      await database.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The cluster bus: each node with its own database pool and Redis connection, as separate processes have. */
async function cluster(): Promise<Backend> {
  const url = await postgresUrl();
  const migrating = openDatabase({ dataDir: tmpdir(), databaseUrl: url });
  await migrateToLatest(migrating);
  await migrating.close();
  return {
    async startNode(name, consumers, logger = silent) {
      const database = openDatabase({ dataDir: tmpdir(), databaseUrl: url });
      const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
      const notifier = await RedisBusNotifier.open(redis, name, logger, PREFIX);
      // Short beats so shards move within a second; a lease outlives several of them.
      const bus = new ClusterEventBus({ node: name, shards: new PgBusShardStore(database.db), notifier, parallelism: 8, logger, heartbeatMs: 150, leaseMs: 3000, pollMs: 150 });
      subscribe(bus, consumers);
      await bus.start();
      return {
        bus,
        close: once(async () => {
          await bus.stop();
          notifier.close();
          redis.disconnect();
          await database.close();
        }),
      };
    },
    async settled(nodes) {
      const buses = nodes.map((node) => node.bus as ClusterEventBus);
      await until(() => buses.every((bus) => bus.state.liveNodes === buses.length && bus.state.shards.length > 0) && buses.reduce((sum, bus) => sum + bus.state.shards.length, 0) === 64, 'the nodes share the 64 shards');
    },
    close: async () => {},
  };
}

const implementations: { name: string; skip: string | false; nodes: number; open: () => Promise<Backend> }[] = [
  { name: 'DurableEventBus on SQLite', skip: false, nodes: 1, open: () => embedded(undefined) },
  { name: 'DurableEventBus on PostgreSQL', skip: skipPostgres, nodes: 1, open: async () => embedded(await postgresUrl()) },
  { name: 'ClusterEventBus, one node (PostgreSQL + Redis)', skip: skipRedis, nodes: 1, open: cluster },
  { name: 'ClusterEventBus, two nodes (PostgreSQL + Redis)', skip: skipRedis, nodes: 2, open: cluster },
];

/** Waits for `condition`, at most `timeoutMs`; fails saying what did not happen. */
async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(10);
  }
}

/** What consumers saw: how often each event ran, and the order per partition. */
class Seen {
  readonly runs = new Map<string, number>();
  readonly order = new Map<string, string[]>();
  readonly consumer: EventConsumer = async (event) => this.record(event);

  record(event: Event): void {
    this.runs.set(event.id, (this.runs.get(event.id) ?? 0) + 1);
    const partition = partitionOf(event);
    this.order.set(partition, [...(this.order.get(partition) ?? []), event.id]);
  }

  has(events: readonly Event[]): boolean {
    return events.every((event) => this.runs.has(event.id));
  }

  /** Events not run exactly once. */
  notOnce(events: readonly Event[]): { id: string; runs: number }[] {
    return events.map((event) => ({ id: event.id, runs: this.runs.get(event.id) ?? 0 })).filter((each) => each.runs !== 1);
  }
}

/** A gate consumers wait at until it opens. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open = () => {};
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

for (const { name, skip, nodes: nodeCount, open } of implementations) {
  describe(`event bus contract: ${name}`, { skip }, () => {
    let backend: Backend;
    /** Partitions of this implementation's cases never meet another case's: each case's names are new. */
    let cases = 0;
    before(async () => {
      backend = await open();
    });
    after(async () => {
      await backend?.close();
    });

    /** Starts the implementation's nodes with these consumers and waits until they share the work. */
    const startNodes = async (consumers: readonly Consumer[], logger?: Logger): Promise<Node[]> => {
      const nodes: Node[] = [];
      for (let i = 0; i < nodeCount; i++) nodes.push(await backend.startNode(`node-${i}`, consumers, logger));
      await backend.settled(nodes);
      return nodes;
    };
    /** Stops the buses; the nodes stay up (a stopped bus still accepts events). */
    const stopAll = (nodes: readonly Node[]) => Promise.all(nodes.map((node) => node.bus.stop()));
    const closeAll = (nodes: readonly Node[]) => Promise.all(nodes.map((node) => node.close()));
    /** Events of `partitions` endpoints (and some of the account alone), in publication order. */
    const events = (count: number, partitions: number, data: (i: number) => unknown = (i) => ({ i })): Event[] => {
      const prefix = `case-${++cases}`;
      return Array.from({ length: count }, (_, i) => {
        const endpointId = i % (partitions + 1) === partitions ? null : `${prefix}-ep-${i % (partitions + 1)}`;
        return createEvent({ type: 'contract', accountId: `${prefix}-acc`, endpointId, data: data(i) });
      });
    };
    /** Publishes in batches, each node in turn, each batch accepted before the next (so the publication order is the acceptance order). */
    const publishInTurn = async (nodes: readonly Node[], list: readonly Event[], batch = 10) => {
      for (let i = 0; i < list.length; i += batch) await nodes[(i / batch) % nodes.length]!.bus.publish(list.slice(i, i + batch));
    };

    it('every published event is handled once, by every consumer', async () => {
      const [first, second] = [new Seen(), new Seen()];
      const nodes = await startNodes([first.consumer, second.consumer]);
      try {
        const published = events(300, 12);
        // Published at once from every node, in many small commits and a few big ones.
        await Promise.all([
          ...published.slice(0, 200).map((event, i) => nodes[i % nodes.length]!.bus.publish([event])),
          ...[200, 250].map((start, i) => nodes[i % nodes.length]!.bus.publish(published.slice(start, start + 50))),
        ]);
        await until(() => first.has(published) && second.has(published), 'every event is handled');
        await stopAll(nodes);
        assert.deepEqual(first.notOnce(published), []);
        assert.deepEqual(second.notOnce(published), []);
      } finally {
        await closeAll(nodes);
      }
    });

    it('events of one endpoint (or of an account without one) are handled in publication order, one at a time', async () => {
      const seen = new Seen();
      const running = new Set<string>();
      const overlaps: string[] = [];
      const consumer: EventConsumer = async (event) => {
        const partition = partitionOf(event);
        if (running.has(partition)) overlaps.push(partition);
        running.add(partition);
        // Partitions take turns unevenly, so a later event of a quick partition overtakes a slow one's.
        await sleep((event.data as { i: number }).i % 3);
        running.delete(partition);
        seen.record(event);
      };
      const nodes = await startNodes([consumer]);
      try {
        const published = events(240, 7);
        await publishInTurn(nodes, published);
        await until(() => seen.has(published), 'every event is handled');
        const expected = new Map<string, string[]>();
        for (const event of published) expected.set(partitionOf(event), [...(expected.get(partitionOf(event)) ?? []), event.id]);
        for (const [partition, order] of expected) assert.deepEqual(seen.order.get(partition), order, partition);
        assert.deepEqual(overlaps, [], 'never two events of one partition at once');
      } finally {
        await closeAll(nodes);
      }
    });

    it('a consumer of turns gets a partition\'s waiting events several at once, in order, each once, never two turns of one partition at once', async () => {
      const seen = new Seen();
      const single = new Seen();
      const running = new Set<string>();
      const overlaps: string[] = [];
      const sizes: number[] = [];
      const batches: EventBatchConsumer = async (events) => {
        const partition = partitionOf(events[0]!);
        assert.ok(events.every((event) => partitionOf(event) === partition), 'one partition a turn');
        if (running.has(partition)) overlaps.push(partition);
        running.add(partition);
        sizes.push(events.length);
        // Quick per event, so turns take several; a turn now and then is slower, so events pile up behind it.
        await sleep(sizes.length % 5 === 0 ? 5 : 0);
        for (const event of events) seen.record(event);
        running.delete(partition);
      };
      const nodes = await startNodes([{ batches }, single.consumer]);
      try {
        const published = events(600, 3);
        await publishInTurn(nodes, published, 50);
        await until(() => seen.has(published) && single.has(published), 'every event is handled');
        await stopAll(nodes);
        assert.deepEqual(seen.notOnce(published), []);
        assert.deepEqual(single.notOnce(published), []);
        const expected = new Map<string, string[]>();
        for (const event of published) expected.set(partitionOf(event), [...(expected.get(partitionOf(event)) ?? []), event.id]);
        for (const [partition, order] of expected) {
          assert.deepEqual(seen.order.get(partition), order, partition);
          assert.deepEqual(single.order.get(partition), order, `${partition}, one at a time`);
        }
        assert.deepEqual(overlaps, [], 'never two turns of one partition at once');
        assert.ok(Math.max(...sizes) > 1, `some turns took several events: ${sizes.join(' ')}`);
        assert.ok(Math.max(...sizes) <= MAX_EVENTS_AT_ONCE, `no turn took more than ${MAX_EVENTS_AT_ONCE}`);
      } finally {
        await closeAll(nodes);
      }
    });

    it('a bus stopped while events wait, restarted on the same store, runs nothing twice and misses nothing', async () => {
      const seen = new Seen();
      const held = gate();
      // The "slow" endpoints' events wait at a gate, so at the stop the others (published later) are handled already.
      const consumer: EventConsumer = async (event) => {
        if ((event.data as { slow: boolean }).slow) await held.wait;
        seen.record(event);
      };
      const nodes = await startNodes([consumer]);
      const published = events(120, 9, (i) => ({ slow: i % 10 < 3 }));
      const slow = published.filter((event) => (event.data as { slow: boolean }).slow);
      const quick = published.filter((event) => !(event.data as { slow: boolean }).slow);
      const later = events(40, 5, () => ({ slow: false }));
      const stopped: Node[] = [];
      try {
        await publishInTurn(nodes, published);
        // The slow endpoints' partitions hold only slow events; the quick ones, published between them, run ahead.
        await until(() => seen.has(quick), 'the quick partitions are handled');
        assert.ok(!seen.has(slow), 'the stop comes while events wait');
        // The first node stops (a restart, or one node of two leaving); its in-flight events finish as it stops.
        const stopping = nodes[0]!.bus.stop();
        held.open();
        await stopping;
        // Accepted while that node is stopped: by it, and by the other one if there is one.
        await nodes[0]!.bus.publish(later.slice(0, 20));
        await nodes[nodes.length - 1]!.bus.publish(later.slice(20));
        // A new instance on the same store, with the same name (the process restarted).
        stopped.push(nodes[0]!);
        nodes[0] = await backend.startNode('node-0', [consumer]);
        await backend.settled(nodes);
        await until(() => seen.has([...published, ...later]), 'every event is handled after the restart');
        await stopAll(nodes);
        assert.deepEqual(seen.notOnce([...published, ...later]), []);
      } finally {
        held.open();
        await closeAll([...stopped, ...nodes]);
      }
    });

    it('a consumer that throws or rejects: logged, not retried, its partition and the other consumers go on', async () => {
      const lines: { level: number; msg: string; eventId?: string }[] = [];
      const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string; eventId?: string }) });
      const seen = new Seen();
      const attempts = new Map<string, number>();
      const failing: EventConsumer = (event) => {
        attempts.set(event.id, (attempts.get(event.id) ?? 0) + 1);
        const { fail } = event.data as { fail?: 'throw' | 'reject' };
        // The interface says a consumer must not throw; this one does, both ways.
        if (fail === 'throw') throw new Error('consumer bug');
        if (fail === 'reject') return Promise.reject(new Error('consumer failed later'));
        return Promise.resolve();
      };
      const nodes = await startNodes([failing, seen.consumer], logger);
      const published = events(30, 2, (i) => ({ fail: i % 10 === 3 ? 'throw' : i % 10 === 7 ? 'reject' : undefined }));
      const failed = published.filter((event) => (event.data as { fail?: string }).fail !== undefined);
      try {
        await publishInTurn(nodes, published, 5);
        await until(() => seen.has(published), 'every event reaches the consumer after the failing one');
        await stopAll(nodes);
        assert.deepEqual(seen.notOnce(published), []);
        for (const [partition, order] of seen.order) assert.deepEqual(order, published.filter((event) => partitionOf(event) === partition).map((event) => event.id), partition);
        assert.deepEqual(published.filter((event) => attempts.get(event.id) !== 1).map((event) => event.id), [], 'each tried once');
        const logged = lines.filter((line) => line.msg === 'event consumer failed');
        assert.deepEqual(logged.map((line) => line.eventId).sort(), failed.map((event) => event.id).sort());
        assert.ok(logged.every((line) => line.level === 50), 'at error level');
        // A restart does not run the failed events again: they count as handled.
        await closeAll(nodes);
        const again = await startNodes([failing]);
        await closeAll(again);
        assert.deepEqual(published.filter((event) => attempts.get(event.id) !== 1).map((event) => event.id), [], 'not retried after a restart');
      } finally {
        await closeAll(nodes);
      }
    });

    it("watch: this process's accepted events, each once, in seq order, running or not; stopped by what it returns", async () => {
      const nodes = await startNodes([]);
      const watched: StoredEvent[] = [];
      const stopWatching = nodes[0]!.bus.watch((accepted) => void watched.push(...accepted));
      try {
        const published = events(50, 4);
        await Promise.all(published.slice(0, 30).map((event) => nodes[0]!.bus.publish([event])));
        await stopAll(nodes);
        // Stopped: accepting goes on, and so does watching.
        await nodes[0]!.bus.publish(published.slice(30, 40));
        stopWatching();
        await nodes[0]!.bus.publish(published.slice(40));
        assert.deepEqual(watched.map((stored) => stored.event.id).sort(), published.slice(0, 40).map((event) => event.id).sort());
        const seqs = watched.map((stored) => stored.seq);
        assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), 'in seq order');
        assert.equal(new Set(seqs).size, seqs.length, 'each once');
        // What was published last is handled by the next start (nobody consumes here: it only must not be lost).
        await closeAll(nodes);
        const seen = new Seen();
        const again = await startNodes([seen.consumer]);
        await until(() => seen.has(published.slice(30)), 'events accepted while stopped are handled at the next start');
        await closeAll(again);
        assert.deepEqual(seen.notOnce(published.slice(30)), [], 'and only those, once');
      } finally {
        stopWatching();
        await closeAll(nodes);
      }
    });
  });
}
