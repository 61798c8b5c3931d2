import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Peer } from '../coap/transport.js';

/** How often the cookie secret changes; a cookie made with the previous secret is still good (RFC 6347 4.2.1). */
const ROTATE_MS = 5 * 60_000;

/**
 * Stateless HelloVerifyRequest cookies (RFC 6347 4.2.1): an HMAC over the client's address and its
 * ClientHello parameters, so the server keeps nothing for a peer until it has proven it receives at its
 * address (no amplification, no state for spoofed sources).
 */
export class CookieJar {
  #secret = randomBytes(32);
  #previous: Buffer | undefined;
  #rotatedAt = Date.now();

  make(peer: Peer, helloInput: Buffer): Buffer {
    this.#rotate();
    return this.#mac(this.#secret, peer, helloInput);
  }

  check(peer: Peer, helloInput: Buffer, cookie: Buffer): boolean {
    this.#rotate();
    if (cookie.length !== 32) return false;
    if (timingSafeEqual(cookie, this.#mac(this.#secret, peer, helloInput))) return true;
    return this.#previous !== undefined && timingSafeEqual(cookie, this.#mac(this.#previous, peer, helloInput));
  }

  #mac(secret: Buffer, peer: Peer, helloInput: Buffer): Buffer {
    return createHmac('sha256', secret).update(`${peer.address}|${peer.port}|`).update(helloInput).digest();
  }

  #rotate(): void {
    const now = Date.now();
    if (now - this.#rotatedAt < ROTATE_MS) return;
    this.#previous = this.#secret;
    this.#secret = randomBytes(32);
    this.#rotatedAt = now;
  }
}
