/** Token buckets: per-peer request rates (CoAP answers 4.29 over them, RFC 8516) and failed device log-ins (MQTT). */
export interface RateLimit {
  /** Sustained rate, per second. */
  readonly rate: number;
  /** How many are allowed in a burst (the bucket size). */
  readonly burst: number;
}

export interface TokenBucket {
  tokens: number;
  refilledAt: number;
}

/** Takes one token; returns 0 when allowed, else the milliseconds until a token is available. */
export function takeToken(bucket: TokenBucket, limit: RateLimit, now: number): number {
  const elapsed = now - bucket.refilledAt;
  if (elapsed > 0) {
    bucket.tokens = Math.min(limit.burst, bucket.tokens + (elapsed * limit.rate) / 1000);
    bucket.refilledAt = now;
  }
  if (bucket.tokens >= 1) {
    bucket.tokens -= 1;
    return 0;
  }
  return Math.ceil(((1 - bucket.tokens) * 1000) / limit.rate);
}
