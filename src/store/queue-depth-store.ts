import type { Kysely } from 'kysely';
import type { QueueDepth, QueueDepthStore } from '../observability/queue-depths.js';
import type { Schema } from './schema.js';

/**
 * Counts the rows of each queue's table: each is bounded per device (100, the udp.queue limit, 1000), and a
 * count of an indexed table is cheap at scrape intervals.
 */
export class SqlQueueDepthStore implements QueueDepthStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async deviceQueueDepths(now = Date.now()): Promise<QueueDepth[]> {
    const db = this.#db;
    const [lwm2m, udp, mqtt] = await Promise.all([
      db.selectFrom('lwm2m_queue').select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst(),
      db.selectFrom('udp_queue').where('expires_at', '>', now).select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst(),
      db.selectFrom('mqtt_outgoing').select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirst(),
    ]);
    return [
      { queue: 'lwm2m', depth: Number(lwm2m?.n ?? 0) },
      { queue: 'udp', depth: Number(udp?.n ?? 0) },
      { queue: 'mqtt', depth: Number(mqtt?.n ?? 0) },
    ];
  }
}
