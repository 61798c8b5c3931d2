/**
 * How messages are cut out of a TCP byte stream (docs/udp-tcp.md "Framing"):
 * - `delimiter`: each message ends with the delimiter bytes (default `\n`), which are not part of it;
 * - `length`: each message is preceded by its length as a 1-, 2- or 4-byte big-endian unsigned integer,
 *   counting only the message unless `includesHeader`.
 * A message with no bytes is a keep-alive and is not returned.
 */
export type Framing =
  | { readonly kind: 'delimiter'; readonly delimiter: Buffer }
  | { readonly kind: 'length'; readonly bytes: 1 | 2 | 4; readonly includesHeader: boolean };

/** A frame over the size limit (or a length header that cannot be right): the connection is closed. */
export class FrameError extends Error {}

/** Same framing, same signature: lets the server try each distinct framing once on a first frame. */
export function framingSignature(framing: Framing): string {
  return framing.kind === 'delimiter' ? `d${framing.delimiter.toString('hex')}` : `l${framing.bytes}${framing.includesHeader ? 'h' : ''}`;
}

/** The first frame in `buffer` and how many bytes it took with its framing; `more` when it is not complete yet. */
export function firstFrame(buffer: Buffer, framing: Framing, maxFrameBytes: number): { frame: Buffer; consumed: number } | 'more' {
  let offset = 0;
  for (;;) {
    const found = frameAt(buffer, offset, framing, maxFrameBytes);
    if (found === 'more') return 'more';
    offset = found.end;
    if (found.frame.length > 0) return { frame: found.frame, consumed: offset };
  }
}

function frameAt(buffer: Buffer, offset: number, framing: Framing, max: number, searchFrom = offset): { frame: Buffer; end: number } | 'more' {
  if (framing.kind === 'delimiter') {
    const at = buffer.indexOf(framing.delimiter, searchFrom);
    if (at < 0) {
      if (buffer.length - offset > max) throw new FrameError(`no delimiter within ${max} bytes (maxFrameBytes)`);
      return 'more';
    }
    if (at - offset > max) throw new FrameError(`a frame of ${at - offset} bytes is over maxFrameBytes (${max})`);
    return { frame: buffer.subarray(offset, at), end: at + framing.delimiter.length };
  }
  const header = framing.bytes;
  if (buffer.length - offset < header) return 'more';
  const declared = header === 1 ? buffer.readUInt8(offset) : header === 2 ? buffer.readUInt16BE(offset) : buffer.readUInt32BE(offset);
  const length = framing.includesHeader ? declared - header : declared;
  if (length < 0) throw new FrameError(`a length header of ${declared} is shorter than the header itself`);
  // Refused from the header alone: the bytes of an oversized frame are never buffered.
  if (length > max) throw new FrameError(`a frame of ${length} bytes is over maxFrameBytes (${max})`);
  if (buffer.length - offset - header < length) return 'more';
  return { frame: buffer.subarray(offset + header, offset + header + length), end: offset + header + length };
}

/** Cuts frames out of a connection's stream; holds at most one incomplete frame (bounded by `maxFrameBytes`). */
export class FrameDecoder {
  readonly #framing: Framing;
  readonly #max: number;
  #pending: Buffer = Buffer.alloc(0);

  constructor(framing: Framing, maxFrameBytes: number) {
    this.#framing = framing;
    this.#max = maxFrameBytes;
  }

  /** Adds received bytes and returns the frames now complete, in order; throws FrameError on an oversized frame. */
  push(chunk: Buffer): Buffer[] {
    // Where the delimiter search resumes: bytes already searched hold no delimiter (but one may straddle the chunk edge).
    const searchFrom = this.#framing.kind === 'delimiter' ? Math.max(0, this.#pending.length - this.#framing.delimiter.length + 1) : 0;
    const buffer = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    const frames: Buffer[] = [];
    let offset = 0;
    let from = searchFrom;
    for (;;) {
      const found = frameAt(buffer, offset, this.#framing, this.#max, Math.max(offset, from));
      if (found === 'more') break;
      if (found.frame.length > 0) frames.push(Buffer.from(found.frame));
      offset = found.end;
      from = offset;
    }
    // Copied, so a large chunk's memory is not kept alive by a small remainder.
    this.#pending = offset === buffer.length ? Buffer.alloc(0) : Buffer.from(buffer.subarray(offset));
    return frames;
  }

  /** Bytes held for an incomplete frame. */
  get buffered(): number {
    return this.#pending.length;
  }
}

/** The bytes that carry `payload` as one frame. */
export function encodeFrame(framing: Framing, payload: Buffer): Buffer {
  if (framing.kind === 'delimiter') return Buffer.concat([payload, framing.delimiter]);
  const length = payload.length + (framing.includesHeader ? framing.bytes : 0);
  const header = Buffer.alloc(framing.bytes);
  if (framing.bytes === 1) header.writeUInt8(length);
  else if (framing.bytes === 2) header.writeUInt16BE(length);
  else header.writeUInt32BE(length);
  return Buffer.concat([header, payload]);
}

/** The largest payload one frame can carry with this framing. */
export function framingCapacity(framing: Framing): number {
  if (framing.kind === 'delimiter') return Number.MAX_SAFE_INTEGER;
  return 2 ** (8 * framing.bytes) - 1 - (framing.includesHeader ? framing.bytes : 0);
}
