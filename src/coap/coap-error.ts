/** Why a request, observation or notification we sent failed. */
import type { CoapMessage } from './message.js';

export type CoapErrorCode =
  /** No ACK after MAX_RETRANSMIT retransmissions, or no response within the request's timeout. */
  | 'TIMEOUT'
  /** The peer answered with RST (RFC 7252 4.2): it did not want, or could not process, the message. */
  | 'RESET'
  /** The caller's AbortSignal fired. */
  | 'ABORTED'
  /** The endpoint was stopped. */
  | 'STOPPED'
  /** A block-wise transfer could not complete (RFC 7959): out-of-sequence blocks, a changed ETag, an error mid-way. */
  | 'BLOCKWISE'
  /** A response body over the request's maxBodySize, or a request that cannot be encoded. */
  | 'TOO_LARGE'
  /** A response we cannot accept (token mismatch, unrecognised critical option: RFC 7252 5.4.1). */
  | 'BAD_RESPONSE'
  /** notify() for an observer that is not (or no longer) registered. */
  | 'NO_OBSERVER';

export class CoapError extends Error {
  readonly code: CoapErrorCode;
  /** The response that ended a block-wise transfer early, if that is what happened. */
  readonly response: CoapMessage | undefined;

  constructor(code: CoapErrorCode, message: string, response?: CoapMessage) {
    super(message);
    this.name = 'CoapError';
    this.code = code;
    this.response = response;
  }
}
