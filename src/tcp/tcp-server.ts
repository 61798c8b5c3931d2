import net from 'node:net';
import type { Logger } from 'pino';
import { ThrottledLog } from '../devices/throttled-log.js';
import { ENV_NAMES } from '../config.js';
import type { Endpoint } from '../domain/endpoints.js';
import type { Scope } from '../domain/scope.js';
import { AppError } from '../errors.js';
import type { DeviceServer, DeviceServerContext } from '../devices/device-server.js';
import { decodeKey, splitKey } from '../devices/device-keys.js';
import { listenStream } from '../devices/listen.js';
import { matchDevice, provisioningCandidate } from '../devices/device-match.js';
import { payloadFields, remoteAddress } from '../devices/payload.js';
import { ServiceDirectory, type Configured } from '../devices/service-directory.js';
import { encodeFrame, firstFrame, FrameDecoder, FrameError, framingCapacity, framingSignature } from './framing.js';
import type { TcpChannel } from './tcp-channel.js';
import { tcpOptions, type TcpOptions } from './tcp-options.js';

/** The event each received frame becomes, and the one a successful `tcp.send` emits (SPEC "Events"). */
export const TCP_MESSAGE_EVENT = 'tcp-message';
export const TCP_SENT_EVENT = 'tcp-sent';

/** The first frame (login or first message) must arrive within this many bytes … */
export const IDENTIFY_MAX_BYTES = 4096;
/** … and this long after the connection opens; otherwise the connection is closed. */
const IDENTIFY_TIMEOUT_MS = 30_000;

type TcpService = Configured<TcpOptions>;

interface Connection {
  readonly socket: net.Socket;
  readonly remoteAddr: string;
  /** Bytes received before the device is known (at most IDENTIFY_MAX_BYTES plus one chunk). */
  pending: Buffer;
  device: { endpoint: Endpoint; target: TcpService; decoder: FrameDecoder } | undefined;
  /** Another connection of the same device took over: this one closes without on-disconnect. */
  replaced: boolean;
  /** Work on this connection runs one step at a time (reading is paused meanwhile), close handling last. */
  work: Promise<void>;
}

/** The parts of the process the TCP server uses. */
export type TcpServerContext = Pick<DeviceServerContext, 'channels' | 'config' | 'domain' | 'logger' | 'presence' | 'sendCaps'>;

/**
 * The TCP device port shared by every TCP service of every account. A connection is one device, known
 * from its first frame (a login frame, or a message starting with its key); each later frame becomes a
 * `tcp-message` event. Connecting and closing are `on-connect` / `on-disconnect` through device presence.
 */
export class TcpServer implements DeviceServer, TcpChannel {
  readonly name = 'tcp';
  readonly #context: TcpServerContext;
  readonly #logger: Logger;
  /** Refused and broken connections: anyone can cause them, so they are logged sparingly. */
  readonly #refusals: ThrottledLog;
  readonly #directory: ServiceDirectory<TcpOptions>;
  readonly #connections = new Set<Connection>();
  /** The open connection of each identified device, by endpoint id. */
  readonly #devices = new Map<string, Connection>();
  #server: net.Server | undefined;

  constructor(context: TcpServerContext) {
    this.#context = context;
    this.#logger = context.logger.child({ server: 'tcp' });
    this.#refusals = new ThrottledLog(this.#logger);
    context.domain.services.checkOptions('tcp', (options) => void tcpOptions(options));
    this.#directory = new ServiceDirectory(context.domain.services, 'tcp', (service) => tcpOptions(service.options), this.#logger);
    context.channels.tcp = this;
  }

  async start(): Promise<Record<string, number>> {
    const server = net.createServer((socket) => this.#accept(socket));
    server.on('error', (error) => this.#logger.error({ err: error }, 'TCP server error'));
    const port = await listenStream(server, this.#context.config.tcpPort, undefined, { label: 'TCP', envName: ENV_NAMES.tcpPort });
    this.#server = server;
    return { tcp: port };
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    const closed = server ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    for (const connection of this.#connections) connection.socket.destroy();
    await Promise.all([...this.#connections].map((c) => c.work));
    await closed;
  }

  async closeAccount(accountId: string): Promise<number> {
    let closed = 0;
    for (const connection of this.#devices.values()) {
      if (connection.device?.endpoint.accountId !== accountId) continue;
      connection.socket.destroy();
      closed++;
    }
    return closed;
  }

  async send(scope: Scope, ref: string, payload: Buffer): Promise<{ bytes: number }> {
    const endpoint = await this.#context.domain.endpoints.get(scope, ref);
    const connection = this.#devices.get(endpoint.id);
    if (!connection?.device) {
      if (!(await this.#directory.get(endpoint.serviceId))) throw new AppError('IOTB_DEVICE_WRONG_PROTOCOL', 'The endpoint does not belong to a TCP service');
      throw new AppError('IOTB_DEVICE_NOT_CONNECTED');
    }
    const { framing } = connection.device.target.options;
    if (payload.length > framingCapacity(framing)) throw new AppError('IOTB_REQUEST_VALIDATION', `The payload is over the ${framingCapacity(framing)} bytes one frame carries`);
    if (framing.kind === 'delimiter' && payload.includes(framing.delimiter)) {
      throw new AppError('IOTB_REQUEST_VALIDATION', "The payload contains the service's frame delimiter");
    }
    // The connection is the device's own (TCP proved its address): only the send caps apply.
    this.#context.sendCaps.take(endpoint, payload.length);
    await new Promise<void>((resolve, reject) => connection.socket.write(encodeFrame(framing, payload), (error) => (error ? reject(error) : resolve())));
    await this.#context.presence.emit(connection.device.endpoint, TCP_SENT_EVENT, { remoteAddr: connection.remoteAddr, ...payloadFields(payload) });
    return { bytes: payload.length };
  }

  #accept(socket: net.Socket): void {
    const { remoteAddr } = remoteAddress(socket.remoteAddress ?? '', socket.remotePort ?? 0);
    const connection: Connection = { socket, remoteAddr, pending: Buffer.alloc(0), device: undefined, replaced: false, work: Promise.resolve() };
    this.#connections.add(connection);
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 60_000);
    socket.setTimeout(IDENTIFY_TIMEOUT_MS, () => {
      if (!connection.device) this.#close(connection, `no first frame within ${IDENTIFY_TIMEOUT_MS / 1000} s`);
    });
    socket.on('data', (chunk: Buffer) => {
      // Reading waits while a chunk is handled: a fast sender is held back by TCP, not by our memory.
      socket.pause();
      this.#then(connection, () => this.#receive(connection, chunk)).finally(() => {
        if (!socket.destroyed) socket.resume();
      });
    });
    socket.on('error', (error) => this.#logger.debug({ err: error, remoteAddr }, 'TCP connection error'));
    socket.on('close', () => void this.#then(connection, () => this.#closed(connection)));
  }

  /** Runs `step` after the connection's earlier work; a failure closes the connection, never the process. */
  #then(connection: Connection, step: () => Promise<void>): Promise<void> {
    connection.work = connection.work.then(step).catch((error: unknown) => {
      this.#refusals.error('failed', { err: error, remoteAddr: connection.remoteAddr }, 'TCP connection failed; closing it');
      connection.socket.destroy();
    });
    return connection.work;
  }

  async #receive(connection: Connection, chunk: Buffer): Promise<void> {
    if (connection.socket.destroyed) return;
    const device = connection.device;
    if (!device) {
      connection.pending = Buffer.concat([connection.pending, chunk]);
      await this.#identify(connection);
      return;
    }
    let frames: Buffer[];
    try {
      frames = device.decoder.push(chunk);
    } catch (error) {
      if (!(error instanceof FrameError)) throw error;
      this.#close(connection, error.message, {}, 'frame');
      return;
    }
    for (const frame of frames) await this.#message(connection, frame);
  }

  /** Finds the device from the first frame, trying each framing the TCP services use (docs/udp-tcp.md "Identification"). */
  async #identify(connection: Connection): Promise<void> {
    const byFraming = new Map<string, TcpService[]>();
    for (const target of await this.#directory.all()) {
      const signature = framingSignature(target.options.framing);
      byFraming.set(signature, [...(byFraming.get(signature) ?? []), target]);
    }
    const candidates: { target: TcpService; key: string; consumed: number; message: Buffer | undefined }[] = [];
    let waiting = false;
    for (const targets of byFraming.values()) {
      let found: ReturnType<typeof firstFrame>;
      try {
        found = firstFrame(connection.pending, targets[0]!.options.framing, IDENTIFY_MAX_BYTES);
      } catch (error) {
        if (error instanceof FrameError) continue; // not this framing
        throw error;
      }
      if (found === 'more') {
        waiting = true;
        continue;
      }
      for (const target of targets) {
        const { keyRule, prefix } = target.options;
        const split = keyRule === 'prefix' ? splitKey(found.frame, prefix) : undefined;
        const key = keyRule === 'prefix' ? split?.key : decodeKey(found.frame, prefix.encoding);
        if (key !== undefined) candidates.push({ target, key, consumed: found.consumed, message: split?.rest });
      }
    }
    const match = await matchDevice(candidates, (key) => this.#context.presence.findDevices('tcp', key));
    if (match.kind === 'one') return this.#open(connection, match.endpoint, match.candidate);
    if (match.kind === 'many') return this.#close(connection, 'the first frame names devices of several services', { serviceIds: match.serviceIds });
    // Another framing may still complete a frame that names the device.
    if (waiting && connection.pending.length <= IDENTIFY_MAX_BYTES) return;
    const provisioning = provisioningCandidate(candidates);
    if (provisioning.kind === 'one') {
      const endpoint = await this.#context.presence.provision(provisioning.candidate.target.service, provisioning.candidate.key);
      return this.#open(connection, endpoint, provisioning.candidate);
    }
    if (provisioning.kind === 'many') return this.#close(connection, 'several services would create the device', { serviceIds: provisioning.serviceIds });
    this.#close(connection, 'unknown device', { keys: candidates.map((c) => c.key) });
  }

  async #open(connection: Connection, endpoint: Endpoint, first: { target: TcpService; consumed: number; message: Buffer | undefined }): Promise<void> {
    const { target } = first;
    const previous = this.#devices.get(endpoint.id);
    if (previous) {
      // The device reconnected (its old connection may be half-open): the newest connection wins.
      previous.replaced = true;
      previous.socket.destroy();
      if (previous.device) await this.#context.presence.disconnected(previous.device.endpoint, 'tcp', 'replaced by a new connection');
    }
    const decoder = new FrameDecoder(target.options.framing, target.options.maxFrameBytes);
    connection.device = { endpoint, target, decoder };
    this.#devices.set(endpoint.id, connection);
    connection.socket.setTimeout(0);
    connection.device.endpoint = await this.#context.presence.connected(endpoint, { protocol: 'tcp', remoteAddr: connection.remoteAddr }, { serviceId: target.service.id });
    if (target.options.keyRule === 'login' && target.options.loginReply) connection.socket.write(target.options.loginReply);
    if (first.message !== undefined && first.message.length > 0) await this.#emitMessage(connection, first.message);
    const rest = connection.pending.subarray(first.consumed);
    connection.pending = Buffer.alloc(0);
    if (rest.length > 0) await this.#receive(connection, Buffer.from(rest));
  }

  async #message(connection: Connection, frame: Buffer): Promise<void> {
    const device = connection.device!;
    let payload = frame;
    if (device.target.options.keyRule === 'prefix') {
      const split = splitKey(frame, device.target.options.prefix);
      if (split?.key !== device.endpoint.key) {
        // A connection is one device: a frame naming another key (or none) is not delivered anywhere.
        this.#refusals.info('frame without key', { remoteAddr: connection.remoteAddr, endpointId: device.endpoint.id, bytes: frame.length }, "TCP frame without the connection's device key dropped");
        return;
      }
      payload = split.rest;
    }
    await this.#emitMessage(connection, payload);
  }

  async #emitMessage(connection: Connection, payload: Buffer): Promise<void> {
    const device = connection.device!;
    device.endpoint = await this.#context.presence.seen(device.endpoint);
    await this.#context.presence.emit(device.endpoint, TCP_MESSAGE_EVENT, { remoteAddr: connection.remoteAddr, ...payloadFields(payload) });
  }

  async #closed(connection: Connection): Promise<void> {
    this.#connections.delete(connection);
    const device = connection.device;
    if (!device || connection.replaced) return;
    if (this.#devices.get(device.endpoint.id) === connection) this.#devices.delete(device.endpoint.id);
    await this.#context.presence.disconnected(device.endpoint, 'tcp', this.#server ? 'connection closed' : 'service stopping');
  }

  /**
   * Closes a connection with a log line saying why (unknown device, oversized frame, …): one line per kind of
   * reason in 10 s at most (`kind`, when the reason's text varies), since anyone can open connections.
   */
  #close(connection: Connection, reason: string, detail: Record<string, unknown> = {}, kind = reason): void {
    this.#refusals.info(`closed ${kind}`, { remoteAddr: connection.remoteAddr, endpointId: connection.device?.endpoint.id, detail: reason, ...detail }, `TCP connection closed: ${reason}`);
    connection.socket.destroy();
  }
}
