import { setImmediate } from 'node:timers/promises';
import { sql, type Expression, type ExpressionBuilder, type Kysely, type Selectable, type SqlBool } from 'kysely';
import type { Event } from '../events/event.js';
import { dataJsonOf, rememberDataJson } from '../events/event-json.js';
import { shardOf } from '../events/shards.js';
import type { EventStore, HistoryQuery, StoredEvent, StreamQuery } from '../events/event-store.js';
import { fromJson, type EventsTable, type Schema } from './schema.js';
import type { SqliteHotPath } from './sqlite-hot-path.js';
import { firstSeqAtOrAfter } from './seq-bound.js';
import { int2Array, int8Array, textArray } from './pg-binary-arrays.js';
import { prepared } from './pg-prepared.js';
import { deleteSeqsBelow, onPostgres, toIso, toMs } from './sql.js';

/** How far out of time order events may be numbered (accepted in batches by several writers). */
const EVENT_ORDER_SLACK_MS = 60_000;

export class SqlEventStore implements EventStore {
  readonly #db: Kysely<Schema>;
  readonly #hot: SqliteHotPath | undefined;

  constructor(db: Kysely<Schema>, hot?: SqliteHotPath) {
    this.#db = db;
    this.#hot = hot;
  }

  async accept(events: readonly Event[]): Promise<number[]> {
    if (this.#hot) return this.#hot.accept(events);
    // PostgreSQL inserts the batch with one statement, a transaction of its own: BEGIN and COMMIT around it were
    // two more round trips a batch, on the path every acknowledgement waits for.
    if (onPostgres(this.#db)) return insertEvents(this.#db, events);
    return this.#db.transaction().execute((trx) => insertEvents(trx, events));
  }

  async pending(afterSeq: number, limit: number): Promise<StoredEvent[]> {
    const rows = await this.#db.selectFrom('events').selectAll().where('seq', '>', afterSeq).orderBy('seq').limit(limit).execute();
    return rows.map(toStored);
  }

  handledThrough(): Promise<number> {
    return this.#cursor('bus');
  }

  async #cursor(name: 'bus' | 'endpoint-index'): Promise<number> {
    const row = await this.#db.selectFrom('event_cursor').select('handled_through').where('name', '=', name).executeTakeFirst();
    return Number(row?.handled_through ?? 0);
  }

  async saveHandledThrough(seq: number): Promise<void> {
    if (this.#hot) return this.#hot.saveHandledThrough(seq);
    await this.#db
      .insertInto('event_cursor')
      .values({ name: 'bus', handled_through: seq })
      .onConflict((oc) => oc.column('name').doUpdateSet({ handled_through: sql<number>`greatest(event_cursor.handled_through, excluded.handled_through)` }))
      .execute();
  }

  async search(accountId: string, query: HistoryQuery, limit: number, beforeSeq?: number): Promise<StoredEvent[]> {
    const conditions = historyConditions(accountId, query, beforeSeq);
    if (query.endpointId === undefined) {
      const rows = await this.#db.selectFrom('events as e').selectAll('e').where(conditions).orderBy('e.seq', 'desc').limit(limit).execute();
      return rows.map(toStored);
    }
    const endpointId = query.endpointId;
    // Read once: the index may move on between the two queries, which must not overlap.
    const indexedThrough = await this.#cursor('endpoint-index');
    // The newest events, not yet in the index: a range of seqs a few seconds long.
    const newest = await this.#db
      .selectFrom('events as e')
      .selectAll('e')
      .where(conditions)
      .where('e.seq', '>', indexedThrough)
      .where('e.endpoint_id', '=', endpointId)
      .orderBy('e.seq', 'desc')
      .limit(limit)
      .execute();
    if (newest.length >= limit) return newest.map(toStored);
    const indexed = await this.#db
      .selectFrom('event_endpoints as x')
      .innerJoin('events as e', 'e.seq', 'x.seq')
      .selectAll('e')
      .where('x.endpoint_id', '=', endpointId)
      .where('x.seq', '<=', indexedThrough)
      .where(conditions)
      .orderBy('x.seq', 'desc')
      .limit(limit - newest.length)
      .execute();
    return [...newest, ...indexed].map(toStored);
  }

  async indexEndpoints(maxEvents: number): Promise<number> {
    return this.#db.transaction().execute(async (trx) => {
      // One pass at a time (cluster nodes share the database; SQLite has one writer anyway): the row is locked
      // until this pass's cursor is stored, so the next pass reads it and no row is inserted twice.
      if (onPostgres(trx)) await trx.selectFrom('event_cursor').select('handled_through').where('name', '=', 'endpoint-index').forUpdate().execute();
      const cursors = await trx.selectFrom('event_cursor').select(['name', 'handled_through']).where('name', 'in', ['bus', 'endpoint-index']).execute();
      const cursor = (name: string) => Number(cursors.find((row) => row.name === name)?.handled_through ?? 0);
      const from = cursor('endpoint-index');
      // Only handled events: they are committed, so no lower seq can appear after this pass (PostgreSQL
      // numbers rows before they commit).
      const through = Math.min(cursor('bus'), from + maxEvents);
      if (through <= from) return 0;
      await trx
        .insertInto('event_endpoints')
        .columns(['endpoint_id', 'seq'])
        .expression((eb) =>
          eb
            .selectFrom('events')
            .select(['endpoint_id', 'seq'])
            .where('seq', '>', from)
            .where('seq', '<=', through)
            .where('endpoint_id', 'is not', null)
            // SQLite writes each page a transaction changed once at its commit, whatever the order of the rows: sorting
            // them first cost more than it saved (timed alone, 1.6 → 1.2 µs an event with 100 endpoints, 3.0 → 2.5 with
            // 10,000). PostgreSQL keeps index order (not measured there).
            .$if(onPostgres(trx), (query) => query.orderBy('endpoint_id').orderBy('seq'))
            .$narrowType<{ endpoint_id: string }>(),
        )
        // No `on conflict do nothing`: no row can be there already, and checking for one first cost PostgreSQL
        // ~3–4 µs an event (docs/performance.md, session 34).
        .execute();
      await trx
        .insertInto('event_cursor')
        .values({ name: 'endpoint-index', handled_through: through })
        .onConflict((oc) => oc.column('name').doUpdateSet({ handled_through: through }))
        .execute();
      return through - from;
    });
  }

  async get(accountId: string, id: string): Promise<Event | undefined> {
    const row = await this.#db.selectFrom('events').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    return row && toStored(row).event;
  }

  async seqOf(accountId: string, id: string): Promise<number | undefined> {
    const row = await this.#db.selectFrom('events').select('seq').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    return row && Number(row.seq);
  }

  async seqsAfter(accountId: string, query: StreamQuery, afterSeq: number, limit: number): Promise<number[]> {
    const conditions = (eb: ExpressionBuilder<{ e: EventsTable }, 'e'>): Expression<SqlBool> => {
      const all: Expression<SqlBool>[] = [eb('e.account_id', '=', accountId), eb('e.seq', '>', afterSeq)];
      if (query.types && query.types.length > 0) all.push(eb('e.type', 'in', query.types));
      return eb.and(all);
    };
    const endpointIds = query.endpointIds;
    if (!endpointIds || endpointIds.length === 0) {
      const rows = await this.#db.selectFrom('events as e').select('e.seq').where(conditions).orderBy('e.seq', 'desc').limit(limit).execute();
      return rows.map((row) => Number(row.seq));
    }
    // As in `search`: the newest events from the events themselves, the older ones through the by-endpoint index.
    const indexedThrough = await this.#cursor('endpoint-index');
    const newest = await this.#db
      .selectFrom('events as e')
      .select('e.seq')
      .where(conditions)
      .where('e.seq', '>', indexedThrough)
      .where('e.endpoint_id', 'in', endpointIds)
      .orderBy('e.seq', 'desc')
      .limit(limit)
      .execute();
    if (newest.length >= limit || indexedThrough <= afterSeq) return newest.map((row) => Number(row.seq));
    const indexed = await this.#db
      .selectFrom('event_endpoints as x')
      .innerJoin('events as e', 'e.seq', 'x.seq')
      .select('e.seq')
      .where('x.endpoint_id', 'in', endpointIds)
      .where('x.seq', '>', afterSeq)
      .where('x.seq', '<=', indexedThrough)
      .where(conditions)
      .orderBy('x.seq', 'desc')
      .limit(limit - newest.length)
      .execute();
    return [...newest, ...indexed].map((row) => Number(row.seq));
  }

  async bySeqs(accountId: string, seqs: readonly number[]): Promise<StoredEvent[]> {
    if (seqs.length === 0) return [];
    const rows = await this.#db.selectFrom('events').selectAll().where('account_id', '=', accountId).where('seq', 'in', [...seqs]).orderBy('seq').execute();
    return rows.map(toStored);
  }

  async counts(accountId: string, query: HistoryQuery, from: number, to: number, intervalMs: number): Promise<{ bucket: number; count: number }[]> {
    // Only the period's rows are read: its seq range is bisected from the times first (events are numbered in
    // the order they were accepted, which is the order of their times), then `events_account` (account_id,
    // seq) walks that range. The time itself is still checked, the range has some slack.
    const low = await firstSeqAtOrAfter(this.#db, { table: 'events', column: 'time' }, from - EVENT_ORDER_SLACK_MS);
    const high = await firstSeqAtOrAfter(this.#db, { table: 'events', column: 'time' }, to + EVENT_ORDER_SLACK_MS + 1);
    // Literals (integers checked by the route), so PostgreSQL sees the grouped expression as the selected one.
    const bucket = sql<number | string>`(e.time - ${sql.lit(Math.trunc(from))}) / ${sql.lit(Math.trunc(intervalMs))}`;
    const rows = await this.#db
      .selectFrom('events as e')
      .select([bucket.as('bucket'), sql<number | string>`count(*)`.as('n')])
      .where(historyConditions(accountId, { ...query, from: undefined, to: undefined }, high))
      .where('e.seq', '>=', low)
      .where('e.time', '>=', from)
      .where('e.time', '<=', to)
      .$if(query.endpointId !== undefined, (q) => q.where('e.endpoint_id', '=', query.endpointId!))
      .groupBy(bucket)
      .execute();
    return rows.map((row) => ({ bucket: Number(row.bucket), count: Number(row.n) }));
  }

  async deleteOlderThan(time: number): Promise<number> {
    // Events are numbered in the order they were accepted, which is the order of their times: the old ones
    // are the lowest seqs, up to the first event kept (not past retention, or not yet handled). Found by
    // walking the primary key through the old rows only, so `time` needs no index of its own (migration 0017).
    const handled = await this.#cursor('bus');
    const kept = await this.#db.selectFrom('events').select('seq').where('seq', '<=', handled).where('time', '>=', time).orderBy('seq').limit(1).executeTakeFirst();
    const bound = kept ? Number(kept.seq) : handled + 1;
    const deleted = await deleteSeqsBelow(this.#db, 'events', bound);
    if (deleted > 0) await this.#dropIndexedBelow(bound);
    return deleted;
  }

  /**
   * The by-endpoint index rows of deleted events, endpoint by endpoint: each a range of its primary key
   * (searches skip rows whose event is gone in any case, as they join the events).
   */
  async #dropIndexedBelow(bound: number): Promise<void> {
    let after = '';
    for (let n = 1; ; n++) {
      const next = await this.#db.selectFrom('event_endpoints').select('endpoint_id').where('endpoint_id', '>', after).orderBy('endpoint_id').limit(1).executeTakeFirst();
      if (!next) return;
      after = next.endpoint_id;
      await this.#db.deleteFrom('event_endpoints').where('endpoint_id', '=', after).where('seq', '<', bound).execute();
      if (n % 100 === 0) await setImmediate();
    }
  }
}

/** The conditions of a history search on `events as e`, the account's always first. */
function historyConditions(accountId: string, query: HistoryQuery, beforeSeq: number | undefined) {
  return (eb: ExpressionBuilder<{ e: EventsTable }, 'e'>): Expression<SqlBool> => {
    const conditions: Expression<SqlBool>[] = [eb('e.account_id', '=', accountId)];
    if (beforeSeq !== undefined) conditions.push(eb('e.seq', '<', beforeSeq));
    if (query.types && query.types.length > 0) conditions.push(eb('e.type', 'in', query.types));
    if (query.serviceId !== undefined) conditions.push(eb('e.service_id', '=', query.serviceId));
    if (query.from !== undefined) conditions.push(eb('e.time', '>=', toMs(query.from)));
    if (query.to !== undefined) conditions.push(eb('e.time', '<=', toMs(query.to)));
    return eb.and(conditions);
  };
}

/**
 * Inserts events into the history (and so the queue); returns their seqs in the events' order. `trx`: a transaction
 * (SQLite may take several statements), or on PostgreSQL also the database itself (one statement).
 */
export async function insertEvents(trx: Kysely<Schema>, events: readonly Event[]): Promise<number[]> {
  if (events.length === 0) return [];
  if (onPostgres(trx)) return insertAsArrays(trx, events);
  const rows = await insertAsValues(trx, events);
  // RETURNING order is not promised for multi-row inserts: map back by id.
  const seqById = new Map(rows.map((row) => [row.id, Number(row.seq)]));
  return events.map((event) => seqById.get(event.id)!);
}

/**
 * PostgreSQL: one statement of the same short text whatever the number of events, each column one array. A
 * `VALUES` list of 9 parameters a row is built, sent and parsed anew for every batch: 500 events took 31–40 µs an
 * event that way against 23–24 µs, 100 events 45–51 against 39–40 (docs/performance.md, session 28).
 *
 * The rows reach the insert in the events' order (`order by ord`), so each takes its seq from the sequence after the
 * one before: the seqs returned, whatever order RETURNING gives them in, sorted are the events' in order. Only the
 * seqs come back, no id to read and look up per row (docs/performance.md, session 34). Prepared by name: the same text
 * every batch (src/store/pg-prepared.ts).
 */
async function insertAsArrays(trx: Kysely<Schema>, events: readonly Event[]): Promise<number[]> {
  const column = <T>(value: (event: Event) => T) => events.map(value);
  const result = await sql<{ seq: string }>`${sql.raw(prepared('insert-events'))}insert into events (id, account_id, type, service_id, endpoint_id, endpoint_key, time, data, bus_shard)
    select id, account_id, type, service_id, endpoint_id, endpoint_key, time, data::jsonb, bus_shard
    from unnest(${textArray(column((e) => e.id))}::text[], ${textArray(column((e) => e.accountId))}::text[], ${textArray(column((e) => e.type))}::text[],
      ${textArray(column((e) => e.serviceId))}::text[], ${textArray(column((e) => e.endpointId))}::text[], ${textArray(column((e) => e.endpointKey))}::text[],
      ${int8Array(column((e) => toMs(e.time)))}::bigint[], ${textArray(column(dataJsonOf))}::text[], ${int2Array(column(shardOf))}::smallint[])
      with ordinality as t(id, account_id, type, service_id, endpoint_id, endpoint_key, time, data, bus_shard, ord)
    order by ord
    returning seq`.execute(trx);
  const seqs = result.rows.map((row) => Number(row.seq));
  return seqs.sort((a, b) => a - b);
}

/** SQLite: multi-row VALUES, in chunks that keep each statement under its bound-parameter limit. */
async function insertAsValues(trx: Kysely<Schema>, events: readonly Event[]): Promise<{ seq: number | string; id: string }[]> {
  const rows: { seq: number | string; id: string }[] = [];
  for (let i = 0; i < events.length; i += 500) {
    const chunk = events.slice(i, i + 500);
    const inserted = await trx
      .insertInto('events')
      .values(
        chunk.map((event) => ({
          id: event.id,
          account_id: event.accountId,
          type: event.type,
          service_id: event.serviceId,
          endpoint_id: event.endpointId,
          endpoint_key: event.endpointKey,
          time: toMs(event.time),
          data: dataJsonOf(event),
          bus_shard: shardOf(event),
        })),
      )
      .returning(['seq', 'id'])
      .execute();
    rows.push(...inserted);
  }
  return rows;
}

export function toStored(row: Selectable<EventsTable>): StoredEvent {
  const event: Event = {
    id: row.id,
    type: row.type,
    accountId: row.account_id,
    serviceId: row.service_id,
    endpointId: row.endpoint_id,
    endpointKey: row.endpoint_key,
    time: toIso(row.time),
    data: fromJson<unknown>(row.data),
  };
  // Both dialects hand JSON over as text (database.ts): the data's JSON need not be made again for a script.
  if (typeof row.data === 'string') rememberDataJson(event, row.data);
  return { seq: Number(row.seq), event };
}
