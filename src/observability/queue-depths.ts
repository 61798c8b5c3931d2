import type { Kysely } from 'kysely';
import type { Schema } from '../store/schema.js';

export interface QueueDepth {
  readonly queue: 'lwm2m' | 'udp' | 'mqtt';
  readonly depth: number;
}

/**
 * What waits for devices, counted where it is kept (each of these queues is durable), at each scrape:
 * `lwm2m` held requests (lwm2m_queue: asynchronous API requests, `lwm2m.proxy_send`, requests with a context;
 * a synchronous API call waiting for a sleeping device is not held there), `udp` unexpired `udp.queue`
 * messages, `mqtt` QoS 1/2 messages queued for persistent sessions (offline or not acknowledged yet). Each is
 * bounded per device (100, the udp.queue limit, 1000), and a count of an indexed table is cheap at scrape intervals.
 */
export async function deviceQueueDepths(db: Kysely<Schema>, now = Date.now()): Promise<QueueDepth[]> {
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
