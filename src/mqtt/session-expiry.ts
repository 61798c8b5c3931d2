import type { Logger } from 'pino';
import type { Login, Session } from './connected-device.js';
import type { DurablePersistence } from './durable-persistence.js';
import { SESSION_NEVER_EXPIRES } from './mqtt5-adapter.js';
import type { MqttSessionStore } from './session-store.js';

/**
 * MQTT 5 session expiry: a persistent session outlives its connection by the expiry its device asked for,
 * and is forgotten when that passes with the device still away. The countdown is stored, so it survives a
 * restart and is seen by every node of a cluster.
 */
export class SessionExpiry {
  readonly #store: MqttSessionStore;
  /** Connected devices by endpoint id: a session whose device is back is not forgotten. */
  readonly #sessions: ReadonlyMap<string, Session>;
  readonly #logger: Logger;
  /** Session ends being stored; stop() waits for them. */
  readonly #background = new Set<Promise<void>>();

  constructor(store: MqttSessionStore, sessions: ReadonlyMap<string, Session>, logger: Logger) {
    this.#store = store;
    this.#sessions = sessions;
    this.#logger = logger;
  }

  /** The device is back: its MQTT 5 session's countdown stops, or the session is gone if it ran out. */
  async deviceReturns(serviceId: string, endpointId: string, persistence: DurablePersistence): Promise<void> {
    const expiresAt = await this.#store.takeExpiry(serviceId, endpointId);
    if (expiresAt !== undefined && expiresAt <= Date.now()) await persistence.forgetSession(endpointId);
  }

  /** An MQTT 5 session outlives its connection by the expiry the device asked for last. */
  sessionEnds(login: Login, persistence: DurablePersistence, expiry: number): void {
    const clientId = login.endpoint.id;
    if (expiry === SESSION_NEVER_EXPIRES) return;
    // Started at once: a reconnect's log-in (a database round trip at least) comes after it.
    const step = expiry === 0 ? persistence.forgetSession(clientId) : this.#store.setExpiry(login.target.service.id, clientId, Date.now() + expiry * 1000);
    const tracked = step
      .catch((error: unknown) => this.#logger.error({ err: error, endpointId: clientId }, 'MQTT session end could not be stored'))
      .finally(() => this.#background.delete(tracked));
    this.#background.add(tracked);
  }

  /** Forgets the MQTT 5 sessions whose expiry has passed while their devices were away. */
  async forgetExpired(serviceId: string, persistence: DurablePersistence): Promise<void> {
    for (const clientId of await this.#store.expiredSessions(serviceId, Date.now())) {
      if (!this.#sessions.has(clientId)) await persistence.forgetSession(clientId);
      await this.#store.clearExpiry(serviceId, clientId);
    }
  }

  /** Settles when the session ends being stored now have been. */
  settled(): Promise<unknown> {
    return Promise.all(this.#background);
  }
}
