import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RunOrder, type OrderedRun } from '../../src/triggers/sandbox/run-order.js';

const run = (runId: number, script: number, after?: number): OrderedRun => ({ runId, after, definition: { ref: script, scriptId: `s${script}` } });
const ids = (batches: OrderedRun[][]) => batches.map((batch) => batch.map((r) => r.runId));

describe('RunOrder: runs of a worker in sequence order, batched by script', () => {
  it('keeps a sequence of one script in one batch, behind the run it follows, and fills batches per script up to their size', () => {
    const order = new RunOrder<OrderedRun>(() => assert.fail('nothing starts'));
    const runs = [run(1, 7), run(2, 7, 1), run(3, 8), run(4, 7), run(5, 7, 2), run(6, 7), run(7, 7)];
    for (const r of runs) order.received(r.runId);
    // Size 3: 1, 2 (follows 1), 4 fill the first batch of script 7; 5 follows 2 and joins it (up to twice the size).
    assert.deepEqual(ids(order.batches(runs, () => 3)), [[1, 2, 4, 5], [3], [6, 7]]);
  });

  it('gives a run that follows one of another script a batch of its own, which waits for that run to end', () => {
    const started: number[] = [];
    const order = new RunOrder<OrderedRun>((r) => started.push(r.runId));
    const runs = [run(1, 7), run(2, 8, 1), run(3, 7, 2)];
    for (const r of runs) order.received(r.runId);
    const batches = order.batches(runs, () => 10);
    assert.deepEqual(ids(batches), [[1], [2], [3]]);
    for (const batch of batches) order.startInOrder(batch);
    assert.deepEqual(started, [1], 'only the first starts');
    order.ended(1);
    assert.deepEqual(started, [1, 2]);
    order.ended(2);
    assert.deepEqual(started, [1, 2, 3]);
  });

  it('starts a run at once when the run it follows has ended, and waits when it has not (a run from an earlier read)', () => {
    const started: number[] = [];
    const order = new RunOrder<OrderedRun>((r) => started.push(r.runId));
    for (const id of [1, 2, 3, 4]) order.received(id);
    order.ended(1);
    order.startInOrder([run(3, 7, 1), run(4, 7, 2)]);
    assert.deepEqual(started, [3], 'the follower of an ended run starts; the follower of a running one waits');
    order.received(5);
    assert.deepEqual(ids(order.batches([run(5, 7, 4)], () => 10)), [[5]], 'a batch of its own');
    order.startInOrder([run(5, 7, 4)]);
    order.ended(2);
    assert.deepEqual(started, [3, 4]);
    order.ended(4);
    assert.deepEqual(started, [3, 4, 5]);
  });
});
