import { sql, type Kysely, type Selectable } from 'kysely';
import type { Event } from '../events/event.js';
import type { EventStore, HistoryQuery, StoredEvent } from '../events/event-store.js';
import { fromJson, toJson, type EventsTable, type Schema } from './schema.js';
import type { SqliteHotPath } from './sqlite-hot-path.js';
import { toIso, toMs } from './sql.js';

export class SqlEventStore implements EventStore {
  readonly #db: Kysely<Schema>;
  readonly #hot: SqliteHotPath | undefined;

  constructor(db: Kysely<Schema>, hot?: SqliteHotPath) {
    this.#db = db;
    this.#hot = hot;
  }

  async accept(events: readonly Event[]): Promise<number[]> {
    if (this.#hot) return this.#hot.accept(events);
    return this.#db.transaction().execute(async (trx) => {
      const seqs: number[] = [];
      // Chunks keep each statement under SQLite's and PostgreSQL's bound-parameter limits.
      for (let i = 0; i < events.length; i += 500) {
        const chunk = events.slice(i, i + 500);
        const rows = await trx
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
              data: toJson(event.data),
            })),
          )
          .returning(['seq', 'id'])
          .execute();
        // RETURNING order is not promised for multi-row inserts: map back by id.
        const seqById = new Map(rows.map((row) => [row.id, Number(row.seq)]));
        const chunkSeqs = chunk.map((event) => seqById.get(event.id)!);
        seqs.push(...chunkSeqs);
      }
      return seqs;
    });
  }

  async pending(afterSeq: number, limit: number): Promise<StoredEvent[]> {
    const rows = await this.#db.selectFrom('events').selectAll().where('seq', '>', afterSeq).orderBy('seq').limit(limit).execute();
    return rows.map(toStored);
  }

  async handledThrough(): Promise<number> {
    const row = await this.#db.selectFrom('event_cursor').select('handled_through').where('name', '=', 'bus').executeTakeFirst();
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
    let q = this.#db.selectFrom('events').selectAll().where('account_id', '=', accountId);
    if (beforeSeq !== undefined) q = q.where('seq', '<', beforeSeq);
    if (query.types && query.types.length > 0) q = q.where('type', 'in', query.types);
    if (query.endpointId !== undefined) q = q.where('endpoint_id', '=', query.endpointId);
    if (query.serviceId !== undefined) q = q.where('service_id', '=', query.serviceId);
    if (query.from !== undefined) q = q.where('time', '>=', toMs(query.from));
    if (query.to !== undefined) q = q.where('time', '<=', toMs(query.to));
    const rows = await q.orderBy('seq', 'desc').limit(limit).execute();
    return rows.map(toStored);
  }

  async get(accountId: string, id: string): Promise<Event | undefined> {
    const row = await this.#db.selectFrom('events').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    return row && toStored(row).event;
  }

  async deleteOlderThan(time: number): Promise<number> {
    const result = await this.#db
      .deleteFrom('events')
      .where('time', '<', time)
      .where('seq', '<=', this.#db.selectFrom('event_cursor').select('handled_through').where('name', '=', 'bus'))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

function toStored(row: Selectable<EventsTable>): StoredEvent {
  return {
    seq: Number(row.seq),
    event: {
      id: row.id,
      type: row.type,
      accountId: row.account_id,
      serviceId: row.service_id,
      endpointId: row.endpoint_id,
      endpointKey: row.endpoint_key,
      time: toIso(row.time),
      data: fromJson<unknown>(row.data),
    },
  };
}
