import { isIPv4, isIPv6 } from 'node:net';
import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';
import { AppError } from '../errors.js';

/**
 * What kind of address an IP literal is. IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`) and
 * NAT64 (`64:ff9b::a.b.c.d`) IPv6 addresses are the kind of the IPv4 address inside: that is where a
 * datagram to them ends up.
 */
export type AddressKind =
  | 'unspecified' // 0.0.0.0/8, :: (on Linux, 0.0.0.0 reaches the host itself)
  | 'loopback' // 127.0.0.0/8, ::1
  | 'link-local' // 169.254.0.0/16 (cloud metadata services live here), fe80::/10
  | 'multicast' // 224.0.0.0/4, ff00::/8
  | 'broadcast' // 255.255.255.255 (and, in SendGuard, the broadcast address of each local IPv4 network)
  | 'private' // 10/8, 172.16/12, 192.168/16
  | 'shared' // 100.64.0.0/10, carrier-grade NAT (RFC 6598)
  | 'unique-local' // fc00::/7
  | 'public'
  | 'invalid'; // not an IP literal

/** Kinds no device can be at: sending there reaches the host itself, every host of a network, or the link's services. */
const NEVER_A_DEVICE: ReadonlySet<AddressKind> = new Set(['unspecified', 'link-local', 'multicast', 'broadcast', 'invalid']);

/** Why a destination is refused: its kind, or `own-port` (a port of this service on a local address: a loop). */
export type Refusal = AddressKind | 'own-port' | 'port';

/** How often the host's interface addresses are read again (they change with DHCP, VPNs, containers). */
const INTERFACES_TTL_MS = 30_000;

export interface SendGuardOptions {
  /** The host's interfaces; `os.networkInterfaces` by default (tests pass their own). */
  readonly interfaces?: () => NodeJS.Dict<NetworkInterfaceInfo[]>;
  readonly now?: () => number;
}

/**
 * The last check before the service sends anything to a device (UDP, CoAP, LwM2M): the destination is the
 * address the device was heard from (recorded by device presence, never written by the API), and even that
 * is refused when no device can be there — a spoofed source must not turn the service into a reflector
 * towards broadcast, multicast, link-local (metadata) addresses, or into a loop through its own ports.
 * Private, shared (CGNAT) and loopback addresses are allowed: devices live on private networks and APNs.
 */
export class SendGuard {
  readonly #ownPorts = new Set<number>();
  readonly #interfaces: () => NodeJS.Dict<NetworkInterfaceInfo[]>;
  readonly #now: () => number;
  #local: { addresses: Set<string>; broadcasts: Set<string>; readAt: number } | undefined;

  constructor(options: SendGuardOptions = {}) {
    this.#interfaces = options.interfaces ?? networkInterfaces;
    this.#now = options.now ?? Date.now;
  }

  /** Ports this service receives datagrams on: a device "heard from" one of them on a local address is a spoof or a loop. */
  addOwnPorts(ports: Iterable<number>): void {
    for (const port of ports) if (port > 0) this.#ownPorts.add(port);
  }

  /** Why nothing may be sent to `host:port`, or undefined when a device may be there. */
  refusal(host: string, port: number): Refusal | undefined {
    if (!Number.isInteger(port) || port < 1 || port > 65_535) return 'port';
    const parsed = parseIp(host);
    if (!parsed) return 'invalid';
    const kind = kindOf(parsed);
    if (NEVER_A_DEVICE.has(kind)) return kind;
    const local = this.#localNetwork();
    const key = canonical(parsed);
    if (local.broadcasts.has(key)) return 'broadcast';
    if (this.#ownPorts.has(port) && (kind === 'loopback' || local.addresses.has(key))) return 'own-port';
    return undefined;
  }

  /** Throws 409 `IOTB_DEVICE_ADDRESS_REFUSED` when {@link refusal} names a reason; nothing is sent then. */
  check(host: string, port: number): void {
    const refused = this.refusal(host, port);
    if (refused !== undefined) throw new AppError('IOTB_DEVICE_ADDRESS_REFUSED', undefined, { reason: refused });
  }

  /** The host's own addresses and its IPv4 networks' broadcast addresses, re-read every INTERFACES_TTL_MS. */
  #localNetwork(): { addresses: Set<string>; broadcasts: Set<string> } {
    const now = this.#now();
    if (this.#local && now - this.#local.readAt < INTERFACES_TTL_MS) return this.#local;
    const addresses = new Set<string>();
    const broadcasts = new Set<string>();
    let interfaces: NodeJS.Dict<NetworkInterfaceInfo[]> = {};
    try {
      interfaces = this.#interfaces();
    } catch {
      // Some sandboxes refuse to list interfaces: loopback (known by its kind) is still recognised.
    }
    for (const infos of Object.values(interfaces)) {
      for (const info of infos ?? []) {
        const address = parseIp(info.address);
        if (!address) continue;
        addresses.add(canonical(address));
        const broadcast = info.family === 'IPv4' ? broadcastOf(info.address, info.netmask) : undefined;
        if (broadcast) broadcasts.add(broadcast);
      }
    }
    this.#local = { addresses, broadcasts, readAt: now };
    return this.#local;
  }
}

/** The kind of an IP literal (a zone id, `%eth0`, is ignored). */
export function classifyAddress(host: string): AddressKind {
  const parsed = parseIp(host);
  return parsed ? kindOf(parsed) : 'invalid';
}

/** An address as 4 (IPv4) or 16 (IPv6) bytes; IPv6 addresses carrying an IPv4 one are reduced to it. */
type Ip = { readonly v4: number } | { readonly v6: Uint8Array };

function kindOf(ip: Ip): AddressKind {
  return 'v4' in ip ? kindOf4(ip.v4) : kindOf6(ip.v6);
}

function kindOf4(a: number): AddressKind {
  const first = a >>> 24;
  const second = (a >>> 16) & 0xff;
  if (first === 0) return 'unspecified'; // 0/8
  if (first === 127) return 'loopback';
  if (first === 169 && second === 254) return 'link-local';
  if (first >= 224 && first <= 239) return 'multicast';
  if (a === 0xffffffff) return 'broadcast';
  if (first === 10 || (first === 172 && second >= 16 && second <= 31) || (first === 192 && second === 168)) return 'private';
  if (first === 100 && second >= 64 && second <= 127) return 'shared'; // 100.64/10
  return 'public';
}

function kindOf6(b: Uint8Array): AddressKind {
  if (zeros(b, 0, 15) && b[15] === 0) return 'unspecified';
  if (zeros(b, 0, 15) && b[15] === 1) return 'loopback';
  if (b[0] === 0xff) return 'multicast';
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return 'link-local';
  if ((b[0]! & 0xfe) === 0xfc) return 'unique-local';
  return 'public';
}

/** Parses an IPv4 or IPv6 literal; undefined when `host` is neither. */
function parseIp(host: string): Ip | undefined {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const zone = bare.indexOf('%');
  const address = zone < 0 ? bare : bare.slice(0, zone);
  if (isIPv4(address)) return { v4: ipv4(address) };
  if (!isIPv6(address)) return undefined;
  const bytes = ipv6(address);
  const embedded = embeddedIpv4(bytes);
  return embedded === undefined ? { v6: bytes } : { v4: embedded };
}

/** A valid dotted IPv4 literal as a 32-bit unsigned number. */
function ipv4(address: string): number {
  let value = 0;
  let part = 0;
  for (let i = 0; i < address.length; i++) {
    const code = address.charCodeAt(i);
    if (code === 46 /* . */) {
      value = value * 256 + part;
      part = 0;
    } else part = part * 10 + code - 48;
  }
  return (value * 256 + part) >>> 0;
}

/** The 16 bytes of a valid IPv6 literal (`::` shorthand and a dotted IPv4 tail allowed). */
function ipv6(address: string): Uint8Array {
  const groups: number[] = [];
  let gap = -1; // where `::` stands, in groups
  let start = 0;
  for (let i = 0; i <= address.length; i++) {
    if (i < address.length && address.charCodeAt(i) !== 58 /* : */) continue;
    const part = address.slice(start, i);
    if (part.includes('.')) {
      const v4 = ipv4(part);
      groups.push(v4 >>> 16, v4 & 0xffff);
    } else if (part !== '') groups.push(parseInt(part, 16));
    else if (i > 0 && address.charCodeAt(i - 1) === 58 && gap < 0) gap = groups.length;
    start = i + 1;
  }
  const bytes = new Uint8Array(16);
  const tail = gap < 0 ? 0 : groups.length - gap;
  groups.forEach((group, i) => {
    const at = gap >= 0 && i >= gap ? 8 - tail + (i - gap) : i;
    bytes[at * 2] = group >> 8;
    bytes[at * 2 + 1] = group & 0xff;
  });
  return bytes;
}

/** The IPv4 address inside an IPv4-mapped (::ffff:0:0/96), IPv4-compatible (::/96) or NAT64 (64:ff9b::/96) one. */
function embeddedIpv4(b: Uint8Array): number | undefined {
  const last = ((b[12]! << 24) | (b[13]! << 16) | (b[14]! << 8) | b[15]!) >>> 0;
  const mapped = zeros(b, 0, 10) && b[10] === 0xff && b[11] === 0xff;
  // ::/96 with something in the last 32 bits past ::1 (:: and ::1 are IPv6's own unspecified and loopback).
  const compatible = zeros(b, 0, 12) && last > 1;
  const nat64 = b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(b, 4, 12);
  return mapped || compatible || nat64 ? last : undefined;
}

function zeros(bytes: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (bytes[i] !== 0) return false;
  return true;
}

/** One spelling per address, so the host's interface addresses compare with a recorded one. */
function canonical(ip: Ip): string {
  return 'v4' in ip ? `4:${ip.v4}` : `6:${ip.v6.join('.')}`;
}

/** The directed broadcast address of an IPv4 network, in canonical form; none for /31 and /32. */
function broadcastOf(address: string, netmask: string): string | undefined {
  if (!isIPv4(netmask)) return undefined;
  const mask = ipv4(netmask);
  if (mask >>> 0 >= 0xfffffffe) return undefined;
  return `4:${(ipv4(address) | ~mask) >>> 0}`;
}
