import type { Kysely } from 'kysely';
import type { MqttSessionStore, SessionSnapshot, StoredPacket, StoredSession, StoredSubscription } from '../mqtt/session-store.js';
import type { Schema } from './schema.js';
import { precompiled } from './sql.js';

function encode(packet: StoredPacket): string {
  return JSON.stringify({ topic: packet.topic, payload: packet.payload.toString('base64'), qos: packet.qos, retain: packet.retain, dup: packet.dup === true });
}

function decode(text: string, extra: Partial<StoredPacket> = {}): StoredPacket {
  const raw = JSON.parse(text) as { topic: string; payload: string; qos: 0 | 1 | 2; retain: boolean; dup: boolean };
  return { topic: raw.topic, payload: Buffer.from(raw.payload, 'base64'), qos: raw.qos, retain: raw.retain, dup: raw.dup, ...extra };
}

/** What a queued message is restored from. */
const OUTGOING = ['broker_id', 'broker_counter', 'message_id', 'released', 'packet'] as const;

function decodeOutgoing(row: { broker_id: string; broker_counter: number | string; message_id: number | null; released: number; packet: string }): StoredPacket {
  // PostgreSQL hands bigint over as text.
  return decode(row.packet, { brokerId: row.broker_id, brokerCounter: Number(row.broker_counter), messageId: row.message_id ?? undefined, released: row.released === 1 });
}

/** The columns of a stored subscription (migration 0048 added the MQTT 5 options). */
const SUBSCRIPTION = ['topic', 'qos', 'no_local', 'retain_handling'] as const;

function decodeSubscription(row: { topic: string; qos: number; no_local: number; retain_handling: number }): StoredSubscription {
  const subscription: StoredSubscription = { topic: row.topic, qos: row.qos as 0 | 1 | 2 };
  // MQTT 3.1.1 subscriptions (and MQTT 5 ones with default options) keep the shape aedes gives them.
  if (row.no_local === 0 && row.retain_handling === 0) return subscription;
  return { ...subscription, nl: row.no_local === 1, rh: row.retain_handling as 0 | 1 | 2 };
}

/** MQTT session state in the service's database (migration 0013), one service's broker at a time. */
export class SqlMqttSessionStore implements MqttSessionStore {
  readonly #db: Kysely<Schema>;
  // Run at every log-in (a reconnecting fleet: thousands a second): compiled once.
  readonly #takeExpiry;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
    this.#takeExpiry = precompiled(db, db.deleteFrom('mqtt_session_expiry').where('service_id', '=', '').where('client_id', '=', '').returning('expires_at'));
  }

  async load(serviceId: string): Promise<SessionSnapshot> {
    const [retained, subscriptions, outgoing, incoming] = await Promise.all([
      this.#db.selectFrom('mqtt_retained').select(['packet']).where('service_id', '=', serviceId).execute(),
      this.#db.selectFrom('mqtt_subscriptions').select(['client_id', ...SUBSCRIPTION]).where('service_id', '=', serviceId).execute(),
      this.#db.selectFrom('mqtt_outgoing').select(['client_id', ...OUTGOING]).where('service_id', '=', serviceId).orderBy('seq').execute(),
      this.#db.selectFrom('mqtt_incoming').select(['client_id', 'message_id', 'packet']).where('service_id', '=', serviceId).execute(),
    ]);
    return {
      retained: retained.map((row) => decode(row.packet)),
      subscriptions: groupBy(subscriptions, decodeSubscription),
      outgoing: groupBy(outgoing, decodeOutgoing),
      incoming: groupBy(incoming, (row) => decode(row.packet, { messageId: row.message_id })),
    };
  }

  async loadSession(serviceId: string, clientId: string): Promise<StoredSession> {
    const [subscriptions, outgoing, incoming] = await Promise.all([
      this.subscriptionsOf(serviceId, clientId),
      this.#db.selectFrom('mqtt_outgoing').select(OUTGOING).where('service_id', '=', serviceId).where('client_id', '=', clientId).orderBy('seq').execute(),
      this.#db.selectFrom('mqtt_incoming').select(['message_id', 'packet']).where('service_id', '=', serviceId).where('client_id', '=', clientId).execute(),
    ]);
    return {
      subscriptions,
      outgoing: outgoing.map(decodeOutgoing),
      incoming: incoming.map((row) => decode(row.packet, { messageId: row.message_id })),
    };
  }

  async subscriptionsOf(serviceId: string, clientId: string): Promise<StoredSubscription[]> {
    const rows = await this.#db.selectFrom('mqtt_subscriptions').select(SUBSCRIPTION).where('service_id', '=', serviceId).where('client_id', '=', clientId).execute();
    return rows.map(decodeSubscription);
  }

  async getRetained(serviceId: string, topic: string): Promise<StoredPacket | undefined> {
    const row = await this.#db.selectFrom('mqtt_retained').select(['packet']).where('service_id', '=', serviceId).where('topic', '=', topic).executeTakeFirst();
    return row && decode(row.packet);
  }

  async queuedCounts(serviceId: string, clientIds: readonly string[]): Promise<Map<string, number>> {
    if (clientIds.length === 0) return new Map();
    const rows = await this.#db
      .selectFrom('mqtt_outgoing')
      .select((eb) => ['client_id', eb.fn.countAll<string | number>().as('queued')])
      .where('service_id', '=', serviceId)
      .where('client_id', 'in', clientIds)
      .groupBy('client_id')
      .execute();
    return new Map(rows.map((row) => [row.client_id, Number(row.queued)]));
  }

  async putRetained(serviceId: string, packet: StoredPacket): Promise<void> {
    await this.#db
      .insertInto('mqtt_retained')
      .values({ service_id: serviceId, topic: packet.topic, packet: encode(packet) })
      .onConflict((oc) => oc.columns(['service_id', 'topic']).doUpdateSet({ packet: encode(packet) }))
      .execute();
  }

  async deleteRetained(serviceId: string, topic: string): Promise<void> {
    await this.#db.deleteFrom('mqtt_retained').where('service_id', '=', serviceId).where('topic', '=', topic).execute();
  }

  async addSubscriptions(serviceId: string, clientId: string, subscriptions: readonly StoredSubscription[]): Promise<void> {
    if (subscriptions.length === 0) return;
    // A topic given twice: the last one counts, as in aedes' memory (PostgreSQL refuses to upsert one row twice in a statement).
    const byTopic = new Map(subscriptions.map((s) => [s.topic, s]));
    await this.#db
      .insertInto('mqtt_subscriptions')
      .values(
        [...byTopic.values()].map((s) => ({
          service_id: serviceId,
          client_id: clientId,
          topic: s.topic,
          qos: s.qos,
          no_local: s.nl ? 1 : 0,
          retain_handling: s.rh ?? 0,
        })),
      )
      .onConflict((oc) =>
        oc.columns(['service_id', 'client_id', 'topic']).doUpdateSet((eb) => ({
          qos: eb.ref('excluded.qos'),
          no_local: eb.ref('excluded.no_local'),
          retain_handling: eb.ref('excluded.retain_handling'),
        })),
      )
      .execute();
  }

  async removeSubscriptions(serviceId: string, clientId: string, topics: readonly string[]): Promise<void> {
    if (topics.length === 0) return;
    await this.#db.deleteFrom('mqtt_subscriptions').where('service_id', '=', serviceId).where('client_id', '=', clientId).where('topic', 'in', topics).execute();
  }

  async deleteSession(serviceId: string, clientId: string): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      for (const table of ['mqtt_subscriptions', 'mqtt_outgoing', 'mqtt_incoming'] as const) {
        await trx.deleteFrom(table).where('service_id', '=', serviceId).where('client_id', '=', clientId).execute();
      }
    });
  }

  async setExpiry(serviceId: string, clientId: string, expiresAt: number): Promise<void> {
    await this.#db
      .insertInto('mqtt_session_expiry')
      .values({ service_id: serviceId, client_id: clientId, expires_at: expiresAt })
      .onConflict((oc) => oc.columns(['service_id', 'client_id']).doUpdateSet({ expires_at: expiresAt }))
      .execute();
  }

  async takeExpiry(serviceId: string, clientId: string): Promise<number | undefined> {
    const [row] = await this.#takeExpiry([serviceId, clientId]);
    // PostgreSQL hands bigint over as text.
    return row ? Number(row.expires_at) : undefined;
  }

  async clearExpiry(serviceId: string, clientId: string): Promise<void> {
    await this.#db.deleteFrom('mqtt_session_expiry').where('service_id', '=', serviceId).where('client_id', '=', clientId).execute();
  }

  async expiredSessions(serviceId: string, now: number): Promise<string[]> {
    const rows = await this.#db.selectFrom('mqtt_session_expiry').select(['client_id']).where('service_id', '=', serviceId).where('expires_at', '<=', now).execute();
    return rows.map((row) => row.client_id);
  }

  async enqueue(serviceId: string, clientIds: readonly string[], packet: StoredPacket & { brokerId: string; brokerCounter: number }): Promise<void> {
    if (clientIds.length === 0) return;
    const text = encode(packet);
    await this.#db
      .insertInto('mqtt_outgoing')
      .values(clientIds.map((clientId) => ({ service_id: serviceId, client_id: clientId, broker_id: packet.brokerId, broker_counter: packet.brokerCounter, message_id: null, packet: text })))
      .execute();
  }

  async setMessageId(serviceId: string, clientId: string, brokerId: string, brokerCounter: number, messageId: number, released: boolean): Promise<void> {
    await this.#db
      .updateTable('mqtt_outgoing')
      .set({ message_id: messageId, released: released ? 1 : 0 })
      .where('service_id', '=', serviceId)
      .where('client_id', '=', clientId)
      .where('broker_id', '=', brokerId)
      .where('broker_counter', '=', brokerCounter)
      .execute();
  }

  async dequeue(serviceId: string, clientId: string, brokerId: string, brokerCounter: number): Promise<void> {
    await this.#db
      .deleteFrom('mqtt_outgoing')
      .where('service_id', '=', serviceId)
      .where('client_id', '=', clientId)
      .where('broker_id', '=', brokerId)
      .where('broker_counter', '=', brokerCounter)
      .execute();
  }

  async putIncoming(serviceId: string, clientId: string, packet: StoredPacket & { messageId: number }): Promise<void> {
    await this.#db
      .insertInto('mqtt_incoming')
      .values({ service_id: serviceId, client_id: clientId, message_id: packet.messageId, packet: encode(packet) })
      .onConflict((oc) => oc.columns(['service_id', 'client_id', 'message_id']).doUpdateSet({ packet: encode(packet) }))
      .execute();
  }

  async deleteIncoming(serviceId: string, clientId: string, messageId?: number): Promise<void> {
    let query = this.#db.deleteFrom('mqtt_incoming').where('service_id', '=', serviceId).where('client_id', '=', clientId);
    if (messageId !== undefined) query = query.where('message_id', '=', messageId);
    await query.execute();
  }
}

function groupBy<R extends { client_id: string }, T>(rows: readonly R[], map: (row: R) => T): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const group = groups.get(row.client_id);
    if (group) group.push(map(row));
    else groups.set(row.client_id, [map(row)]);
  }
  return groups;
}
