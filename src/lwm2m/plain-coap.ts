import type { Logger } from 'pino';
import {
  contentFormat,
  formatPeer,
  observe as observeOption,
  option,
  OptionNumber,
  uriPath,
  uriPathOptions,
  uriQuery,
  type CoapCode,
  type CoapEndpoint,
  type CoapMessage,
  type CoapResponse,
  type Peer,
} from '../coap/index.js';
import type { DevicePresence } from '../devices/presence.js';
import { payloadFields } from '../devices/payload.js';
import type { SendCaps } from '../devices/send-caps.js';
import type { SendGuard } from '../devices/send-guard.js';
import type { Domain } from '../domain/domain.js';
import type { Endpoint } from '../domain/endpoints.js';
import type { Scope } from '../domain/scope.js';
import type { Service } from '../domain/services.js';
import { AppError } from '../errors.js';
import { createEvent } from '../events/event.js';
import type { CoapChannel, OutgoingCoapRequest } from './coap-channel.js';

/** The event each request of a plain CoAP device becomes. */
export const COAP_REQUEST_EVENT = 'coap-request';

const METHODS: Record<string, string> = { '0.01': 'GET', '0.02': 'POST', '0.03': 'PUT', '0.04': 'DELETE', '0.05': 'FETCH', '0.06': 'PATCH', '0.07': 'iPATCH' };
const METHOD_CODES: Record<string, CoapCode> = { GET: '0.01', POST: '0.02', PUT: '0.03', DELETE: '0.04' };

export interface PlainCoapOptions {
  /** The endpoint a device is reached on (CoAPS for a device heard over DTLS). */
  readonly coapFor: (peer: Peer) => CoapEndpoint;
  /** Why a peer may not speak for an endpoint (DTLS identity, allowNoSec); undefined when it may. */
  readonly refusal?: ((endpoint: Endpoint, service: Service, peer: Peer, via: 'udp' | 'dtls') => Promise<string | undefined>) | undefined;
  readonly domain: Domain;
  readonly presence: DevicePresence;
  readonly logger: Logger;
  readonly coapServices: () => Promise<readonly Service[]>;
  /** The peer of an LwM2M device's live registration (preferred over the recorded address). */
  readonly registeredPeer: (endpointId: string) => Peer | undefined;
  readonly sendGuard: SendGuard;
  readonly sendCaps: SendCaps;
}

/**
 * Devices of `coap` services that speak CoAP without LwM2M: a request to any path of the server other than
 * the LwM2M interfaces names its device with the query `ep=<key>` or the path `/d/<key>/…`, and becomes a
 * `coap-request` event. Triggers answer with `trigger.reply(data)` when the service's `replyTimeoutMs`
 * option is set (otherwise the device gets 2.04 once the event is durable). A GET with Observe registers
 * the device as an observer of that path; `coap.notify` reaches it.
 */
export class PlainCoap implements CoapChannel {
  readonly #options: PlainCoapOptions;

  constructor(options: PlainCoapOptions) {
    this.#options = options;
  }

  async handle(request: CoapMessage, peer: Peer, via: 'udp' | 'dtls' = 'udp'): Promise<CoapResponse> {
    const { key, path } = deviceOf(request);
    if (key === undefined) return { code: '4.04', payload: 'unknown path; plain CoAP devices name themselves with ?ep=<key> or /d/<key>/…' };
    const found = await this.#deviceFor(key);
    if (!found) return { code: '4.03', payload: 'unknown device' };
    const { endpoint, service } = found;
    // The same rule as LwM2M registrations: DTLS identities, allowNoSec (docs/dtls.md).
    if ((await this.#options.refusal?.(endpoint, service, peer, via)) !== undefined) return { code: '4.03', payload: 'unknown device' };
    const remoteAddr = formatPeer(peer);
    const current = await this.#options.presence.heard(endpoint, { protocol: 'coap', remoteAddr });
    const observe = request.code === '0.01' && observeOption(request) === 0;
    const event = createEvent({
      type: COAP_REQUEST_EVENT,
      accountId: current.accountId,
      serviceId: current.serviceId,
      endpointId: current.id,
      endpointKey: current.key,
      data: {
        method: METHODS[request.code] ?? request.code,
        path,
        query: uriQuery(request).filter((q) => !q.startsWith('ep=')),
        contentFormat: contentFormat(request) ?? null,
        observe,
        remoteAddr,
        ...payloadFields(request.payload),
      },
    });
    const replyTimeoutMs = typeof service.options.replyTimeoutMs === 'number' ? Math.min(Math.max(service.options.replyTimeoutMs, 0), 30_000) : 0;
    const reply = replyTimeoutMs > 0 ? this.#options.domain.replies.expect(event.id, replyTimeoutMs) : undefined;
    await this.#options.domain.events.publish(event);
    const answer = toResponse(reply === undefined ? null : await reply, request.code);
    return observe ? { ...answer, observe: true } : answer;
  }

  async send(scope: Scope, ref: string, request: OutgoingCoapRequest): Promise<{ code: string; payload: string; payloadBase64: string; text?: string }> {
    const endpoint = await this.#options.domain.endpoints.get(scope, ref);
    const code = METHOD_CODES[request.method.toUpperCase()];
    if (!code) throw new AppError('IOTB_REQUEST_VALIDATION', `method must be one of ${Object.keys(METHOD_CODES).join(', ')}`);
    const peer = await this.#peerOf(endpoint);
    this.#options.sendCaps.take(endpoint, request.payload.length);
    const options = [...uriPathOptions(request.path), ...(request.contentFormat === undefined ? [] : [option(OptionNumber.ContentFormat, request.contentFormat)])];
    let response: CoapMessage;
    try {
      response = await this.#options.coapFor(peer).request(peer, { code, options, payload: request.payload, confirmable: request.confirmable }, { timeout: request.timeoutMs });
    } catch {
      throw new AppError('IOTB_LWM2M_TIMEOUT', 'The device did not answer the CoAP request in time');
    }
    return { code: response.code, ...payloadFields(response.payload) };
  }

  async notify(scope: Scope, ref: string, path: string, payload: Buffer, format: number | undefined) {
    const endpoint = await this.#options.domain.endpoints.get(scope, ref);
    const peer = await this.#peerOf(endpoint);
    const normalised = `/${path.split('/').filter(Boolean).join('/')}`;
    const viaKeyPath = `/d/${encodeURIComponent(endpoint.key)}${normalised === '/' ? '' : normalised}`;
    const coap = this.#options.coapFor(peer);
    const observers = coap.observers({ peer }).filter((o) => o.path === normalised || o.path === viaKeyPath);
    const response: CoapResponse = { code: '2.05', payload, ...(format === undefined ? {} : { options: [option(OptionNumber.ContentFormat, format)] }) };
    if (observers.length > 0) this.#options.sendCaps.take(endpoint, payload.length * observers.length, observers.length);
    for (const observer of observers) await coap.notify(observer, response);
    return { notified: observers.length };
  }

  /** Where the device is: its live LwM2M registration, else where it was last heard from over CoAP (plain or LwM2M); the guard has the last word. */
  async #peerOf(endpoint: Endpoint): Promise<Peer> {
    let peer = this.#options.registeredPeer(endpoint.id);
    if (!peer) {
      const heard = await this.#options.presence.addressOf(endpoint, ['coap', 'lwm2m']);
      peer = { address: heard.host, port: heard.port };
    }
    this.#options.sendGuard.check(peer.address, peer.port);
    return peer;
  }

  async #deviceFor(key: string): Promise<{ endpoint: Endpoint; service: Service } | undefined> {
    const services = await this.#options.coapServices();
    const devices = await this.#options.presence.findDevices('coap', key);
    if (devices.length > 1) return undefined; // two accounts' devices share the name: refuse rather than guess
    const device = devices[0];
    if (device) {
      const service = services.find((s) => s.id === device.serviceId);
      return service && { endpoint: device, service };
    }
    const provisioning = services.filter((s) => s.options.autoProvision === true);
    if (provisioning.length !== 1) return undefined;
    const service = provisioning[0]!;
    return { endpoint: await this.#options.presence.provision(service, key), service };
  }
}

/**
 * The device key (`?ep=` or `/d/<key>/…`) and the path the event reports. Option values are taken as they
 * are: a client percent-decodes a URI when it splits it into options (RFC 7252, 6.4), so decoding again
 * would change a key holding `%` (and failed, 5.00, on one that is not valid percent-encoding).
 */
function deviceOf(request: CoapMessage): { key: string | undefined; path: string } {
  const path = uriPath(request);
  const ep = uriQuery(request).find((q) => q.startsWith('ep='))?.slice(3);
  if (ep) return { key: ep, path };
  const match = /^\/d\/([^/]+)(\/.*)?$/.exec(path);
  return match ? { key: match[1]!, path: match[2] ?? '/' } : { key: undefined, path };
}

/**
 * A trigger's reply as the CoAP response: `{code, payload, contentFormat}` as given, a string as text, any
 * other value as JSON (Content-Format 50); no reply is 2.05 to a GET, 2.04 otherwise, without payload.
 */
function toResponse(reply: unknown, method: CoapCode): CoapResponse {
  const ok: CoapCode = method === '0.01' ? '2.05' : method === '0.02' ? '2.01' : '2.04';
  if (reply === null || reply === undefined) return { code: method === '0.02' ? '2.04' : ok };
  if (typeof reply === 'string') return { code: ok, options: [option(OptionNumber.ContentFormat, 0)], payload: reply };
  if (typeof reply === 'object' && 'code' in reply && typeof reply.code === 'string' && /^[245]\.\d\d$/.test(reply.code)) {
    const { code, payload, contentFormat: format } = reply as { code: CoapCode; payload?: unknown; contentFormat?: unknown };
    return {
      code,
      ...(typeof format === 'number' ? { options: [option(OptionNumber.ContentFormat, format)] } : {}),
      ...(payload === undefined ? {} : { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) }),
    };
  }
  return { code: ok, options: [option(OptionNumber.ContentFormat, 50)], payload: JSON.stringify(reply) };
}
