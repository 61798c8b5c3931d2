import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type BlockList, type LookupFunction } from 'node:net';
import { addressList } from '../domain/address-list.js';
import { AppError } from '../errors.js';
import { classifyAddress } from './send-guard.js';
import type { HttpRequest } from '../location/http-json.js';

/** The answer of a request: its status and body text (at most MAX_BODY_BYTES). */
export interface OutboundResponse {
  readonly status: number;
  readonly text: string;
}

/** Enough for any network server's answer to a downlink; a bigger body is cut (the rest is not read). */
const MAX_BODY_BYTES = 64 * 1024;

/**
 * HTTP requests to URLs a tenant configured (a LoRa service's `apiUrl`). They leave from the operator's network,
 * so only public addresses are reached by default: loopback, private, CGNAT, unique-local, link-local (cloud
 * metadata services), multicast and unspecified addresses are refused unless the operator lists them in
 * `IOTBRIDGE_OUTBOUND_ALLOW` (a network server on the same private network). The check is made on every address
 * a name resolves to, inside the connection's own look-up, so a name that resolves differently the second time
 * (DNS rebinding) is checked on the address actually connected to. Redirects are not followed.
 */
export class OutboundHttp {
  readonly #allowed: BlockList;
  readonly #allowedText: string;

  /** `allow`: CIDRs (`10.1.2.0/24`, `::1/128`) or single addresses the operator lets tenants reach although not public. */
  constructor(allow: readonly string[] = []) {
    this.#allowed = addressList(allow);
    this.#allowedText = allow.join(', ');
  }

  /** Why `address` (an IP literal) may not be reached, or undefined when it may. */
  refusal(address: string): string | undefined {
    const kind = classifyAddress(address);
    if (kind === 'public') return undefined;
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (kind !== 'invalid' && this.#allowed.check(address, family)) return undefined;
    return kind;
  }

  /**
   * Throws `IOTB_OUTBOUND_ADDRESS_REFUSED` when `url` names a refused address outright (`http://10.0.0.5/`): said
   * when the URL is configured. A name is checked each time it is connected to.
   */
  checkUrl(url: string): void {
    const host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
    if (isIP(host)) this.#check(host);
  }

  /** POSTs `body` as JSON to `url` → the answer; throws `IOTB_OUTBOUND_ADDRESS_REFUSED` before connecting to a refused address. */
  postJson(url: string, headers: Record<string, string>, body: unknown, timeoutMs: number): Promise<OutboundResponse> {
    return this.request({ method: 'POST', url, headers, json: body, timeoutMs });
  }

  /** One GET, or POST of a JSON body (location providers: src/location/http-json.ts) → the answer; refused addresses as postJson. */
  async request(options: HttpRequest): Promise<OutboundResponse> {
    const { method, url, headers, json, timeoutMs } = options;
    const target = new URL(url);
    // An address in the URL is connected to without a look-up: checked here.
    this.checkUrl(url);
    const send = target.protocol === 'https:' ? https.request : http.request;
    const payload = method === 'POST' ? Buffer.from(JSON.stringify(json ?? null)) : undefined;
    return new Promise<OutboundResponse>((resolve, reject) => {
      const request = send(
        target,
        {
          method,
          headers: { accept: 'application/json', ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}), ...headers },
          lookup: this.#lookup,
          timeout: timeoutMs,
          // One request per connection: no pooled socket outlives the check of the address it went to.
          agent: false,
        },
        (response) => {
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            if (size >= MAX_BODY_BYTES) return;
            chunks.push(chunk);
            size += chunk.length;
          });
          response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).subarray(0, MAX_BODY_BYTES).toString('utf8') }));
          response.on('error', reject);
        },
      );
      request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      request.on('error', reject);
      request.end(payload);
    });
  }

  #check(address: string): void {
    const refused = this.refusal(address);
    if (refused === undefined) return;
    throw new AppError('IOTB_OUTBOUND_ADDRESS_REFUSED', undefined, {
      address,
      reason: refused,
      ...(this.#allowedText ? { allowed: this.#allowedText } : {}),
    });
  }

  /** dns.lookup, refusing when any address the name resolves to is refused (a mixed answer is not picked from). */
  readonly #lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      try {
        for (const { address } of addresses) this.#check(address);
      } catch (refused) {
        return callback(refused as NodeJS.ErrnoException, '', 0);
      }
      if (options.all) return (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      callback(null, first.address, first.family);
    });
  };
}
