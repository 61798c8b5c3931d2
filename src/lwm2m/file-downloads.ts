import { blockSize, block2, MAX_SZX, option, OptionNumber, optionValues, size2, szxFor, type BlockOption, type CoapMessage, type CoapResponse } from '../coap/index.js';
import type { FileLinks } from '../domain/file-links.js';
import { AppError } from '../errors.js';

/** The first Uri-Path segment of download requests, reserved on the CoAP and CoAPS ports like `rd`, `dp` and `bs`. */
export const DOWNLOAD_PATH = 'download';

const MAX_BLOCK_NUM = 0xfffff;

/** Content-Format of a file by its media type (RFC 7252 12.3); anything else is application/octet-stream (42). */
const FORMATS: Readonly<Record<string, number>> = {
  'text/plain': 0,
  'application/link-format': 40,
  'application/xml': 41,
  'application/octet-stream': 42,
  'application/json': 50,
  'application/cbor': 60,
};

export interface CoapDownloadsOptions {
  readonly links: Pick<FileLinks, 'resolve' | 'read'>;
  /** Block size when the request asks none, bytes (16 to 1024, a power of two); default 1024. */
  readonly blockSize?: number | undefined;
}

/**
 * Repository files by download link over CoAP and CoAPS (docs/files.md "Device downloads"):
 * `GET /download/<token>[/<name segments>]` answers the link's content block by block (RFC 7959 Block2). The
 * token authorises the request: no registration and no DTLS identity are needed (over CoAPS the request runs
 * inside the peer's DTLS session all the same). Each block is read alone from the repository, never the whole
 * file; the ETag (the first 8 bytes of the content's SHA-256) is the same for every block of a content, so a
 * client can tell a resumed transfer is of the same image.
 *
 * Answers: 2.05 with Block2 (and Size2 on block 0, or when the request carries Size2, RFC 7959 4); 4.04 for an
 * unknown, revoked or expired token, a trailing name that is not the link's file's, and a link whose file was
 * replaced or removed (CoAP has no 410 Gone: RFC 7252 12.1.2 registers none; the diagnostic payload says
 * which); 4.02 for a block past the end (RFC 7959 2.2); 4.05 for a method other than GET. A malformed Block2
 * (SZX 7, over 3 bytes) is answered 4.00 by the CoAP endpoint before this runs.
 */
export class CoapDownloads {
  readonly #links: CoapDownloadsOptions['links'];
  readonly #szx: number;

  constructor(options: CoapDownloadsOptions) {
    this.#links = options.links;
    this.#szx = Math.min(MAX_SZX, szxFor(options.blockSize ?? 1024));
  }

  /** Answers a request whose first Uri-Path segment is `download`. */
  async handle(request: CoapMessage): Promise<CoapResponse> {
    const segments = optionValues(request, OptionNumber.UriPath).map((value) => value.toString('utf8'));
    if (segments[0] !== DOWNLOAD_PATH) return { code: '4.04' };
    if (request.code !== '0.01') return { code: '4.05', payload: 'download links answer GET only' };
    const token = segments[1] ?? '';
    const link = await this.#links.resolve(token);
    if (!link) return UNKNOWN;
    // A trailing name, when there is one (appendFileName), is the link's file's: the token alone selects the file.
    const name = segments.slice(2).join('/');
    if (name !== '' && name !== link.name) return UNKNOWN;

    let requested: BlockOption | undefined;
    try {
      requested = block2(request);
    } catch {
      return { code: '4.00', payload: 'invalid Block2 option' };
    }
    // RFC 7959 2.4: the size the client asks for or a smaller one (ours); its own when ours would need a block number over 20 bits.
    let szx = Math.min(requested?.szx ?? this.#szx, this.#szx);
    if (requested !== undefined && requested.num * (blockSize(requested.szx) / blockSize(szx)) > MAX_BLOCK_NUM) szx = requested.szx;
    const size = blockSize(szx);
    const num = requested === undefined ? 0 : requested.num * (blockSize(requested.szx) / size);
    const offset = num * size;
    // RFC 7959 2.2: a block past the end of the representation.
    if (offset > 0 && offset >= link.size) return { code: '4.02', payload: 'block past the end of the file' };

    let payload: Buffer;
    let contentType: string;
    try {
      const read = await this.#links.read(token, link.size === 0 ? undefined : { start: offset, end: Math.min(offset + size, link.size) - 1 });
      contentType = read.file.contentType;
      payload = await collect(read.stream);
    } catch (error) {
      if (error instanceof AppError) {
        if (error.code === 'IOTB_FILE_LINK_INVALID') return UNKNOWN;
        // The file was replaced or removed since the link was made (or while this block was read).
        if (error.code === 'IOTB_FILE_LINK_STALE' || error.code === 'IOTB_FILE_NOT_FOUND') return STALE;
        if (error.code === 'IOTB_FILE_RANGE_NOT_SATISFIABLE') return { code: '4.02', payload: 'block past the end of the file' };
      }
      throw error;
    }

    const options = [
      option(OptionNumber.ETag, Buffer.from(link.sha256.slice(0, 16), 'hex')),
      option(OptionNumber.ContentFormat, FORMATS[contentType.split(';')[0]!.trim().toLowerCase()] ?? 42),
    ];
    if (num === 0 || size2(request) !== undefined) options.push(option(OptionNumber.Size2, link.size));
    // A whole small file to a request without Block2 goes as a plain response.
    if (requested === undefined && link.size <= size) return { code: '2.05', options, payload };
    return { code: '2.05', options, payload, block2: { num, more: offset + payload.length < link.size, szx } };
  }
}

const UNKNOWN: CoapResponse = { code: '4.04', payload: 'no such download link (unknown, revoked or expired)' };
const STALE: CoapResponse = { code: '4.04', payload: 'the file of this download link was replaced or removed: ask for a new link' };

async function collect(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}
