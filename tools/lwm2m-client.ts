/**
 * A small LwM2M client simulator for tests and benchmarks: registers with a server, keeps a tree of
 * resource values, answers Read / Discover / Write / Execute / Create / Delete in every content format the
 * codecs know, updates and de-registers; it can be observed (RFC 7641) and notifies its observers on
 * {@link SimulatedClient.changeValue}. It speaks over the project's own CoAP endpoint (real UDP). It can also be
 * bootstrapped ({@link SimulatedClient.bootstrap}, tools/lwm2m-bootstrap-client.ts) and then registers with the
 * server account it was given.
 *
 *   node --import tsx tools/lwm2m-client.ts coap://127.0.0.1:5683 my-device
 */
import { CoapEndpoint, emptyMessage, encodeMessage, UdpTransport, contentFormat, accept, locationPath, observe, option, OptionNumber, uriPath, uriQueryOptions, type CoapMessage, type CoapResponse, type Peer } from '../src/coap/index.js';
import { DtlsClientTransport } from './dtls-client-transport.js';
import type { Transport } from '../src/coap/transport.js';
import { decode, decodePaths, encode, encodeLinks, type LinkAttribute } from '../src/lwm2m/codecs/index.js';
import { CONTENT_FORMATS, parsePath, type Lwm2mRecord, type ModelLookup } from '../src/lwm2m/model.js';
import { ObjectRegistry } from '../src/lwm2m/objects/registry.js';
import { BootstrapSession, EXCHANGE_LIFETIME_MS, ensureBootstrapAccount, loopbackPeer, serverAccounts, type BootstrapResult } from './lwm2m-bootstrap-client.js';
import { FirmwareDevice, tapTransport, type FirmwareOptions } from './lwm2m-firmware.js';

export type { BootstrapResult, ServerAccount } from './lwm2m-bootstrap-client.js';
export type { FirmwareOptions } from './lwm2m-firmware.js';

export interface SimulatedClientOptions {
  /**
   * The LwM2M Server it registers with. Optional for a device that is to be bootstrapped; its address family
   * (IPv4 or IPv6) is the socket's, which is IPv4 loopback without it.
   */
  readonly server?: Peer | undefined;
  readonly endpointName: string;
  readonly lifetime?: number;
  readonly lwm2mVersion?: '1.0' | '1.1' | '1.2';
  /** Binding, e.g. `U` or `UQ` (1.0 queue mode). */
  readonly binding?: string;
  /**
   * Initial resource values; the default is a Server instance (1/0), a Device (3/0) and a Temperature sensor
   * (3303/0). Values without /0 and /1 play a device with no server configured (for {@link SimulatedClient.bootstrap}).
   */
  readonly values?: readonly Lwm2mRecord[];
  /** Extra query parameters of the Register (e.g. `Q` for 1.1 queue mode). */
  readonly extraQuery?: readonly string[];
  readonly transmission?: { ackTimeout?: number; maxRetransmit?: number };
  /** Local UDP port, default 0 (any): a fixed one lets a test play a device taking over another's address. */
  readonly localPort?: number;
  /** CoAPS: shake hands with `server` over DTLS with this PSK (node-dtls-client) instead of plain UDP. */
  readonly dtls?: { readonly identity: string; readonly key: Buffer; readonly ciphers?: string[] };
  /**
   * Content formats for values it takes and answers in, besides plain text and opaque (single resources) and
   * link format (discover); others get 4.06 (asked to answer in them) or 4.15 (sent in them). Default: every
   * format the codecs know. The first is what it answers a GET without Accept in.
   */
  readonly formats?: readonly number[];
  /** Content formats it announces in its root link (`</>;rt="oma.lwm2m";ct=…`); without, it sends no root link. */
  readonly announce?: readonly number[];
  /** A Firmware Update object (/5/0, tools/lwm2m-firmware.ts) that takes pushed and pulled packages and updates. */
  readonly firmware?: FirmwareOptions;
}

const F = CONTENT_FORMATS;

/**
 * Client profiles seen in the field, for test matrices: what each announces and what it takes. Modelled on
 * Wakaama built with SenML JSON (`ct=110`) or SenML CBOR (`ct=112`), a 1.0 TLV-only client, a 1.1 client that
 * announces nothing, and a 1.2 client with LwM2M CBOR.
 */
export const CLIENT_PROFILES = {
  '1.0-tlv': { lwm2mVersion: '1.0', formats: [F.tlv] },
  '1.1-ct110': { lwm2mVersion: '1.1', formats: [F.senmlJson, F.tlv], announce: [F.senmlJson] },
  '1.1-ct112': { lwm2mVersion: '1.1', formats: [F.senmlCbor, F.senmlJson, F.tlv], announce: [F.senmlCbor] },
  '1.1-no-ct': { lwm2mVersion: '1.1', formats: [F.tlv, F.senmlJson] },
  '1.2-lwm2m-cbor': { lwm2mVersion: '1.2', formats: [F.senmlCbor, F.lwm2mCbor, F.senmlJson, F.tlv], announce: [F.senmlCbor, F.lwm2mCbor] },
} as const satisfies Record<string, Pick<SimulatedClientOptions, 'lwm2mVersion' | 'formats' | 'announce'>>;

export type ClientProfile = keyof typeof CLIENT_PROFILES;

/** Formats every client takes for a single resource, and link format for discover. */
const ALWAYS_TAKEN: readonly number[] = [F.text, F.opaque, F.linkFormat];

export const DEFAULT_VALUES: readonly Lwm2mRecord[] = [
  { path: '/1/0/0', type: 'integer', value: 101 },
  { path: '/1/0/1', type: 'integer', value: 300 },
  { path: '/1/0/7', type: 'string', value: 'U' },
  { path: '/3/0/0', type: 'string', value: 'IoT Bridge' },
  { path: '/3/0/1', type: 'string', value: 'Simulated client' },
  { path: '/3/0/2', type: 'string', value: 'SIM-0001' },
  { path: '/3/0/3', type: 'string', value: '1.0.0' },
  { path: '/3/0/7/0', type: 'integer', value: 3800 },
  { path: '/3/0/7/1', type: 'integer', value: 5000 },
  { path: '/3/0/9', type: 'integer', value: 95 },
  { path: '/3/0/14', type: 'string', value: '+01:00' },
  { path: '/3303/0/5700', type: 'float', value: 21.5 },
  { path: '/3303/0/5701', type: 'string', value: 'Cel' },
];

/** The shipped object definitions, built once for every simulated client of the process. */
let shippedModels: ModelLookup | undefined;

/** Resources that can be executed (Device: Reboot, Factory Reset). */
const EXECUTABLE = new Set(['/3/0/4', '/3/0/5']);

export class SimulatedClient {
  readonly options: SimulatedClientOptions;
  readonly coap: CoapEndpoint;
  /** Values by path. */
  readonly values = new Map<string, Lwm2mRecord>();
  /** Executed paths with their arguments, in order. */
  readonly executed: { path: string; args: string }[] = [];
  /** Requests the server sent, e.g. `GET /3/0`. */
  readonly received: string[] = [];
  /** Notifications sent to observers, e.g. `/3303/0/5700` (the observed path). */
  readonly notified: string[] = [];
  /** The Firmware Update object, with `options.firmware`. */
  readonly firmware: FirmwareDevice | undefined;
  /** Observe-Composite registrations: the paths each token watches. */
  readonly #compositePaths = new Map<string, readonly string[]>();
  readonly #models: ModelLookup;
  /** The content format each observation asked for, by token (hex). */
  readonly #observedFormats = new Map<string, number>();
  #location: string | undefined;
  /** Where Register, Update, De-register, Send and pings go: `options.server`, or the bootstrapped account's URI. */
  #server: Peer | undefined;
  /** The bootstrap in progress. */
  #bootstrap: BootstrapSession | undefined;
  /** A bootstrap finished: register() uses the server account it wrote. */
  #bootstrapped = false;
  readonly #transport: Transport;
  /** The socket is on ::1 (else 127.0.0.1). */
  readonly #ipv6: boolean;
  #pingId = Math.floor(Math.random() * 0xffff);

  constructor(options: SimulatedClientOptions) {
    this.options = options;
    this.#models = shippedModels ??= new ObjectRegistry();
    for (const record of options.values ?? DEFAULT_VALUES) this.values.set(record.path, record);
    this.#server = options.server;
    this.#ipv6 = options.server?.address.includes(':') ?? false;
    const transport =
      options.dtls && options.server
        ? new DtlsClientTransport({ server: options.server, ...options.dtls, ...(options.localPort !== undefined && { localPort: options.localPort }) })
        : new UdpTransport({ host: this.#ipv6 ? '::1' : '127.0.0.1', port: options.localPort ?? 0 });
    // The firmware object sees Package blocks go by; the endpoint hands it only the whole body.
    this.#transport = options.firmware ? tapTransport(transport, (datagram) => this.firmware?.inspect(datagram)) : transport;
    this.coap = new CoapEndpoint({
      transport: this.#transport,
      rateLimit: false,
      transmission: { ackTimeout: options.transmission?.ackTimeout ?? 2000, maxRetransmit: options.transmission?.maxRetransmit ?? 4 },
    });
    this.coap.onRequest((request, peer) => this.#serve(request, peer));
    this.firmware = options.firmware
      ? new FirmwareDevice(options.firmware, {
          values: this.values,
          coap: this.coap,
          ipv6: this.#ipv6,
          psk: options.dtls,
          changeValue: (path, value) => this.changeValue(path, value),
          decode: (request, path) => this.#decode(request, path),
          register: () => this.register(),
        })
      : undefined;
  }

  get registered(): boolean {
    return this.#location !== undefined;
  }

  /** The registration's location (`/rd/<id>`); settable to play a device that remembers an old one. */
  get location(): string | undefined {
    return this.#location;
  }

  set location(location: string | undefined) {
    this.#location = location;
  }

  async start(): Promise<void> {
    await this.coap.start();
  }

  async stop(): Promise<void> {
    this.#bootstrap?.end(false);
    this.firmware?.stop();
    await this.coap.stop();
  }

  /**
   * Registers; resolves with the server's response code (2.01 on success). After a finished bootstrap it
   * registers with the first LwM2M Server Account it has (the lowest Server instance with a matching Security
   * instance): at its URI (loopback coap:// only, else it throws), with its Lifetime and Binding (on 1.1+ a Q in
   * the Binding becomes the `Q` parameter: Core 1.1 "Register Operation" has Queue Mode apart from the binding).
   */
  async register(): Promise<string> {
    const version = this.options.lwm2mVersion ?? '1.1';
    const extra = [...(this.options.extraQuery ?? [])];
    let lifetime = this.options.lifetime ?? 300;
    let binding = this.options.binding ?? 'U';
    if (this.#bootstrapped) {
      const [account] = serverAccounts(this.values);
      if (account === undefined) throw new Error('bootstrapped, but the device has no LwM2M Server Account left');
      this.#server = this.#reachable(loopbackPeer(account.uri));
      lifetime = account.lifetime ?? lifetime;
      binding = account.binding ?? binding;
      if (version !== '1.0' && binding.includes('Q')) {
        binding = binding.replace('Q', '');
        if (!extra.includes('Q')) extra.push('Q');
      }
    }
    const query = [`ep=${this.options.endpointName}`, `lt=${lifetime}`, `lwm2m=${version}`, `b=${binding}`, ...extra];
    const response = await this.coap.request(this.#target(), {
      code: '0.02',
      options: [option(OptionNumber.UriPath, 'rd'), ...uriQueryOptions(query), option(OptionNumber.ContentFormat, CONTENT_FORMATS.linkFormat)],
      payload: Buffer.from(encodeLinks(this.#objectLinks())),
    });
    if (response.code === '2.01') this.#location = `/${locationPath(response).join('/')}`;
    return response.code;
  }

  /**
   * Where Register, Update, De-register, Send and pings go from now on: what a load balancer does when it sends the
   * device's datagrams to another node of a cluster (the device keeps its socket, so its address stays the same).
   */
  useServer(server: Peer): void {
    this.#server = this.#reachable(server);
  }

  /** Registration Update; `query` e.g. `['lt=600']`. */
  async update(query: readonly string[] = [], withObjects = false): Promise<string> {
    if (!this.#location) throw new Error('not registered');
    const response = await this.coap.request(this.#target(), {
      code: '0.02',
      options: [...this.#locationOptions(), ...uriQueryOptions([...query]), ...(withObjects ? [option(OptionNumber.ContentFormat, CONTENT_FORMATS.linkFormat)] : [])],
      payload: withObjects ? Buffer.from(encodeLinks(this.#objectLinks())) : Buffer.alloc(0),
    });
    if (response.code === '4.04') this.#location = undefined;
    return response.code;
  }

  /** A CoAP ping (empty CON, RFC 7252 4.3) from the device's socket: what queue-mode devices send to say they are there. */
  ping(): void {
    this.#pingId = (this.#pingId + 1) & 0xffff;
    this.#transport.send(encodeMessage(emptyMessage('CON', this.#pingId)), this.#target());
  }

  async deregister(): Promise<string> {
    if (!this.#location) throw new Error('not registered');
    const response = await this.coap.request(this.#target(), { code: '0.04', options: this.#locationOptions() });
    this.#location = undefined;
    return response.code;
  }

  /** LwM2M 1.1 Send of the values at `paths` in SenML CBOR (or another format). */
  async send(paths: readonly string[], format: number = CONTENT_FORMATS.senmlCbor): Promise<string> {
    const records = [...this.values.values()].filter((r) => paths.some((p) => r.path === p || r.path.startsWith(`${p}/`)));
    const response = await this.coap.request(this.#target(), {
      code: '0.02',
      options: [option(OptionNumber.UriPath, 'dp'), option(OptionNumber.ContentFormat, format)],
      payload: Buffer.from(encode(format, records, { basePath: '/', models: this.#models })),
    });
    return response.code;
  }

  /**
   * Client Initiated Bootstrap (Core 1.1 "Bootstrap Interface"): sends the Bootstrap-Request (`POST /bs?ep=…`,
   * plus `&pct=` on 1.1+ when given), then serves the Bootstrap-Server's Write, Delete, Discover and Read until
   * its Bootstrap-Finish is answered 2.04 or `timeoutMs` (default EXCHANGE_LIFETIME, 247 s) passes; see
   * tools/lwm2m-bootstrap-client.ts for the answers. A Bootstrap-Server Account for `bootstrapServer` is added
   * to the values first if the device has none. After a finished bootstrap, register() uses the written account
   * and any earlier registration is forgotten.
   */
  async bootstrap(bootstrapServer: Peer, options: { pct?: number; timeoutMs?: number } = {}): Promise<BootstrapResult> {
    if (this.#bootstrap) throw new Error('a bootstrap is already in progress');
    this.#reachable(bootstrapServer);
    ensureBootstrapAccount(this.values, bootstrapServer);
    const version = this.options.lwm2mVersion ?? '1.1';
    const timeout = options.timeoutMs ?? EXCHANGE_LIFETIME_MS;
    const session = new BootstrapSession(
      { values: this.values, models: this.#models, lwm2mVersion: version, takes: (format, single) => this.#takes(format, single), defaultFormat: this.options.formats?.[0] ?? CONTENT_FORMATS.tlv },
      bootstrapServer,
      timeout,
    );
    this.#bootstrap = session;
    try {
      const query = [`ep=${this.options.endpointName}`, ...(options.pct !== undefined && version !== '1.0' ? [`pct=${options.pct}`] : [])];
      let requestCode: string | undefined;
      try {
        requestCode = (await this.coap.request(bootstrapServer, { code: '0.02', options: [option(OptionNumber.UriPath, 'bs'), ...uriQueryOptions(query)] }, { timeout })).code;
      } catch {
        // No answer: the bootstrap failed.
      }
      if (requestCode !== '2.04') session.end(false);
      const finished = await session.done;
      if (finished) {
        this.#bootstrapped = true;
        this.#location = undefined;
      }
      return session.result(requestCode, finished);
    } finally {
      this.#bootstrap = undefined;
    }
  }

  /**
   * Sets a resource's value (its type: the current one, else from the JS value) and notifies the observers
   * of that path or of a parent path with the values under the observed path, in the format they asked.
   */
  async changeValue(path: string, value: Lwm2mRecord['value']): Promise<number> {
    const type = this.values.get(path)?.type ?? (typeof value === 'number' ? (Number.isInteger(value) ? 'integer' : 'float') : typeof value === 'boolean' ? 'boolean' : 'string');
    this.values.set(path, { path, type, value });
    let sent = 0;
    for (const observer of this.coap.observers()) {
      const composite = this.#compositePaths.get(observer.token.toString('hex'));
      const watched = composite ?? [observer.path];
      if (!watched.some((p) => path === p || path.startsWith(p === '/' ? '/' : `${p}/`))) continue;
      const format = this.#observedFormats.get(observer.token.toString('hex')) ?? CONTENT_FORMATS.tlv;
      const under = this.#valuesUnder(watched);
      try {
        await this.coap.notify(observer, { code: '2.05', options: [option(OptionNumber.ContentFormat, format)], payload: Buffer.from(encode(format, under, { basePath: observer.path, models: this.#models })) });
        this.notified.push(observer.path);
        sent++;
      } catch {
        // The observer went away (RST or no ACK).
      }
    }
    return sent;
  }

  #valuesUnder(paths: readonly string[]): Lwm2mRecord[] {
    return [...this.values.values()].filter((r) => paths.some((p) => p === '/' || r.path === p || r.path.startsWith(`${p}/`)));
  }

  #target(): Peer {
    if (this.#server === undefined) throw new Error('no LwM2M server: give options.server, or bootstrap() first');
    return this.#server;
  }

  /** `peer` if this client's socket (IPv4 or IPv6 loopback) can reach it. */
  #reachable(peer: Peer): Peer {
    if (peer.address.includes(':') !== this.#ipv6) {
      throw new Error(`${peer.address} is not reachable from this simulated client's ${this.#ipv6 ? '::1' : '127.0.0.1'} socket (give options.server of that address family)`);
    }
    return peer;
  }

  #locationOptions() {
    return this.#location!.split('/').filter(Boolean).map((segment) => option(OptionNumber.UriPath, segment));
  }

  #objectLinks() {
    const instances = new Set<string>();
    // The Security Object is never in the list (Core 1.1 "Register Operation", Objects and Object Instances).
    for (const path of this.values.keys()) if (!path.startsWith('/0/')) instances.add(path.split('/').slice(0, 3).join('/'));
    const links = [...instances].sort().map((target) => ({ target, attributes: [] as LinkAttribute[] }));
    const announce = this.options.announce;
    if (announce === undefined) return links;
    // Wakaama's form for one format (ct=110); RFC 6690's quoted list for several (ct="112 11544").
    const ct: LinkAttribute = announce.length === 1 ? { name: 'ct', value: String(announce[0]) } : { name: 'ct', value: announce.join(' '), quoted: true };
    return [{ target: '/', attributes: [{ name: 'rt', value: 'oma.lwm2m', quoted: true }, ct] }, ...links];
  }

  /** Whether it takes `format` for values (`single`: also plain text and opaque). */
  #takes(format: number, single: boolean): boolean {
    if (single && ALWAYS_TAKEN.includes(format)) return true;
    return this.options.formats === undefined || this.options.formats.includes(format);
  }

  #serve(request: CoapMessage, peer: Peer): CoapResponse {
    const path = uriPath(request);
    this.received.push(`${request.code} ${path}`);
    // Only while bootstrapping, and only from the Bootstrap-Server, are requests Bootstrap operations.
    if (this.#bootstrap?.from(peer)) return this.#bootstrap.serve(request);
    const firmware = this.firmware?.serve(request, path);
    if (firmware) return firmware;
    let parsed;
    try {
      parsed = parsePath(path);
    } catch {
      return { code: '4.00' };
    }
    const under = [...this.values.values()].filter((r) => r.path === path || r.path.startsWith(`${path}/`));
    switch (request.code) {
      case '0.01': {
        if (under.length === 0) return { code: '4.04' };
        const wanted = accept(request) ?? this.options.formats?.[0] ?? CONTENT_FORMATS.tlv;
        if (wanted !== CONTENT_FORMATS.linkFormat && !this.#takes(wanted, isSingle(under, path))) return { code: '4.06' };
        if (wanted === CONTENT_FORMATS.linkFormat) {
          const targets = [...new Set(under.map((r) => r.path.split('/').slice(0, 4).join('/')))];
          return { code: '2.05', options: [option(OptionNumber.ContentFormat, wanted)], payload: Buffer.from(encodeLinks([{ target: path, attributes: [] }, ...targets.map((target) => ({ target, attributes: [] }))])) };
        }
        try {
          const payload = Buffer.from(encode(wanted, under, { basePath: path, models: this.#models }));
          // Observe: 0 registers the server as an observer of `path` (RFC 7641); notifications use its format.
          const observing = observe(request) === 0;
          if (observing) this.#observedFormats.set(request.token.toString('hex'), wanted);
          return { code: '2.05', options: [option(OptionNumber.ContentFormat, wanted)], payload, ...(observing && { observe: true }) };
        } catch {
          return { code: '4.06' };
        }
      }
      case '0.02': {
        if (parsed.resourceId !== undefined) {
          if (!EXECUTABLE.has(path)) return { code: '4.05' };
          this.executed.push({ path, args: request.payload.toString('utf8') });
          return { code: '2.04' };
        }
        const records = this.#decode(request, path);
        if (records === 'unsupported') return { code: '4.15' };
        if (!records) return { code: '4.00' };
        for (const record of records) this.values.set(record.path, record);
        if (parsed.instanceId === undefined) {
          const created = records[0] ? records[0].path.split('/').slice(0, 3) : [];
          return { code: '2.01', options: created.slice(1).map((segment) => option(OptionNumber.LocationPath, segment)) };
        }
        return { code: '2.04' };
      }
      case '0.03': {
        if (under.length === 0) return { code: '4.04' };
        if (request.payload.length === 0) return { code: '2.04' }; // Write-Attributes
        const records = this.#decode(request, path);
        if (records === 'unsupported') return { code: '4.15' };
        if (!records) return { code: '4.00' };
        if (parsed.resourceId === undefined) for (const record of under) this.values.delete(record.path);
        for (const record of records) this.values.set(record.path, record);
        return { code: '2.04' };
      }
      case '0.04':
        if (under.length === 0) return { code: '4.04' };
        for (const record of under) this.values.delete(record.path);
        return { code: '2.02' };
      case '0.05': {
        // Read-Composite: FETCH / with the paths in SenML.
        const format = contentFormat(request);
        if (format === undefined) return { code: '4.00' };
        if (!this.#takes(format, false)) return { code: '4.15' };
        let paths: string[];
        try {
          paths = decodePaths(format, request.payload);
        } catch {
          return { code: '4.00' };
        }
        const found = this.#valuesUnder(paths);
        const wanted = accept(request) ?? format;
        if (!this.#takes(wanted, false)) return { code: '4.06' };
        // Observe-Composite: FETCH with Observe: 0; notifications carry the same paths.
        const observing = observe(request) === 0;
        if (observing) {
          this.#observedFormats.set(request.token.toString('hex'), wanted);
          this.#compositePaths.set(request.token.toString('hex'), paths);
        }
        return { code: '2.05', options: [option(OptionNumber.ContentFormat, wanted)], payload: Buffer.from(encode(wanted, found, { basePath: '/', models: this.#models })), ...(observing && { observe: true }) };
      }
      case '0.07': {
        // Write-Composite: iPATCH / with absolute paths.
        const records = this.#decode(request, '/');
        if (records === 'unsupported') return { code: '4.15' };
        if (!records) return { code: '4.00' };
        if (records.some((r) => !this.values.has(r.path))) return { code: '4.04' };
        for (const record of records) this.values.set(record.path, record);
        return { code: '2.04' };
      }
      default:
        return { code: '4.05' };
    }
  }

  #decode(request: CoapMessage, path: string): Lwm2mRecord[] | undefined | 'unsupported' {
    const format = contentFormat(request);
    if (format === undefined) return undefined;
    if (!this.#takes(format, parsePath(path).resourceId !== undefined)) return 'unsupported';
    try {
      return decode(format, request.payload, { basePath: path, models: this.#models });
    } catch {
      return undefined;
    }
  }
}

/** Whether a read of `path` answers one value (a single resource or one resource instance). */
function isSingle(under: readonly Lwm2mRecord[], path: string): boolean {
  return under.length === 1 && under[0]!.path === path;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const url = new URL(process.argv[2] ?? 'coap://127.0.0.1:5683');
  const client = new SimulatedClient({ server: { address: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 5683) }, endpointName: process.argv[3] ?? 'sim-1' });
  await client.start();
  console.log('register:', await client.register());
  process.on('SIGINT', () => void client.deregister().finally(() => client.stop()));
}
