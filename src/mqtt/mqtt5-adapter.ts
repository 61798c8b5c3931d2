import { Duplex } from 'node:stream';
import { generate, parser, type IConnectPacket, type IPublishPacket, type ISubackPacket, type Packet, type UserProperties } from 'mqtt-packet';
import type { PacketGuard, PacketViolation } from './packet-guard.js';
import { SubscriptionOptions } from './subscription-options.js';

/** The MQTT 5 reason codes this service sends (MQTT 5.0, 2.4). */
export const REASON = {
  success: 0x00,
  disconnectWithWill: 0x04,
  unspecifiedError: 0x80,
  malformedPacket: 0x81,
  protocolError: 0x82,
  unsupportedProtocolVersion: 0x84,
  clientIdentifierNotValid: 0x85,
  badUserNameOrPassword: 0x86,
  notAuthorized: 0x87,
  serverUnavailable: 0x88,
  serverBusy: 0x89,
  serverShuttingDown: 0x8b,
  badAuthenticationMethod: 0x8c,
  keepAliveTimeout: 0x8d,
  sessionTakenOver: 0x8e,
  topicNameInvalid: 0x90,
  receiveMaximumExceeded: 0x93,
  topicAliasInvalid: 0x94,
  packetTooLarge: 0x95,
  sharedSubscriptionsNotSupported: 0x9e,
  administrativeAction: 0x98,
  useAnotherServer: 0x9c,
  connectionRateExceeded: 0x9f,
  subscriptionIdentifiersNotSupported: 0xa1,
} as const;

/** A Session Expiry Interval of this many seconds never ends (MQTT 5.0, 3.1.2.11.2). */
export const SESSION_NEVER_EXPIRES = 0xffffffff;

/** Client → service topic aliases a connection may define (advertised in CONNACK). */
export const TOPIC_ALIAS_MAXIMUM = 64;

/** Unacknowledged QoS 1/2 publications a device may have in flight: the broker's inbound QoS 2 window (aedes' maxInflightInbound default). */
export const RECEIVE_MAXIMUM = 1000;

/** The broker's MQTT 3.1.1 CONNACK return codes as MQTT 5 reason codes. */
const CONNACK_REASON: Record<number, number> = {
  0: REASON.success,
  1: REASON.unsupportedProtocolVersion,
  2: REASON.clientIdentifierNotValid,
  3: REASON.serverUnavailable,
  4: REASON.badUserNameOrPassword,
  5: REASON.notAuthorized,
};

/** Publications whose properties wait for the broker's authorizePublish; more means the broker dropped some. */
const MAX_PENDING_PROPERTIES = 1024;

/** What an MQTT 5 CONNECT asks of its session. */
export interface Mqtt5Session {
  readonly cleanStart: boolean;
  /** Seconds the session outlives the connection: 0 ends it with the connection, SESSION_NEVER_EXPIRES never. */
  readonly expiry: number;
  /**
   * The MQTT 3.1.1 clean-session flag the broker gets. Only "clean start and no expiry" is a 3.1.1 clean
   * session; every other combination is a persistent one that the server trims (clean start: forget the old
   * session first; expiry: forget it later).
   */
  readonly brokerClean: boolean;
}

export function mqtt5Session(connect: IConnectPacket): Mqtt5Session {
  const cleanStart = connect.clean !== false;
  const expiry = connect.properties?.sessionExpiryInterval ?? 0;
  return { cleanStart, expiry, brokerClean: cleanStart && expiry === 0 };
}

/** The MQTT 5 properties of a device's publication, as they go into its `mqtt-publish` event (JSON-safe). */
export interface PublicationProperties {
  readonly payloadFormatIndicator?: boolean;
  readonly messageExpiryInterval?: number;
  readonly contentType?: string;
  readonly responseTopic?: string;
  /** Base64. */
  readonly correlationData?: string;
  readonly userProperties?: UserProperties;
}

export interface Mqtt5AdapterOptions {
  /** The largest packet the service accepts, advertised as Maximum Packet Size. */
  readonly maxPacketBytes: number;
  /** Sent as Assigned Client Identifier when the device's CONNECT had an empty client id. */
  readonly assignedClientId: string;
  /** Whether the device may publish to `topic`. A refused QoS 1/2 publication is answered with reason 0x87 and the connection stays. */
  readonly mayPublish: (topic: string) => boolean;
  /** Told of each publication refused by `mayPublish`. */
  readonly onRefusedPublish: (topic: string) => void;
}

type Callback = (error?: Error | null) => void;

/**
 * Lets an MQTT 5 device talk to the broker, which speaks MQTT 3.1.1 (aedes 1.x refuses protocol level 5):
 * packets from the device are read as MQTT 5 and handed on as 3.1.1, the broker's packets go back as MQTT 5.
 * What MQTT 5 adds on top of 3.1.1 is done here: reason codes in CONNACK, PUBACK, PUBREC, SUBACK, UNSUBACK and
 * a DISCONNECT before the service closes a connection; topic aliases from the device; a PUBACK/PUBREC 0x87 (not
 * authorized) instead of a closed connection for a publication outside the topic space; the device's Maximum
 * Packet Size. Session expiry is the server's (it forgets sessions); docs/mqtt.md lists what is not carried.
 */
export class Mqtt5Adapter extends Duplex {
  readonly #device: PacketGuard;
  readonly #options: Mqtt5AdapterOptions;
  readonly #fromDevice = parser({ protocolVersion: 5 });
  readonly #fromBroker = parser({ protocolVersion: 4 });
  readonly #aliases = new Map<number, string>();
  /** Properties of publications handed to the broker, in order, until authorizePublish takes them. */
  readonly #pending: { topic: string; properties: PublicationProperties | undefined }[] = [];
  /** The topic filters of each SUBSCRIBE / the count of each UNSUBSCRIBE, by packet id, until the broker acknowledges it. */
  readonly #subscribing = new Map<number, string[]>();
  readonly #unsubscribing = new Map<number, number>();
  /** QoS 2 messages to the device whose flow ended early (refused by the device, or too large for it). */
  readonly #abandoned = new Set<number>();
  #expiry = 0;
  #deviceMaxPacket: number | undefined;
  #emptyClientId = false;
  #connected = false;
  /** The device's side toward the broker has ended (a "disconnect with will"): nothing more is handed on. */
  #brokerSideEnded = false;
  #closeReason: number | undefined;
  /** The MQTT 5 options of the device's subscriptions, for the broker (`carryTo`) and its retained messages. */
  readonly subscriptionOptions = new SubscriptionOptions();

  constructor(device: PacketGuard, options: Mqtt5AdapterOptions) {
    super({ allowHalfOpen: false });
    this.#device = device;
    this.#options = options;
    // A packet that cannot be translated closes its connection; nothing thrown here may reach the process.
    this.#fromDevice.on('packet', (packet) => this.#guarded(() => this.#receive(packet)));
    this.#fromDevice.on('error', (error: Error) => this.#disconnect(REASON.malformedPacket, error.message));
    this.#fromBroker.on('packet', (packet) => this.#guarded(() => this.#send(packet)));
    device.farewell = (violation) => this.#farewell(violation);
    device.on('data', (chunk: Buffer) => this.#fromDevice.parse(chunk));
    device.on('end', () => this.#endBrokerSide());
    device.on('close', () => this.destroy());
    device.on('error', (error) => this.destroy(error));
  }

  /** The session expiry the device asked for last (CONNECT, possibly changed by its DISCONNECT), in seconds. */
  get sessionExpiry(): number {
    return this.#expiry;
  }

  /** The reason code of the DISCONNECT sent when the service closes this connection without an error of its own (a takeover, a shutdown). */
  closeWith(reason: number): void {
    this.#closeReason ??= reason;
  }

  /** The MQTT 5 properties of the next publication the broker authorizes (called once per publication, in order). */
  takeProperties(topic: string): PublicationProperties | undefined {
    for (let next = this.#pending.shift(); next; next = this.#pending.shift()) {
      if (next.topic === topic) return next.properties;
    }
    return undefined;
  }

  override _read(): void {
    this.#device.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: Callback): void {
    this.#fromBroker.parse(chunk);
    this.#afterWrite(callback);
  }

  // The broker writes a packet in several pieces under cork().
  override _writev(chunks: { chunk: Buffer }[], callback: Callback): void {
    for (const { chunk } of chunks) this.#fromBroker.parse(chunk);
    this.#afterWrite(callback);
  }

  override _final(callback: Callback): void {
    this.#device.end();
    callback();
  }

  override _destroy(error: Error | null, callback: Callback): void {
    const reason = this.#closeReason ?? (error ? reasonFor(error) : undefined);
    if (reason !== undefined && this.#connected && !this.#device.destroyed && this.#device.writable) {
      this.#device.end(this.#encode({ cmd: 'disconnect', reasonCode: reason }));
      setTimeout(() => this.#device.destroy(), 1000).unref();
    } else {
      this.#device.destroy();
    }
    callback(error);
  }

  #afterWrite(callback: Callback): void {
    if (this.#device.destroyed) return callback(new Error('connection closed'));
    if (!this.#device.writableNeedDrain) return callback();
    const done = () => {
      this.#device.off('close', done);
      this.#device.off('drain', done);
      callback();
    };
    this.#device.once('close', done);
    this.#device.once('drain', done);
  }

  /** A packet from the device, handed to the broker as MQTT 3.1.1. */
  #receive(packet: Packet): void {
    switch (packet.cmd) {
      case 'connect':
        return this.#connect(packet);
      case 'publish':
        return this.#publish(packet);
      case 'pubrec':
        // A PUBREC with an error code ends the QoS 2 flow: the broker's PUBREL for it is answered here.
        if ((packet.reasonCode ?? 0) >= 0x80 && packet.messageId !== undefined) this.#abandoned.add(packet.messageId);
        return this.#toBroker({ cmd: 'pubrec', messageId: packet.messageId });
      case 'puback':
      case 'pubrel':
      case 'pubcomp':
        return this.#toBroker({ cmd: packet.cmd, messageId: packet.messageId });
      case 'subscribe':
        // [MQTT-3.8.3-2]: "A SUBSCRIBE packet with no Payload is a Protocol Error".
        if (packet.subscriptions.length === 0) return this.#disconnect(REASON.protocolError, 'SUBSCRIBE without topic filters');
        if (packet.properties?.subscriptionIdentifier !== undefined) return this.#disconnect(REASON.subscriptionIdentifiersNotSupported, 'subscription identifiers are not supported');
        this.#subscribing.set(packet.messageId ?? 0, packet.subscriptions.map((s) => s.topic));
        // No Local and Retain Handling have no 3.1.1 form: they reach the broker beside the bytes (subscription-options.ts).
        this.subscriptionOptions.requested(packet.messageId ?? 0, packet.subscriptions);
        return this.#toBroker({ cmd: 'subscribe', messageId: packet.messageId, subscriptions: packet.subscriptions.map((s) => ({ topic: s.topic, qos: s.qos })) });
      case 'unsubscribe':
        // [MQTT-3.10.3-2]: an UNSUBSCRIBE packet with no Payload is a Protocol Error.
        if (packet.unsubscriptions.length === 0) return this.#disconnect(REASON.protocolError, 'UNSUBSCRIBE without topic filters');
        this.#unsubscribing.set(packet.messageId ?? 0, packet.unsubscriptions.length);
        return this.#toBroker({ cmd: 'unsubscribe', messageId: packet.messageId, unsubscriptions: packet.unsubscriptions });
      case 'pingreq':
        return this.#toBroker({ cmd: 'pingreq' });
      case 'disconnect': {
        const expiry = packet.properties?.sessionExpiryInterval;
        if (expiry !== undefined) {
          // [MQTT-3.14.2-2]: a session that was to end with the connection cannot be given an expiry now.
          if (this.#expiry === 0 && expiry !== 0) return this.#disconnect(REASON.protocolError, 'session expiry set on DISCONNECT after CONNECT had none');
          this.#expiry = expiry;
        }
        // "Disconnect with Will Message": the connection ends without a 3.1.1 DISCONNECT, so the broker publishes the will.
        if (packet.reasonCode === REASON.disconnectWithWill) return this.#endBrokerSide();
        return this.#toBroker({ cmd: 'disconnect' });
      }
      default:
        // AUTH without an authentication method, or a packet only a server sends.
        return this.#disconnect(REASON.protocolError, `unexpected ${packet.cmd} from a client`);
    }
  }

  #connect(packet: IConnectPacket): void {
    const session = mqtt5Session(packet);
    this.#expiry = session.expiry;
    this.#deviceMaxPacket = packet.properties?.maximumPacketSize;
    this.#emptyClientId = packet.clientId === '';
    const will = packet.will && { topic: packet.will.topic, payload: packet.will.payload, qos: packet.will.qos ?? 0, retain: packet.will.retain ?? false };
    this.#toBroker({
      cmd: 'connect',
      protocolId: 'MQTT',
      protocolVersion: 4,
      clientId: packet.clientId || this.#options.assignedClientId,
      clean: session.brokerClean,
      keepalive: packet.keepalive ?? 0,
      ...(packet.username !== undefined ? { username: packet.username } : {}),
      ...(packet.password !== undefined ? { password: packet.password } : {}),
      ...(will ? { will } : {}),
    });
  }

  #publish(packet: IPublishPacket): void {
    const { topicAlias, subscriptionIdentifier: _ignored, ...properties } = packet.properties ?? {};
    let topic = packet.topic;
    if (topicAlias !== undefined) {
      if (topicAlias === 0 || topicAlias > TOPIC_ALIAS_MAXIMUM) return this.#disconnect(REASON.topicAliasInvalid, `topic alias ${topicAlias} outside 1..${TOPIC_ALIAS_MAXIMUM}`);
      if (topic === '') {
        const known = this.#aliases.get(topicAlias);
        if (known === undefined) return this.#disconnect(REASON.protocolError, `topic alias ${topicAlias} was never set`);
        topic = known;
      } else {
        this.#aliases.set(topicAlias, topic);
      }
    }
    // Topic names the broker refuses outright (empty, wildcards) close the connection there, as in 3.1.1.
    if (topic !== '' && !/[+#]/.test(topic) && !this.#options.mayPublish(topic)) {
      this.#options.onRefusedPublish(topic);
      if (packet.qos === 1) this.#toDevice({ cmd: 'puback', messageId: packet.messageId, reasonCode: REASON.notAuthorized });
      if (packet.qos === 2) this.#toDevice({ cmd: 'pubrec', messageId: packet.messageId, reasonCode: REASON.notAuthorized });
      return;
    }
    this.#pending.push({ topic, properties: eventProperties(properties) });
    if (this.#pending.length > MAX_PENDING_PROPERTIES) this.#pending.shift();
    this.#toBroker({ cmd: 'publish', topic, payload: packet.payload, qos: packet.qos, retain: packet.retain, dup: packet.dup, messageId: packet.messageId });
  }

  /** A packet from the broker, sent to the device as MQTT 5. */
  #send(packet: Packet): void {
    switch (packet.cmd) {
      case 'connack': {
        const reasonCode = CONNACK_REASON[packet.returnCode ?? 0] ?? REASON.unspecifiedError;
        this.#connected = reasonCode === REASON.success;
        return this.#toDevice({
          cmd: 'connack',
          sessionPresent: packet.sessionPresent,
          reasonCode,
          ...(this.#connected
            ? {
                properties: {
                  receiveMaximum: RECEIVE_MAXIMUM,
                  maximumPacketSize: this.#options.maxPacketBytes,
                  topicAliasMaximum: TOPIC_ALIAS_MAXIMUM,
                  retainAvailable: true,
                  wildcardSubscriptionAvailable: true,
                  subscriptionIdentifiersAvailable: false,
                  sharedSubscriptionAvailable: false,
                  ...(this.#emptyClientId ? { assignedClientIdentifier: this.#options.assignedClientId } : {}),
                },
              }
            : {}),
        });
      }
      case 'publish': {
        const bytes = this.#encode({ cmd: 'publish', topic: packet.topic, payload: packet.payload, qos: packet.qos, retain: packet.retain, dup: packet.dup, messageId: packet.messageId });
        // [MQTT-3.1.2-25]: a message too large for the device is discarded as if it had been delivered.
        if (this.#deviceMaxPacket !== undefined && bytes.length > this.#deviceMaxPacket) {
          if (packet.qos === 1) this.#toBroker({ cmd: 'puback', messageId: packet.messageId });
          if (packet.qos === 2 && packet.messageId !== undefined) {
            this.#abandoned.add(packet.messageId);
            this.#toBroker({ cmd: 'pubrec', messageId: packet.messageId });
          }
          return;
        }
        return void this.#device.write(bytes);
      }
      case 'pubrel':
        if (packet.messageId !== undefined && this.#abandoned.delete(packet.messageId)) return this.#toBroker({ cmd: 'pubcomp', messageId: packet.messageId });
        return this.#toDevice(packet);
      case 'suback': {
        const topics = this.#subscribing.get(packet.messageId ?? 0) ?? [];
        this.#subscribing.delete(packet.messageId ?? 0);
        const granted = (packet as ISubackPacket & { granted: number[] }).granted.map((code, index) => {
          if (code !== 0x80) return code;
          return topics[index]?.startsWith('$share/') ? REASON.sharedSubscriptionsNotSupported : REASON.notAuthorized;
        });
        return this.#toDevice({ cmd: 'suback', messageId: packet.messageId, granted });
      }
      case 'unsuback': {
        const count = this.#unsubscribing.get(packet.messageId ?? 0) ?? 1;
        this.#unsubscribing.delete(packet.messageId ?? 0);
        return this.#toDevice({ cmd: 'unsuback', messageId: packet.messageId, granted: new Array<number>(count).fill(REASON.success) });
      }
      default:
        return this.#toDevice(packet);
    }
  }

  #guarded(handle: () => void): void {
    try {
      handle();
    } catch (error) {
      this.#disconnect(REASON.unspecifiedError, `packet not translated: ${(error as Error).message}`);
    }
  }

  #toBroker(packet: Packet): void {
    if (this.#brokerSideEnded || this.destroyed) return;
    if (!this.push(generate(packet))) this.#device.pause();
  }

  #endBrokerSide(): void {
    if (this.#brokerSideEnded) return;
    this.#brokerSideEnded = true;
    this.push(null);
  }

  #toDevice(packet: Packet): void {
    if (!this.#device.destroyed) this.#device.write(this.#encode(packet));
  }

  #encode(packet: Packet): Buffer {
    return generate(packet, { protocolVersion: 5 });
  }

  /** Closes the connection with a DISCONNECT carrying `reason` (after CONNACK; before it there is nobody to tell). */
  #disconnect(reason: number, message: string): void {
    this.#closeReason ??= reason;
    this.destroy(new Error(message));
  }

  /** The DISCONNECT the packet guard sends before it closes the connection for a violation. */
  #farewell(violation: PacketViolation): Buffer | undefined {
    if (!this.#connected) return undefined;
    const reason = violation.kind === 'too-large' ? REASON.packetTooLarge : violation.kind === 'malformed-length' ? REASON.malformedPacket : REASON.protocolError;
    return this.#encode({ cmd: 'disconnect', reasonCode: reason });
  }
}

/** The reason code for an error the broker closed the connection with. */
function reasonFor(error: Error): number {
  const message = error.message;
  if (/keep ?alive/i.test(message)) return REASON.keepAliveTimeout;
  if (/topic space/.test(message)) return REASON.notAuthorized;
  if (/not allowed in PUBLISH|too many levels/.test(message)) return REASON.topicNameInvalid;
  if (/maxInflightInbound/.test(message)) return REASON.receiveMaximumExceeded;
  return REASON.unspecifiedError;
}

function eventProperties(properties: Omit<NonNullable<IPublishPacket['properties']>, 'topicAlias' | 'subscriptionIdentifier'>): PublicationProperties | undefined {
  const { correlationData, ...rest } = properties;
  const result: PublicationProperties = { ...rest, ...(correlationData ? { correlationData: correlationData.toString('base64') } : {}) };
  return Object.keys(result).length > 0 ? result : undefined;
}
