/**
 * The client side of the LwM2M Bootstrap Interface for the simulator (tools/lwm2m-client.ts), after OMA LwM2M
 * Core 1.1/1.2 "Bootstrap Interface" (Client Initiated Bootstrap, "Bootstrap Operations", "Bootstrap and
 * Configuration Consistency") and Transport 1.1 "Bootstrap Interface" (Operation to Method and URI Mapping,
 * Response Codes: Bootstrap Interface). A `BootstrapSession` serves the Bootstrap-Server's requests between the
 * device's Bootstrap-Request and the Bootstrap-Finish:
 *
 * - Bootstrap-Write, PUT /o, /o/i, /o/i/r in a format the device takes: written whether or not the instance
 *   exists (an instance or object write replaces the instances it carries); 2.04, 4.15 for a format it does not
 *   take, 4.00 for a payload that does not decode.
 * - Bootstrap-Delete, DELETE /, /o, /o/i: 2.02; the Bootstrap-Server Account (its Security instance) and the
 *   Device instance /3/0 are not affected by any Bootstrap-Delete ("Bootstrap-Delete Operation"); naming one of
 *   them alone is 4.00 (as Leshan's client answers), and so is a resource path (Bootstrap-Delete targets instances).
 * - Bootstrap-Discover, GET / or /o with Accept: application/link-format: 2.05 with `</>;lwm2m=1.1`, Security
 *   instances with `ssid` and (1.1+) `uri`, Server instances with `ssid`, other instances; the Bootstrap-Server's
 *   Security instance bare ("Bootstrap-Discover Operation" examples, in the RFC 6690 form Core 1.2 asks for).
 * - Bootstrap-Read (1.1+), GET /1, /1/i, /2, /2/i: 2.05 in the Accept format (else the device's first), 4.06 when
 *   it cannot answer in it; Core limits Bootstrap-Read to objects 1 and 2 ("Bootstrap-Read Operation"): /0 is
 *   4.01 Unauthorized (Transport "Access Right Permission Denied": credentials are never read back), other
 *   objects 4.05 ("Target is not allowed"), deeper paths 4.00. 1.0 has no Bootstrap-Read: 4.05.
 * - Bootstrap-Finish, POST /bs: 2.04 when the configuration is consistent, else 4.06 Not Acceptable and the
 *   session goes on (the Bootstrap-Server MAY correct and finish again). Consistent here: at least one Server
 *   instance, and each Server instance has a Security instance with its Short Server ID that is not the
 *   Bootstrap-Server's (an LwM2M Server Account, Core "Bootstrap Information").
 * Without a Bootstrap-Finish within the timeout (EXCHANGE_LIFETIME, Core "Client Initiated Bootstrap" Step #2)
 * the bootstrap failed.
 */
import { isIP } from 'node:net';
import { accept, contentFormat, option, OptionNumber, peerKey, uriPath, type CoapMessage, type CoapResponse, type Peer } from '../src/coap/index.js';
import { decode, encode, encodeLinks, type CoreLink, type LinkAttribute } from '../src/lwm2m/codecs/index.js';
import { CONTENT_FORMATS, parsePath, type Lwm2mPath, type Lwm2mRecord, type ModelLookup } from '../src/lwm2m/model.js';

/** RFC 7252 EXCHANGE_LIFETIME with the default transmission parameters: 247 s. */
export const EXCHANGE_LIFETIME_MS = 247_000;

/** What a bootstrap session works on: the simulated device's values and what it takes. */
export interface BootstrapDevice {
  readonly values: Map<string, Lwm2mRecord>;
  readonly models: ModelLookup;
  readonly lwm2mVersion: '1.0' | '1.1' | '1.2';
  /** Whether it takes `format` for values (`single`: one resource, where plain text and opaque also do). */
  takes(format: number, single: boolean): boolean;
  /** What it answers a read without Accept in. */
  readonly defaultFormat: number;
}

/** An LwM2M Server Account: a Server instance and the Security instance with its Short Server ID. */
export interface ServerAccount {
  readonly serverInstance: number;
  readonly securityInstance: number;
  readonly shortServerId: number;
  readonly uri: string;
  /** Security Mode resource: 0 PSK, 1 RPK, 2 Certificate, 3 NoSec, 4 Certificate with EST. */
  readonly securityMode: number | undefined;
  readonly lifetime: number | undefined;
  readonly binding: string | undefined;
}

export interface BootstrapResult {
  /** The answer to the Bootstrap-Request (2.04 expected); undefined when none came. */
  readonly requestCode: string | undefined;
  /** A Bootstrap-Finish came and was answered 2.04. */
  readonly finished: boolean;
  /** The answers to each Bootstrap-Finish, e.g. `['4.06', '2.04']` after a correction. */
  readonly finishCodes: readonly string[];
  /** The Bootstrap-Server's requests, e.g. `DELETE /0`, `PUT /0/1`, `POST /bs`. */
  readonly requests: readonly string[];
  /** Every LwM2M Server Account the device has now, by Server instance id. */
  readonly accounts: readonly ServerAccount[];
  /** The one register() uses: the first of `accounts`. */
  readonly server: ServerAccount | undefined;
}

const METHODS: Readonly<Record<string, string>> = { '0.01': 'GET', '0.02': 'POST', '0.03': 'PUT', '0.04': 'DELETE', '0.05': 'FETCH', '0.07': 'iPATCH' };
const SECURITY = 0;
const SERVER = 1;
const DEVICE = 3;

export class BootstrapSession {
  readonly requests: string[] = [];
  readonly finishCodes: string[] = [];
  /** Resolves with whether the bootstrap finished (2.04 to a Bootstrap-Finish). */
  readonly done: Promise<boolean>;
  readonly #device: BootstrapDevice;
  readonly #peer: string;
  #resolve!: (finished: boolean) => void;
  readonly #timer: NodeJS.Timeout;

  constructor(device: BootstrapDevice, bootstrapServer: Peer, timeoutMs: number) {
    this.#device = device;
    this.#peer = peerKey(bootstrapServer);
    this.done = new Promise((resolve) => (this.#resolve = resolve));
    this.#timer = setTimeout(() => this.end(false), timeoutMs);
  }

  /** Whether a request comes from this session's Bootstrap-Server. */
  from(peer: Peer): boolean {
    return peerKey(peer) === this.#peer;
  }

  end(finished: boolean): void {
    clearTimeout(this.#timer);
    this.#resolve(finished);
  }

  result(requestCode: string | undefined, finished: boolean): BootstrapResult {
    const accounts = serverAccounts(this.#device.values);
    return { requestCode, finished, finishCodes: [...this.finishCodes], requests: [...this.requests], accounts, server: accounts[0] };
  }

  serve(request: CoapMessage): CoapResponse {
    const path = uriPath(request);
    this.requests.push(`${METHODS[request.code] ?? request.code} ${path}`);
    if (path === '/bs') return request.code === '0.02' ? this.#finish() : { code: '4.05' };
    let parsed: Lwm2mPath;
    try {
      parsed = parsePath(path);
    } catch {
      return { code: '4.00' };
    }
    switch (request.code) {
      case '0.01':
        return accept(request) === CONTENT_FORMATS.linkFormat ? this.#discover(parsed) : this.#read(parsed, path, accept(request));
      case '0.03':
        return this.#write(parsed, path, request);
      case '0.04':
        return this.#delete(parsed, path);
      default:
        return { code: '4.05' };
    }
  }

  #finish(): CoapResponse {
    const code = inconsistency(this.#device.values) === undefined ? '2.04' : '4.06';
    this.finishCodes.push(code);
    if (code === '2.04') this.end(true);
    return { code };
  }

  #write(path: Lwm2mPath, text: string, request: CoapMessage): CoapResponse {
    const level = depth(path);
    if (level === 0 || level === 4) return { code: '4.00' };
    const format = contentFormat(request);
    if (format === undefined) return { code: '4.00' };
    if (!this.#device.takes(format, level === 3)) return { code: '4.15' };
    let records: Lwm2mRecord[];
    try {
      records = decode(format, new Uint8Array(request.payload), { basePath: text, models: this.#device.models });
    } catch {
      return { code: '4.00' };
    }
    // Replace what the write covers: the instance(s) it carries, or the resource (all its instances).
    const replaced = level === 1 ? new Set(records.map((record) => record.path.split('/').slice(0, 3).join('/'))) : [text];
    for (const prefix of replaced) removeUnder(this.#device.values, prefix);
    for (const record of records) this.#device.values.set(record.path, record);
    return { code: '2.04' };
  }

  #delete(path: Lwm2mPath, text: string): CoapResponse {
    const values = this.#device.values;
    const level = depth(path);
    if (level > 2) return { code: '4.00' };
    const kept = new Set([`/${DEVICE}/0`]);
    const own = bootstrapAccountInstance(values);
    if (own !== undefined) kept.add(`/${SECURITY}/${own}`);
    if (level === 2 && kept.has(text)) return { code: '4.00' };
    for (const key of [...values.keys()]) {
      if ((text === '/' || key.startsWith(`${text}/`)) && !kept.has(instanceOf(key))) values.delete(key);
    }
    return { code: '2.02' };
  }

  #discover(path: Lwm2mPath): CoapResponse {
    const level = depth(path);
    if (level > 1) return { code: '4.00' };
    const values = this.#device.values;
    const instances = new Map<number, Set<number>>([[SECURITY, new Set()], [SERVER, new Set()], [DEVICE, new Set()]]);
    for (const key of values.keys()) {
      const [objectId = 0, instanceId = 0] = key.split('/').slice(1, 3).map(Number);
      (instances.get(objectId) ?? instances.set(objectId, new Set()).get(objectId)!).add(instanceId);
    }
    if (path.objectId !== undefined && !instances.has(path.objectId)) return { code: '4.04' };
    const version = this.#device.lwm2mVersion;
    const links: CoreLink[] = [{ target: '/', attributes: [{ name: 'lwm2m', value: version }] }];
    const numeric = (a: number, b: number) => a - b;
    for (const objectId of [...instances.keys()].sort(numeric)) {
      if (path.objectId !== undefined && objectId !== path.objectId) continue;
      const ids = [...instances.get(objectId)!].sort(numeric);
      if (ids.length === 0) links.push({ target: `/${objectId}`, attributes: [] });
      for (const id of ids) {
        const at = (resourceId: number) => `/${objectId}/${id}/${resourceId}`;
        const attributes: LinkAttribute[] = [];
        const ssid = numberAt(values, at(objectId === SECURITY ? 10 : 0));
        const uri = values.get(at(0))?.value;
        if (objectId === SECURITY && values.get(at(1))?.value !== true) {
          if (ssid !== undefined) attributes.push({ name: 'ssid', value: String(ssid) });
          if (version !== '1.0' && typeof uri === 'string') attributes.push({ name: 'uri', value: uri, quoted: true });
        }
        if (objectId === SERVER && ssid !== undefined) attributes.push({ name: 'ssid', value: String(ssid) });
        links.push({ target: `/${objectId}/${id}`, attributes });
      }
    }
    return { code: '2.05', options: [option(OptionNumber.ContentFormat, CONTENT_FORMATS.linkFormat)], payload: Buffer.from(encodeLinks(links)) };
  }

  #read(path: Lwm2mPath, text: string, wanted: number | undefined): CoapResponse {
    if (this.#device.lwm2mVersion === '1.0') return { code: '4.05' };
    if (path.objectId === SECURITY) return { code: '4.01' };
    if (path.objectId !== SERVER && path.objectId !== 2) return { code: '4.05' };
    if (depth(path) > 2) return { code: '4.00' };
    const format = wanted ?? this.#device.defaultFormat;
    if (!this.#device.takes(format, false)) return { code: '4.06' };
    const under = [...this.#device.values.values()].filter((record) => record.path.startsWith(`${text}/`));
    if (path.instanceId !== undefined && under.length === 0) return { code: '4.04' };
    try {
      return { code: '2.05', options: [option(OptionNumber.ContentFormat, format)], payload: Buffer.from(encode(format, under, { basePath: text, models: this.#device.models })) };
    } catch {
      return { code: '4.06' };
    }
  }
}

/** The Security instance holding the Bootstrap-Server Account (Bootstrap-Server resource true), if any. */
export function bootstrapAccountInstance(values: ReadonlyMap<string, Lwm2mRecord>): number | undefined {
  for (const [key, record] of values) {
    const match = /^\/0\/(\d+)\/1$/.exec(key);
    if (match && record.value === true) return Number(match[1]);
  }
  return undefined;
}

/**
 * Makes sure the device has a Bootstrap-Server Account for `peer` (Core "LwM2M Bootstrap-Server": it MUST be
 * pre-provisioned): a NoSec Security instance with Bootstrap-Server true at the lowest free instance id, or the
 * existing one pointed at `peer`.
 */
export function ensureBootstrapAccount(values: Map<string, Lwm2mRecord>, peer: Peer): number {
  const uri = `coap://${peer.address.includes(':') ? `[${peer.address}]` : peer.address}:${peer.port}`;
  const existing = bootstrapAccountInstance(values);
  if (existing !== undefined) {
    values.set(`/0/${existing}/0`, { path: `/0/${existing}/0`, type: 'string', value: uri });
    return existing;
  }
  const taken = new Set([...values.keys()].filter((key) => key.startsWith('/0/')).map((key) => Number(key.split('/')[2])));
  let id = 0;
  while (taken.has(id)) id++;
  const at = (resourceId: number) => `/0/${id}/${resourceId}`;
  const records: Lwm2mRecord[] = [
    { path: at(0), type: 'string', value: uri },
    { path: at(1), type: 'boolean', value: true },
    { path: at(2), type: 'integer', value: 3 },
    { path: at(3), type: 'opaque', value: new Uint8Array(0) },
    { path: at(4), type: 'opaque', value: new Uint8Array(0) },
    { path: at(5), type: 'opaque', value: new Uint8Array(0) },
  ];
  for (const record of records) values.set(record.path, record);
  return id;
}

/** The LwM2M Server Accounts of the values, by Server instance id. */
export function serverAccounts(values: ReadonlyMap<string, Lwm2mRecord>): ServerAccount[] {
  const accounts: ServerAccount[] = [];
  for (const serverInstance of instanceIds(values, SERVER)) {
    const shortServerId = numberAt(values, `/1/${serverInstance}/0`);
    const securityInstance = shortServerId === undefined ? undefined : securityFor(values, shortServerId);
    if (shortServerId === undefined || securityInstance === undefined) continue;
    const uri = values.get(`/0/${securityInstance}/0`)?.value;
    const binding = values.get(`/1/${serverInstance}/7`)?.value;
    accounts.push({
      serverInstance,
      securityInstance,
      shortServerId,
      uri: typeof uri === 'string' ? uri : '',
      securityMode: numberAt(values, `/0/${securityInstance}/2`),
      lifetime: numberAt(values, `/1/${serverInstance}/1`),
      binding: typeof binding === 'string' ? binding : undefined,
    });
  }
  return accounts;
}

/** Why the configuration cannot be used (answered 4.06 to Bootstrap-Finish), or undefined when it can. */
export function inconsistency(values: ReadonlyMap<string, Lwm2mRecord>): string | undefined {
  const servers = instanceIds(values, SERVER);
  if (servers.length === 0) return 'no LwM2M Server Object instance';
  for (const id of servers) {
    const ssid = numberAt(values, `/1/${id}/0`);
    if (ssid === undefined) return `/1/${id} has no Short Server ID`;
    if (securityFor(values, ssid) === undefined) return `/1/${id}: no Security instance (other than the Bootstrap-Server's) has Short Server ID ${ssid}`;
  }
  return undefined;
}

/**
 * Where to send CoAP for an LwM2M Server URI. The simulator reaches loopback addresses only (127.0.0.0/8,
 * ::1, localhost) and has no DTLS.
 * @throws Error for anything else
 */
export function loopbackPeer(uri: string): Peer {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new Error(`"${uri}" is not an LwM2M Server URI`);
  }
  if (url.protocol !== 'coap:') throw new Error(`"${uri}": the simulator speaks plain CoAP only (no DTLS for coaps://)`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const address = host === 'localhost' ? '127.0.0.1' : host;
  const loopback = (isIP(address) === 4 && address.startsWith('127.')) || address === '::1';
  if (!loopback) throw new Error(`"${uri}": the simulator only connects to loopback hosts (127.0.0.1, [::1])`);
  return { address, port: Number(url.port || 5683) };
}

function securityFor(values: ReadonlyMap<string, Lwm2mRecord>, shortServerId: number): number | undefined {
  return instanceIds(values, SECURITY).find((id) => values.get(`/0/${id}/1`)?.value !== true && numberAt(values, `/0/${id}/10`) === shortServerId);
}

function instanceIds(values: ReadonlyMap<string, Lwm2mRecord>, objectId: number): number[] {
  const ids = new Set<number>();
  for (const key of values.keys()) if (key.startsWith(`/${objectId}/`)) ids.add(Number(key.split('/')[2]));
  return [...ids].sort((a, b) => a - b);
}

function numberAt(values: ReadonlyMap<string, Lwm2mRecord>, path: string): number | undefined {
  const value = values.get(path)?.value;
  return typeof value === 'number' || typeof value === 'bigint' ? Number(value) : undefined;
}

function removeUnder(values: Map<string, Lwm2mRecord>, prefix: string): void {
  for (const key of [...values.keys()]) if (key === prefix || key.startsWith(`${prefix}/`)) values.delete(key);
}

function instanceOf(key: string): string {
  return key.split('/').slice(0, 3).join('/');
}

function depth(path: Lwm2mPath): number {
  return [path.objectId, path.instanceId, path.resourceId, path.resourceInstanceId].filter((id) => id !== undefined).length;
}
