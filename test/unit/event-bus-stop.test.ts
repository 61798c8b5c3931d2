// A stop of the durable event bus while partitions run in parallel: events after the cursor that were handled
// already (their partition was quick) must not run again at the next start, which is what a cluster's drain and
// rebalance do with the shards a node gives up.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import pino from 'pino';
import { createEvent, type Event } from '../../src/events/event.js';
import { DurableEventBus } from '../../src/events/event-bus.js';
import type { EventQueue, StoredEvent } from '../../src/events/event-store.js';

/** The queue as a store keeps it: numbered events and a cursor. */
class MemoryQueue implements EventQueue {
  readonly events: StoredEvent[] = [];
  cursor = 0;

  async accept(events: readonly Event[]): Promise<number[]> {
    return events.map((event) => {
      const seq = this.events.length + 1;
      this.events.push({ seq, event });
      return seq;
    });
  }

  async pending(afterSeq: number, limit: number): Promise<StoredEvent[]> {
    return this.events.filter((stored) => stored.seq > afterSeq).slice(0, limit);
  }

  async handledThrough(): Promise<number> {
    return this.cursor;
  }

  async saveHandledThrough(seq: number): Promise<void> {
    this.cursor = Math.max(this.cursor, seq);
  }
}

const logger = pino({ level: 'silent' });

describe('DurableEventBus stop', () => {
  it('runs the events waiting below the last one handled, so the next start runs nothing twice and loses nothing', async () => {
    const queue = new MemoryQueue();
    const runs = new Map<string, number>();
    const consumer = async (event: Event) => {
      runs.set(event.id, (runs.get(event.id) ?? 0) + 1);
      // Partition "slow" takes a while per event; the others are quick, so they run ahead of it.
      if (event.endpointId === 'slow') await sleep(20);
    };
    const first = new DurableEventBus(queue, { parallelism: 4, logger });
    first.subscribe(consumer);
    await first.start();
    const published: Event[] = [];
    for (let i = 0; i < 60; i++) {
      const event = createEvent({ type: 't', accountId: 'a', endpointId: i % 3 === 0 ? 'slow' : `quick-${i % 3}` });
      published.push(event);
      await first.publish([event]);
    }
    await sleep(60);
    assert.ok(runs.size < published.length, 'the stop comes while events wait');
    await first.stop();
    assert.ok(queue.cursor > 0);

    const second = new DurableEventBus(queue, { parallelism: 4, logger });
    second.subscribe(consumer);
    await second.start();
    const deadline = Date.now() + 10_000;
    while (runs.size < published.length && Date.now() < deadline) await sleep(20);
    await second.stop();
    assert.deepEqual(published.filter((event) => !runs.has(event.id)), [], 'every event handled');
    assert.deepEqual(published.filter((event) => runs.get(event.id)! > 1).map((event) => event.endpointId), [], 'none handled twice');
  });
});
