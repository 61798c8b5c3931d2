import type { Aedes, AedesPublishPacket, Client, Subscription } from 'aedes';
import type { AedesPacket } from 'aedes-packet';
import MemoryPersistence from 'aedes-persistence/asyncPersistence.js';
import type { Logger } from 'pino';
import type { MqttSessionStore, StoredPacket, StoredSubscription } from './session-store.js';

/** Messages held for one offline persistent session at most; newer ones are dropped (as Mosquitto's max_queued_messages). */
export const MAX_QUEUED_PER_SESSION = 1000;

type ClientRef = Pick<Client, 'id'> & { clean?: boolean };

/** How a broker's persistence tells the other nodes of a cluster what they must reload (docs/cluster.md, "MQTT"). */
export interface PersistenceNotices {
  notify(topic: 'mqtt-subscriptions' | 'mqtt-retained', key: string): void;
}

/**
 * aedes' in-memory persistence (it does the matching, ordering and packet-id bookkeeping) with every change
 * that must outlive the process written through to the database first: retained messages, and for
 * persistent sessions (clean session 0) their subscriptions, queued QoS 1/2 messages and unreleased
 * QoS 2 messages. Each write is awaited, so what the broker acknowledges is stored. At start the stored
 * state is replayed into memory.
 *
 * In a cluster (`notices` given) every node's broker of the service shares the database: all nodes hold every
 * persistent session's subscriptions and the retained messages (reloaded when another node says they changed),
 * but a session's queued and half-received messages only where its device is connected (`hold`, loaded from
 * the database then). A message for a session held elsewhere is queued in the database alone; the node holding
 * it delivers it as it hears it from the other node.
 */
export class DurablePersistence extends MemoryPersistence {
  readonly #store: MqttSessionStore;
  readonly #serviceId: string;
  readonly #logger: Logger;
  /** Client ids of persistent sessions: only their state is written. */
  readonly #durable = new Set<string>();
  /** Messages queued per session (in memory and, for persistent ones, stored). */
  readonly #queued = new Map<string, number>();
  readonly #notices: PersistenceNotices | undefined;
  /** Cluster only: sessions whose messages this node holds in memory, with how many connections hold each. */
  readonly #held = new Map<string, number>();
  /**
   * Persistent sessions' queued messages already sent, by client and message identity, with the packet id they went
   * with: the broker sends such a message again at a reconnection, and a PUBLISH sent again carries DUP (MQTT-3.3.1-1).
   */
  readonly #sent = new Map<string, Map<string, number>>();

  constructor(store: MqttSessionStore, serviceId: string, logger: Logger, notices?: PersistenceNotices) {
    super();
    this.#store = store;
    this.#serviceId = serviceId;
    this.#logger = logger;
    this.#notices = notices;
  }

  override async setup(broker: Aedes): Promise<void> {
    await super.setup(broker);
    const snapshot = await this.#store.load(this.#serviceId);
    for (const packet of snapshot.retained) await super.storeRetained(asAedesPacket(packet));
    for (const [clientId, subscriptions] of snapshot.subscriptions) {
      this.#durable.add(clientId);
      await super.addSubscriptions(asClient(clientId), subscriptions.map(subscriptionOf));
    }
    // A cluster node loads a session's messages when its device connects here (hold).
    if (this.#notices) return;
    for (const [clientId, packets] of snapshot.outgoing) {
      this.#durable.add(clientId);
      for (const packet of packets) await this.#restoreQueued(clientId, packet);
      this.#queued.set(clientId, packets.length);
    }
    for (const [clientId, packets] of snapshot.incoming) {
      for (const packet of packets) await super.incomingStorePacket(asClient(clientId), asAedesPacket(packet));
    }
  }

  /**
   * Cluster only: the device of a persistent session connects to this node; its session as stored is loaded
   * (another node may have changed it). Returns what to call when that connection ends.
   */
  async hold(clientId: string): Promise<() => void> {
    if (!this.#notices) return () => undefined;
    this.#held.set(clientId, (this.#held.get(clientId) ?? 0) + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const holders = (this.#held.get(clientId) ?? 1) - 1;
      if (holders > 0) return void this.#held.set(clientId, holders);
      this.#held.delete(clientId);
      void this.#dropMessages(clientId);
    };
    try {
      const stored = await this.#store.loadSession(this.#serviceId, clientId);
      await this.#replaceSubscriptions(clientId, stored.subscriptions);
      await this.#dropMessages(clientId);
      for (const packet of stored.outgoing) await this.#restoreQueued(clientId, packet);
      this.#queued.set(clientId, stored.outgoing.length);
      for (const packet of stored.incoming) await super.incomingStorePacket(asClient(clientId), asAedesPacket(packet));
      if (stored.outgoing.length > 0 || stored.incoming.length > 0) this.#durable.add(clientId);
    } catch (error) {
      release();
      throw error;
    }
    return release;
  }

  /** Cluster: another node changed the subscriptions of `clientId`. */
  async reloadSubscriptions(clientId: string): Promise<void> {
    await this.#replaceSubscriptions(clientId, await this.#store.subscriptionsOf(this.#serviceId, clientId));
  }

  /** Cluster: another node changed the retained message of `topic`. */
  async reloadRetained(topic: string): Promise<void> {
    const stored = await this.#store.getRetained(this.#serviceId, topic);
    await super.storeRetained(stored ? asAedesPacket(stored) : asAedesPacket({ topic, payload: Buffer.alloc(0), qos: 0, retain: true }));
  }

  async #replaceSubscriptions(clientId: string, subscriptions: readonly StoredSubscription[]): Promise<void> {
    await super.cleanSubscriptions(asClient(clientId));
    if (subscriptions.length > 0) {
      this.#durable.add(clientId);
      await super.addSubscriptions(asClient(clientId), subscriptions.map(subscriptionOf));
    } else if (!this.#held.has(clientId)) {
      this.#durable.delete(clientId);
    }
  }

  /**
   * Queues a stored message in memory again with the packet id it was sent with: the in-memory queue's enqueue
   * clears the id of a QoS 1/2 packet, and a resend must use the original one (MQTT-4.4.0-1). A released QoS 2
   * message comes back as its PUBREL, which the broker sends again at the device's next connection instead of the
   * PUBLISH, as aedes' own PUBREC handler leaves it.
   */
  async #restoreQueued(clientId: string, stored: StoredPacket): Promise<void> {
    const packet = asAedesPacket(stored);
    await super.outgoingEnqueue({ clientId }, packet);
    if (stored.messageId === undefined) return;
    await super.outgoingUpdate(asClient(clientId), packet);
    this.#markSent(clientId, packet);
    if (!stored.released) return;
    const pubrel = { cmd: 'pubrel', messageId: stored.messageId } as unknown as AedesPacket;
    await super.outgoingUpdate(asClient(clientId), pubrel);
    carryIdentity(pubrel, packet);
  }

  /** Forgets a session's queued and half-received messages in memory (they stay stored). */
  async #dropMessages(clientId: string): Promise<void> {
    const client = asClient(clientId);
    await super.cleanIncoming(client);
    const queued: AedesPacket[] = [];
    for await (const packet of super.outgoingStream(client)) queued.push(packet as AedesPacket);
    // Each call removes the first queued packet with that packet id (or without one, for those never sent).
    for (const packet of queued) await super.outgoingClearMessageId(client, packet);
    this.#queued.delete(clientId);
    this.#sent.delete(clientId);
  }

  /** Whether `packet` was sent before with its packet id: remembered otherwise, for the next time (persistent sessions). */
  #markSent(clientId: string, packet: AedesPacket): boolean {
    let sent = this.#sent.get(clientId);
    if (!sent) this.#sent.set(clientId, (sent = new Map<string, number>()));
    const identity = identityOf(packet);
    if (sent.get(identity) === packet.messageId) return true;
    sent.set(identity, packet.messageId!);
    return false;
  }

  /** Whether this node holds the messages of `clientId`'s session in memory: always, outside a cluster. */
  #holds(clientId: string): boolean {
    return !this.#notices || this.#held.has(clientId);
  }

  #changedSubscriptions(clientId: string): void {
    this.#notices?.notify('mqtt-subscriptions', `${this.#serviceId} ${clientId}`);
  }

  /** Whether the session of `clientId` is kept across restarts. */
  isDurable(clientId: string): boolean {
    return this.#durable.has(clientId);
  }

  override async storeRetained(packet: AedesPacket): Promise<void> {
    const { payload, topic } = packet as AedesPublishPacket;
    if (payload.length === 0) await this.#store.deleteRetained(this.#serviceId, topic);
    else await this.#store.putRetained(this.#serviceId, fromAedesPacket(packet));
    await super.storeRetained(packet);
    this.#notices?.notify('mqtt-retained', `${this.#serviceId} ${topic}`);
  }

  override async addSubscriptions(client: Client, subs: Subscription[]): Promise<void> {
    if (!client.clean) {
      this.#durable.add(client.id);
      await this.#store.addSubscriptions(this.#serviceId, client.id, subs.map(subscriptionOf));
    }
    await super.addSubscriptions(client, subs);
    if (!client.clean) this.#changedSubscriptions(client.id);
  }

  override async removeSubscriptions(client: Client, topics: string[]): Promise<void> {
    const durable = this.#durable.has(client.id);
    if (durable) await this.#store.removeSubscriptions(this.#serviceId, client.id, topics);
    await super.removeSubscriptions(client, topics);
    if (durable) this.#changedSubscriptions(client.id);
  }

  /** A clean session starts (or a persistent one is given up): nothing of it is kept. */
  override async cleanSubscriptions(client: Client): Promise<void> {
    const durable = this.#durable.delete(client.id);
    if (durable) await this.#store.deleteSession(this.#serviceId, client.id);
    this.#queued.delete(client.id);
    this.#sent.delete(client.id);
    await super.cleanSubscriptions(client);
    if (durable) this.#changedSubscriptions(client.id);
  }

  override async outgoingEnqueue(sub: { clientId: string }, packet: AedesPacket): Promise<void> {
    await this.outgoingEnqueueCombi([sub], packet);
  }

  /**
   * Queues a message for the sessions of `subs` (their subscriptions that matched it), as the broker forwards one:
   * not to its own publisher when the subscription has No Local (MQTT-3.8.3-3; `packet.clientId` is the publisher,
   * set at authorizePublish), and with RETAIN 0, as for an established subscription (MQTT-3.3.1-9; aedes clears it
   * when it forwards a message live, and queued ones went out with the publisher's flag).
   */
  override async outgoingEnqueueCombi(subs: ({ clientId: string } & Pick<StoredSubscription, 'nl'>)[], packet: AedesPacket): Promise<void> {
    if (subs.length === 0) return;
    const publisher = (packet as { clientId?: string }).clientId;
    const wanted = publisher === undefined ? subs : subs.filter((sub) => !(sub.nl && sub.clientId === publisher));
    await this.#enqueue(wanted, (packet as AedesPublishPacket).retain ? ({ ...packet, retain: false } as AedesPacket) : packet);
  }

  async #enqueue(subs: readonly { clientId: string }[], packet: AedesPacket): Promise<void> {
    if (subs.length === 0) return;
    const elsewhere = subs.filter((sub) => !this.#holds(sub.clientId));
    if (elsewhere.length > 0) await this.#enqueueStoredOnly(elsewhere, packet);
    const accepted = subs.filter((sub) => {
      if (!this.#holds(sub.clientId)) return false;
      const queued = this.#queued.get(sub.clientId) ?? 0;
      if (queued < MAX_QUEUED_PER_SESSION) return true;
      this.#logger.warn({ clientId: sub.clientId, topic: (packet as AedesPublishPacket).topic, queued }, 'MQTT session queue full: message dropped for this session');
      return false;
    });
    const durable = accepted.filter((sub) => this.#durable.has(sub.clientId)).map((sub) => sub.clientId);
    if (durable.length > 0) {
      await this.#store.enqueue(this.#serviceId, durable, { ...fromAedesPacket(packet), brokerId: packet.brokerId, brokerCounter: packet.brokerCounter });
    }
    for (const sub of accepted) this.#queued.set(sub.clientId, (this.#queued.get(sub.clientId) ?? 0) + 1);
    await super.outgoingEnqueueCombi(accepted, packet);
  }

  /** Cluster: queues for sessions whose devices are away or on other nodes, in the database alone. */
  async #enqueueStoredOnly(subs: readonly { clientId: string }[], packet: AedesPacket): Promise<void> {
    const clientIds = subs.map((sub) => sub.clientId);
    const queued = await this.#store.queuedCounts(this.#serviceId, clientIds);
    const accepted = clientIds.filter((clientId) => {
      if ((queued.get(clientId) ?? 0) < MAX_QUEUED_PER_SESSION) return true;
      this.#logger.warn({ clientId, topic: (packet as AedesPublishPacket).topic }, 'MQTT session queue full: message dropped for this session');
      return false;
    });
    await this.#store.enqueue(this.#serviceId, accepted, { ...fromAedesPacket(packet), brokerId: packet.brokerId, brokerCounter: packet.brokerCounter });
  }

  override async outgoingUpdate(client: Client, packet: AedesPacket): Promise<void> {
    // A PUBREL (aedes' PUBREC handler) takes the place of the queued PUBLISH with its packet id and has no identity
    // of its own: it is given that message's, so the PUBCOMP's outgoingClearMessageId dequeues the stored message.
    const released = packet.cmd === 'pubrel' ? await this.#queuedWithId(client, packet.messageId) : undefined;
    try {
      await super.outgoingUpdate(client, packet);
    } catch (error) {
      // Cluster: queued by the node it was published on (stored there), delivered here; held from now on.
      if (!this.#notices || !this.#holds(client.id)) throw error;
      await super.outgoingEnqueue({ clientId: client.id }, packet);
      this.#queued.set(client.id, (this.#queued.get(client.id) ?? 0) + 1);
      await super.outgoingUpdate(client, packet);
    }
    // After the update: with the identity, the in-memory queue would have kept the PUBLISH instead of the PUBREL.
    if (released) carryIdentity(packet, released);
    if (packet.messageId === undefined || !this.#durable.has(client.id)) return;
    // The broker writes this very packet next: a resend at a reconnection (aedes keeps the stored DUP flag, false).
    if (packet.cmd === 'publish' && this.#markSent(client.id, packet)) packet.dup = true;
    await this.#store.setMessageId(this.#serviceId, client.id, packet.brokerId, packet.brokerCounter, packet.messageId, packet.cmd === 'pubrel');
  }

  /** The first of `client`'s queued packets with this packet id, in memory: the one a PUBREL replaces. */
  async #queuedWithId(client: Client, messageId: number | undefined): Promise<AedesPacket | undefined> {
    for await (const queued of super.outgoingStream(client)) if ((queued as AedesPacket).messageId === messageId) return queued as AedesPacket;
    return undefined;
  }

  override async outgoingClearMessageId(client: Client, packet: AedesPacket): Promise<AedesPacket> {
    const removed = await super.outgoingClearMessageId(client, packet);
    // The in-memory persistence answers undefined when the id is unknown (a duplicate PUBACK).
    if ((removed as AedesPacket | undefined) === undefined) return removed;
    this.#queued.set(client.id, Math.max(0, (this.#queued.get(client.id) ?? 1) - 1));
    this.#sent.get(client.id)?.delete(identityOf(removed));
    if (this.#durable.has(client.id)) await this.#store.dequeue(this.#serviceId, client.id, removed.brokerId, removed.brokerCounter);
    return removed;
  }

  override async incomingStorePacket(client: Client, packet: AedesPacket): Promise<void> {
    if (!client.clean && packet.messageId !== undefined) {
      await this.#store.putIncoming(this.#serviceId, client.id, { ...fromAedesPacket(packet), messageId: packet.messageId });
    }
    await super.incomingStorePacket(client, packet);
  }

  override async incomingDelPacket(client: Client, packet: AedesPacket): Promise<void> {
    await super.incomingDelPacket(client, packet);
    if (!client.clean) await this.#store.deleteIncoming(this.#serviceId, client.id, packet.messageId);
  }

  override async cleanIncoming(client: Client): Promise<void> {
    await super.cleanIncoming(client);
    if (!client.clean) await this.#store.deleteIncoming(this.#serviceId, client.id);
  }

  /** Whether a QoS 2 message with this packet id was received and not yet released (a resend). */
  async hasIncoming(client: Client, packet: AedesPacket): Promise<boolean> {
    return super.incomingGetPacket(client, packet).then(
      () => true,
      () => false,
    );
  }

  /**
   * Ends a session for good (MQTT 5 session expiry): its subscriptions, queued and half-received messages, in
   * memory and stored. Subscriptions go first, so nothing new is queued for it meanwhile.
   */
  async forgetSession(clientId: string): Promise<void> {
    this.#durable.delete(clientId);
    await super.cleanSubscriptions(asClient(clientId));
    await this.#dropMessages(clientId);
    await this.#store.deleteSession(this.#serviceId, clientId);
    this.#changedSubscriptions(clientId);
  }

  /** Adds a subscription to a session whose device is offline (the `mqtt.subscribe` namespace function). */
  async subscribeOffline(clientId: string, subscription: { topic: string; qos: 0 | 1 | 2 }): Promise<void> {
    await this.addSubscriptions(asClient(clientId, false), [subscription]);
  }
}

/**
 * Gives a PUBREL the identity of the message it releases (aedes' broker id and counter), by which the PUBCOMP
 * dequeues the stored message. Not enumerable: it is no field of the packet (aedes' persistence suite compares
 * queued PUBRELs as `{ cmd, messageId }`), only what this persistence reads back.
 */
function carryIdentity(pubrel: AedesPacket, message: Pick<AedesPacket, 'brokerId' | 'brokerCounter'>): void {
  Object.defineProperties(pubrel, {
    brokerId: { value: message.brokerId, enumerable: false, writable: true, configurable: true },
    brokerCounter: { value: message.brokerCounter, enumerable: false, writable: true, configurable: true },
  });
}

/** aedes' identity of a message: the broker that took it in and its number there. */
function identityOf(packet: Pick<AedesPacket, 'brokerId' | 'brokerCounter'>): string {
  return `${packet.brokerId} ${packet.brokerCounter}`;
}

/** A subscription as stored and as the broker holds it: MQTT 5 options only where the device set them. */
function subscriptionOf(subscription: StoredSubscription | Subscription): StoredSubscription {
  const { topic, qos, nl, rh } = subscription as StoredSubscription;
  return nl || rh ? { topic, qos, nl: nl === true, rh: rh ?? 0 } : { topic, qos };
}

function asClient(id: string, clean = false): Client {
  const client: ClientRef = { id, clean };
  return client as Client;
}

function asAedesPacket(packet: StoredPacket): AedesPacket {
  return { cmd: 'publish', dup: false, ...packet } as AedesPacket;
}

function fromAedesPacket(aedesPacket: AedesPacket): StoredPacket {
  const packet = aedesPacket as AedesPublishPacket;
  return { topic: packet.topic, payload: Buffer.from(packet.payload), qos: packet.qos, retain: packet.retain, dup: packet.dup };
}
