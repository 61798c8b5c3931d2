import { sql, type Kysely } from 'kysely';
import type { BusShardStore, ShardState, TakenShard } from '../events/bus-shards.js';
import type { Event } from '../events/event.js';
import type { StoredEvent } from '../events/event-store.js';
import { BUS_SHARDS } from '../events/shards.js';
import { insertEvents, toStored } from './event-store.js';
import type { Schema } from './schema.js';

/** The database's clock in ms: leases expire on one clock, whatever the nodes' say. */
const NOW = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/** Serializes accepts across the cluster (any constant shared by every node: "iotb" in ASCII). */
const ACCEPT_LOCK = 0x696f7462;

/** Past every seq: the lower bound of a shard this node does not read. */
const NOT_READ = '9223372036854775807';

/** Nodes gone this long are forgotten (they hold no lease: theirs expired long before). */
const FORGET_NODES_MS = 3_600_000;

/**
 * Cluster mode's bus state on PostgreSQL (migration 0043). Accepts take a transaction-scoped advisory lock before
 * numbering, so the events of the whole cluster commit in seq order and a cursor never passes a number that
 * commits later; leases and cursors are rows of `bus_shards`, renewed on the database's clock.
 */
export class PgBusShardStore implements BusShardStore {
  readonly #db: Kysely<Schema>;
  readonly queue: BusShardStore['queue'];

  constructor(db: Kysely<Schema>) {
    this.#db = db;
    this.queue = {
      accept: (events: readonly Event[]) =>
        this.#db.transaction().execute(async (trx) => {
          await sql`select pg_advisory_xact_lock(${ACCEPT_LOCK})`.execute(trx);
          return insertEvents(trx, events);
        }),
    };
  }

  async heartbeat(node: string, ttlMs: number): Promise<{ held: number[]; liveNodes: number }> {
    return this.#db.transaction().execute(async (trx) => {
      await sql`insert into bus_nodes (node, seen_until, started_at) values (${node}, ${NOW} + ${ttlMs}, ${NOW})
        on conflict (node) do update set seen_until = excluded.seen_until`.execute(trx);
      // A lease nobody took since it expired is still this node's: nobody else handled its events.
      const held = await sql<{ shard: number }>`update bus_shards set lease_until = ${NOW} + ${ttlMs} where owner = ${node} returning shard`.execute(trx);
      const live = await sql<{ count: string }>`select count(*) as count from bus_nodes where seen_until > ${NOW}`.execute(trx);
      await sql`delete from bus_nodes where seen_until < ${NOW} - ${FORGET_NODES_MS}`.execute(trx);
      return { held: held.rows.map((row) => Number(row.shard)).sort((a, b) => a - b), liveNodes: Number(live.rows[0]?.count ?? 1) };
    });
  }

  async take(node: string, count: number, ttlMs: number): Promise<TakenShard[]> {
    if (count <= 0) return [];
    // A shard resumes at its cursor, or at the embedded bus's if that is ahead (a database that ran one process).
    const result = await sql<{ shard: number; handled_through: string; previous: string | null }>`
      update bus_shards s set owner = ${node}, lease_until = ${NOW} + ${ttlMs},
        handled_through = greatest(s.handled_through, coalesce((select handled_through from event_cursor where name = 'bus'), 0))
      from (select shard, owner as previous from bus_shards where owner is null or lease_until < ${NOW}
            order by shard limit ${count} for update skip locked) free
      where s.shard = free.shard
      returning s.shard, s.handled_through, free.previous`.execute(this.#db);
    return result.rows.map((row) => ({ shard: Number(row.shard), handledThrough: Number(row.handled_through), previousOwner: row.previous }));
  }

  async release(node: string, shards: readonly number[]): Promise<void> {
    if (shards.length === 0) return;
    await sql`update bus_shards set owner = null, lease_until = 0 where owner = ${node} and shard = any(${[...shards]}::smallint[])`.execute(this.#db);
  }

  async leave(node: string): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      await sql`update bus_shards set owner = null, lease_until = 0 where owner = ${node}`.execute(trx);
      await sql`delete from bus_nodes where node = ${node}`.execute(trx);
    });
  }

  async pending(after: ReadonlyMap<number, number>, afterSeq: number, limit: number): Promise<StoredEvent[]> {
    if (after.size === 0 || limit <= 0) return [];
    const bounds = Array.from({ length: BUS_SHARDS }, (_, shard) => String(after.get(shard) ?? NOT_READ));
    const rows = await this.#db
      .selectFrom('events')
      .selectAll()
      .where('seq', '>', afterSeq)
      .where(sql<boolean>`bus_shard = any(${[...after.keys()]}::smallint[])`)
      .where(sql<boolean>`seq > (${bounds}::bigint[])[bus_shard + 1]`)
      .orderBy('seq')
      .limit(limit)
      .execute();
    return rows.map(toStored);
  }

  async saveHandledThrough(node: string, shards: readonly number[], seq: number): Promise<void> {
    if (shards.length === 0) return;
    await this.#db.transaction().execute(async (trx) => {
      await sql`update bus_shards set handled_through = greatest(handled_through, ${seq})
        where owner = ${node} and shard = any(${[...shards]}::smallint[])`.execute(trx);
      // The embedded bus's cursor is the cluster's low-water mark: retention, the endpoint index and diagnostics read it.
      await sql`update event_cursor set handled_through = greatest(handled_through, (select min(handled_through) from bus_shards)) where name = 'bus'`.execute(trx);
    });
  }

  async after(afterSeq: number, limit: number): Promise<StoredEvent[]> {
    const rows = await this.#db.selectFrom('events').selectAll().where('seq', '>', afterSeq).orderBy('seq').limit(limit).execute();
    return rows.map(toStored);
  }

  async head(): Promise<number> {
    const row = await this.#db.selectFrom('events').select((eb) => eb.fn.max('seq').as('head')).executeTakeFirst();
    return Number(row?.head ?? 0);
  }

  async shards(): Promise<ShardState[]> {
    const rows = await this.#db.selectFrom('bus_shards').selectAll().orderBy('shard').execute();
    return rows.map((row) => ({ shard: Number(row.shard), owner: row.owner, handledThrough: Number(row.handled_through), leaseUntil: Number(row.lease_until) }));
  }
}
