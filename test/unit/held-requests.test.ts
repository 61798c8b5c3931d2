// HeldRequests.takeUp (cluster mode) against the requests hold() is making at the same moment: each is queued once,
// and a new registration purges only the asynchronous requests made before it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import type { Endpoint } from '../../src/domain/endpoints.js';
import { DeviceQueue } from '../../src/lwm2m/device-queue.js';
import { HeldRequests } from '../../src/lwm2m/held-requests.js';
import type { DeviceQueueStore, HeldRequest } from '../../src/lwm2m/queue-store.js';

const endpoint = { id: 'svc/dev-1', key: 'dev-1', accountId: 'acc-1', serviceId: 'svc' } as Endpoint;
const read = { operation: 'read', path: '/3/0/0', timeoutMs: 5_000 } as const;

/** Rows are visible as soon as add() starts; add() resolves only when `release` is called (a slow commit's ack). */
class SlowStore implements DeviceQueueStore {
  readonly rows = new Map<string, HeldRequest>();
  #gate: Promise<void> | undefined;
  release: () => void = () => undefined;

  holdWrites(): void {
    this.#gate = new Promise((resolve) => (this.release = resolve));
  }
  async all(): Promise<HeldRequest[]> {
    return [...this.rows.values()];
  }
  async ofEndpoint(endpointId: string): Promise<HeldRequest[]> {
    return [...this.rows.values()].filter((held) => held.endpointId === endpointId);
  }
  async expiredBefore(before: number, limit: number): Promise<HeldRequest[]> {
    return [...this.rows.values()].filter((held) => held.expiresAt < before).slice(0, limit);
  }
  async add(held: HeldRequest): Promise<void> {
    this.rows.set(held.id, held);
    await this.#gate;
  }
  async remove(id: string): Promise<void> {
    this.rows.delete(id);
  }
}

function setUp(store: DeviceQueueStore) {
  const events: Array<Record<string, unknown>> = [];
  // The device is asleep: everything waits in the queue.
  const queue = new DeviceQueue({ canSend: () => false, send: () => Promise.reject(new Error('not sent while asleep')) });
  const held = new HeldRequests({
    queue,
    store,
    emit: async (_endpoint, _type, data) => void events.push(data as Record<string, unknown>),
    endpointById: async (_account, id) => (id === endpoint.id ? endpoint : undefined),
    canSend: () => false,
    logger: pino({ level: 'silent' }),
  });
  return { queue, held, events };
}

test('a request whose store write is in flight when takeUp reads the store is queued once, not purged', async (t) => {
  const store = new SlowStore();
  const { queue, held, events } = setUp(store);
  t.after(() => queue.stop());
  store.holdWrites();
  const holding = held.hold(endpoint, read, { context: 'ctx', kind: 'queued', ttlMs: 60_000 });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(store.rows.size, 1, 'the row is in the store before hold() has queued it');
  // The device registered here a moment before the request was made.
  const takenUp = await held.takeUp(endpoint.id, endpoint.accountId, { registeredAt: Date.now() - 1_000 });
  assert.equal(takenUp, 0, 'hold() queues its own request');
  store.release();
  await holding;
  assert.equal(queue.size(endpoint.id), 1, 'queued once');
  assert.deepEqual(events.map((event) => event.outcome ?? (event.intermediate ? 'queued' : '?')), ['queued'], 'nothing purged');
  assert.equal(await held.takeUp(endpoint.id, endpoint.accountId), 0, 'a second take-up finds it queued');
});

test('a new registration purges the asynchronous requests made before it and keeps proxy_send and later ones', async (t) => {
  const store = new SlowStore();
  const { queue, held, events } = setUp(store);
  t.after(() => queue.stop());
  const registeredAt = Date.now();
  const row = (id: string, kind: HeldRequest['kind'], createdAt: number): HeldRequest => ({ id, accountId: endpoint.accountId, endpointId: endpoint.id, kind, request: read, context: id, createdAt, expiresAt: createdAt + 60_000 });
  // Held on another node: in the store only.
  for (const held of [row('a-old-queued', 'queued', registeredAt - 5_000), row('b-old-proxy', 'proxy', registeredAt - 4_000), row('c-new-queued', 'queued', registeredAt + 1)]) store.rows.set(held.id, held);
  assert.equal(await held.takeUp(endpoint.id, endpoint.accountId, { registeredAt }), 3);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(held.list(endpoint.id).map(({ id }) => id), ['b-old-proxy', 'c-new-queued'], 'the kept ones wait here, in order');
  assert.deepEqual(events.map((event) => [event.context, event.outcome]), [['a-old-queued', 'purged']]);
  assert.deepEqual([...store.rows.keys()].sort(), ['b-old-proxy', 'c-new-queued'], 'the purged one left the store');
});

test('without a new registration (the device moved here) every stored request is taken up, in order', async (t) => {
  const store = new SlowStore();
  const { queue, held } = setUp(store);
  t.after(() => queue.stop());
  const now = Date.now();
  await held.hold(endpoint, read, { context: 'local', kind: 'queued', ttlMs: 60_000 });
  store.rows.set('z-remote', { id: 'z-remote', accountId: endpoint.accountId, endpointId: endpoint.id, kind: 'queued', request: read, context: null, createdAt: now - 10_000, expiresAt: now + 60_000 });
  assert.equal(await held.takeUp(endpoint.id, endpoint.accountId), 1, 'only the one not queued here');
  assert.equal(queue.size(endpoint.id), 2);
});
