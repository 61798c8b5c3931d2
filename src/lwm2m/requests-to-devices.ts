import { encodeBlock, formatPeer, option, OptionNumber, szxFor, type CoapEndpoint, type CoapMessage, type Observation, type ObserveOptions, type Peer } from '../coap/index.js';
import { FifoMap } from '../coap/fifo-map.js';
import type { Registration } from './registration.js';
import type { Lwm2mServerOptions } from './server.js';

/**
 * The server's requests to devices (device management, Observe) over the way each device came: CoAPS for a
 * registration made over DTLS, plain CoAP otherwise, and the service's CoAP Max Message Size.
 */
export class RequestsToDevices {
  readonly #options: Pick<Lwm2mServerOptions, 'sendGuard' | 'lwm2mServices'>;
  readonly #coap: CoapEndpoint;
  /** The CoAPS endpoint, when DTLS is on. */
  readonly #coaps: CoapEndpoint | undefined;
  /**
   * Which endpoint each peer was last heard on: answers and requests to it go back the same way. Bounded, the
   * first heard going first: a FifoMap, as a Map evicting its first key per request turns quadratic.
   */
  readonly #via = new FifoMap<string, 'udp' | 'dtls'>();

  constructor(options: Pick<Lwm2mServerOptions, 'sendGuard' | 'lwm2mServices'>, coap: CoapEndpoint, coaps: CoapEndpoint | undefined) {
    this.#options = options;
    this.#coap = coap;
    this.#coaps = coaps;
  }

  /** A request came from `peer` over `via`: what goes back to it goes the same way. */
  heardOn(peer: Peer, via: 'udp' | 'dtls'): void {
    const key = formatPeer(peer);
    if (this.#via.get(key) === via) return;
    this.#via.set(key, via);
    if (this.#via.size > 100_000) this.#via.delete(this.#via.oldest()!.key);
  }

  /** The endpoint a peer was last heard on (CoAPS for a DTLS peer), to answer and request it the same way. */
  coapFor(peer: Peer): CoapEndpoint {
    return this.#via.get(formatPeer(peer)) === 'dtls' && this.#coaps ? this.#coaps : this.#coap;
  }

  #endpointFor(registration: Registration): CoapEndpoint {
    return registration.secure && this.#coaps ? this.#coaps : this.#coap;
  }

  /** Sends a device management request to a registered device; resolves with its response (any code). */
  async send(registration: Registration, request: Parameters<CoapEndpoint['request']>[1], options: { timeoutMs: number; onExchange?: () => void }): Promise<CoapMessage> {
    this.#options.sendGuard?.check(registration.peer.address, registration.peer.port);
    const maxMessageSize = await this.#maxMessageSize(registration);
    // A smaller message size than the default also bounds what the device sends back: RFC 7959 2.4 early
    // negotiation, Block2 0/0/<size> on the request.
    const payloadLimit = maxMessageSize === undefined ? undefined : maxMessageSize - 128;
    const asksBody = request.code === '0.01' || request.code === '0.05';
    const withBlock2 =
      asksBody && payloadLimit !== undefined && payloadLimit < 1024
        ? { ...request, options: [...(request.options ?? []), option(OptionNumber.Block2, encodeBlock({ num: 0, more: false, szx: szxFor(payloadLimit) }))] }
        : request;
    return this.#endpointFor(registration).request(registration.peer, withBlock2, {
      timeout: options.timeoutMs,
      maxMessageSize,
      ...(options.onExchange && { onExchange: options.onExchange }),
    });
  }

  /** The service's "CoAP Max Message Size" (payload bytes) as the datagram size block-wise transfer starts above. */
  async #maxMessageSize(registration: Registration): Promise<number | undefined> {
    const service = (await this.#options.lwm2mServices()).find((s) => s.id === registration.serviceId);
    const payload = service?.options.coapMaxMessageSize;
    // Room for the header, token and options next to the payload (RFC 7252 4.6: 1152 for a 1024-byte payload).
    return typeof payload === 'number' && payload >= 16 ? payload + 128 : undefined;
  }

  /** Takes up an observation made before a restart (nothing is sent; see CoapEndpoint.resumeObservation). */
  resumeObservation(registration: Registration, token: Buffer, request: Parameters<CoapEndpoint['request']>[1], onNotification: (notification: CoapMessage) => void, onEnd: ObserveOptions['onEnd']): Observation {
    return this.#endpointFor(registration).resumeObservation(registration.peer, token, request, onNotification, { onEnd });
  }

  /** Observes a resource of a registered device (RFC 7641): resolves with the first response and the observation. */
  async observe(registration: Registration, request: Parameters<CoapEndpoint['request']>[1], onNotification: (notification: CoapMessage) => void, options: { timeoutMs: number; onEnd?: ObserveOptions['onEnd'] }): Promise<Observation> {
    this.#options.sendGuard?.check(registration.peer.address, registration.peer.port);
    return this.#endpointFor(registration).observe(registration.peer, request, onNotification, { timeout: options.timeoutMs, ...(options.onEnd && { onEnd: options.onEnd }) });
  }
}
