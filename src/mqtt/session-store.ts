/** A PUBLISH as the broker stores it: the wire fields plus aedes' own identity of the message. */
export interface StoredPacket {
  readonly topic: string;
  readonly payload: Buffer;
  readonly qos: 0 | 1 | 2;
  readonly retain: boolean;
  readonly dup?: boolean;
  readonly brokerId?: string;
  readonly brokerCounter?: number;
  readonly messageId?: number | undefined;
  /** A queued QoS 2 message the device has PUBREC'd: the PUBREL, not the PUBLISH, is sent again. */
  readonly released?: boolean;
}

export interface StoredSubscription {
  readonly topic: string;
  readonly qos: 0 | 1 | 2;
  /** MQTT 5 subscription options (aedes' names; absent or false/0 is MQTT 3.1.1's behaviour). No Local: not the device's own publications. */
  readonly nl?: boolean;
  /** Retain Handling at the last SUBSCRIBE: 0 retained messages sent, 1 only for a new subscription, 2 never. */
  readonly rh?: 0 | 1 | 2;
}

/** Everything one service's broker restores at start. */
export interface SessionSnapshot {
  readonly retained: StoredPacket[];
  readonly subscriptions: Map<string, StoredSubscription[]>;
  /** Queued messages per client id, oldest first. */
  readonly outgoing: Map<string, StoredPacket[]>;
  readonly incoming: Map<string, StoredPacket[]>;
}

/** One persistent session's stored state: what a node that takes the session over loads. */
export interface StoredSession {
  readonly subscriptions: StoredSubscription[];
  /** Queued messages, oldest first. */
  readonly outgoing: StoredPacket[];
  readonly incoming: StoredPacket[];
}

/**
 * Where one service's broker keeps what must outlive the process (migration 0013): retained messages,
 * persistent sessions' subscriptions and the QoS 1/2 messages queued for or half-received from them.
 */
export interface MqttSessionStore {
  load(serviceId: string): Promise<SessionSnapshot>;
  /** One session's state (a cluster node taking over a device that connected to it). */
  loadSession(serviceId: string, clientId: string): Promise<StoredSession>;
  subscriptionsOf(serviceId: string, clientId: string): Promise<StoredSubscription[]>;
  getRetained(serviceId: string, topic: string): Promise<StoredPacket | undefined>;
  /** How many messages are queued for each of `clientIds` (those with none are left out). */
  queuedCounts(serviceId: string, clientIds: readonly string[]): Promise<Map<string, number>>;
  putRetained(serviceId: string, packet: StoredPacket): Promise<void>;
  deleteRetained(serviceId: string, topic: string): Promise<void>;
  addSubscriptions(serviceId: string, clientId: string, subscriptions: readonly StoredSubscription[]): Promise<void>;
  removeSubscriptions(serviceId: string, clientId: string, topics: readonly string[]): Promise<void>;
  /** Forgets a session: its subscriptions, queued and half-received messages. */
  deleteSession(serviceId: string, clientId: string): Promise<void>;
  /** When the MQTT 5 session of `clientId` ends unless its device comes back first (migration 0015). */
  setExpiry(serviceId: string, clientId: string, expiresAt: number): Promise<void>;
  /** The expiry of a session whose device is back (ms since the epoch), removed; undefined when it had none. */
  takeExpiry(serviceId: string, clientId: string): Promise<number | undefined>;
  clearExpiry(serviceId: string, clientId: string): Promise<void>;
  /** Client ids of the service's sessions whose expiry is at or before `now`. */
  expiredSessions(serviceId: string, now: number): Promise<string[]>;
  enqueue(serviceId: string, clientIds: readonly string[], packet: StoredPacket & { brokerId: string; brokerCounter: number }): Promise<void>;
  /** The packet id a queued message was sent with, and whether it is now released (its PUBREL sent). */
  setMessageId(serviceId: string, clientId: string, brokerId: string, brokerCounter: number, messageId: number, released: boolean): Promise<void>;
  dequeue(serviceId: string, clientId: string, brokerId: string, brokerCounter: number): Promise<void>;
  putIncoming(serviceId: string, clientId: string, packet: StoredPacket & { messageId: number }): Promise<void>;
  deleteIncoming(serviceId: string, clientId: string, messageId?: number): Promise<void>;
}
