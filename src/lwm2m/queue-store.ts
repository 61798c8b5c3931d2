import type { Kysely } from 'kysely';
import type { Schema } from '../store/schema.js';
import { fromJson, toJson } from '../store/schema.js';
import type { OperationRequest } from './operations.js';

/** `queued`: purged by the device's next registration (SPEC States); `proxy`: waits through it until it expires. */
export type HeldKind = 'queued' | 'proxy';

/** A request held for a device whose outcome becomes an `lwm2m-result` event: enough to send it after a restart. */
export interface HeldRequest {
  readonly id: string;
  readonly accountId: string;
  readonly endpointId: string;
  readonly kind: HeldKind;
  /** The operation (`timeoutMs`: how long each attempt waits for the device's answer). */
  readonly request: Omit<OperationRequest, 'queueTimeoutMs' | 'directToQueue'>;
  readonly context: unknown;
  /** Epoch ms. */
  readonly createdAt: number;
  readonly expiresAt: number;
}

/** Where held requests wait across restarts (as Leshan keeps its queue apart from the server). */
export interface DeviceQueueStore {
  /** Every held request, per device in the order they were made. */
  all(): Promise<HeldRequest[]>;
  add(held: HeldRequest): Promise<void>;
  remove(id: string): Promise<void>;
}

/** Held requests in the service's database (migration 0025): a write when one is made and when it ends. */
export class SqlDeviceQueueStore implements DeviceQueueStore {
  readonly #db: Kysely<Schema>;
  /** Orders requests made within one millisecond. */
  #seq = 0;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async all(): Promise<HeldRequest[]> {
    const rows = await this.#db.selectFrom('lwm2m_queue').selectAll().orderBy('endpoint_id').orderBy('seq').execute();
    return rows.map((row) => ({
      id: row.id,
      accountId: row.account_id,
      endpointId: row.endpoint_id,
      kind: row.kind === 'proxy' ? 'proxy' : 'queued',
      request: fromJson<HeldRequest['request']>(row.request),
      context: fromJson<unknown>(row.context),
      createdAt: Number(row.created_at),
      expiresAt: Number(row.expires_at),
    }));
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
