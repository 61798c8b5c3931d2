import type { Kysely, Selectable } from 'kysely';
import type { DeviceQueueStore, HeldRequest } from '../lwm2m/queue-store.js';
import { fromJson, toJson, type Lwm2mQueueTable, type Schema } from './schema.js';

/** Held requests in the service's database (migration 0025): a write when one is made and when it ends. */
export class SqlDeviceQueueStore implements DeviceQueueStore {
  readonly #db: Kysely<Schema>;
  /** Orders requests made within one millisecond. */
  #seq = 0;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async all(): Promise<HeldRequest[]> {
    return (await this.#db.selectFrom('lwm2m_queue').selectAll().orderBy('endpoint_id').orderBy('seq').execute()).map(toHeld);
  }

  async ofEndpoint(endpointId: string): Promise<HeldRequest[]> {
    return (await this.#db.selectFrom('lwm2m_queue').selectAll().where('endpoint_id', '=', endpointId).orderBy('seq').execute()).map(toHeld);
  }

  async expiredBefore(before: number, limit: number): Promise<HeldRequest[]> {
    return (await this.#db.selectFrom('lwm2m_queue').selectAll().where('expires_at', '<', before).orderBy('expires_at').limit(limit).execute()).map(toHeld);
  }

  async add(held: HeldRequest): Promise<void> {
    this.#seq = Math.max(this.#seq + 1, held.createdAt * 1000);
    await this.#db
      .insertInto('lwm2m_queue')
      .values({
        id: held.id,
        account_id: held.accountId,
        endpoint_id: held.endpointId,
        seq: this.#seq,
        kind: held.kind,
        request: toJson(held.request),
        context: toJson(held.context),
        created_at: held.createdAt,
        expires_at: held.expiresAt,
      })
      .execute();
  }

  async remove(id: string): Promise<void> {
    await this.#db.deleteFrom('lwm2m_queue').where('id', '=', id).execute();
  }
}

function toHeld(row: Selectable<Lwm2mQueueTable>): HeldRequest {
  return {
    id: row.id,
    accountId: row.account_id,
    endpointId: row.endpoint_id,
    kind: row.kind === 'proxy' ? 'proxy' : 'queued',
    request: fromJson<HeldRequest['request']>(row.request),
    context: fromJson<unknown>(row.context),
    createdAt: Number(row.created_at),
    expiresAt: Number(row.expires_at),
  };
}
