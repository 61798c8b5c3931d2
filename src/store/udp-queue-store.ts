import type { Kysely } from 'kysely';
import type { UdpQueueStore } from '../udp/udp-queue.js';
import type { Schema } from './schema.js';

/** Payloads are kept as base64 text: one column type on both dialects. */
export class SqlUdpQueueStore implements UdpQueueStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async put(endpointId: string, payload: Buffer, expiresAt: number, limit: number, now: number): Promise<number | undefined> {
    return this.#db.transaction().execute(async (trx) => {
      const row = await trx
        .selectFrom('udp_queue')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('endpoint_id', '=', endpointId)
        .where('expires_at', '>', now)
        .executeTakeFirstOrThrow();
      const held = Number(row.n);
      if (held >= limit) return undefined;
      await trx.insertInto('udp_queue').values({ endpoint_id: endpointId, payload: payload.toString('base64'), expires_at: expiresAt }).execute();
      return held + 1;
    });
  }

  async takeAll(endpointId: string, now: number): Promise<Buffer[]> {
    // Every datagram asks; almost always there is nothing, and a read costs less than a delete.
    const any = await this.#db.selectFrom('udp_queue').select('seq').where('endpoint_id', '=', endpointId).limit(1).executeTakeFirst();
    if (!any) return [];
    // One statement takes them: two processes receiving from the device never both send a message.
    const rows = await this.#db.deleteFrom('udp_queue').where('endpoint_id', '=', endpointId).returning(['seq', 'payload', 'expires_at']).execute();
    return rows
      .filter((row) => row.expires_at > now)
      .sort((a, b) => a.seq - b.seq)
      .map((row) => Buffer.from(row.payload, 'base64'));
  }

  async purgeExpired(now: number): Promise<number> {
    const result = await this.#db.deleteFrom('udp_queue').where('expires_at', '<=', now).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
