import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FAILED_LOGINS_PER_ADDRESS, FAILED_LOGINS_PER_KEY, LoginThrottle } from '../../src/domain/login-throttle.js';

describe('LoginThrottle', () => {
  const clock = () => {
    let now = 1_000_000;
    return { now: () => now, advance: (ms: number) => (now += ms) };
  };

  it('stops checking a key from an address after a burst of failures, and lets one more through per refill', () => {
    const time = clock();
    const throttle = new LoginThrottle(time.now);
    for (let i = 0; i < FAILED_LOGINS_PER_KEY.burst; i++) {
      assert.equal(throttle.retryAfter('10.0.0.1', 'meter-1'), 0, `attempt ${i + 1} is checked`);
      throttle.failed('10.0.0.1', 'meter-1');
    }
    const wait = throttle.retryAfter('10.0.0.1', 'meter-1');
    assert.ok(wait > 0 && wait <= 1000 / FAILED_LOGINS_PER_KEY.rate, `then refused for ${wait} ms`);
    assert.equal(throttle.retryAfter('10.0.0.2', 'meter-1'), 0, 'another address is not affected');
    assert.equal(throttle.retryAfter('10.0.0.1', 'meter-2'), 0, 'nor another key from the same address');
    time.advance(wait);
    assert.equal(throttle.retryAfter('10.0.0.1', 'meter-1'), 0, 'one attempt after the refill');
    throttle.failed('10.0.0.1', 'meter-1');
    assert.ok(throttle.retryAfter('10.0.0.1', 'meter-1') > 0, 'and refused again after it failed');
  });

  it('a successful log-in clears the count of its key and address', () => {
    const throttle = new LoginThrottle(clock().now);
    for (let i = 0; i < FAILED_LOGINS_PER_KEY.burst - 1; i++) throttle.failed('10.0.0.1', 'meter-1');
    throttle.succeeded('10.0.0.1', 'meter-1');
    for (let i = 0; i < FAILED_LOGINS_PER_KEY.burst - 1; i++) throttle.failed('10.0.0.1', 'meter-1');
    assert.equal(throttle.retryAfter('10.0.0.1', 'meter-1'), 0);
  });

  it('limits failures over all keys from one address (password spraying)', () => {
    const throttle = new LoginThrottle(clock().now);
    for (let i = 0; i < FAILED_LOGINS_PER_ADDRESS.burst; i++) throttle.failed('10.0.0.1', `key-${i}`);
    assert.ok(throttle.retryAfter('10.0.0.1', 'never-tried') > 0);
    assert.equal(throttle.retryAfter('10.0.0.9', 'never-tried'), 0);
  });
});
