/**
 * The device side of the LwM2M Firmware Update object (object 5, instance 0) for the simulator
 * (tools/lwm2m-client.ts), after the object definition (src/lwm2m/objects/definitions/5.xml, OMA-SUP-XML_5-V1_1)
 * and OMA LwM2M Core 1.1 appendix E.6 ("E.6.1 Firmware Update State Machine", "E.6.2 Examples"):
 *
 * - Push: a Write of Package /5/0/0 (PUT, or POST as Core E.6.2 Figure 30 shows) in a format the device takes
 *   (opaque, or TLV/SenML carrying /5/0/0). The CoapEndpoint reassembles Block1 blocks and hands the handler only
 *   the whole body, so {@link tapTransport} shows the device each block as it arrives: block 0 in Idle moves
 *   State to Downloading; the complete body moves it to Downloaded. No block for `downloadTimeoutMs`: Idle,
 *   Update Result 4 (connection lost).
 * - Pull: a Write of Package URI /5/0/1. The Write succeeds and errors go to Update Result (E.6.1: "Errors during
 *   the Firmware Update process MUST be reported only by the Update Result resource"): 7 for a URI that does not
 *   parse or names no loopback host (the simulator reaches loopback only), 9 for a scheme not in Firmware Update
 *   Protocol Support (/5/0/8) or on a push-only device. Otherwise Downloading, fetched at once (coap:// over the
 *   client's own CoapEndpoint with Block2, coaps:// over a DTLS PSK session of its own, http:// with fetch), then
 *   Downloaded, or Idle with 7 (4.04 / 404), 2 (over {@link MAX_PACKAGE_BYTES}) or 4 (anything else).
 * - Reset: an empty Package (or the single byte '\0') or an empty Package URI "resets the Firmware Update State
 *   Machine: the State Resource value is set to Idle and the Update Result Resource value is set to 0" (5.xml,
 *   State), aborting a download and dropping the package. Cancel (/5/0/10, object 5 v1.1): Idle with 10 from
 *   Downloading or Downloaded, else 4.05 ("in the process of installing ... MUST respond with Method Not Allowed").
 * - Update (/5/0/2) "is only executable when the value of the State Resource is Downloaded" (5.xml): otherwise
 *   4.05. It sets Update Result 0 and State Updating, and after `updateMs` ends per `outcome`: 'success' reboots
 *   (observers forgotten, /3/0/3 set to `newVersion` or the package's PkgVersion, Idle with 1) and sends a
 *   Register; 'integrity' (or a package whose SHA-256 is not `expectedSha256`) goes to Idle with 5 ("Integrity
 *   Check Failure results in the client moving to the Idle state", 5.xml State); 'fail' goes back to Downloaded
 *   with 8 (the package is kept, Update may be executed again; as Anjay does); 'never-return' stops the client's
 *   endpoint: it answers nothing more and never registers again.
 * - Operations that trigger nothing in the current state are refused, as Anjay's client does (its firmware
 *   update documentation: an operation "not identified as a trigger in the state machine (e.g. Write to Package
 *   URI while in DOWNLOADING state) SHOULD be rejected"): a Package or Package URI write while not Idle is 4.00,
 *   any write while Updating 4.05. Reads of W or E resources (0, 2, 10), writes of R resources and writes,
 *   creates or deletes of /5 and /5/0 are 4.05. A pull-only device takes all of a pushed package's blocks and
 *   then answers 4.05 (the endpoint, not the device, answers the blocks).
 * State and Update Result changes notify their observers through the client's changeValue().
 */
import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { isIP } from 'node:net';
import { block1, CoapEndpoint, CoapError, decodeMessage, option, OptionNumber, UdpTransport, uriPath, uriQuery, uriQueryOptions, type CoapMessage, type CoapResponse, type Peer, type Transport } from '../src/coap/index.js';
import type { Lwm2mRecord } from '../src/lwm2m/model.js';
import { DtlsClientTransport } from './dtls-client-transport.js';

/** State (/5/0/3). */
export const FirmwareState = { idle: 0, downloading: 1, downloaded: 2, updating: 3 } as const;

/** Update Result (/5/0/5). */
export const UpdateResult = {
  initial: 0,
  success: 1,
  notEnoughFlash: 2,
  outOfRam: 3,
  connectionLost: 4,
  integrityFailure: 5,
  unsupportedPackageType: 6,
  invalidUri: 7,
  updateFailed: 8,
  unsupportedProtocol: 9,
  cancelled: 10,
} as const;

/** Firmware Update Protocol Support (/5/0/8) values; the simulator pulls over the first three. */
export const FirmwareProtocol = { coap: 0, coaps: 1, http: 2, https: 3, coapTcp: 4, coapsTcp: 5 } as const;

/** Largest package taken, pushed or pulled: the CoapEndpoint's default Block1 body limit (1 MiB). */
export const MAX_PACKAGE_BYTES = 1 << 20;

export type FirmwareOutcome = 'success' | 'integrity' | 'fail' | 'never-return';

export interface FirmwareOptions {
  /** Firmware Update Protocol Support (/5/0/8); default [0]. 0 CoAP, 1 CoAPS (needs a PSK) and 2 HTTP are implemented. */
  readonly protocols?: readonly number[];
  /** Firmware Update Delivery Method (/5/0/9): 0 pull only, 1 push only, 2 both (default). */
  readonly delivery?: 0 | 1 | 2;
  /** The firmware version it starts with (/3/0/3); default: what the values have. */
  readonly version?: string;
  /** What executing Update does; default 'success'. Changeable later through {@link FirmwareDevice.outcome}. */
  readonly outcome?: FirmwareOutcome;
  /** The version after a successful update; default the package's PkgVersion, else `fw-` and its SHA-256's first 8 hex digits. */
  readonly newVersion?: string;
  /** How long Updating lasts, ms; default 200. */
  readonly updateMs?: number;
  /** The package's SHA-256 (hex) the update checks; another one ends with Update Result 5. */
  readonly expectedSha256?: string;
  /** A pull that has not finished, or a push that sent no block, for this long fails with 4; default 60 000 ms. */
  readonly downloadTimeoutMs?: number;
  /** PSK for coaps:// pulls; default the client's own `dtls`. */
  readonly dtls?: { readonly identity: string; readonly key: Buffer };
}

/** What the firmware object needs of its SimulatedClient. */
export interface FirmwareHost {
  readonly values: Map<string, Lwm2mRecord>;
  readonly coap: CoapEndpoint;
  /** The client's socket is on ::1 (else 127.0.0.1). */
  readonly ipv6: boolean;
  /** The client's own PSK (its `dtls` option), used for coaps:// pulls without `dtls` of their own. */
  readonly psk: { readonly identity: string; readonly key: Buffer } | undefined;
  changeValue(path: string, value: Lwm2mRecord['value']): Promise<number>;
  /** The client's decoding of a write: records, undefined (bad payload or no format) or 'unsupported' (4.15). */
  decode(request: CoapMessage, path: string): Lwm2mRecord[] | undefined | 'unsupported';
  register(): Promise<string>;
}

export interface FirmwareTransition {
  readonly state: number;
  readonly result: number;
  /** What caused it, e.g. `push: block 0`, `Update executed`. */
  readonly cause: string;
  readonly at: number;
}

/** A Block1 block of a Package write, as it came by. */
export interface BlockSeen {
  readonly num: number;
  readonly more: boolean;
  /** Its block size (16 << szx) and its payload's length. */
  readonly size: number;
  readonly length: number;
}

export interface ReceivedPackage {
  readonly via: 'push' | 'coap' | 'coaps' | 'http';
  readonly uri: string | undefined;
  readonly bytes: Buffer;
  readonly sha256: string;
  /** From its `#fw name=… version=…` first line (see {@link firmwarePackage}), else ''. */
  readonly name: string;
  readonly version: string;
  /** The Block1 blocks it came in (push), empty when it came whole or was pulled. */
  readonly blocks: readonly BlockSeen[];
}

export interface FirmwareEvents {
  transition: [FirmwareTransition];
  package: [ReceivedPackage];
  /** After a successful update's reboot: the Register's response code (or `failed: …`). */
  registered: [string];
  /** 'never-return': the device stopped answering. */
  silent: [];
}

const { idle: IDLE, downloading: DOWNLOADING, downloaded: DOWNLOADED, updating: UPDATING } = FirmwareState;
const SCHEMES: Readonly<Record<string, number>> = { 'coap:': 0, 'coaps:': 1, 'http:': 2, 'https:': 3, 'coap+tcp:': 4, 'coaps+tcp:': 5 };
const VIA = ['coap', 'coaps', 'http'] as const;
const DEFAULT_PORTS = [5683, 5684, 80];
const PUSH_ONLY = 1;
const PULL_ONLY = 0;

interface PullTarget {
  readonly protocol: number;
  readonly url: URL;
  readonly peer: Peer;
}

export class FirmwareDevice extends EventEmitter<FirmwareEvents> {
  /** What the next Update does. */
  outcome: FirmwareOutcome;
  /** Every change of State or Update Result, in order. */
  readonly transitions: FirmwareTransition[] = [];
  /** Every package it finished receiving, in order. */
  readonly packages: ReceivedPackage[] = [];
  /** The Register codes after each successful update. */
  readonly registrations: string[] = [];
  readonly #options: FirmwareOptions;
  readonly #host: FirmwareHost;
  readonly #protocols: readonly number[];
  readonly #delivery: number;
  #state: number = IDLE;
  #result: number = UpdateResult.initial;
  #package: ReceivedPackage | undefined;
  /** The download in progress: a push (its blocks so far) or a pull (to abort). */
  #transfer: { readonly kind: 'push'; readonly blocks: BlockSeen[] } | { readonly kind: 'pull'; readonly abort: AbortController } | undefined;
  /** The push inactivity timer, or the update's. */
  #timer: NodeJS.Timeout | undefined;
  #silent = false;

  constructor(options: FirmwareOptions, host: FirmwareHost) {
    super();
    this.#options = options;
    this.#host = host;
    this.outcome = options.outcome ?? 'success';
    this.#protocols = options.protocols ?? [FirmwareProtocol.coap];
    this.#delivery = options.delivery ?? 2;
    const missing = this.#protocols.find((protocol) => VIA[protocol] === undefined);
    if (missing !== undefined) throw new Error(`firmware protocol ${missing}: the simulator pulls over CoAP (0), CoAPS with a PSK (1) and HTTP 1.1 (2) only`);
    if (this.#protocols.includes(FirmwareProtocol.coaps) && !this.#psk()) throw new Error('firmware protocol 1 (CoAPS) needs a PSK: give firmware.dtls or the client its dtls');
    const values: [string, Lwm2mRecord['type'], Lwm2mRecord['value']][] = [
      ['/5/0/1', 'string', ''],
      ['/5/0/3', 'integer', IDLE],
      ['/5/0/5', 'integer', UpdateResult.initial],
      ['/5/0/6', 'string', ''],
      ['/5/0/7', 'string', ''],
      ...this.#protocols.map((protocol, i): [string, Lwm2mRecord['type'], number] => [`/5/0/8/${i}`, 'integer', protocol]),
      ['/5/0/9', 'integer', this.#delivery],
      ...(options.version === undefined ? [] : [['/3/0/3', 'string', options.version] as [string, Lwm2mRecord['type'], string]]),
    ];
    for (const [path, type, value] of values) host.values.set(path, { path, type, value });
  }

  get state(): number {
    return this.#state;
  }

  get result(): number {
    return this.#result;
  }

  /** The package it holds (Downloaded, Updating), if any. */
  get package(): ReceivedPackage | undefined {
    return this.#package;
  }

  /** 'never-return' happened. */
  get silent(): boolean {
    return this.#silent;
  }

  /** Stops timers and downloads (the client stops). */
  stop(): void {
    clearTimeout(this.#timer);
    if (this.#transfer?.kind === 'pull') this.#transfer.abort.abort();
    this.#transfer = undefined;
  }

  /**
   * Every datagram the client's transport hands up (before the CoapEndpoint reassembles Block1): the blocks of
   * a Package write. Block 0 in Idle starts a push (State Downloading); each block restarts its timeout.
   */
  inspect(datagram: Buffer): void {
    let message: CoapMessage;
    let block;
    try {
      message = decodeMessage(datagram);
      if ((message.code !== '0.02' && message.code !== '0.03') || uriPath(message) !== '/5/0/0') return;
      block = block1(message);
    } catch {
      return; // the endpoint answers what does not decode
    }
    if (block === undefined) return;
    if (block.num === 0 && this.#state === IDLE && this.#delivery !== PULL_ONLY) {
      this.#transfer = { kind: 'push', blocks: [] };
      this.#set(DOWNLOADING, UpdateResult.initial, 'push: block 0');
    }
    if (this.#transfer?.kind !== 'push') return;
    this.#transfer.blocks.push({ num: block.num, more: block.more, size: 16 << block.szx, length: message.payload.length });
    const transfer = this.#transfer;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      if (this.#transfer !== transfer) return;
      this.#transfer = undefined;
      this.#set(IDLE, UpdateResult.connectionLost, 'push: no block within the download timeout');
    }, this.#options.downloadTimeoutMs ?? 60_000);
    this.#timer.unref();
  }

  /** Answers the requests to /5 it handles; undefined leaves one to the client (reads, observations, Write-Attributes). */
  serve(request: CoapMessage, path: string): CoapResponse | undefined {
    if (path !== '/5' && !path.startsWith('/5/')) return undefined;
    const resource = /^\/5\/0\/(\d+)$/.exec(path)?.[1];
    const write = request.code === '0.02' || request.code === '0.03';
    if (request.code === '0.01') return resource === '0' || resource === '2' || resource === '10' ? { code: '4.05' } : undefined;
    if (request.code === '0.03' && request.payload.length === 0 && uriQuery(request).length > 0) return undefined;
    if (write && resource === '0') return this.#writePackage(request, path);
    if (write && resource === '1') return this.#writeUri(request, path);
    if (request.code === '0.02' && resource === '2') return this.#update();
    if (request.code === '0.02' && resource === '10') return this.#cancel();
    return { code: '4.05' };
  }

  #writePackage(request: CoapMessage, path: string): CoapResponse {
    if (this.#state === UPDATING) return { code: '4.05' };
    let bytes: Buffer;
    if (request.payload.length === 0) bytes = request.payload;
    else {
      const records = this.#host.decode(request, path);
      if (records === 'unsupported') return { code: '4.15' };
      const value = records?.find((record) => record.path === path)?.value;
      if (!(value instanceof Uint8Array)) return { code: '4.00' };
      bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    }
    if (bytes.length === 0 || (bytes.length === 1 && bytes[0] === 0)) {
      this.#reset('empty Package written');
      return { code: '2.04' };
    }
    if (this.#delivery === PULL_ONLY) return { code: '4.05' };
    const transfer = this.#transfer;
    const pushing = transfer?.kind === 'push' && this.#state === DOWNLOADING;
    if (!pushing && this.#state !== IDLE) return { code: '4.00' };
    if (!pushing) this.#set(DOWNLOADING, UpdateResult.initial, 'push: one message');
    this.#endTransfer();
    if (bytes.length > MAX_PACKAGE_BYTES) {
      this.#set(IDLE, UpdateResult.notEnoughFlash, `push: ${bytes.length} bytes`);
      return { code: '4.13' };
    }
    this.#received(Buffer.from(bytes), 'push', undefined, pushing ? transfer.blocks : []);
    return { code: '2.04' };
  }

  #writeUri(request: CoapMessage, path: string): CoapResponse {
    const records = this.#host.decode(request, path);
    if (records === 'unsupported') return { code: '4.15' };
    const uri = records?.find((record) => record.path === path)?.value;
    if (typeof uri !== 'string') return { code: '4.00' };
    if (this.#state === UPDATING) return { code: '4.05' };
    if (uri === '') {
      this.#reset('empty Package URI written');
      return { code: '2.04' };
    }
    if (this.#state !== IDLE) return { code: '4.00' };
    if (Buffer.byteLength(uri) > 255) return { code: '4.00' }; // Range 0..255 (5.xml)
    this.#put('/5/0/1', uri);
    const target = this.#target(uri);
    if (typeof target === 'number') this.#set(IDLE, target, `Package URI ${uri}`);
    else this.#pull(target, uri);
    return { code: '2.04' };
  }

  #update(): CoapResponse {
    if (this.#state !== DOWNLOADED) return { code: '4.05' };
    this.#set(UPDATING, UpdateResult.initial, 'Update executed');
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#finishUpdate(), this.#options.updateMs ?? 200);
    return { code: '2.04' };
  }

  #cancel(): CoapResponse {
    if (this.#state !== DOWNLOADING && this.#state !== DOWNLOADED) return { code: '4.05' };
    this.#endTransfer();
    this.#discard();
    this.#put('/5/0/1', '');
    this.#set(IDLE, UpdateResult.cancelled, 'Cancel executed');
    return { code: '2.04' };
  }

  #finishUpdate(): void {
    const pkg = this.#package!;
    const expected = this.#options.expectedSha256;
    const outcome = expected !== undefined && expected.toLowerCase() !== pkg.sha256 ? 'integrity' : this.outcome;
    switch (outcome) {
      case 'success':
        void this.#reboot(pkg);
        return;
      case 'integrity':
        this.#discard();
        this.#set(IDLE, UpdateResult.integrityFailure, `integrity check failed (sha256 ${pkg.sha256})`);
        return;
      case 'fail':
        this.#set(DOWNLOADED, UpdateResult.updateFailed, 'update failed');
        return;
      case 'never-return':
        this.#silent = true;
        this.emit('silent');
        void this.#host.coap.stop();
        return;
    }
  }

  /** The new firmware runs: the device forgot its observers, reports the new version and registers again. */
  async #reboot(pkg: ReceivedPackage): Promise<void> {
    const coap = this.#host.coap;
    for (const observer of coap.observers()) coap.removeObserver(observer);
    const version = this.#options.newVersion ?? (pkg.version || `fw-${pkg.sha256.slice(0, 8)}`);
    this.#put('/3/0/3', version);
    this.#discard();
    this.#set(IDLE, UpdateResult.success, `rebooted into ${version}`);
    let code: string;
    try {
      code = await this.#host.register();
    } catch (error) {
      code = `failed: ${(error as Error).message}`;
    }
    this.registrations.push(code);
    this.emit('registered', code);
  }

  /** Where a Package URI points, or the Update Result that refuses it. */
  #target(uri: string): PullTarget | number {
    let url: URL;
    try {
      url = new URL(uri);
    } catch {
      return UpdateResult.invalidUri;
    }
    const protocol = SCHEMES[url.protocol];
    if (protocol === undefined || !this.#protocols.includes(protocol) || this.#delivery === PUSH_ONLY) return UpdateResult.unsupportedProtocol;
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const address = host === 'localhost' ? (this.#host.ipv6 ? '::1' : '127.0.0.1') : host;
    const loopback = (isIP(address) === 4 && address.startsWith('127.')) || address === '::1';
    // The simulator reaches loopback only, and CoAP only in its own socket's address family.
    if (!loopback || (protocol !== FirmwareProtocol.http && address.includes(':') !== this.#host.ipv6)) return UpdateResult.invalidUri;
    return { protocol, url, peer: { address, port: Number(url.port || DEFAULT_PORTS[protocol]) } };
  }

  #pull(target: PullTarget, uri: string): void {
    const abort = new AbortController();
    this.#transfer = { kind: 'pull', abort };
    this.#set(DOWNLOADING, UpdateResult.initial, `pull ${uri}`);
    const timeout = this.#options.downloadTimeoutMs ?? 60_000;
    const signal = AbortSignal.any([abort.signal, AbortSignal.timeout(timeout)]);
    const download = target.protocol === FirmwareProtocol.http ? httpGet(target.url, signal) : this.#coapGet(target, signal, timeout);
    void download.then((got) => {
      if (this.#transfer?.kind !== 'pull' || this.#transfer.abort !== abort) return; // reset or cancelled meanwhile
      this.#transfer = undefined;
      if (typeof got === 'number') this.#set(IDLE, got, `pull ${uri} failed`);
      else this.#received(got, VIA[target.protocol]!, uri, []);
    });
  }

  /**
   * GET with Block2 (the CoapEndpoint fetches the blocks): coap:// from the client's own endpoint, unless that
   * one speaks DTLS to its server; coaps:// over a DTLS session of its own.
   */
  async #coapGet(target: PullTarget, signal: AbortSignal, timeout: number): Promise<Buffer | number> {
    const psk = this.#psk();
    const transport =
      target.protocol === FirmwareProtocol.coaps && psk
        ? new DtlsClientTransport({ server: target.peer, ...psk })
        : this.#host.psk
          ? new UdpTransport({ host: this.#host.ipv6 ? '::1' : '127.0.0.1', port: 0 })
          : undefined;
    const own = transport && new CoapEndpoint({ transport, rateLimit: false });
    const segments = target.url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const query = target.url.search.slice(1).split('&').filter(Boolean).map(decodeURIComponent);
    try {
      await own?.start();
      const request = { code: '0.01' as const, options: [...segments.map((segment) => option(OptionNumber.UriPath, segment)), ...uriQueryOptions(query)] };
      const response = await (own ?? this.#host.coap).request(target.peer, request, { signal, timeout, maxBodySize: MAX_PACKAGE_BYTES });
      if (response.code === '2.05') return response.payload;
      return response.code === '4.04' ? UpdateResult.invalidUri : UpdateResult.connectionLost;
    } catch (error) {
      return error instanceof CoapError && error.code === 'TOO_LARGE' ? UpdateResult.notEnoughFlash : UpdateResult.connectionLost;
    } finally {
      await own?.stop();
    }
  }

  #psk(): { readonly identity: string; readonly key: Buffer } | undefined {
    return this.#options.dtls ?? this.#host.psk;
  }

  #received(bytes: Buffer, via: ReceivedPackage['via'], uri: string | undefined, blocks: readonly BlockSeen[]): void {
    const info = packageInfo(bytes);
    const pkg: ReceivedPackage = { via, uri, bytes, sha256: createHash('sha256').update(bytes).digest('hex'), name: info.name, version: info.version, blocks };
    this.#package = pkg;
    this.packages.push(pkg);
    this.#put('/5/0/6', pkg.name);
    this.#put('/5/0/7', pkg.version);
    this.#set(DOWNLOADED, UpdateResult.initial, `${via}: ${bytes.length} bytes`);
    this.emit('package', pkg);
  }

  /** Back to Idle with Update Result 0, the download aborted and the package dropped. */
  #reset(cause: string): void {
    this.#endTransfer();
    this.#discard();
    this.#put('/5/0/1', '');
    this.#set(IDLE, UpdateResult.initial, cause);
  }

  #endTransfer(): void {
    clearTimeout(this.#timer);
    if (this.#transfer?.kind === 'pull') this.#transfer.abort.abort();
    this.#transfer = undefined;
  }

  /** "The device should remove the downloaded firmware image when the state is reset to Idle" (5.xml, State). */
  #discard(): void {
    this.#package = undefined;
    this.#put('/5/0/6', '');
    this.#put('/5/0/7', '');
  }

  /** Sets State and Update Result (both first, so observers of /5/0 see them together), notifies and records. */
  #set(state: number, result: number, cause: string): void {
    const resultChanged = result !== this.#result;
    const stateChanged = state !== this.#state;
    if (!resultChanged && !stateChanged) return;
    this.#state = state;
    this.#result = result;
    this.#host.values.set('/5/0/5', { path: '/5/0/5', type: 'integer', value: result });
    this.#host.values.set('/5/0/3', { path: '/5/0/3', type: 'integer', value: state });
    if (resultChanged) this.#notify('/5/0/5', result);
    if (stateChanged) this.#notify('/5/0/3', state);
    const transition = { state, result, cause, at: Date.now() };
    this.transitions.push(transition);
    this.emit('transition', transition);
  }

  #put(path: string, value: string): void {
    if (this.#host.values.get(path)?.value !== value) this.#notify(path, value);
  }

  #notify(path: string, value: Lwm2mRecord['value']): void {
    this.#host.changeValue(path, value).catch(() => undefined);
  }
}

/**
 * Passes datagrams through, showing each to `inspect` first (it must not throw); the firmware object sees
 * the Block1 blocks of a Package write that the CoapEndpoint would hand it only whole.
 */
export function tapTransport(transport: Transport, inspect: (datagram: Buffer) => void): Transport {
  return {
    get verifiesPeers() {
      return transport.verifiesPeers;
    },
    start: (listener) =>
      transport.start((datagram, peer) => {
        inspect(datagram);
        listener(datagram, peer);
      }),
    send: (datagram, peer) => transport.send(datagram, peer),
    address: () => transport.address(),
    stop: () => transport.stop(),
    ...(transport.sameAssociation && { sameAssociation: (from: Peer, to: Peer) => transport.sameAssociation!(from, to) }),
  };
}

/** A test package of `size` bytes: a `#fw name=… version=…` first line (PkgName, PkgVersion) and random bytes. */
export function firmwarePackage(size: number, info: { readonly name?: string; readonly version?: string } = {}): Buffer {
  const header = Buffer.from(`#fw name=${info.name ?? 'sim-fw'} version=${info.version ?? '2.0.0'}\n`);
  if (size < header.length) throw new RangeError(`a package needs at least ${header.length} bytes`);
  return Buffer.concat([header, randomBytes(size - header.length)]);
}

/** PkgName and PkgVersion from a package's `#fw name=… version=…` first line; '' without one. */
export function packageInfo(bytes: Buffer): { name: string; version: string } {
  const line = bytes.subarray(0, 256).toString('latin1').split('\n', 1)[0] ?? '';
  const match = /^#fw name=(\S{1,255}) version=(\S{1,255})$/.exec(line);
  return { name: match?.[1] ?? '', version: match?.[2] ?? '' };
}

/** fetch, bounded: the body, or the Update Result: 7 for 404, 2 over MAX_PACKAGE_BYTES, 4 for the rest. */
async function httpGet(url: URL, signal: AbortSignal): Promise<Buffer | number> {
  try {
    // No redirects: one could point off loopback.
    const response = await fetch(url, { signal, redirect: 'error' });
    if (!response.ok || response.body === null) {
      await response.body?.cancel();
      return response.status === 404 ? UpdateResult.invalidUri : UpdateResult.connectionLost;
    }
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const chunks: Buffer[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return Buffer.concat(chunks, size);
      size += value.byteLength;
      if (size > MAX_PACKAGE_BYTES) {
        await reader.cancel();
        return UpdateResult.notEnoughFlash;
      }
      chunks.push(Buffer.from(value));
    }
  } catch {
    return UpdateResult.connectionLost;
  }
}
