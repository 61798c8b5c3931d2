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
    // The refusal says when to come back (the HTTP answer's Retry-After).
    await assert.rejects(task(6), (error: unknown) => (error as AppError).details !== undefined && ((error as AppError).details as { retryAfterSeconds: number }).retryAfterSeconds === 1);
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

  it('tells a refused caller the wait it was made with', async () => {
    const gate = new ConcurrencyGate(1, 0, 'IOTB_FILE_UPLOADS_BUSY', 5);
    let release!: () => void;
    const held = gate.run(() => new Promise<void>((resolve) => (release = resolve)));
    await assert.rejects(gate.run(async () => undefined), (error: unknown) => (error as AppError).code === 'IOTB_FILE_UPLOADS_BUSY' && ((error as AppError).details as { retryAfterSeconds: number }).retryAfterSeconds === 5);
    release();
    await held;
  });

  it('a failing task frees its slot', async () => {
    const gate = new ConcurrencyGate(1, 1, 'IOTB_AUTH_BUSY');
    await assert.rejects(gate.run(async () => Promise.reject(new Error('boom'))), /boom/);
    assert.equal(await gate.run(async () => 1), 1);
  });
});
