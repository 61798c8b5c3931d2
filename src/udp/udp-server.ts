import dgram from 'node:dgram';
import type { Logger } from 'pino';
import { ThrottledLog } from '../devices/throttled-log.js';
import { ConfigError, ENV_NAMES } from '../config.js';
import type { Endpoint } from '../domain/endpoints.js';
import type { Scope } from '../domain/scope.js';
import { AppError } from '../errors.js';
import type { DeviceServer, DeviceServerContext } from '../devices/device-server.js';
import { decodeKey } from '../devices/device-keys.js';
import { payloadFields, remoteAddress } from '../devices/payload.js';
import { ServiceDirectory } from '../devices/service-directory.js';
import type { UdpChannel } from './udp-channel.js';
import { udpOptions, type UdpOptions } from './udp-options.js';
import type { UdpQueueStore } from './udp-queue.js';
import { UdpRouter, type Datagram, type RefusalReason, type Route, type UdpService } from './udp-router.js';

/** The event each accepted datagram becomes. */
export const UDP_MESSAGE_EVENT = 'udp-message';

/** Largest UDP payload over IPv4 (65535 − 8 UDP − 20 IP header bytes). */
export const MAX_DATAGRAM = 65_507;

/** Datagrams being handled at once; past it new ones are dropped (counted as `overload`), never buffered without bound. */
const MAX_IN_FLIGHT = 1000;

const PURGE_INTERVAL_MS = 10 * 60_000;

export interface UdpStats {
  received: number;
  delivered: number;
  refused: Record<RefusalReason | 'overload' | 'error', number>;
}

/** The parts of the process the UDP server uses. */
export type UdpServerContext = Pick<DeviceServerContext, 'channels' | 'config' | 'domain' | 'logger' | 'presence' | 'scripts' | 'sendCaps' | 'sendGuard' | 'stores'>;

/**
 * The UDP device port shared by every UDP service of every account: each datagram is routed to one
 * device (see UdpRouter), marks it seen and becomes a `udp-message` event; messages queued for it go
 * out right after. Bad or unroutable datagrams are dropped with a log line and a count, nothing else.
 */
export class UdpServer implements DeviceServer, UdpChannel {
  readonly name = 'udp';
  readonly stats: UdpStats = { received: 0, delivered: 0, refused: { unknown: 0, ambiguous: 0, overload: 0, error: 0 } };
  readonly #context: UdpServerContext;
  readonly #logger: Logger;
  readonly #directory: ServiceDirectory<UdpOptions>;
  readonly #router: UdpRouter;
  readonly #queue: UdpQueueStore;
  /** Datagrams of one source are handled in order (their events stay ordered); sources in parallel. */
  readonly #bySource = new Map<string, Promise<void>>();
  #inFlight = 0;
  /** Refused datagrams: one line per reason in 10 s, counting the ones left out (a flood of junk does not flood the log). */
  readonly #refusals: ThrottledLog;
  #socket: dgram.Socket | undefined;
  #purgeTimer: NodeJS.Timeout | undefined;

  constructor(context: UdpServerContext) {
    this.#context = context;
    this.#logger = context.logger.child({ server: 'udp' });
    this.#refusals = new ThrottledLog(this.#logger);
    this.#queue = context.stores.udp;
    context.domain.services.checkOptions('udp', (options) => void udpOptions(options));
    this.#directory = new ServiceDirectory(context.domain.services, 'udp', (service) => udpOptions(service.options), this.#logger);
    this.#router = new UdpRouter({
      services: () => this.#directory.all(),
      findDevices: (key) => context.presence.findDevices('udp', key),
      keyScript: (target, datagram) => this.#keyScript(target, datagram),
    });
    context.channels.udp = this;
  }

  async start(): Promise<Record<string, number>> {
    const socket = await bind(this.#context.config.udpPort);
    socket.on('message', (bytes, rinfo) => this.#receive(bytes, rinfo));
    // After binding, a socket error (e.g. ICMP unreachable on some platforms) is logged; it never takes the process down.
    socket.on('error', (error) => this.#logger.warn({ err: error }, 'UDP socket error'));
    this.#socket = socket;
    this.#purgeTimer = setInterval(() => {
      this.#queue.purgeExpired(Date.now()).catch((error: unknown) => this.#logger.warn({ err: error }, 'could not purge expired UDP queue messages'));
    }, PURGE_INTERVAL_MS);
    this.#purgeTimer.unref();
    return { udp: socket.address().port };
  }

  async stop(): Promise<void> {
    clearInterval(this.#purgeTimer);
    const socket = this.#socket;
    this.#socket = undefined;
    if (socket) await new Promise<void>((resolve) => socket.close(() => resolve()));
    await Promise.all(this.#bySource.values());
  }

  async send(scope: Scope, ref: string, payload: Buffer): Promise<{ remoteAddr: string; bytes: number }> {
    checkSize(payload);
    const { endpoint } = await this.#udpEndpoint(scope, ref);
    const to = await this.#context.presence.addressOf(endpoint, ['udp']);
    this.#context.sendGuard.check(to.host, to.port);
    this.#context.sendCaps.take(endpoint, payload.length);
    await this.#sendTo(to.host, to.port, payload);
    return { remoteAddr: to.remoteAddr, bytes: payload.length };
  }

  async queue(scope: Scope, ref: string, payload: Buffer, ttlSeconds: number): Promise<{ queued: number }> {
    checkSize(payload);
    const { endpoint, target } = await this.#udpEndpoint(scope, ref);
    // Charged when queued: the device's next datagram releases the whole queue at once.
    this.#context.sendCaps.take(endpoint, payload.length);
    const now = Date.now();
    const queued = await this.#queue.put(endpoint.id, payload, now + ttlSeconds * 1000, target.options.queueLimit, now);
    if (queued === undefined) throw new AppError('IOTB_DEVICE_QUEUE_FULL', `The device already holds ${target.options.queueLimit} queued messages (service option queueLimit)`);
    return { queued };
  }

  /** The endpoint `ref` names in the acting account, if it belongs to a UDP service. */
  async #udpEndpoint(scope: Scope, ref: string): Promise<{ endpoint: Endpoint; target: UdpService }> {
    const endpoint = await this.#context.domain.endpoints.get(scope, ref);
    const target = await this.#directory.get(endpoint.serviceId);
    if (!target) throw new AppError('IOTB_DEVICE_WRONG_PROTOCOL', 'The endpoint does not belong to a UDP service');
    return { endpoint, target };
  }

  #receive(bytes: Buffer, rinfo: dgram.RemoteInfo): void {
    this.stats.received++;
    if (this.#inFlight >= MAX_IN_FLIGHT) {
      this.stats.refused.overload++;
      return;
    }
    const { host, remoteAddr } = remoteAddress(rinfo.address, rinfo.port);
    const datagram: Datagram = { bytes, host, port: rinfo.port, remoteAddr };
    this.#inFlight++;
    const previous = this.#bySource.get(remoteAddr) ?? Promise.resolve();
    const handled = previous
      .then(() => this.#handle(datagram))
      .catch((error: unknown) => {
        this.stats.refused.error++;
        this.#refusals.error('error', { err: error, remoteAddr }, 'could not handle a datagram; it is dropped');
      })
      .finally(() => {
        this.#inFlight--;
        if (this.#bySource.get(remoteAddr) === handled) this.#bySource.delete(remoteAddr);
      });
    this.#bySource.set(remoteAddr, handled);
  }

  async #handle(datagram: Datagram): Promise<void> {
    let route = await this.#router.route(datagram);
    if (route.kind === 'provision') route = await this.#provision(route, datagram);
    if (route.kind === 'refused') {
      this.stats.refused[route.reason]++;
      this.#refusals.info(route.reason, { remoteAddr: datagram.remoteAddr, bytes: datagram.bytes.length, ...route.detail }, `UDP datagram refused: ${route.reason}`);
      return;
    }
    if (route.kind !== 'device') return;
    const { endpoint, payload } = route;
    // Devices behind NAT listen only briefly after sending: what waits for them goes out first (never to a
    // source no device can have, e.g. a spoofed broadcast address: it stays queued).
    if (this.#context.sendGuard.refusal(datagram.host, datagram.port) === undefined) {
      for (const message of await this.#queue.takeAll(endpoint.id, Date.now())) await this.#sendTo(datagram.host, datagram.port, message);
    }
    const seen = await this.#context.presence.heard(endpoint, { protocol: 'udp', remoteAddr: datagram.remoteAddr });
    await this.#context.presence.emit(seen, UDP_MESSAGE_EVENT, { remoteAddr: datagram.remoteAddr, ...payloadFields(payload) });
    this.stats.delivered++;
  }

  async #provision(route: Extract<Route, { kind: 'provision' }>, datagram: Datagram): Promise<Route> {
    try {
      const endpoint = await this.#context.presence.provision(route.target.service, route.key);
      return { kind: 'device', endpoint, target: route.target, payload: route.payload };
    } catch (error) {
      // Another datagram (another process) created it meanwhile: route again, it is known now.
      if (error instanceof AppError && error.code === 'IOTB_ENDPOINT_KEY_TAKEN') return this.#router.route(datagram);
      // The key is another account's device (one this service's network does not reach): not this service's to create.
      if (error instanceof AppError && error.code === 'IOTB_ENDPOINT_KEY_IN_USE') return { kind: 'refused', reason: 'unknown', detail: { keys: [route.key] } };
      throw error;
    }
  }

  async #keyScript(target: UdpService, datagram: Datagram): Promise<string | undefined> {
    let key: unknown;
    const { service } = target;
    const result = await this.#context.scripts.runScript({
      accountId: service.accountId,
      scriptId: `udp-key:${service.id}@${service.updatedAt}`,
      scriptName: `udp-key:${service.name.replace(/[^\w.-]/g, '_')}.js`,
      // The service's script is a function body: its `return` is handed back through trigger.reply.
      script: `trigger.reply((function (datagram) { ${target.options.keyScript ?? ''}\n})(event));`,
      event: { remoteAddr: datagram.remoteAddr, host: datagram.host, port: datagram.port, ...payloadFields(datagram.bytes) },
      host: async (namespace, fn, args) => {
        if (namespace !== 'trigger' || fn !== 'reply') throw new Error('a key script can use only the pure namespaces (convert, hash, …)');
        key = args[0];
        return true;
      },
    });
    if (result.status === 'failed') {
      this.#logger.info({ serviceId: service.id, accountId: service.accountId, error: result.error, line: result.line }, 'UDP key script failed');
      return undefined;
    }
    return typeof key === 'string' ? decodeKey(Buffer.from(key), 'utf8') : undefined;
  }

  #sendTo(host: string, port: number, payload: Buffer): Promise<void> {
    const socket = this.#socket;
    if (!socket) return Promise.reject(new Error('the UDP server is stopped'));
    // A dual-stack socket reaches IPv4 hosts through their IPv4-mapped IPv6 address.
    const target = socket.address().family === 'IPv6' && !host.includes(':') ? `::ffff:${host}` : host;
    return new Promise<void>((resolve, reject) => socket.send(payload, port, target, (error) => (error ? reject(error) : resolve())));
  }
}

function checkSize(payload: Buffer): void {
  if (payload.length > MAX_DATAGRAM) throw new AppError('IOTB_REQUEST_VALIDATION', `A UDP payload is at most ${MAX_DATAGRAM} bytes`);
}

/** A dual-stack socket on `::` (IPv6 and IPv4); IPv4 only where the host has no IPv6. A taken port stops the service. */
async function bind(port: number): Promise<dgram.Socket> {
  try {
    return await bindOn('udp6', '::', port);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EAFNOSUPPORT' && code !== 'EADDRNOTAVAIL') throw portError(error, port);
  }
  try {
    return await bindOn('udp4', '0.0.0.0', port);
  } catch (error) {
    throw portError(error, port);
  }
}

function bindOn(type: 'udp4' | 'udp6', address: string, port: number): Promise<dgram.Socket> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket({ type, ipv6Only: false });
    socket.once('error', (error) => {
      socket.close();
      reject(error);
    });
    socket.bind({ port, address, exclusive: true }, () => {
      socket.removeAllListeners('error');
      resolve(socket);
    });
  });
}

function portError(error: unknown, port: number): unknown {
  if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
    return new ConfigError(`UDP port ${port} is already in use: set ${ENV_NAMES.udpPort} to a free port (0 picks one)`);
  }
  return error;
}
