import { createHash } from 'node:crypto';
import type { Peer } from '../coap/index.js';
import type { DevicePresence } from '../devices/presence.js';
import { certificateRefusal, trustAnchors } from '../dtls/trust.js';
import type { Endpoint } from '../domain/endpoints.js';
import type { Service } from '../domain/services.js';
import type { Registration } from './registration.js';

/** What admission needs to know (the LwM2M server's options of the same names). */
export interface AdmissionOptions {
  readonly lwm2mServices: () => Promise<readonly Service[]>;
  readonly presence: Pick<DevicePresence, 'findDevices' | 'provision'>;
  /** An endpoint's DTLS security (mode and PSK identity); a device with one must use it. */
  readonly securityOf?: ((endpointId: string) => Promise<{ readonly mode: string; readonly pskIdentity?: string | undefined } | undefined>) | undefined;
  /** What the DTLS layer knows of a peer's association; absent without CoAPS. */
  readonly secure?: { readonly sessionOf: (peer: Peer) => { readonly pskIdentity?: string | undefined; readonly peerCertificates?: readonly Buffer[] | undefined } | undefined } | undefined;
}

/** The endpoint a device may speak for, or why it may not. */
export type Admission = { readonly kind: 'found'; readonly endpoint: Endpoint; readonly service: Service } | { readonly kind: 'refused'; readonly why: string };

/**
 * Who may speak for which endpoint on the LwM2M interfaces (docs/dtls.md, docs/security.md): the endpoint a
 * registering name belongs to (auto-provisioned when its service says so), whether the peer's channel (plain
 * CoAP, DTLS with a PSK or a certificate) is one that endpoint accepts, and whether a later message comes over
 * the same channel and identity as the registration it names.
 */
export class DeviceAdmission {
  readonly #options: AdmissionOptions;

  constructor(options: AdmissionOptions) {
    this.#options = options;
  }

  /** The endpoint `name` belongs to and may speak for from `peer` over `via`, or why not. */
  async admit(name: string, peer: Peer, via: 'udp' | 'dtls'): Promise<Admission> {
    const found = await this.#deviceFor(name);
    if (found.kind === 'refused') return found;
    const why = await this.refusal(found.endpoint, found.service, peer, via);
    return why === undefined ? found : { kind: 'refused', why };
  }

  /**
   * Why a peer may not speak for an endpoint, or undefined when it may: over plain CoAP only devices of services
   * that allow NoSec (`allowNoSec`, default true) whose endpoint has no DTLS security set; over DTLS with a PSK,
   * only the endpoint the PSK identity belongs to; with a certificate, one the service trusts naming the endpoint.
   */
  async refusal(endpoint: Endpoint, service: Pick<Service, 'options'>, peer: Peer, via: 'udp' | 'dtls'): Promise<string | undefined> {
    const security = await this.#options.securityOf?.(endpoint.id);
    if (via === 'udp') {
      if (service.options.allowNoSec === false) return 'the service accepts devices over DTLS only (allowNoSec false)';
      if (security) return `the endpoint has DTLS security (${security.mode}): it must use CoAPS`;
      return undefined;
    }
    const session = this.#options.secure?.sessionOf(peer);
    if (session?.pskIdentity !== undefined) {
      return security?.mode === 'psk' && security.pskIdentity === session.pskIdentity ? undefined : 'the PSK identity belongs to another endpoint';
    }
    if (session?.peerCertificates?.length) {
      if (security?.mode !== 'x509') return 'the endpoint does not use X.509';
      const trusted = Array.isArray(service.options.trustedCertificates) ? (service.options.trustedCertificates as string[]) : [];
      return certificateRefusal(session.peerCertificates, trustAnchors(trusted), endpoint.key);
    }
    return 'no authenticated DTLS identity for this endpoint';
  }

  /** Whether a message from `peer` over `via` comes the way `registration` was made: the same channel and DTLS identity. */
  sameChannel(registration: Registration, peer: Peer, via: 'udp' | 'dtls'): boolean {
    if ((registration.secure === true) !== (via === 'dtls')) return false;
    if (via === 'udp') return true;
    const identity = this.identityOf(peer);
    return identity !== undefined && identity === registration.identity;
  }

  /** Who a DTLS peer proved to be: its PSK identity, or `x509:<SHA-256 of its certificate>`. */
  identityOf(peer: Peer): string | undefined {
    const session = this.#options.secure?.sessionOf(peer);
    if (session?.pskIdentity !== undefined) return session.pskIdentity;
    const leaf = session?.peerCertificates?.[0];
    return leaf && `x509:${createHash('sha256').update(leaf).digest('hex')}`;
  }

  /** The endpoint a registering name belongs to, or why it may not register. */
  async #deviceFor(name: string): Promise<Admission> {
    const services = await this.#options.lwm2mServices();
    const devices = await this.#options.presence.findDevices('lwm2m', name);
    if (devices.length > 1) return { kind: 'refused', why: 'the endpoint name is used in several LwM2M services' };
    const device = devices[0];
    if (device) {
      const service = services.find((s) => s.id === device.serviceId);
      return service ? { kind: 'found', endpoint: device, service } : { kind: 'refused', why: 'the service is gone' };
    }
    const provisioning = services.filter((s) => s.options.autoProvision === true);
    if (provisioning.length === 0) return { kind: 'refused', why: 'unknown endpoint name' };
    if (provisioning.length > 1) return { kind: 'refused', why: 'unknown endpoint name (several services auto-provision: create the endpoint)' };
    const service = provisioning[0]!;
    return { kind: 'found', endpoint: await this.#options.presence.provision(service, name), service };
  }
}
