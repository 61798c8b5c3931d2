import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { Aedes, type AedesPublishPacket, type Client } from 'aedes';
import { generate, parser, type IConnectPacket } from 'mqtt-packet';
import type { Logger } from 'pino';
import { createWebSocketStream, WebSocketServer } from 'ws';
import { ENV_NAMES } from '../config.js';
import type { Endpoint } from '../domain/endpoints.js';
import type { Scope } from '../domain/scope.js';
import { AppError } from '../errors.js';
import type { DeviceServer, DeviceServerContext } from '../devices/device-server.js';
import { listenStream } from '../devices/listen.js';
import { LoginThrottle } from '../domain/login-throttle.js';
import { ThrottledLog } from '../devices/throttled-log.js';
import { payloadFields, remoteAddress } from '../devices/payload.js';
import { ServiceDirectory, type Configured } from '../devices/service-directory.js';
import { DurablePersistence } from './durable-persistence.js';
import type { MqttChannel, QoS } from './mqtt-channel.js';
import { mqttOptions, type MqttOptions } from './mqtt-options.js';
import { Mqtt5Adapter, mqtt5Session, REASON, SESSION_NEVER_EXPIRES, type Mqtt5Session, type PublicationProperties } from './mqtt5-adapter.js';
import { PacketGuard, PacketViolation } from './packet-guard.js';
import type { MqttSessionStore } from './session-store.js';
import { mayPublish, maySubscribe, spaceFilter, topicSpace, type TopicSpace } from './topic-space.js';

/** A client's `duplicates` that remembers nothing (see preConnect). */
const NO_DUPLICATE_TRACKING: object = new Proxy({}, { get: () => undefined, set: () => true, deleteProperty: () => true });

/** The events device activity becomes (SPEC "Events"). */
export const MQTT_PUBLISH_EVENT = 'mqtt-publish';
export const MQTT_SUBSCRIBE_EVENT = 'mqtt-subscribe';
export const MQTT_UNSUBSCRIBE_EVENT = 'mqtt-unsubscribe';

/** CONNECT must arrive this long after the connection opens. */
const CONNECT_TIMEOUT_MS = 30_000;
/** `lastSeenAt` of a connected device is written at most this often while it publishes. */
const TOUCH_INTERVAL_MS = 60_000;

/** Expired MQTT 5 sessions are looked for this often (and when a service's broker starts). */
const EXPIRY_SWEEP_MS = 15_000;

/** Why a log-in is refused: the CONNACK code of MQTT 3.1.1 (3.2.2.3) and the reason code of MQTT 5 (3.2.2.2). */
const REFUSAL = {
  unacceptableProtocol: { v3: 1, v5: REASON.unsupportedProtocolVersion },
  identifierRejected: { v3: 2, v5: REASON.clientIdentifierNotValid },
  serverUnavailable: { v3: 3, v5: REASON.serverUnavailable },
  // Too many log-ins wait for their password check: try again shortly (3.1.1 has only "server unavailable").
  serverBusy: { v3: 3, v5: REASON.serverBusy },
  badCredentials: { v3: 4, v5: REASON.badUserNameOrPassword },
  notAuthorized: { v3: 5, v5: REASON.notAuthorized },
  badAuthenticationMethod: { v3: 5, v5: REASON.badAuthenticationMethod },
  // 3.1.1 has no code for it; "server unavailable" is what clients retry later.
  tooManyFailures: { v3: 3, v5: REASON.connectionRateExceeded },
} as const;

interface Refusal {
  readonly code: { readonly v3: number; readonly v5: number };
  readonly reason: string;
}

type MqttService = Configured<MqttOptions>;

/** A device that passed log-in: what its connection may do. */
interface Login {
  readonly endpoint: Endpoint;
  readonly target: MqttService;
  readonly space: TopicSpace;
  readonly remoteAddr: string;
  /** The client id the device sent; the broker knows the session by the endpoint id instead. */
  readonly clientId: string;
  readonly protocolVersion: 3 | 4 | 5;
  /** MQTT 5 only: what the device asked of its session, and the adapter its connection goes through. */
  readonly v5?: { readonly session: Mqtt5Session; readonly adapter: Mqtt5Adapter };
}

interface Session {
  readonly login: Login;
  readonly client: Client;
  endpoint: Endpoint;
  touchedAt: number;
}

interface ServiceBroker {
  readonly broker: Aedes;
  readonly persistence: DurablePersistence;
  readonly sweeper: NodeJS.Timeout;
}

/** The parts of the process the MQTT server uses. */
export type MqttServerContext = Pick<DeviceServerContext, 'channels' | 'cluster' | 'config' | 'domain' | 'logger' | 'presence' | 'stores'>;

/**
 * The MQTT device ports (TCP, and optionally TLS and WebSocket), shared by every MQTT service. Each service
 * is its own aedes broker (its own topic tree, sessions and retained messages), so devices of different
 * services or accounts can never meet. A connection's CONNECT is read first (PacketGuard): the username is
 * the endpoint key, the password the one set through `PUT /endpoints/{ref}/credentials`; only then is the
 * connection handed to the broker of the device's service, where it may publish and subscribe inside its
 * topic space only.
 */
export class MqttServer implements DeviceServer, MqttChannel {
  readonly name = 'mqtt';
  readonly #context: MqttServerContext;
  readonly #logger: Logger;
  readonly #directory: ServiceDirectory<MqttOptions>;
  readonly #store: MqttSessionStore;
  readonly #brokers = new Map<string, Promise<ServiceBroker>>();
  /** Connected devices by endpoint id (= the broker's client id). */
  readonly #sessions = new Map<string, Session>();
  readonly #logins = new WeakMap<Client, Login>();
  /** Logins waiting for their broker's preConnect, by the connection they came on. */
  readonly #pending = new WeakMap<Duplex, Login>();
  readonly #connections = new Set<PacketGuard>();
  /** Presence updates of one device run in order (a reconnect's on-connect after the old on-disconnect). */
  readonly #work = new Map<string, Promise<void>>();
  readonly #servers: net.Server[] = [];
  readonly #throttle = new LoginThrottle();
  /** Refused log-ins and closed connections: anyone can cause them, so they are logged sparingly. */
  readonly #refusals: ThrottledLog;
  /** Session ends being stored (MQTT 5 expiry); stop() waits for them. */
  readonly #background = new Set<Promise<void>>();
  #stopping = false;

  constructor(context: MqttServerContext) {
    this.#context = context;
    this.#logger = context.logger.child({ server: 'mqtt' });
    this.#refusals = new ThrottledLog(this.#logger);
    context.domain.services.checkOptions('mqtt', (options) => void mqttOptions(options));
    this.#directory = new ServiceDirectory(context.domain.services, 'mqtt', (service) => mqttOptions(service.options), this.#logger);
    this.#store = context.stores.mqtt;
    context.channels.mqtt = this;
    const notices = context.cluster?.mqtt.notices;
    notices?.listen('mqtt-subscriptions', (key) => this.#reload(key, (persistence, clientId) => persistence.reloadSubscriptions(clientId)));
    notices?.listen('mqtt-retained', (key) => this.#reload(key, (persistence, topic) => persistence.reloadRetained(topic)));
  }

  /** Another node changed a session's subscriptions or a retained message ("<serviceId> <rest>"): reloaded if that broker runs here. */
  #reload(key: string, step: (persistence: DurablePersistence, rest: string) => Promise<void>): void {
    const space = key.indexOf(' ');
    const broker = this.#brokers.get(key.slice(0, space));
    if (space < 0 || !broker) return;
    broker
      .then(({ persistence }) => step(persistence, key.slice(space + 1)))
      .catch((error: unknown) => this.#logger.warn({ err: error }, 'MQTT state another node changed could not be reloaded'));
  }

  async start(): Promise<Record<string, number>> {
    const { config } = this.#context;
    const ports: Record<string, number> = {};
    const tcp = net.createServer((socket) => this.#accept(socket, socket));
    ports.mqtt = await this.#listen(tcp, config.mqttPort, { label: 'MQTT', envName: ENV_NAMES.mqttPort });
    if (config.mqttTlsPort !== undefined) {
      const secure = tls.createServer({ cert: readFileSync(config.mqttTlsCert!), key: readFileSync(config.mqttTlsKey!) }, (socket) => this.#accept(socket, socket));
      secure.on('tlsClientError', (error) => this.#logger.debug({ err: error }, 'MQTT TLS handshake failed'));
      ports.mqttTls = await this.#listen(secure, config.mqttTlsPort, { label: 'MQTT TLS', envName: ENV_NAMES.mqttTlsPort });
    }
    if (config.mqttWsPort !== undefined) {
      const web = http.createServer((_request, response) => response.writeHead(426, { 'content-type': 'text/plain' }).end('MQTT over WebSocket: connect to /mqtt\n'));
      const sockets = new WebSocketServer({ server: web, path: '/mqtt', maxPayload: config.mqttMaxPacketBytes + 5, handleProtocols: (offered) => [...offered].find((p) => p.startsWith('mqtt')) ?? false });
      sockets.on('connection', (socket, request) => {
        const stream = createWebSocketStream(socket);
        stream.on('error', (error) => this.#logger.debug({ err: error }, 'MQTT WebSocket error'));
        this.#accept(stream, request.socket);
      });
      ports.mqttWs = await this.#listen(web, config.mqttWsPort, { label: 'MQTT WebSocket', envName: ENV_NAMES.mqttWsPort });
    }
    return ports;
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    const closed = this.#servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
    // MQTT 5 devices hear why before their connection goes; a cluster's have other nodes to go to.
    const reason = this.#context.cluster ? REASON.useAnotherServer : REASON.serverShuttingDown;
    for (const session of this.#sessions.values()) {
      session.login.v5?.adapter.closeWith(reason);
      session.login.v5?.adapter.destroy();
    }
    for (const connection of this.#connections) connection.destroy();
    const brokers = await Promise.allSettled(this.#brokers.values());
    for (const result of brokers) {
      if (result.status !== 'fulfilled') continue;
      clearInterval(result.value.sweeper);
      await new Promise<void>((resolve) => result.value.broker.close(() => resolve()));
    }
    await Promise.all(this.#work.values());
    await Promise.all(this.#background);
    await Promise.all(closed);
  }

  async closeAccount(accountId: string): Promise<number> {
    let closed = 0;
    for (const session of this.#sessions.values()) {
      if (session.endpoint.accountId !== accountId) continue;
      // MQTT 5 devices hear why (Administrative action); the broker's close event then marks them unavailable.
      session.login.v5?.adapter.closeWith(REASON.administrativeAction);
      session.client.close();
      closed++;
    }
    return closed;
  }

  async publish(scope: Scope, ref: string, message: { topic: string; payload: Buffer; qos: QoS; retain: boolean }) {
    const { endpoint, target, space } = await this.#deviceOf(scope, ref);
    if (message.topic === '' || /[+#]/.test(message.topic) || message.topic.includes('\0') || !mayPublish(space, message.topic)) {
      throw new AppError('IOTB_REQUEST_VALIDATION', `The topic must be a topic name in the device's topic space ${spaceFilter(space)}`, { topic: message.topic });
    }
    const { broker } = await this.#broker(target);
    await new Promise<void>((resolve, reject) => {
      broker.publish({ cmd: 'publish', topic: message.topic, payload: message.payload, qos: message.qos, retain: message.retain, dup: false }, (error) => (error ? reject(error) : resolve()));
    });
    return { topic: message.topic, qos: message.qos, retain: message.retain, bytes: message.payload.length, connected: this.#sessions.has(endpoint.id) };
  }

  async subscribe(scope: Scope, ref: string, topic: string, qos: QoS) {
    const { endpoint, target, space } = await this.#deviceOf(scope, ref);
    if (topic === '' || !maySubscribe(space, topic)) {
      throw new AppError('IOTB_REQUEST_VALIDATION', `The topic filter must lie in the device's topic space ${spaceFilter(space)}`, { topic });
    }
    const session = this.#sessions.get(endpoint.id);
    if (session) {
      await new Promise<void>((resolve, reject) => session.client.subscribe({ topic, qos }, (error) => (error ? reject(error) : resolve())));
    } else {
      const { persistence } = await this.#broker(target);
      await persistence.subscribeOffline(endpoint.id, { topic, qos });
    }
    return { topic, qos, connected: session !== undefined };
  }

  async #deviceOf(scope: Scope, ref: string): Promise<{ endpoint: Endpoint; target: MqttService; space: TopicSpace }> {
    const endpoint = await this.#context.domain.endpoints.get(scope, ref);
    const target = await this.#directory.get(endpoint.serviceId);
    if (!target) throw new AppError('IOTB_DEVICE_WRONG_PROTOCOL', 'The endpoint does not belong to an MQTT service');
    const space = topicSpace(target.options.topicPattern, endpoint.key);
    if (!space) throw new AppError('IOTB_REQUEST_VALIDATION', 'The endpoint key cannot name an MQTT topic level (it has /, +, # or starts with $)');
    return { endpoint, target, space };
  }

  async #listen(server: net.Server, port: number, name: { label: string; envName: string }): Promise<number> {
    server.on('error', (error) => this.#logger.error({ err: error }, `${name.label} server error`));
    const bound = await listenStream(server, port, this.#context.config.mqttHost, name);
    this.#servers.push(server);
    return bound;
  }

  /** A new connection: reads its CONNECT, logs the device in, and hands the connection to its service's broker. */
  #accept(stream: Duplex, socket: net.Socket): void {
    const { host, remoteAddr } = remoteAddress(socket.remoteAddress ?? '', socket.remotePort ?? 0);
    if (socket instanceof net.Socket) socket.setNoDelay(true);
    const guard = new PacketGuard(stream, this.#context.config.mqttMaxPacketBytes);
    this.#connections.add(guard);
    guard.on('close', () => this.#connections.delete(guard));
    guard.on('error', (error) => {
      const reason = error instanceof PacketViolation ? error.kind : ((error as NodeJS.ErrnoException).code ?? 'error');
      this.#refusals.info(`closed ${reason}`, { remoteAddr, detail: error.message }, `MQTT connection closed: ${error.message}`);
    });
    const timer = setTimeout(() => guard.destroy(new Error(`no CONNECT within ${CONNECT_TIMEOUT_MS / 1000} s`)), CONNECT_TIMEOUT_MS);
    let connect: IConnectPacket | undefined;
    guard
      .firstPacket()
      .then(async (bytes) => {
        clearTimeout(timer);
        if (bytes === undefined || this.#stopping) return;
        connect = parseConnect(bytes);
        if (!connect) {
          // [MQTT-3.1.2-2]: a protocol level this service does not speak is answered, not just dropped.
          const level = unservedProtocolLevel(bytes);
          if (level === undefined) return void guard.destroy(new Error('malformed CONNECT'));
          this.#refusals.info('login protocol level', { remoteAddr, level }, `MQTT log-in refused: protocol level ${level} (MQTT 3.1, 3.1.1 and 5 are served)`);
          return refuse(guard, undefined, { code: REFUSAL.unacceptableProtocol, reason: `protocol level ${level}` });
        }
        const decision = await this.#login(connect, { host, remoteAddr });
        if ('code' in decision) return refuse(guard, connect, decision);
        const { broker, persistence } = await this.#broker(decision.target);
        const endpointId = decision.endpoint.id;
        // The device is back: its MQTT 5 session's countdown stops, or the session is gone if it ran out.
        const expiresAt = await this.#store.takeExpiry(decision.target.service.id, endpointId);
        if (expiresAt !== undefined && expiresAt <= Date.now()) await persistence.forgetSession(endpointId);
        let login: Login = decision;
        let connection: Duplex = guard;
        if (connect.protocolVersion === 5) {
          const session = mqtt5Session(connect);
          // Clean Start with an expiry: a new session that outlives the connection (a 3.1.1 broker has no such flag).
          if (session.cleanStart && !session.brokerClean) await persistence.forgetSession(endpointId);
          const adapter = new Mqtt5Adapter(guard, {
            maxPacketBytes: this.#context.config.mqttMaxPacketBytes,
            assignedClientId: decision.endpoint.key,
            mayPublish: (topic) => mayPublish(decision.space, topic),
            onRefusedPublish: (topic) => {
              this.#logger.info({ endpointId, topic }, 'MQTT publication outside the topic space refused (0x87)');
              this.#context.domain.logs.device({ accountId: decision.endpoint.accountId, endpointId, endpointKey: decision.endpoint.key, message: 'MQTT publication outside the topic space refused', data: { topic } });
            },
          });
          login = { ...decision, v5: { session, adapter } };
          connection = adapter;
        }
        // A cluster node loads a persistent session another node may have changed (the device moved here).
        if (connect.protocolVersion === 5 ? !login.v5!.session.brokerClean : connect.clean === false) {
          const release = await persistence.hold(endpointId);
          guard.once('close', release);
          if (guard.destroyed) release();
        }
        if (guard.destroyed) return;
        this.#pending.set(connection, login);
        broker.handle(connection);
        guard.release();
      })
      .catch((error: unknown) => {
        if (error instanceof AppError && error.code === 'IOTB_AUTH_BUSY') {
          this.#refusals.info('login busy', { remoteAddr }, 'MQTT log-in refused: too many password checks waiting');
          return refuse(guard, connect, { code: REFUSAL.serverBusy, reason: 'too many log-ins are being checked; try again shortly' });
        }
        this.#logger.error({ err: error, remoteAddr }, 'MQTT log-in failed; closing the connection');
        refuse(guard, connect, { code: REFUSAL.serverUnavailable, reason: 'the service could not check the log-in' });
      });
  }

  /** The device a CONNECT names, or why it is refused (docs/mqtt.md "Logging in"). */
  async #login(connect: IConnectPacket, { host, remoteAddr }: { host: string; remoteAddr: string }): Promise<Login | Refusal> {
    const refused = (code: Refusal['code'], reason: string, detail: Record<string, unknown> = {}): Refusal => {
      this.#refusals.info(`login ${code.v5}`, { remoteAddr, username: connect.username, clientId: connect.clientId, code: connect.protocolVersion === 5 ? code.v5 : code.v3, ...detail }, `MQTT log-in refused: ${reason}`);
      return { code, reason };
    };
    const version = connect.protocolVersion;
    if (version !== 3 && version !== 4 && version !== 5) return refused(REFUSAL.unacceptableProtocol, `protocol level ${String(version)} (MQTT 3.1, 3.1.1 and 5 are served)`);
    // MQTT 5 lets the server assign an id to an empty one; 3.1.1 only allows it for a clean session.
    if (connect.clientId === '' && connect.clean === false && version !== 5) return refused(REFUSAL.identifierRejected, 'an empty client id needs a clean session');
    if (connect.properties?.authenticationMethod !== undefined) return refused(REFUSAL.badAuthenticationMethod, `authentication method ${connect.properties.authenticationMethod} (only username and password are supported)`);
    const password = connect.password;
    const key = connect.username;
    if (key === undefined || key === '' || password === undefined) return refused(REFUSAL.badCredentials, 'no username or password');
    const retryAfter = this.#throttle.retryAfter(host, key);
    if (retryAfter > 0) return refused(REFUSAL.tooManyFailures, `too many failed log-ins from this address; checked again in ${Math.ceil(retryAfter / 1000)} s`);
    const matches: Endpoint[] = [];
    const candidates = await this.#context.presence.findDevices('mqtt', key, { withSuspended: true });
    for (const candidate of candidates) {
      if (await this.#context.domain.credentials.verify(candidate, password.toString('utf8'))) matches.push(candidate);
    }
    if (matches.length === 0) {
      this.#throttle.failed(host, key);
      // The key is a device's: its account sees the refusal (a misconfigured device, or someone guessing).
      for (const endpoint of candidates) this.#context.domain.logs.device({ accountId: endpoint.accountId, endpointId: endpoint.id, endpointKey: endpoint.key, message: 'MQTT log-in refused: wrong password', data: { remoteAddr } });
      return refused(REFUSAL.badCredentials, 'unknown endpoint key or wrong password');
    }
    this.#throttle.succeeded(host, key);
    if (matches.length > 1) return refused(REFUSAL.notAuthorized, 'several endpoints share this key and password', { endpointIds: matches.map((e) => e.id) });
    const endpoint = matches[0]!;
    if (this.#context.presence.isSuspended(endpoint.accountId)) return refused(REFUSAL.notAuthorized, 'the account is suspended', { endpointId: endpoint.id });
    const target = await this.#directory.get(endpoint.serviceId);
    if (!target) return refused(REFUSAL.serverUnavailable, 'the service has unusable options', { serviceId: endpoint.serviceId });
    const wanted = endpoint.parameters.client_id;
    if (typeof wanted === 'string' && wanted !== '' && connect.clientId !== wanted) return refused(REFUSAL.identifierRejected, "the client id is not the endpoint's client_id parameter", { endpointId: endpoint.id });
    const space = topicSpace(target.options.topicPattern, endpoint.key);
    if (!space) return refused(REFUSAL.notAuthorized, 'the endpoint key cannot name a topic level', { endpointId: endpoint.id });
    if (connect.will && !mayPublish(space, connect.will.topic)) return refused(REFUSAL.notAuthorized, 'the will topic is outside the topic space', { endpointId: endpoint.id, topic: connect.will.topic });
    return { endpoint, target, space, remoteAddr, clientId: connect.clientId, protocolVersion: version };
  }

  /** The broker of a service, created (and its stored sessions restored) on first use. */
  #broker(target: MqttService): Promise<ServiceBroker> {
    const existing = this.#brokers.get(target.service.id);
    if (existing) return existing;
    const created = this.#createBroker(target);
    this.#brokers.set(target.service.id, created);
    created.catch(() => this.#brokers.delete(target.service.id));
    return created;
  }

  async #createBroker(target: MqttService): Promise<ServiceBroker> {
    const logger = this.#logger.child({ serviceId: target.service.id });
    const serviceId = target.service.id;
    const cluster = this.#context.cluster?.mqtt;
    const persistence = new DurablePersistence(this.#store, serviceId, logger, cluster && { notify: (topic, key) => cluster.notices.publish(topic, key) });
    const broker = await Aedes.createBroker({
      persistence,
      // A cluster's brokers of the service talk through Redis; the topic gains a level there, within qlobber's 100.
      ...(cluster ? { mq: cluster.emitterFor(serviceId), maxTopicLevels: 99 } : {}),
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
        this.#published(persistence, packet as AedesPublishPacket, client, properties).then(() => callback(null), callback);
      },
      authorizeSubscribe: (client, subscription, callback) => {
        const login = this.#logins.get(client);
        if (login && maySubscribe(login.space, subscription.topic)) return callback(null, subscription);
        this.#logger.info({ endpointId: login?.endpoint.id, topic: subscription.topic }, 'MQTT subscription outside the topic space refused');
        callback(null, null);
      },
    });
    // 'client' comes before CONNACK (clientReady only after it): a publication sent right after CONNACK finds its session.
    broker.on('client', (client) => this.#registered(client));
    broker.on('clientDisconnect', (client) => this.#gone(client, persistence));
    broker.on('subscribe', (subscriptions, client) => this.#subscriptionEvent(client, MQTT_SUBSCRIBE_EVENT, subscriptions.filter((s) => (s.qos as number) !== 128).map((s) => ({ topic: s.topic, qos: s.qos }))));
    broker.on('unsubscribe', (topics, client) => this.#subscriptionEvent(client, MQTT_UNSUBSCRIBE_EVENT, topics.map((topic) => ({ topic }))));
    broker.on('clientError', (client, error) => logger.debug({ err: error, endpointId: this.#logins.get(client)?.endpoint.id }, 'MQTT client error'));
    broker.on('connectionError', (_client, error) => logger.debug({ err: error }, 'MQTT connection error'));
    const sweep = () => this.#forgetExpired(serviceId, persistence).catch((error: unknown) => logger.error({ err: error }, 'MQTT session expiry sweep failed'));
    await sweep();
    const sweeper = setInterval(() => void sweep(), EXPIRY_SWEEP_MS).unref();
    return { broker, persistence, sweeper };
  }

  /** Forgets the MQTT 5 sessions whose expiry has passed while their devices were away. */
  async #forgetExpired(serviceId: string, persistence: DurablePersistence): Promise<void> {
    for (const clientId of await this.#store.expiredSessions(serviceId, Date.now())) {
      if (!this.#sessions.has(clientId)) await persistence.forgetSession(clientId);
      await this.#store.clearExpiry(serviceId, clientId);
    }
  }

  /** A device publication: an `mqtt-publish` event (once per QoS 2 message, however often it is resent). */
  async #published(persistence: DurablePersistence, packet: AedesPublishPacket, client: Client, properties: PublicationProperties | undefined): Promise<void> {
    const session = this.#sessions.get(client.id);
    if (!session || session.client !== client) return;
    if (packet.qos === 2 && (await persistence.hasIncoming(client, packet))) return;
    // on-connect (and a takeover's on-disconnect) first: the device's events stay in the order it acted.
    await this.#work.get(client.id);
    if (Date.now() - session.touchedAt > TOUCH_INTERVAL_MS) {
      session.touchedAt = Date.now();
      session.endpoint = await this.#context.presence.seen(session.endpoint);
    }
    await this.#context.presence.emit(session.endpoint, MQTT_PUBLISH_EVENT, {
      topic: packet.topic,
      ...payloadFields(typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload),
      qos: packet.qos,
      retain: packet.retain,
      clientId: session.login.clientId,
      ...(properties ? { properties } : {}),
    });
  }

  #registered(client: Client): void {
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

  #gone(client: Client, persistence: DurablePersistence): void {
    const session = this.#sessions.get(client.id);
    // A newer connection of the same device took the session over: it stays connected.
    if (!session || session.client !== client) return;
    this.#sessions.delete(client.id);
    const adapter = session.login.v5?.adapter;
    if (adapter && !client.clean) this.#sessionEnds(session.login, persistence, adapter.sessionExpiry);
    this.#serially(client.id, () => this.#context.presence.disconnected(session.endpoint, 'mqtt', this.#stopping ? 'service stopping' : 'connection closed'));
  }

  /** An MQTT 5 session outlives its connection by the expiry the device asked for last. */
  #sessionEnds(login: Login, persistence: DurablePersistence, expiry: number): void {
    const clientId = login.endpoint.id;
    if (expiry === SESSION_NEVER_EXPIRES) return;
    // Started at once: a reconnect's log-in (a database round trip at least) comes after it.
    const step = expiry === 0 ? persistence.forgetSession(clientId) : this.#store.setExpiry(login.target.service.id, clientId, Date.now() + expiry * 1000);
    const tracked = step
      .catch((error: unknown) => this.#logger.error({ err: error, endpointId: clientId }, 'MQTT session end could not be stored'))
      .finally(() => this.#background.delete(tracked));
    this.#background.add(tracked);
  }

  #subscriptionEvent(client: Client, type: string, topics: { topic: string; qos?: number }[]): void {
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

/** The CONNECT in `bytes` (one whole packet), or undefined when it does not parse. */
function parseConnect(bytes: Buffer): IConnectPacket | undefined {
  // protocolVersion 5 lets the parser read an MQTT 5 CONNECT too, so it can be refused properly.
  const reader = parser({ protocolVersion: 5 });
  let found: IConnectPacket | undefined;
  reader.on('packet', (packet) => {
    if (packet.cmd === 'connect') found = packet;
  });
  reader.on('error', () => (found = undefined));
  reader.parse(bytes);
  return found;
}

/** The protocol level of a CONNECT that names the MQTT protocol but a level other than 3, 4 or 5. */
function unservedProtocolLevel(bytes: Buffer): number | undefined {
  let index = 1;
  while (index < 5 && (bytes[index]! & 0x80) !== 0) index++;
  index++;
  if (bytes.length < index + 2) return undefined;
  const nameLength = bytes.readUInt16BE(index);
  const name = bytes.subarray(index + 2, index + 2 + nameLength).toString('latin1');
  const level = bytes[index + 2 + nameLength];
  if ((name !== 'MQTT' && name !== 'MQIsdp') || level === undefined || [3, 4, 5].includes(level & 0x7f)) return undefined;
  return level;
}

/** Answers CONNACK with the refusal in the device's protocol version (a reason string too for MQTT 5) and closes. */
function refuse(connection: PacketGuard, connect: IConnectPacket | undefined, refusal: Refusal): void {
  if (connection.destroyed) return;
  const packet =
    connect?.protocolVersion === 5
      ? generate(
          {
            cmd: 'connack',
            reasonCode: refusal.code.v5,
            sessionPresent: false,
            ...(connect.properties?.requestProblemInformation === false ? {} : { properties: { reasonString: refusal.reason } }),
          },
          { protocolVersion: 5 },
        )
      : generate({ cmd: 'connack', returnCode: refusal.code.v3, sessionPresent: false });
  connection.inner.end(packet);
  setTimeout(() => connection.destroy(), 1000).unref();
}
