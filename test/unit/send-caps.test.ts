import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SendCaps } from '../../src/devices/send-caps.js';
import { AppError } from '../../src/errors.js';

const LIMITS = { endpoint: { messagesPerSecond: 10, bytesPerSecond: 1000 }, account: { messagesPerSecond: 15, bytesPerSecond: 10_000 } };

function capOf(attempt: () => void): { cap: string; retryAfterSeconds?: number; message: string } | undefined {
  try {
    attempt();
    return undefined;
  } catch (error) {
    assert.ok(error instanceof AppError && error.code === 'IOTB_DEVICE_SEND_RATE_LIMITED' && error.status === 429, String(error));
    return { ...(error.details as { cap: string; retryAfterSeconds?: number }), message: error.message };
  }
}

describe('send caps', () => {
  it('allows a burst of twice the rate per endpoint, then the rate', () => {
    let now = 0;
    const caps = new SendCaps(LIMITS, () => now);
    const device = { id: 'e1', accountId: 'a1' };
    for (let i = 0; i < 20; i++) caps.take(device, 1);
    const refused = capOf(() => caps.take(device, 1));
    assert.equal(refused?.cap, 'endpoint');
    assert.equal(refused?.retryAfterSeconds, 1);
    assert.match(refused.message, /endpoint's send rate cap \(10 messages and 1000 bytes per second\) is reached, nothing was sent; try again in 0\.1 s/);
    now = 500; // half a second: 5 more
    for (let i = 0; i < 5; i++) caps.take(device, 1);
    assert.equal(capOf(() => caps.take(device, 1))?.cap, 'endpoint');
  });

  it('caps bytes as well as messages, and a send larger than a whole burst never passes', () => {
    let now = 0;
    const caps = new SendCaps(LIMITS, () => now);
    const device = { id: 'e1', accountId: 'a1' };
    caps.take(device, 1500);
    assert.equal(capOf(() => caps.take(device, 600))?.cap, 'endpoint', '2000-byte burst');
    caps.take(device, 500);
    const huge = capOf(() => caps.take({ id: 'e2', accountId: 'a1' }, 2001));
    assert.equal(huge?.retryAfterSeconds, undefined);
    assert.match(huge!.message, /larger than a whole burst/);
    now = 1000;
    caps.take(device, 1000);
  });

  it('caps the account over all its endpoints; a refused send takes nothing from any bucket', () => {
    const now = 0;
    const caps = new SendCaps(LIMITS, () => now);
    for (let i = 0; i < 20; i++) caps.take({ id: 'e1', accountId: 'a1' }, 1);
    for (let i = 0; i < 10; i++) caps.take({ id: 'e2', accountId: 'a1' }, 1);
    assert.equal(capOf(() => caps.take({ id: 'e2', accountId: 'a1' }, 1))?.cap, 'account', '30 messages: the account burst');
    assert.equal(capOf(() => caps.take({ id: 'e3', accountId: 'a1' }, 1))?.cap, 'account');
    // Another account is not affected; e1's refusals did not count against a1.
    for (let i = 0; i < 20; i++) caps.take({ id: 'e4', accountId: 'a2' }, 1);
    assert.equal(capOf(() => caps.take({ id: 'e1', accountId: 'a1' }, 1))?.cap, 'endpoint');
  });

  it('counts several messages at once (coap.notify to each observer)', () => {
    const caps = new SendCaps(LIMITS, () => 0);
    caps.take({ id: 'e1', accountId: 'a1' }, 100, 15);
    assert.equal(capOf(() => caps.take({ id: 'e1', accountId: 'a1' }, 60, 6))?.cap, 'endpoint');
    caps.take({ id: 'e1', accountId: 'a1' }, 50, 5);
  });
});
