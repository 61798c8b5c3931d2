import net from 'node:net';
import type { Duplex } from 'node:stream';
import { generate, parser, type IConnectPacket } from 'mqtt-packet';
import type { Logger } from 'pino';
import type { Endpoint } from '../domain/endpoints.js';
import { LoginThrottle } from '../domain/login-throttle.js';
import { AppError } from '../errors.js';
import type { DeviceServerContext } from '../devices/device-server.js';
import { remoteAddress } from '../devices/payload.js';
import type { ServiceDirectory } from '../devices/service-directory.js';
import { ThrottledLog } from '../devices/throttled-log.js';
import type { Login } from './connected-device.js';
import { Mqtt5Adapter, mqtt5Session, REASON } from './mqtt5-adapter.js';
import type { MqttOptions } from './mqtt-options.js';
import { PacketGuard, PacketViolation } from './packet-guard.js';
import type { ServiceBrokers } from './service-brokers.js';
import type { SessionExpiry } from './session-expiry.js';
import { carryTo } from './subscription-options.js';
import { mayPublish, topicSpace } from './topic-space.js';

/** CONNECT must arrive this long after the connection opens. */
export const CONNECT_TIMEOUT_MS = 30_000;

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

export interface ConnectionAcceptorParts {
  readonly context: Pick<DeviceServerContext, 'config' | 'domain' | 'presence'>;
  readonly logger: Logger;
  readonly directory: ServiceDirectory<MqttOptions>;
  readonly brokers: ServiceBrokers;
  readonly expiry: SessionExpiry;
  /** Where a login waits for its broker's preConnect, by the connection it came on. */
  readonly pending: WeakMap<Duplex, Login>;
}

/**
 * Every new device connection, whichever port it came on: its CONNECT is read first (PacketGuard), the
 * username is the endpoint key, the password the one set through `PUT /endpoints/{ref}/credentials`; only a
 * device that logs in is handed to its service's broker. A refusal is answered in the device's protocol version.
 */
export class ConnectionAcceptor {
  readonly #context: Pick<DeviceServerContext, 'config' | 'domain' | 'presence'>;
  readonly #logger: Logger;
  readonly #directory: ServiceDirectory<MqttOptions>;
  readonly #brokers: ServiceBrokers;
  readonly #expiry: SessionExpiry;
  readonly #pending: WeakMap<Duplex, Login>;
  readonly #connections = new Set<PacketGuard>();
  readonly #throttle = new LoginThrottle();
  /** Refused log-ins and closed connections: anyone can cause them, so they are logged sparingly. */
  readonly #refusals: ThrottledLog;
  #stopping = false;

  constructor(parts: ConnectionAcceptorParts) {
    this.#context = parts.context;
    this.#logger = parts.logger;
    this.#refusals = new ThrottledLog(parts.logger);
    this.#directory = parts.directory;
    this.#brokers = parts.brokers;
    this.#expiry = parts.expiry;
    this.#pending = parts.pending;
  }

  /** The server is stopping: a CONNECT that completes from now on is not answered. */
  stop(): void {
    this.#stopping = true;
  }

  /** Closes every connection still open (after MQTT 5 devices were told why). */
  closeConnections(): void {
    for (const connection of this.#connections) connection.destroy();
  }

  /** A new connection: reads its CONNECT, logs the device in, and hands the connection to its service's broker. */
  accept(stream: Duplex, socket: net.Socket): void {
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
        const { broker, persistence } = await this.#brokers.broker(decision.target);
        const endpointId = decision.endpoint.id;
        await this.#expiry.deviceReturns(decision.target.service.id, endpointId, persistence);
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
        const client = broker.handle(connection);
        if (login.v5) carryTo(client, login.v5.adapter.subscriptionOptions);
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
