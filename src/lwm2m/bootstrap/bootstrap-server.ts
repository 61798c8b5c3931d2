/**
 * The LwM2M Bootstrap-Server (OMA LwM2M Core 1.1 "Bootstrap Interface"; CoAP mapping in Transport 1.1): a
 * device's Bootstrap-Request (`POST /bs?ep=…[&pct=…]`) is answered 2.04, then a session sends Bootstrap-Discover,
 * the Bootstrap-Delete and Bootstrap-Write requests of the configuration (plan.ts), on 1.1+ a Bootstrap-Read of
 * /1 to check what was written, and Bootstrap-Finish. Each answer is checked; the first one that is not what the
 * step expects ends the session as failed, before Bootstrap-Finish, so the device never takes a half-written
 * configuration (Core: without Bootstrap-Finish the client does not use it and bootstraps again).
 */
import type { Logger } from 'pino';
import { contentFormat, formatPeer, option, OptionNumber, uriPathOptions, uriQuery, type CoapEndpoint, type CoapMessage, type CoapRequest, type CoapResponse, type Peer } from '../../coap/index.js';
import type { DevicePresence } from '../../devices/presence.js';
import type { SendGuard } from '../../devices/send-guard.js';
import type { Endpoint } from '../../domain/endpoints.js';
import type { Service } from '../../domain/services.js';
import { AppError } from '../../errors.js';
import { decode, parseLinks } from '../codecs/index.js';
import { CONTENT_FORMATS, type Lwm2mRecord } from '../model.js';
import type { ObjectRegistry } from '../objects/registry.js';
import type { BootstrapConfig } from './config.js';
import type { BootstrapConfigs } from './configs.js';
import { bootstrapEncoding, bootstrapPlan, type BootstrapStep } from './plan.js';

/** How long each request of a session waits for the device (CoAP retransmissions included). */
const STEP_TIMEOUT_MS = 30_000;

/** A step's request and what the device must answer for the session to go on. */
const EXPECTED: Record<BootstrapStep['operation'], string> = { delete: '2.02', write: '2.04', finish: '2.04' };

class BootstrapFailure extends Error {
  constructor(
    message: string,
    readonly step?: { operation: string; path: string; code?: string },
  ) {
    super(message);
  }
}

interface Session {
  readonly id: number;
  readonly endpoint: Endpoint;
  readonly peer: Peer;
  readonly started: number;
}

export interface BootstrapServerOptions {
  /** The endpoint a device is reached on (CoAPS for a device heard over DTLS). */
  readonly coapFor: (peer: Peer) => CoapEndpoint;
  readonly configs: BootstrapConfigs;
  readonly presence: DevicePresence;
  readonly objects: ObjectRegistry;
  readonly sendGuard?: SendGuard | undefined;
  readonly logger: Logger;
  /** The CoAPS server certificate (DER) for certificate-mode accounts; undefined when CoAPS is off. */
  readonly serverCertificate?: (() => Buffer | undefined) | undefined;
  /** ms each request waits for the device; default 30 s. */
  readonly stepTimeoutMs?: number | undefined;
}

export class BootstrapServer {
  readonly #options: BootstrapServerOptions;
  /** The running session per endpoint: a new Bootstrap-Request replaces it. */
  readonly #sessions = new Map<string, Session>();
  #nextId = 0;

  constructor(options: BootstrapServerOptions) {
    this.#options = options;
  }

  /** How many sessions are running. */
  get running(): number {
    return this.#sessions.size;
  }

  /**
   * A Bootstrap-Request of a known device (the caller resolved `ep` as a registration does). 2.04 and the
   * session starts after the answer; 4.04 when the device has no configuration (its own or its service's),
   * 4.00 for a `pct` that is not a number.
   */
  async handle(request: CoapMessage, peer: Peer, endpoint: Endpoint, service: Pick<Service, 'options'>): Promise<CoapResponse> {
    const query = new Map(uriQuery(request).map((part) => [part.split('=')[0]!, part.slice(part.indexOf('=') + 1)] as const));
    const pctText = query.get('pct');
    const pct = pctText === undefined ? undefined : Number(pctText);
    if (pct !== undefined && (!Number.isInteger(pct) || pct < 0 || pct > 65_535)) return { code: '4.00', payload: 'pct is a Content-Format number' };
    let effective;
    try {
      effective = await this.#options.configs.effective(endpoint, service);
    } catch (error) {
      const reason = error instanceof AppError ? `the service's bootstrap option is not valid: ${error.message}` : String(error);
      await this.#ended(endpoint, { status: 'failed', reason });
      return { code: '4.04', payload: 'no usable bootstrap configuration' };
    }
    if (!effective) {
      await this.#ended(endpoint, { status: 'failed', reason: 'no bootstrap configuration for this endpoint or its service' });
      return { code: '4.04', payload: 'no bootstrap configuration' };
    }
    const session: Session = { id: ++this.#nextId, endpoint, peer, started: performance.now() };
    const replaced = this.#sessions.get(endpoint.id);
    this.#sessions.set(endpoint.id, session);
    if (replaced) this.#options.logger.debug({ endpointId: endpoint.id }, 'a new Bootstrap-Request replaces a running bootstrap session');
    const encoding = bootstrapEncoding(effective.config, pct);
    await this.#emit(endpoint, { stage: 'started', source: effective.source, ...(pct !== undefined && { pct }), encoding, writeAs: effective.config.writeAs, remoteAddr: formatPeer(peer) });
    // Answer first: the device takes the server's requests once it has its 2.04 (Core "Bootstrap-Request").
    setImmediate(() => void this.#run(session, effective.config, pct));
    return { code: '2.04' };
  }

  async #run(session: Session, configured: BootstrapConfig, pct: number | undefined): Promise<void> {
    const { endpoint } = session;
    let requests = 0;
    try {
      const discovered = await this.#discover(session);
      requests++;
      const config = avoidBootstrapAccount(configured, discovered.bootstrapSecurityInstances);
      if (config !== configured) await this.#emit(endpoint, { stage: 'step', operation: 'adjust', securityInstance: config.securityInstance, reason: 'the configured Security instance is the Bootstrap-Server account' });
      const models = this.#options.objects.lookupFor(endpoint.accountId);
      const steps = bootstrapPlan(config, { pct, models, serverCertificate: this.#options.serverCertificate?.() });
      for (const step of steps) {
        if (step.operation === 'finish') {
          if (discovered.version !== '1.0') {
            await this.#verifyServers(session, steps);
            requests++;
          }
        }
        await this.#step(session, step);
        requests++;
      }
      const durationMs = Math.round(performance.now() - session.started);
      await this.#ended(endpoint, { status: 'finished', servers: config.servers.map((s) => s.uri), requests, durationMs }, session);
    } catch (error) {
      if (error instanceof SupersededError) return;
      const failure = error instanceof BootstrapFailure ? error : new BootstrapFailure(error instanceof Error ? error.message : String(error));
      await this.#ended(endpoint, { status: 'failed', reason: failure.message, ...(failure.step && { step: failure.step }), requests }, session);
    } finally {
      if (this.#sessions.get(endpoint.id) === session) this.#sessions.delete(endpoint.id);
    }
  }

  /** Bootstrap-Discover of `/`: the device's version and its Bootstrap-Server account. Optional for the device. */
  async #discover(session: Session): Promise<{ version: string | undefined; bootstrapSecurityInstances: number[] }> {
    const response = await this.#send(session, { code: '0.01', options: [option(OptionNumber.Accept, CONTENT_FORMATS.linkFormat)] });
    await this.#stepEvent(session, 'discover', '/', response.code);
    if (response.code !== '2.05') return { version: undefined, bootstrapSecurityInstances: [] };
    try {
      const links = parseLinks(response.payload);
      const version = links.find((link) => link.target === '/')?.attributes.find((a) => a.name === 'lwm2m')?.value?.replace(/"/g, '');
      // Core 1.1 Bootstrap-Discover: Security instances of server accounts carry ssid; the Bootstrap-Server's does not.
      const bootstrapSecurityInstances = links
        .map((link) => ({ match: /^\/0\/(\d+)$/.exec(link.target), ssid: link.attributes.some((a) => a.name === 'ssid') }))
        .filter((link) => link.match && !link.ssid)
        .map((link) => Number(link.match![1]));
      return { version, bootstrapSecurityInstances };
    } catch {
      // 1.0 clients answer `lwm2m="1.0",</0/0>,…` (not RFC 6690; Core 1.2 changed it): taken as no Discover.
      return { version: legacyVersion(response.payload), bootstrapSecurityInstances: [] };
    }
  }

  async #step(session: Session, step: BootstrapStep): Promise<void> {
    const request: CoapRequest =
      step.operation === 'write'
        ? { code: '0.03', options: [...uriPathOptions(step.path), option(OptionNumber.ContentFormat, step.contentFormat)], payload: Buffer.from(step.payload) }
        : step.operation === 'delete'
          ? { code: '0.04', options: uriPathOptions(step.path) }
          : { code: '0.02', options: uriPathOptions('/bs') };
    const response = await this.#send(session, request);
    await this.#stepEvent(session, step.operation, step.path, response.code, step.operation === 'write' ? step.contentFormat : undefined);
    if (response.code === EXPECTED[step.operation]) return;
    // Bootstrap-Delete of what is not there is no failure (a device without /1 instances may say 4.04).
    if (step.operation === 'delete' && response.code === '4.04') return;
    const what = step.operation === 'finish' ? 'Bootstrap-Finish' : step.operation === 'write' ? 'Bootstrap-Write' : 'Bootstrap-Delete';
    const why = step.operation === 'finish' && response.code === '4.06' ? ': the device found the configuration inconsistent' : '';
    throw new BootstrapFailure(`${what} ${step.path} answered ${response.code}${why}`, { operation: step.operation, path: step.path, code: response.code });
  }

  /** Bootstrap-Read of /1 (1.1+): the written Server instances are there with their values. Devices may refuse it (4.05). */
  async #verifyServers(session: Session, steps: readonly BootstrapStep[]): Promise<void> {
    const written = steps.flatMap((step) => (step.operation === 'write' ? step.records.filter((r) => r.path.startsWith('/1/')) : []));
    const format = steps.find((s): s is Extract<BootstrapStep, { operation: 'write' }> => s.operation === 'write')?.contentFormat;
    // Plain text carries one value: a device written in text is not read back as an object.
    if (written.length === 0 || format === undefined || format === CONTENT_FORMATS.text) return;
    const response = await this.#send(session, { code: '0.01', options: [...uriPathOptions('/1'), option(OptionNumber.Accept, format)] });
    await this.#stepEvent(session, 'read', '/1', response.code);
    if (response.code !== '2.05') return; // not every client implements Bootstrap-Read
    let read;
    try {
      read = decode(contentFormat(response) ?? format, response.payload, { basePath: '/1', models: this.#options.objects.lookupFor(session.endpoint.accountId) });
    } catch {
      throw new BootstrapFailure('the Bootstrap-Read answer of /1 could not be decoded', { operation: 'read', path: '/1', code: response.code });
    }
    const values = new Map(read.map((r) => [r.path, comparable(r.value)]));
    const missing = written.filter((r) => values.get(r.path) !== comparable(r.value));
    if (missing.length > 0) throw new BootstrapFailure(`Bootstrap-Read of /1 does not show what was written at ${missing.map((r) => r.path).join(', ')}`, { operation: 'read', path: '/1', code: response.code });
  }

  async #send(session: Session, request: CoapRequest): Promise<CoapMessage> {
    if (this.#sessions.get(session.endpoint.id) !== session) throw new SupersededError();
    this.#options.sendGuard?.check(session.peer.address, session.peer.port);
    try {
      return await this.#options.coapFor(session.peer).request(session.peer, request, { timeout: this.#options.stepTimeoutMs ?? STEP_TIMEOUT_MS });
    } catch (error) {
      if (this.#sessions.get(session.endpoint.id) !== session) throw new SupersededError();
      const path = `/${(request.options ?? []).filter((o) => o.number === OptionNumber.UriPath).map((o) => o.value.toString()).join('/')}`;
      throw new BootstrapFailure(`the device did not answer ${request.code === '0.04' ? 'DELETE' : request.code === '0.03' ? 'PUT' : request.code === '0.02' ? 'POST' : 'GET'} ${path}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  #stepEvent(session: Session, operation: string, path: string, code: string, format?: number): Promise<void> {
    return this.#emit(session.endpoint, { stage: 'step', operation, path, code, ...(format !== undefined && { contentFormat: format }) });
  }

  /** The session's end: an event and the endpoint's status detail `lastBootstrap`. */
  async #ended(endpoint: Endpoint, outcome: { status: 'finished' | 'failed'; [key: string]: unknown }, session?: Session): Promise<void> {
    if (session && this.#sessions.get(endpoint.id) !== session) return;
    try {
      await this.#emit(endpoint, { stage: outcome.status, ...outcome });
      const { status, reason } = outcome;
      await this.#options.presence.setDetails(endpoint, { lastBootstrap: { at: new Date().toISOString(), status, ...(typeof reason === 'string' && { reason }) } });
    } catch (error) {
      this.#options.logger.warn({ err: error, endpointId: endpoint.id }, 'could not record the end of an LwM2M bootstrap');
    }
  }

  #emit(endpoint: Endpoint, data: Record<string, unknown>): Promise<void> {
    return this.#options.presence.emit(endpoint, 'lwm2m-bootstrap', data);
  }
}

/** The session was replaced by a newer Bootstrap-Request of the same device: it stops without a word. */
class SupersededError extends Error {}

/**
 * Security instance ids that would overwrite the Bootstrap-Server account (Core: it is never written by the
 * Bootstrap-Server) move up to the first free block.
 */
function avoidBootstrapAccount(config: BootstrapConfig, taken: readonly number[]): BootstrapConfig {
  const collides = (base: number) => config.servers.some((_, i) => taken.includes(base + i));
  if (!collides(config.securityInstance)) return config;
  let base = config.securityInstance;
  while (collides(base)) base++;
  return { ...config, securityInstance: base };
}

/** A resource value as text, to compare what was written with what is read back. */
function comparable(value: Lwm2mRecord['value']): string {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex');
  if (value instanceof Date) return value.toISOString();
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** The version of a 1.0-style Bootstrap-Discover answer (`lwm2m="1.0",…`), if it has one. */
function legacyVersion(payload: Buffer): string | undefined {
  return /^\s*lwm2m="?([0-9.]+)"?/.exec(payload.toString('utf8'))?.[1];
}
