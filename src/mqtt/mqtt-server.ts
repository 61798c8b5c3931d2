import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { Client } from 'aedes';
import type { Logger } from 'pino';
import { createWebSocketStream, WebSocketServer } from 'ws';
import { ENV_NAMES } from '../config.js';
import type { Endpoint } from '../domain/endpoints.js';
import type { Scope } from '../domain/scope.js';
import { AppError } from '../errors.js';
import type { DeviceServer, DeviceServerContext } from '../devices/device-server.js';
import { listenStream } from '../devices/listen.js';
import { ServiceDirectory } from '../devices/service-directory.js';
import type { Login, MqttService, Session } from './connected-device.js';
import { ConnectionAcceptor } from './connection-acceptor.js';
import { DeviceActivity } from './device-activity.js';
import type { MqttChannel, QoS } from './mqtt-channel.js';
import { mqttOptions, type MqttOptions } from './mqtt-options.js';
import { REASON } from './mqtt5-adapter.js';
import { ServiceBrokers } from './service-brokers.js';
import { SessionExpiry } from './session-expiry.js';
import { mayPublish, maySubscribe, spaceFilter, topicSpace, type TopicSpace } from './topic-space.js';

export { MQTT_PUBLISH_EVENT, MQTT_SUBSCRIBE_EVENT, MQTT_UNSUBSCRIBE_EVENT } from './device-activity.js';

/** The parts of the process the MQTT server uses. */
export type MqttServerContext = Pick<DeviceServerContext, 'channels' | 'cluster' | 'config' | 'domain' | 'logger' | 'presence' | 'stores'>;

/**
 * The MQTT device ports (TCP, and optionally TLS and WebSocket), shared by every MQTT service. Each service
 * is its own aedes broker (its own topic tree, sessions and retained messages), so devices of different
 * services or accounts can never meet. A connection's CONNECT is read first (PacketGuard): the username is
 * the endpoint key, the password the one set through `PUT /endpoints/{ref}/credentials`; only then is the
 * connection handed to the broker of the device's service, where it may publish and subscribe inside its
 * topic space only.
 *
 * This class is the front the app creates: the listeners, stop, and the platform's side (scripts publishing and
 * subscribing for a device, closing an account's connections). Log-in is ConnectionAcceptor's, the brokers
 * ServiceBrokers', what devices do DeviceActivity's, MQTT 5 session expiry SessionExpiry's.
 */
export class MqttServer implements DeviceServer, MqttChannel {
  readonly name = 'mqtt';
  readonly #context: MqttServerContext;
  readonly #logger: Logger;
  readonly #directory: ServiceDirectory<MqttOptions>;
  /** Connected devices by endpoint id (= the broker's client id); DeviceActivity keeps it, the other parts read it. */
  readonly #sessions = new Map<string, Session>();
  readonly #expiry: SessionExpiry;
  readonly #activity: DeviceActivity;
  readonly #brokers: ServiceBrokers;
  readonly #acceptor: ConnectionAcceptor;
  readonly #servers: net.Server[] = [];

  constructor(context: MqttServerContext) {
    this.#context = context;
    this.#logger = context.logger.child({ server: 'mqtt' });
    context.domain.services.checkOptions('mqtt', (options) => void mqttOptions(options));
    this.#directory = new ServiceDirectory(context.domain.services, 'mqtt', (service) => mqttOptions(service.options), this.#logger);
    const store = context.stores.mqtt;
    /** The log-in of each client a broker let in (set at its preConnect). */
    const logins = new WeakMap<Client, Login>();
    /** Logins waiting for their broker's preConnect, by the connection they came on. */
    const pending = new WeakMap<Duplex, Login>();
    this.#expiry = new SessionExpiry(store, this.#sessions, this.#logger);
    this.#activity = new DeviceActivity({ context, logger: this.#logger, sessions: this.#sessions, logins, expiry: this.#expiry });
    this.#brokers = new ServiceBrokers({ context, logger: this.#logger, store, sessions: this.#sessions, pending, logins, activity: this.#activity, expiry: this.#expiry });
    this.#acceptor = new ConnectionAcceptor({ context, logger: this.#logger, directory: this.#directory, brokers: this.#brokers, expiry: this.#expiry, pending });
    context.channels.mqtt = this;
    const notices = context.cluster?.mqtt.notices;
    notices?.listen('mqtt-subscriptions', (key) => this.#brokers.reload(key, (persistence, clientId) => persistence.reloadSubscriptions(clientId)));
    notices?.listen('mqtt-retained', (key) => this.#brokers.reload(key, (persistence, topic) => persistence.reloadRetained(topic)));
  }

  async start(): Promise<Record<string, number>> {
    const { config } = this.#context;
    const ports: Record<string, number> = {};
    const tcp = net.createServer((socket) => this.#acceptor.accept(socket, socket));
    ports.mqtt = await this.#listen(tcp, config.mqttPort, { label: 'MQTT', envName: ENV_NAMES.mqttPort });
    if (config.mqttTlsPort !== undefined) {
      const secure = tls.createServer({ cert: readFileSync(config.mqttTlsCert!), key: readFileSync(config.mqttTlsKey!) }, (socket) => this.#acceptor.accept(socket, socket));
      secure.on('tlsClientError', (error) => this.#logger.debug({ err: error }, 'MQTT TLS handshake failed'));
      ports.mqttTls = await this.#listen(secure, config.mqttTlsPort, { label: 'MQTT TLS', envName: ENV_NAMES.mqttTlsPort });
    }
    if (config.mqttWsPort !== undefined) {
      const web = http.createServer((_request, response) => response.writeHead(426, { 'content-type': 'text/plain' }).end('MQTT over WebSocket: connect to /mqtt\n'));
      const sockets = new WebSocketServer({ server: web, path: '/mqtt', maxPayload: config.mqttMaxPacketBytes + 5, handleProtocols: (offered) => [...offered].find((p) => p.startsWith('mqtt')) ?? false });
      sockets.on('connection', (socket, request) => {
        const stream = createWebSocketStream(socket);
        stream.on('error', (error) => this.#logger.debug({ err: error }, 'MQTT WebSocket error'));
        this.#acceptor.accept(stream, request.socket);
      });
      ports.mqttWs = await this.#listen(web, config.mqttWsPort, { label: 'MQTT WebSocket', envName: ENV_NAMES.mqttWsPort });
    }
    return ports;
  }

  async stop(): Promise<void> {
    this.#acceptor.stop();
    this.#activity.stop();
    const closed = this.#servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
    // MQTT 5 devices hear why before their connection goes; a cluster's have other nodes to go to.
    const reason = this.#context.cluster ? REASON.useAnotherServer : REASON.serverShuttingDown;
    for (const session of this.#sessions.values()) {
      session.login.v5?.adapter.closeWith(reason);
      session.login.v5?.adapter.destroy();
    }
    this.#acceptor.closeConnections();
    await this.#brokers.close();
    await this.#activity.settled();
    await this.#expiry.settled();
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
    const { broker } = await this.#brokers.broker(target);
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
      const { persistence } = await this.#brokers.broker(target);
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
}
