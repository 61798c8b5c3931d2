/**
 * Message transmission parameters (RFC 7252 4.8) and the times derived from them (4.8.2). Times are in
 * milliseconds here, seconds in the RFC.
 */
export interface TransmissionParameters {
  /** ACK_TIMEOUT: the first retransmission waits between this and this × ackRandomFactor. Default 2000. */
  readonly ackTimeout: number;
  /** ACK_RANDOM_FACTOR, at least 1. Default 1.5. */
  readonly ackRandomFactor: number;
  /** MAX_RETRANSMIT. Default 4. */
  readonly maxRetransmit: number;
  /** NSTART: outstanding interactions per peer (RFC 7252 4.7). Default 1. */
  readonly nstart: number;
  /** MAX_LATENCY. Default 100 000. */
  readonly maxLatency: number;
}

export const DEFAULT_TRANSMISSION: TransmissionParameters = {
  ackTimeout: 2000,
  ackRandomFactor: 1.5,
  maxRetransmit: 4,
  nstart: 1,
  maxLatency: 100_000,
};

export interface DerivedTimes {
  /** MAX_TRANSMIT_SPAN: first to last transmission of a CON (45 s by default). */
  readonly maxTransmitSpan: number;
  /** MAX_TRANSMIT_WAIT: first transmission to giving up on an ACK (93 s). */
  readonly maxTransmitWait: number;
  /** EXCHANGE_LIFETIME: how long a CON's message ID may see duplicates (247 s); PROCESSING_DELAY is ACK_TIMEOUT. */
  readonly exchangeLifetime: number;
  /** NON_LIFETIME: the same for a NON (145 s). */
  readonly nonLifetime: number;
}

export function deriveTimes(p: TransmissionParameters): DerivedTimes {
  const maxTransmitSpan = p.ackTimeout * (2 ** p.maxRetransmit - 1) * p.ackRandomFactor;
  const maxTransmitWait = p.ackTimeout * (2 ** (p.maxRetransmit + 1) - 1) * p.ackRandomFactor;
  return {
    maxTransmitSpan,
    maxTransmitWait,
    exchangeLifetime: maxTransmitSpan + 2 * p.maxLatency + p.ackTimeout,
    nonLifetime: maxTransmitSpan + p.maxLatency,
  };
}
