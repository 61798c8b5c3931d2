/**
 * Block-wise transfers (RFC 7959) apart from the endpoint's bookkeeping: cutting a response into the
 * requested Block2 block, and the client's loops that send a body in Block1 blocks and fetch the rest of a
 * Block2 body. The loops drive any single-exchange function, so they know nothing of retransmission.
 */
import { block1, block2, blockSize, encodeBlock, szxFor, type BlockOption } from './block.js';
import { CoapError } from './coap-error.js';
import { encodedSize, isSuccess, Method, ResponseCode, type CoapCode, type CoapMessage, type CoapOption } from './message.js';
import { encodeUint, etag, OptionNumber, option, withoutOptions } from './options.js';

/** What a request is made of before it gets a message ID and token. */
export interface OutgoingRequest {
  readonly code: CoapCode;
  readonly options: readonly CoapOption[];
  readonly payload: Buffer;
  readonly confirmable: boolean;
}

export type SendRequest = (request: OutgoingRequest) => Promise<CoapMessage>;

/** Room kept for a Block option (header, extended delta, 3-byte value) and a Size option (header, delta, 4 bytes). */
const BLOCK_OPTIONS_RESERVE = 5 + 6;
/** A Block2 option after options numbered below it: header, extended delta, a value of up to 3 bytes. */
const BLOCK_OPTION_SIZE = 5;
const MAX_BLOCK_NUM = 0xfffff;

const KEY_OPTIONS = new Set<number>([OptionNumber.UriHost, OptionNumber.UriPort, OptionNumber.UriPath, OptionNumber.UriQuery, OptionNumber.Accept]);

/**
 * Method and resource of a request: what ties the blocks of one body together (RFC 7959 2.4, 2.5) and what a
 * stored Block2 body is found by. Observe, Block and Size options are not part of it.
 */
export function requestKey(message: Pick<CoapMessage, 'code' | 'options'>): string {
  let key: string = message.code;
  for (const o of message.options) if (KEY_OPTIONS.has(o.number)) key += '|' + o.number + ':' + o.value.toString('latin1');
  return key;
}

export type FittedResponse =
  | { readonly ok: true; readonly options: readonly CoapOption[]; readonly payload: Buffer; readonly block: BlockOption | undefined }
  | { readonly ok: false };

/**
 * The part of a response body that goes in one datagram of at most `limit` bytes (RFC 7959 2.4). Without a
 * Block2 request and when it fits, the response is unchanged. Otherwise it becomes the requested block (0 by
 * default) with Block2 (and Size2 with block 0, RFC 7959 4), at the largest size that fits, no larger than
 * `preferredSzx` or the client's SZX; a smaller size than the client asked for renumbers the block (2.4).
 * The smallest block (16 bytes) is sent even when it exceeds `limit`. `ok: false` for a block past the end.
 */
export function fitResponse(
  tokenLength: number,
  options: readonly CoapOption[],
  payload: Buffer,
  requested: BlockOption | undefined,
  limit: number,
  preferredSzx: number,
): FittedResponse {
  if (requested === undefined && (payload.length === 0 || encodedSize(tokenLength, options, payload.length) <= limit)) {
    return { ok: true, options, payload, block: undefined };
  }
  const base = withoutOptions(options, OptionNumber.Block2, OptionNumber.Size2);
  const room = limit - encodedSize(tokenLength, base, 0) - 1 - BLOCK_OPTIONS_RESERVE;
  let szx = Math.min(szxFor(room), preferredSzx);
  let num = 0;
  if (requested !== undefined) {
    if (requested.szx < szx) szx = requested.szx;
    num = requested.num * (blockSize(requested.szx) / blockSize(szx));
  }
  const size = blockSize(szx);
  const offset = num * size;
  if (offset > 0 && offset >= payload.length) return { ok: false };
  const more = offset + size < payload.length;
  const block = { num, more, szx };
  base.push({ number: OptionNumber.Block2, value: encodeBlock(block) });
  if (num === 0) base.push(option(OptionNumber.Size2, payload.length));
  return { ok: true, options: base, payload: payload.subarray(offset, offset + size), block };
}

/**
 * A response its handler already cut to one Block2 block (RFC 7959 2.4), read alone from a large body (a file
 * served block by block): sent as it is when it fits in `limit`, else as the first smaller block of it that
 * does, renumbered (the server may answer with a smaller block than asked; the client goes on from there).
 * The 16-byte block is sent even over `limit`, and a size whose block number would not fit 20 bits is not used.
 */
export function fitBlock(tokenLength: number, options: readonly CoapOption[], payload: Buffer, block: BlockOption, limit: number): FittedResponse {
  const base = withoutOptions(options, OptionNumber.Block2);
  const fits = (szx: number) => encodedSize(tokenLength, base, Math.min(payload.length, blockSize(szx))) + BLOCK_OPTION_SIZE <= limit;
  let szx = block.szx;
  while (szx > 0 && !fits(szx) && block.num * (blockSize(block.szx) / blockSize(szx - 1)) <= MAX_BLOCK_NUM) szx--;
  const size = blockSize(szx);
  const fitted = { num: block.num * (blockSize(block.szx) / size), more: block.more || payload.length > size, szx };
  base.push({ number: OptionNumber.Block2, value: encodeBlock(fitted) });
  return { ok: true, options: base, payload: payload.subarray(0, size), block: fitted };
}

/** Payload room per block for a request or response of `maxMessageSize` bytes with these options. */
export function blockSzxFor(tokenLength: number, options: readonly CoapOption[], maxMessageSize: number, preferredSzx = 6): number {
  return Math.min(preferredSzx, szxFor(maxMessageSize - encodedSize(tokenLength, options, 0) - 1 - BLOCK_OPTIONS_RESERVE));
}

/**
 * Sends a request whose body may not fit one message of `maxMessageSize` bytes: then in Block1 blocks (RFC 7959
 * 2.3), heeding a smaller SZX the server asks for in 2.31 (or 4.13 on the first block). Resolves with the
 * final response (which may itself be the first of several Block2 blocks), or with the error response that
 * ended the transfer.
 */
export async function sendWithBlock1(send: SendRequest, request: OutgoingRequest, tokenLength: number, maxMessageSize: number): Promise<CoapMessage> {
  const body = request.payload;
  if (encodedSize(tokenLength, request.options, body.length) <= maxMessageSize) return send(request);
  const base = withoutOptions(request.options, OptionNumber.Block1, OptionNumber.Size1);
  let szx = blockSzxFor(tokenLength, base, maxMessageSize);
  let offset = 0;
  for (;;) {
    const size = blockSize(szx);
    const num = offset / size;
    const more = offset + size < body.length;
    const options = [...base, { number: OptionNumber.Block1, value: encodeBlock({ num, more, szx }) }];
    // RFC 7959 4: Size1 announces the body size so the server can refuse it at once.
    if (num === 0) options.push(option(OptionNumber.Size1, body.length));
    const response = await send({ ...request, options, payload: body.subarray(offset, offset + size) });
    const echoed = block1(response);
    if (response.code === ResponseCode.Continue && more) {
      offset += size;
      if (echoed !== undefined && echoed.szx < szx) szx = echoed.szx;
      continue;
    }
    if (response.code === ResponseCode.RequestEntityTooLarge && num === 0 && echoed !== undefined && echoed.szx < szx) {
      szx = echoed.szx;
      continue;
    }
    return response;
  }
}

/**
 * When `first` is block 0 of a larger body (Block2 with M set), fetches the other blocks with the same
 * request (no payload, no Observe) and returns one response carrying the whole body, without Block2. The
 * client may ask for blocks smaller than the server's (late negotiation, RFC 7959 2.4) to keep each message
 * within `maxMessageSize`. A changed ETag between blocks restarts the transfer (twice at most).
 */
export async function fetchRemainingBlocks(
  send: SendRequest,
  request: OutgoingRequest,
  first: CoapMessage,
  tokenLength: number,
  maxMessageSize: number,
  maxBodySize: number,
): Promise<CoapMessage> {
  const firstBlock = block2(first);
  if (firstBlock === undefined || !firstBlock.more || !isSuccess(first.code)) return first;
  if (firstBlock.num !== 0) throw new CoapError('BLOCKWISE', `first response is block ${firstBlock.num}, not 0`, first);
  const base = withoutOptions(request.options, OptionNumber.Observe, OptionNumber.Block1, OptionNumber.Size1, OptionNumber.Block2);
  const ourSzx = blockSzxFor(tokenLength, base, maxMessageSize);
  let head = first;
  for (let restarts = 0; ; restarts++) {
    const tag = etag(head);
    const chunks = [head.payload];
    let received = head.payload.length;
    let szx = Math.min(block2(head)!.szx, ourSzx);
    let more = true;
    let changed = false;
    while (more) {
      const size = blockSize(szx);
      if (received % size !== 0) throw new CoapError('BLOCKWISE', 'block boundary mismatch', head);
      const num = received / size;
      const response = await send({
        code: request.code,
        options: [...base, { number: OptionNumber.Block2, value: encodeBlock({ num, more: false, szx }) }],
        payload: request.code === Method.FETCH ? request.payload : Buffer.alloc(0),
        confirmable: request.confirmable,
      });
      if (!isSuccess(response.code)) throw new CoapError('BLOCKWISE', `block ${num} answered ${response.code}`, response);
      const block = block2(response);
      if (block === undefined || block.num * blockSize(block.szx) !== received) {
        throw new CoapError('BLOCKWISE', `asked for block ${num}, got ${block ? `${block.num} of size ${blockSize(block.szx)}` : 'no Block2'}`, response);
      }
      const responseTag = etag(response);
      if ((tag === undefined) !== (responseTag === undefined) || (tag !== undefined && !tag.equals(responseTag!))) {
        // RFC 7959 2.4: the representation changed under the transfer; start over from its new block 0.
        if (restarts >= 2) throw new CoapError('BLOCKWISE', 'representation keeps changing (ETag)', response);
        head = await send({ ...request, options: base, payload: request.code === Method.FETCH ? request.payload : Buffer.alloc(0) });
        const headBlock = block2(head);
        if (!isSuccess(head.code) || headBlock === undefined || !headBlock.more) return head;
        changed = true;
        break;
      }
      received += response.payload.length;
      if (received > maxBodySize) throw new CoapError('TOO_LARGE', `response body over ${maxBodySize} bytes`, response);
      chunks.push(response.payload);
      more = block.more;
      szx = Math.min(block.szx, ourSzx);
    }
    if (changed) continue;
    return { ...head, options: withoutOptions(head.options, OptionNumber.Block2), payload: Buffer.concat(chunks, received) };
  }
}

/** `Size1: max` for a 4.13 answer (RFC 7959 4). */
export const size1Option = (max: number): CoapOption => ({ number: OptionNumber.Size1, value: encodeUint(max) });
