import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConcurrencyGate } from '../../src/domain/gate.js';
import { AppError } from '../../src/errors.js';

describe('ConcurrencyGate', () => {
  it('runs at most `concurrency` tasks at once, the rest in order, and refuses beyond `maxWaiting`', async () => {
    const gate = new ConcurrencyGate(2, 3, 'IOTB_AUTH_BUSY');
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const finish: (() => void)[] = [];
    const task = (id: number) =>
      gate.run(async () => {
        started.push(id);
        most = Math.max(most, ++running);
        await new Promise<void>((resolve) => finish.push(resolve));
        running--;
        return id;
      });
    const accepted = [0, 1, 2, 3, 4].map(task);
    await assert.rejects(task(5), (error: unknown) => error instanceof AppError && error.code === 'IOTB_AUTH_BUSY' && error.status === 503);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(started, [0, 1]);
    while (finish.length > 0) {
      finish.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.deepEqual(await Promise.all(accepted), [0, 1, 2, 3, 4]);
    assert.deepEqual(started, [0, 1, 2, 3, 4], 'waiting tasks start in arrival order');
    assert.equal(most, 2);
    assert.equal(await gate.run(async () => 'free again'), 'free again');
  });

  it('a failing task frees its slot', async () => {
    const gate = new ConcurrencyGate(1, 1, 'IOTB_AUTH_BUSY');
    await assert.rejects(gate.run(async () => Promise.reject(new Error('boom'))), /boom/);
    assert.equal(await gate.run(async () => 1), 1);
  });
});
