import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { WorkGate } from '../../src/domain/work-gate.js';
import { AppError } from '../../src/errors.js';

describe('WorkGate: a waiting line sized by the work it holds', () => {
  it('runs at most `concurrency` at once, the rest in order', async () => {
    const gate = new WorkGate({ concurrency: 2, maxWaitMs: 10_000, busyCode: 'IOTB_AUTH_BUSY', initialTaskMs: 1 });
    let running = 0;
    let most = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        gate.run(async () => {
          most = Math.max(most, ++running);
          await sleep(5);
          running--;
          order.push(i);
        }),
      ),
    );
    assert.equal(most, 2);
    assert.deepEqual(order.slice(0, 2).sort(), [0, 1]);
    assert.equal(order.length, 10);
  });

  it('queues many cheap tasks but refuses at once when the wait would pass maxWaitMs at the measured rate', async () => {
    const cheap = new WorkGate({ concurrency: 1, maxWaitMs: 1000, busyCode: 'IOTB_AUTH_BUSY', initialTaskMs: 0.01 });
    const many = await Promise.allSettled(Array.from({ length: 2000 }, () => cheap.run(async () => undefined)));
    assert.equal(many.filter((r) => r.status === 'rejected').length, 0, '2000 tasks of ~0 ms all wait their turn');

    const costly = new WorkGate({ concurrency: 1, maxWaitMs: 100, busyCode: 'IOTB_AUTH_BUSY', initialTaskMs: 50 });
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => costly.run(() => sleep(50))));
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    // One runs, two may wait (2 × 50 ms ≤ 100 ms); the rest are told at once.
    assert.equal(results.length - refused.length, 3);
    for (const r of refused) {
      assert.ok(r.reason instanceof AppError);
      assert.equal(r.reason.code, 'IOTB_AUTH_BUSY');
      assert.equal((r.reason.details as { retryAfterSeconds: number }).retryAfterSeconds, 1);
    }
  });
});
