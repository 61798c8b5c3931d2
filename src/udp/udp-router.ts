import type { Endpoint } from '../domain/endpoints.js';
import { keyPrefixSignature, splitKey } from '../devices/device-keys.js';
import { matchDevice, provisioningCandidate } from '../devices/device-match.js';
import type { Configured } from '../devices/service-directory.js';
import type { UdpOptions } from './udp-options.js';

/** One received datagram, its source normalised (IPv4-mapped addresses as plain IPv4). */
export interface Datagram {
  readonly bytes: Buffer;
  readonly host: string;
  readonly port: number;
  /** `host:port`, IPv6 hosts in brackets. */
  readonly remoteAddr: string;
}

export type UdpService = Configured<UdpOptions>;

/** What becomes of a datagram. */
export type Route =
  | { readonly kind: 'device'; readonly endpoint: Endpoint; readonly target: UdpService; readonly payload: Buffer }
  | { readonly kind: 'provision'; readonly target: UdpService; readonly key: string; readonly payload: Buffer }
  | { readonly kind: 'refused'; readonly reason: RefusalReason; readonly detail?: Record<string, unknown> };

/**
 * Why a datagram was dropped: no service could read a key from it or knows the device (`unknown`); the
 * key names devices of several services (`ambiguous`).
 */
export type RefusalReason = 'unknown' | 'ambiguous';

/** A key a service's rule read from the datagram, and the payload that goes with it. */
interface Candidate {
  readonly target: UdpService;
  readonly key: string;
  readonly payload: Buffer;
}

export interface UdpRouterDeps {
  /** Every UDP service of every account. */
  readonly services: () => Promise<UdpService[]>;
  /** Endpoints of UDP services with this key, across accounts (indexed). */
  readonly findDevices: (key: string) => Promise<Endpoint[]>;
  /** Runs a `script` service's key script; undefined when it gives no key. */
  readonly keyScript: (target: UdpService, datagram: Datagram) => Promise<string | undefined>;
}

/**
 * Decides which device a datagram on the shared UDP port comes from (docs/udp-tcp.md "Routing"):
 *
 * 1. Each `prefix` / `address` service that may hear the source (it claims no network, or claims one holding
 *    the source) reads a key; a known endpoint with that key in that very service is the device. One match is
 *    delivered; several are refused as ambiguous, never guessed. A claim by one account never hides another
 *    account's known devices: a tenant claiming 0.0.0.0/0 once cut every other tenant's devices off.
 * 2. Otherwise the source's claimant runs its key scripts: the account whose service claims the source most
 *    specifically (the longest prefix; the oldest claim on a tie). Only its `script` services holding the
 *    source run, so no account's script sees a datagram from a network another account claims more closely.
 * 3. Otherwise, if exactly one service with `autoProvision` read a key, the device is created there: among the
 *    claimant's services when the source is claimed, else among the services claiming no network.
 */
export class UdpRouter {
  readonly #deps: UdpRouterDeps;

  constructor(deps: UdpRouterDeps) {
    this.#deps = deps;
  }

  async route(datagram: Datagram): Promise<Route> {
    const all = await this.#deps.services();
    const hostFamily = family(datagram.host);
    const claimedBy = all.filter((s) => s.options.sources?.check(datagram.host, hostFamily) === true);
    const listening = all.filter((s) => s.options.sources === undefined || claimedBy.includes(s));

    const indexed = readKeys(listening.filter((s) => s.options.keyRule !== 'script'), datagram);
    const known = await this.#match(indexed);
    if (known) return known;

    const claimant = claimantOf(claimedBy, datagram.host, hostFamily);
    const considered = claimant ? claimedBy.filter((s) => s.service.accountId === claimant) : all.filter((s) => s.options.sources === undefined);
    const scripted: Candidate[] = [];
    for (const target of considered.filter((s) => s.options.keyRule === 'script')) {
      const key = await this.#deps.keyScript(target, datagram);
      if (key !== undefined) scripted.push({ target, key, payload: datagram.bytes });
    }
    const found = await this.#match(scripted);
    if (found) return found;

    const provisioning = provisioningCandidate([...indexed.filter((c) => considered.includes(c.target)), ...scripted]);
    if (provisioning.kind === 'one') return { kind: 'provision', ...provisioning.candidate };
    if (provisioning.kind === 'many') return { kind: 'refused', reason: 'ambiguous', detail: { serviceIds: provisioning.serviceIds } };
    return { kind: 'refused', reason: 'unknown', detail: { keys: [...new Set([...indexed, ...scripted].map((c) => c.key))] } };
  }

  async #match(candidates: Candidate[]): Promise<Route | undefined> {
    const match = await matchDevice(candidates, this.#deps.findDevices);
    if (match.kind === 'one') return { kind: 'device', endpoint: match.endpoint, target: match.candidate.target, payload: match.candidate.payload };
    if (match.kind === 'many') return { kind: 'refused', reason: 'ambiguous', detail: { serviceIds: match.serviceIds } };
    return undefined;
  }
}

/** Reads each service's key from the datagram, once per distinct rule. */
function readKeys(services: UdpService[], datagram: Datagram): Candidate[] {
  const read = new Map<string, { key: string; payload: Buffer } | undefined>();
  const candidates: Candidate[] = [];
  for (const target of services) {
    const { options } = target;
    const signature = options.keyRule === 'address' ? `address/${options.addressKey}` : `prefix/${keyPrefixSignature(options.prefix)}`;
    if (!read.has(signature)) {
      if (options.keyRule === 'address') {
        read.set(signature, { key: options.addressKey === 'host' ? datagram.host : datagram.remoteAddr, payload: datagram.bytes });
      } else {
        const split = splitKey(datagram.bytes, options.prefix);
        read.set(signature, split && { key: split.key, payload: split.rest });
      }
    }
    const found = read.get(signature);
    if (found) candidates.push({ target, ...found });
  }
  return candidates;
}

/** The account whose service claims `host` most specifically (longest prefix; on a tie, the oldest service). */
function claimantOf(claimedBy: UdpService[], host: string, hostFamily: 'ipv4' | 'ipv6'): string | undefined {
  let best: { service: UdpService; bits: number } | undefined;
  for (const service of claimedBy) {
    const bits = service.options.sources!.specificity(host, hostFamily);
    const older = best !== undefined && bits === best.bits && service.service.createdAt < best.service.service.createdAt;
    if (best === undefined || bits > best.bits || older) best = { service, bits };
  }
  return best?.service.service.accountId;
}

function family(host: string): 'ipv4' | 'ipv6' {
  return host.includes(':') ? 'ipv6' : 'ipv4';
}
