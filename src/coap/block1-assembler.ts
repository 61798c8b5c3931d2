/**
 * Server side of Block1 (RFC 7959 2.3, 2.5): reassembles a request body sent in blocks, atomically (the
 * handler sees one request with the whole body), within bounds per peer and in total.
 */
import { BoundedStore, type StoreLimits } from './bounded-store.js';
import { blockSize, type BlockOption } from './block.js';
import { ResponseCode, type CoapCode } from './message.js';

export interface Block1Limits extends StoreLimits {
  /** Largest body accepted, in bytes; above it the request gets 4.13 with Size1 (RFC 7959 2.9.3). */
  readonly maxBodySize: number;
}

export type Block1Result =
  /** Answer 2.31 Continue carrying this Block1 (RFC 7959 2.3: the SZX may be smaller than the client's, a preference). */
  | { readonly kind: 'continue'; readonly block: BlockOption }
  /** The last block arrived: hand `body` to the handler; its response carries `block` (RFC 7959 2.3). */
  | { readonly kind: 'complete'; readonly body: Buffer; readonly block: BlockOption }
  | { readonly kind: 'reject'; readonly code: CoapCode; readonly reason: string; readonly size1?: number };

interface Transfer {
  readonly chunks: Buffer[];
  received: number;
  lastNum: number;
  lastSize: number;
}

export class Block1Assembler {
  readonly #store: BoundedStore<Transfer>;
  readonly #limits: Block1Limits;

  constructor(limits: Block1Limits) {
    this.#limits = limits;
    this.#store = new BoundedStore(limits);
  }

  get transfers(): number {
    return this.#store.size;
  }

  get bufferedBytes(): number {
    return this.#store.bytes;
  }

  /**
   * One block of a request. `requestKey` names the resource and method (RFC 7959 2.5: blocks of a body are
   * matched by endpoint and request), `size1` is the client's announced total, `preferredSzx` ours.
   */
  accept(peerKey: string, requestKey: string, block: BlockOption, payload: Buffer, size1: number | undefined, preferredSzx: number, now: number): Block1Result {
    const max = this.#limits.maxBodySize;
    const key = peerKey + '\n' + requestKey;
    const size = blockSize(block.szx);
    if (size1 !== undefined && size1 > max) {
      this.#store.delete(key);
      return { kind: 'reject', code: ResponseCode.RequestEntityTooLarge, reason: 'announced body over the maximum', size1: max };
    }
    // RFC 7959 2.2: every block but the last carries exactly the block size.
    if (payload.length > size || (block.more && payload.length !== size)) {
      this.#store.delete(key);
      return { kind: 'reject', code: ResponseCode.BadRequest, reason: 'block payload does not match its SZX' };
    }
    const offset = block.num * size;
    let transfer: Transfer | undefined;
    if (offset === 0) {
      this.#store.delete(key);
      if (!block.more) return { kind: 'complete', body: payload, block };
      if (payload.length > max) return { kind: 'reject', code: ResponseCode.RequestEntityTooLarge, reason: 'body over the maximum', size1: max };
      transfer = { chunks: [], received: 0, lastNum: -1, lastSize: 0 };
      if (!this.#store.set(peerKey, key, transfer, 0, now, 'refuse')) {
        return { kind: 'reject', code: ResponseCode.ServiceUnavailable, reason: 'reassembly capacity exhausted' };
      }
    } else {
      transfer = this.#store.get(key, now);
      if (transfer === undefined) return { kind: 'reject', code: ResponseCode.RequestEntityIncomplete, reason: 'no transfer in progress' };
      if (offset !== transfer.received) {
        // The client resent the block we last acknowledged (our 2.31 was lost, and a new message ID defeats de-duplication).
        if (block.more && block.num === transfer.lastNum && size === transfer.lastSize && offset + size === transfer.received) {
          return { kind: 'continue', block: { num: block.num, more: true, szx: Math.min(block.szx, preferredSzx) } };
        }
        this.#store.delete(key);
        return { kind: 'reject', code: ResponseCode.RequestEntityIncomplete, reason: 'block out of sequence' };
      }
    }
    const received = transfer.received + payload.length;
    if (received > max) {
      this.#store.delete(key);
      return { kind: 'reject', code: ResponseCode.RequestEntityTooLarge, reason: 'body over the maximum', size1: max };
    }
    if (!block.more) {
      this.#store.delete(key);
      transfer.chunks.push(payload);
      return { kind: 'complete', body: Buffer.concat(transfer.chunks, received), block };
    }
    if (!this.#store.update(key, received, now)) {
      this.#store.delete(key);
      return { kind: 'reject', code: ResponseCode.ServiceUnavailable, reason: 'reassembly memory exhausted' };
    }
    // Copy: the block is a view of its datagram, which would otherwise stay alive whole.
    transfer.chunks.push(Buffer.from(payload));
    transfer.received = received;
    transfer.lastNum = block.num;
    transfer.lastSize = size;
    return { kind: 'continue', block: { num: block.num, more: true, szx: Math.min(block.szx, preferredSzx) } };
  }

  sweep(now: number): void {
    this.#store.sweep(now);
  }

  clear(): void {
    this.#store.clear();
  }
}
