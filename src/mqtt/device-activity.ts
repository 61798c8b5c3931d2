import type { AedesPublishPacket, Client } from 'aedes';
import type { Logger } from 'pino';
import type { DeviceServerContext } from '../devices/device-server.js';
import { payloadFields } from '../devices/payload.js';
import type { Login, Session } from './connected-device.js';
import type { DurablePersistence } from './durable-persistence.js';
import type { PublicationProperties } from './mqtt5-adapter.js';
import type { SessionExpiry } from './session-expiry.js';

/** The events device activity becomes (SPEC "Events"). */
export const MQTT_PUBLISH_EVENT = 'mqtt-publish';
export const MQTT_SUBSCRIBE_EVENT = 'mqtt-subscribe';
export const MQTT_UNSUBSCRIBE_EVENT = 'mqtt-unsubscribe';

/** `lastSeenAt` of a connected device is written at most this often while it publishes. */
const TOUCH_INTERVAL_MS = 60_000;

export interface DeviceActivityParts {
  readonly context: Pick<DeviceServerContext, 'presence'>;
  readonly logger: Logger;
  /** Connected devices by endpoint id (= the broker's client id): filled and emptied here. */
  readonly sessions: Map<string, Session>;
  /** The log-in of each client the brokers let in (set in their preConnect). */
  readonly logins: WeakMap<Client, Login>;
  readonly expiry: SessionExpiry;
}

/**
 * What the devices do on their brokers, as the platform sees it: connecting and going (presence), publishing
 * and (un)subscribing (events). Each device's updates run in order, so its events keep the order it acted in.
 */
export class DeviceActivity {
  readonly #context: Pick<DeviceServerContext, 'presence'>;
  readonly #logger: Logger;
  readonly #sessions: Map<string, Session>;
  readonly #logins: WeakMap<Client, Login>;
  readonly #expiry: SessionExpiry;
  /** Presence updates of one device run in order (a reconnect's on-connect after the old on-disconnect). */
  readonly #work = new Map<string, Promise<void>>();
  #stopping = false;

  constructor(parts: DeviceActivityParts) {
    this.#context = parts.context;
    this.#logger = parts.logger;
    this.#sessions = parts.sessions;
    this.#logins = parts.logins;
    this.#expiry = parts.expiry;
  }

  /** The server is stopping: devices that go from now on are disconnected for that reason. */
  stop(): void {
    this.#stopping = true;
  }

  /** Settles when the presence updates under way now have run. */
  settled(): Promise<unknown> {
    return Promise.all(this.#work.values());
  }

  /** A device publication: an `mqtt-publish` event (once per QoS 2 message, however often it is resent). */
  async published(persistence: DurablePersistence, packet: AedesPublishPacket, client: Client, properties: PublicationProperties | undefined): Promise<void> {
    const session = this.#sessions.get(client.id);
    if (!session || session.client !== client) return;
    if (packet.qos === 2 && (await persistence.hasIncoming(client, packet))) return;
    // on-connect (and a takeover's on-disconnect) first: the device's events stay in the order it acted.
    const pending = this.#work.get(client.id);
    if (pending) await pending;
    if (Date.now() - session.touchedAt > TOUCH_INTERVAL_MS) {
      session.touchedAt = Date.now();
      session.endpoint = await this.#context.presence.seen(session.endpoint);
    }
    const { payload, payloadBase64, text } = payloadFields(typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload);
    // Built in its final shape (no spreads): one per message.
    const data: Record<string, unknown> = { topic: packet.topic, payload, payloadBase64 };
    if (text !== undefined) data.text = text;
    data.qos = packet.qos;
    data.retain = packet.retain;
    data.clientId = session.login.clientId;
    if (properties) data.properties = properties;
    await this.#context.presence.emit(session.endpoint, MQTT_PUBLISH_EVENT, data);
  }

  registered(client: Client): void {
    const login = this.#logins.get(client);
    if (!login) return;
    const session: Session = { login, client, endpoint: login.endpoint, touchedAt: Date.now() };
    this.#sessions.set(client.id, session);
    this.#serially(client.id, async () => {
      const session5 = login.v5?.session;
      const details = {
        clientId: login.clientId,
        protocolVersion: login.protocolVersion,
        serviceId: login.target.service.id,
        ...(session5 ? { cleanStart: session5.cleanStart, sessionExpiryInterval: session5.expiry } : { cleanSession: client.clean }),
      };
      session.endpoint = await this.#context.presence.connected(session.endpoint, { protocol: 'mqtt', remoteAddr: login.remoteAddr }, details);
    });
  }

  gone(client: Client, persistence: DurablePersistence): void {
    const session = this.#sessions.get(client.id);
    // A newer connection of the same device took the session over: it stays connected.
    if (!session || session.client !== client) return;
    this.#sessions.delete(client.id);
    const adapter = session.login.v5?.adapter;
    if (adapter && !client.clean) this.#expiry.sessionEnds(session.login, persistence, adapter.sessionExpiry);
    this.#serially(client.id, () => this.#context.presence.disconnected(session.endpoint, 'mqtt', this.#stopping ? 'service stopping' : 'connection closed'));
  }

  subscriptionEvent(client: Client, type: string, topics: { topic: string; qos?: number }[]): void {
    const session = this.#sessions.get(client.id);
    if (!session || session.client !== client || topics.length === 0) return;
    this.#serially(client.id, () => this.#context.presence.emit(session.endpoint, type, { topics, clientId: session.login.clientId }));
  }

  #serially(endpointId: string, step: () => Promise<unknown>): void {
    const previous = this.#work.get(endpointId) ?? Promise.resolve();
    const next = previous
      .then(step)
      .then(() => undefined)
      .catch((error: unknown) => this.#logger.error({ err: error, endpointId }, 'MQTT presence update failed'))
      .finally(() => {
        if (this.#work.get(endpointId) === next) this.#work.delete(endpointId);
      });
    this.#work.set(endpointId, next);
  }
}
