import type { Duplex } from 'node:stream';
import { Aedes, type AedesPublishPacket, type Client } from 'aedes';
import mqemitter from 'mqemitter';
import type { Logger } from 'pino';
import type { DeviceServerContext } from '../devices/device-server.js';
import type { Login, MqttService, Session } from './connected-device.js';
import { CONNECT_TIMEOUT_MS } from './connection-acceptor.js';
import { MQTT_SUBSCRIBE_EVENT, MQTT_UNSUBSCRIBE_EVENT, type DeviceActivity } from './device-activity.js';
import { DurablePersistence } from './durable-persistence.js';
import { REASON } from './mqtt5-adapter.js';
import { QuietEmitter } from './quiet-emitter.js';
import type { SessionExpiry } from './session-expiry.js';
import type { MqttSessionStore } from './session-store.js';
import { mayPublish, maySubscribe } from './topic-space.js';

/** A client's `duplicates` that remembers nothing (see preConnect). */
const NO_DUPLICATE_TRACKING: object = new Proxy({}, { get: () => undefined, set: () => true, deleteProperty: () => true });

/** Expired MQTT 5 sessions are looked for this often (and when a service's broker starts). */
const EXPIRY_SWEEP_MS = 15_000;

export interface ServiceBroker {
  readonly broker: Aedes;
  readonly persistence: DurablePersistence;
  readonly sweeper: NodeJS.Timeout;
}

export interface ServiceBrokersParts {
  readonly context: Pick<DeviceServerContext, 'cluster'>;
  readonly logger: Logger;
  readonly store: MqttSessionStore;
  /** Connected devices by endpoint id: the one a new connection takes over from hears why. */
  readonly sessions: ReadonlyMap<string, Session>;
  /** Logins waiting for their broker's preConnect, by the connection they came on (set by the connection acceptor). */
  readonly pending: WeakMap<Duplex, Login>;
  /** The log-in of each client let in, set here at preConnect. */
  readonly logins: WeakMap<Client, Login>;
  readonly activity: DeviceActivity;
  readonly expiry: SessionExpiry;
}

/**
 * One aedes broker per MQTT service (its own topic tree, sessions and retained messages), created on first
 * use. Its hooks keep each device in its topic space and turn what it does into device activity.
 */
export class ServiceBrokers {
  readonly #context: Pick<DeviceServerContext, 'cluster'>;
  readonly #logger: Logger;
  readonly #store: MqttSessionStore;
  readonly #sessions: ReadonlyMap<string, Session>;
  readonly #pending: WeakMap<Duplex, Login>;
  readonly #logins: WeakMap<Client, Login>;
  readonly #activity: DeviceActivity;
  readonly #expiry: SessionExpiry;
  readonly #brokers = new Map<string, Promise<ServiceBroker>>();

  constructor(parts: ServiceBrokersParts) {
    this.#context = parts.context;
    this.#logger = parts.logger;
    this.#store = parts.store;
    this.#sessions = parts.sessions;
    this.#pending = parts.pending;
    this.#logins = parts.logins;
    this.#activity = parts.activity;
    this.#expiry = parts.expiry;
  }

  /** Another node changed a session's subscriptions or a retained message ("<serviceId> <rest>"): reloaded if that broker runs here. */
  reload(key: string, step: (persistence: DurablePersistence, rest: string) => Promise<void>): void {
    const space = key.indexOf(' ');
    const broker = this.#brokers.get(key.slice(0, space));
    if (space < 0 || !broker) return;
    broker
      .then(({ persistence }) => step(persistence, key.slice(space + 1)))
      .catch((error: unknown) => this.#logger.warn({ err: error }, 'MQTT state another node changed could not be reloaded'));
  }

  /** The broker of a service, created (and its stored sessions restored) on first use. */
  broker(target: MqttService): Promise<ServiceBroker> {
    const existing = this.#brokers.get(target.service.id);
    if (existing) return existing;
    const created = this.#createBroker(target);
    this.#brokers.set(target.service.id, created);
    created.catch(() => this.#brokers.delete(target.service.id));
    return created;
  }

  /** Stops every broker's expiry sweep and closes the broker. */
  async close(): Promise<void> {
    const brokers = await Promise.allSettled(this.#brokers.values());
    for (const result of brokers) {
      if (result.status !== 'fulfilled') continue;
      clearInterval(result.value.sweeper);
      await new Promise<void>((resolve) => result.value.broker.close(() => resolve()));
    }
  }

  async #createBroker(target: MqttService): Promise<ServiceBroker> {
    const logger = this.#logger.child({ serviceId: target.service.id });
    const serviceId = target.service.id;
    const cluster = this.#context.cluster?.mqtt;
    const persistence = new DurablePersistence(this.#store, serviceId, logger, cluster && { notify: (topic, key) => cluster.notices.publish(topic, key) });
    const broker = await Aedes.createBroker({
      persistence,
      // A cluster's brokers of the service talk through Redis; the topic gains a level there, within qlobber's 100.
      // Alone, the emitter aedes would make (its default concurrency; [MQTT-4.7.1-3]), skipped when nobody listens.
      ...(cluster ? { mq: cluster.emitterFor(serviceId), maxTopicLevels: 99 } : { mq: new QuietEmitter(mqemitter({ concurrency: 100, matchEmptyLevels: true })) }),
      connectTimeout: CONNECT_TIMEOUT_MS,
      drainTimeout: 30_000,
      // MQTT 3.1 capped client ids at 23 characters; ids here only have to match client_id parameters.
      maxClientsIdLength: 256,
      preConnect: (client, packet, callback) => {
        const login = this.#pending.get(client.conn);
        if (!login) return callback(null, false);
        this.#logins.set(client, login);
        // aedes skips a message whose broker counter is not above the last one this client got from that broker.
        // The database is written before a message is emitted, so concurrent publications (and those of another
        // node) are emitted out of counter order, and that skip would lose them. What is given up: a queued message
        // resent at reconnect and also heard live goes twice, as QoS 1 allows.
        (client as unknown as { duplicates: object }).duplicates = NO_DUPLICATE_TRACKING;
        // The device's older connection is about to be closed by the broker: an MQTT 5 one hears why.
        this.#sessions.get(login.endpoint.id)?.login.v5?.adapter.closeWith(REASON.sessionTakenOver);
        // The session is the endpoint's: another client id cannot take it over, and ids need not be unique.
        packet.clientId = login.endpoint.id;
        callback(null, true);
      },
      // Runs before aedes answers PUBACK/PUBREC, so the event is durable before the device hears it was received.
      authorizePublish: (client, packet, callback) => {
        const login = client ? this.#logins.get(client) : undefined;
        // Without a client it is the broker publishing a will it checked at log-in.
        if (!client) return callback(null);
        if (!login || !mayPublish(login.space, packet.topic)) return callback(new Error(`publish outside the topic space: ${packet.topic}`));
        // Taken for every publication, in order, before anything waits (resends included).
        const properties = login.v5?.adapter.takeProperties(packet.topic);
        // The publisher, for No Local when the message is queued (aedes names it only later, when it emits the message).
        (packet as { clientId?: string }).clientId = client.id;
        this.#activity.published(persistence, packet as AedesPublishPacket, client, properties).then(() => callback(null), callback);
      },
      // A retained message sent because of a SUBSCRIBE (aedes clears its broker id) goes only where Retain Handling asks for it.
      authorizeForward: (client, packet) =>
        (packet.brokerId as string | null) === null && this.#logins.get(client)?.v5?.adapter.subscriptionOptions.wantsRetained(packet.topic) === false ? null : packet,
      authorizeSubscribe: (client, subscription, callback) => {
        const login = this.#logins.get(client);
        if (login && maySubscribe(login.space, subscription.topic)) return callback(null, subscription);
        this.#logger.info({ endpointId: login?.endpoint.id, topic: subscription.topic }, 'MQTT subscription outside the topic space refused');
        callback(null, null);
      },
    });
    // 'client' comes before CONNACK (clientReady only after it): a publication sent right after CONNACK finds its session.
    broker.on('client', (client) => this.#activity.registered(client));
    broker.on('clientDisconnect', (client) => this.#activity.gone(client, persistence));
    broker.on('subscribe', (subscriptions, client) => this.#activity.subscriptionEvent(client, MQTT_SUBSCRIBE_EVENT, subscriptions.filter((s) => (s.qos as number) !== 128).map((s) => ({ topic: s.topic, qos: s.qos }))));
    broker.on('unsubscribe', (topics, client) => this.#activity.subscriptionEvent(client, MQTT_UNSUBSCRIBE_EVENT, topics.map((topic) => ({ topic }))));
    broker.on('clientError', (client, error) => logger.debug({ err: error, endpointId: this.#logins.get(client)?.endpoint.id }, 'MQTT client error'));
    broker.on('connectionError', (_client, error) => logger.debug({ err: error }, 'MQTT connection error'));
    const sweep = () => this.#expiry.forgetExpired(serviceId, persistence).catch((error: unknown) => logger.error({ err: error }, 'MQTT session expiry sweep failed'));
    await sweep();
    const sweeper = setInterval(() => void sweep(), EXPIRY_SWEEP_MS).unref();
    return { broker, persistence, sweeper };
  }
}
