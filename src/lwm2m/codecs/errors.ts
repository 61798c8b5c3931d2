/**
 * The one error every codec throws for a payload (or a record list) it cannot handle: malformed bytes, a value
 * that does not fit its resource type, a path outside the request. Nothing else escapes a codec, so protocol
 * adapters can answer 4.00 Bad Request / 4.15 Unsupported Content-Format on exactly this class.
 */

/** Short names of the formats, as `formatName()` returns them and `"format": "…"` in the HTTP API accepts them. */
export type FormatName = 'text' | 'link' | 'opaque' | 'raw-cbor' | 'senml-json' | 'senml-cbor' | 'tlv' | 'json' | 'cbor';

export class CodecError extends Error {
  override readonly name = 'CodecError';
  /** The format whose rules were broken; undefined when the Content-Format itself is unknown. */
  readonly format: FormatName | undefined;
  /** Byte (or, for JSON and link format, character) offset in the payload where the problem was found. */
  readonly offset: number | undefined;

  /**
   * @example new CodecError('tlv', 'length 300 runs past the end of the payload (20 bytes)', 4)
   *   → message "tlv: length 300 runs past the end of the payload (20 bytes) at offset 4"
   */
  constructor(format: FormatName | undefined, message: string, offset?: number) {
    super(`${format ?? 'content-format'}: ${message}${offset === undefined ? '' : ` at offset ${offset}`}`);
    this.format = format;
    this.offset = offset;
  }
}
