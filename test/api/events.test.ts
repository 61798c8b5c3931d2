import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { createEvent, type Event } from '../../src/events/event.js';
import { DurableEventBus } from '../../src/events/event-bus.js';
import { until } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/** A new account with one endpoint, `k.worker`, and `count` events of type `job` posted to it in order (`data.n` 0, 1, …). */
async function postJobs(service: TestService, accountName: string, count: number): Promise<void> {
  const account = await createAccount(service, accountName);
  const serviceId = await createService(service, account.token);
  await createEndpoint(service, account.token, { key: 'worker', serviceId });
  for (let n = 0; n < count; n++) {
    assert.equal((await service.request('POST', '/events', { token: account.token, body: { type: 'job', endpoint: 'k.worker', data: { n } } })).status, 202);
  }
}

for (const dialect of DIALECTS) {
  describe(`events and history (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let account: TestAccount;
    let serviceId: string;
    let endpointId: string;
    const consumed: Event[] = [];

    before(async () => {
      service = await startService(dialect.name, {}, { beforeBusStart: (bus) => bus.subscribe(async (event) => void consumed.push(event)) });
      account = await createAccount(service, 'events');
      serviceId = await createService(service, account.token);
      endpointId = (await createEndpoint(service, account.token, { key: 'sensor-1', serviceId })).id;
    });
    after(() => service?.stop());

    it('accepts a custom event for an endpoint (202) and hands it to the bus', async () => {
      const posted = await service.request('POST', '/events', { token: account.token, body: { type: 'reading', endpoint: 'k.sensor-1', data: { t: 21.5 } } });
      assert.equal(posted.status, 202, JSON.stringify(posted.body));
      assert.deepEqual(
        { type: posted.body.type, accountId: posted.body.accountId, serviceId: posted.body.serviceId, endpointId: posted.body.endpointId, endpointKey: posted.body.endpointKey, data: posted.body.data },
        { type: 'reading', accountId: account.accountId, serviceId, endpointId, endpointKey: 'sensor-1', data: { t: 21.5 } },
      );
      await until(() => consumed.some((e) => e.id === posted.body.id), 'the posted event to be consumed');
      assert.deepEqual(consumed.find((e) => e.id === posted.body.id), posted.body);

      const noEndpoint = await service.request('POST', '/events', { token: account.token, body: { type: 'deploy' } });
      assert.equal(noEndpoint.status, 202);
      assert.equal(noEndpoint.body.endpointId, null);
    });

    it('rejects bad events with the error body', async () => {
      const unknown = await service.request('POST', '/events', { token: account.token, body: { type: 'x', endpoint: 'k.nope' } });
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.error.code, 'IOTB_ENDPOINT_NOT_FOUND');
      for (const body of [{}, { type: '' }, { type: 'x', extra: 1 }]) {
        const response = await service.request('POST', '/events', { token: account.token, body });
        assert.equal(response.status, 400, JSON.stringify(body));
      }
    });

    it('searches the history newest first, by type, endpoint and time, paging with next', async () => {
      const other = (await createEndpoint(service, account.token, { key: 'sensor-2', serviceId })).id;
      const start = new Date().toISOString();
      for (let i = 0; i < 25; i++) {
        const endpoint = i % 5 === 0 ? `k.sensor-2` : 'k.sensor-1';
        const posted = await service.request('POST', '/events', { token: account.token, body: { type: i % 2 === 0 ? 'even' : 'odd', endpoint, data: { i } } });
        assert.equal(posted.status, 202);
      }
      const pages: number[][] = [];
      let next: string | null = null;
      do {
        const query: string = `/history?type=even&type=odd&from=${encodeURIComponent(start)}&limit=10${next ? `&next=${next}` : ''}`;
        const page = await service.request('GET', query, { token: account.token });
        assert.equal(page.status, 200, JSON.stringify(page.body));
        pages.push(page.body.items.map((e: Event) => (e.data as { i: number }).i));
        next = page.body.next;
      } while (next);
      assert.deepEqual(pages.map((p) => p.length), [10, 10, 5]);
      assert.deepEqual(pages.flat(), Array.from({ length: 25 }, (_, i) => 24 - i), 'newest first, nothing twice, nothing missing');

      const byEndpoint = await service.request('GET', `/history?endpoint=${other}&type=even&type=odd`, { token: account.token });
      assert.deepEqual(byEndpoint.body.items.map((e: Event) => (e.data as { i: number }).i), [20, 15, 10, 5, 0]);
      const byKey = await service.request('GET', '/history?endpoint=k.sensor-2&type=even', { token: account.token });
      assert.deepEqual(byKey.body.items.map((e: Event) => (e.data as { i: number }).i), [20, 10, 0]);
      const future = await service.request('GET', `/history?from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`, { token: account.token });
      assert.deepEqual([future.body.items.length, future.body.next], [0, null]);

      const one = byKey.body.items[0] as Event;
      const got = await service.request('GET', `/history/${one.id}`, { token: account.token });
      assert.deepEqual(got.body, one);
      assert.equal((await service.request('GET', '/history?next=bogus', { token: account.token })).status, 400);
      assert.equal((await service.request('GET', '/history/nope', { token: account.token })).body.error.code, 'IOTB_EVENT_NOT_FOUND');
    });

    it("keeps accounts' events apart", async () => {
      const intruder = await createAccount(service, 'intruder');
      const mine = await service.request('GET', '/history?type=reading', { token: account.token });
      assert.ok(mine.body.items.length > 0);
      const theirs = await service.request('GET', '/history?type=reading', { token: intruder.token });
      assert.deepEqual(theirs.body.items, []);
      assert.equal((await service.request('GET', `/history/${mine.body.items[0].id}`, { token: intruder.token })).status, 404);
      assert.equal((await service.request('GET', `/history?endpoint=${endpointId}`, { token: intruder.token })).status, 404);
      const post = await service.request('POST', '/events', { token: intruder.token, body: { type: 'spoof', endpoint: endpointId } });
      assert.equal(post.status, 404);
      assert.equal((await service.request('POST', '/events', { token: intruder.token, account: account.accountId, body: { type: 'spoof' } })).status, 403);
    });

    it("stores an event whose data holds NUL or an unpaired surrogate (as U+FFFD), and another account's event of the same moment", async () => {
      // PostgreSQL's jsonb refuses both, and the bus commits the events of one moment together: they failed each other.
      const neighbour = await createAccount(service, 'neighbour');
      const [odd, plain] = await Promise.all([
        service.request('POST', '/events', { token: account.token, body: { type: 'odd-text', endpoint: 'k.sensor-1', data: { text: 'a\u0000b', ['key\ud800']: ['\udc00'] } } }),
        service.request('POST', '/events', { token: neighbour.token, body: { type: 'plain', data: { ok: true } } }),
      ]);
      assert.deepEqual([odd.status, plain.status], [202, 202], JSON.stringify([odd.body, plain.body]));
      const stored = await service.request('GET', `/history/${odd.body.id}`, { token: account.token });
      assert.deepEqual(stored.body.data, { text: 'a\ufffdb', ['key\ufffd']: ['\ufffd'] });
      assert.deepEqual((await service.request('GET', `/history/${plain.body.id}`, { token: neighbour.token })).body.data, { ok: true });
      assert.equal((await service.request('GET', `/history/${odd.body.id}`, { token: neighbour.token })).status, 404);
    });
  });

  describe(`event bus ordering and durability (${dialect.name})`, { skip: dialect.skip }, () => {
    it('handles one endpoint in order and different endpoints in parallel, up to the parallelism', async () => {
      let active = 0;
      let maxActive = 0;
      const seen = new Map<string, number[]>();
      const service = await startService(dialect.name, { eventParallelism: 3 }, {
        beforeBusStart: (bus) =>
          bus.subscribe(async (event) => {
            active++;
            maxActive = Math.max(maxActive, active);
            await sleep(Math.random() * 8);
            const list = seen.get(event.endpointKey ?? '') ?? [];
            list.push((event.data as { n: number }).n);
            seen.set(event.endpointKey ?? '', list);
            active--;
          }),
      });
      try {
        const account = await createAccount(service, 'order');
        const serviceId = await createService(service, account.token);
        const keys = ['a', 'b', 'c', 'd', 'e'];
        for (const key of keys) await createEndpoint(service, account.token, { key, serviceId });
        // Posted concurrently: the API accepts them in some order; each endpoint's own order is what must hold.
        await Promise.all(
          keys.map(async (key) => {
            for (let n = 0; n < 20; n++) {
              const response = await service.request('POST', '/events', { token: account.token, body: { type: 'tick', endpoint: `k.${key}`, data: { n } } });
              assert.equal(response.status, 202);
            }
          }),
        );
        await until(() => keys.every((key) => seen.get(key)?.length === 20), 'every endpoint to get its 20 events', 20_000);
        for (const key of keys) assert.deepEqual(seen.get(key), Array.from({ length: 20 }, (_, n) => n), `order of ${key}`);
        assert.ok(maxActive > 1, 'different endpoints run in parallel');
        assert.ok(maxActive <= 3, `at most 3 at once, saw ${maxActive}`);
      } finally {
        await service.stop();
      }
    });

    it('keeps at most IOTBRIDGE_EVENT_BACKLOG_IN_MEMORY events waiting in memory; the rest wait in the store and come in order, once', async () => {
      const seen = new Map<string, number[]>();
      let bus: DurableEventBus | undefined;
      let mostInMemory = 0;
      let storeOnly = false;
      const service = await startService(dialect.name, { eventParallelism: 2, eventBacklogInMemory: 10 }, {
        beforeBusStart: (started) => {
          assert.ok(started instanceof DurableEventBus);
          bus = started;
          started.subscribe(async (event) => {
            if (event.type !== 'burst') return;
            mostInMemory = Math.max(mostInMemory, bus!.backlog.inMemory);
            storeOnly ||= bus!.backlog.inStoreOnly;
            await sleep(2);
            const list = seen.get(event.endpointKey ?? '') ?? [];
            list.push((event.data as { n: number }).n);
            seen.set(event.endpointKey ?? '', list);
          });
        },
      });
      try {
        const account = await createAccount(service, 'burst');
        const serviceId = await createService(service, account.token);
        const keys = ['a', 'b', 'c', 'd'];
        const endpoints: { id: string; key: string }[] = [];
        for (const key of keys) endpoints.push((await createEndpoint(service, account.token, { key, serviceId })) as { id: string; key: string });
        // A burst as a busy device server makes it: many events accepted in one commit, far more than memory may hold.
        const burst = Array.from({ length: 30 }, (_, n) =>
          endpoints.map((endpoint) => createEvent({ type: 'burst', accountId: account.accountId, serviceId, endpointId: endpoint.id, endpointKey: endpoint.key, data: { n } })),
        ).flat();
        await service.bridge.bus.publish(burst.slice(0, 60));
        await service.bridge.bus.publish(burst.slice(60));
        await until(() => keys.every((key) => (seen.get(key)?.length ?? 0) >= 30), 'every endpoint to get its 30 events', 30_000);
        await sleep(100);
        for (const key of keys) assert.deepEqual(seen.get(key), Array.from({ length: 30 }, (_, n) => n), `${key}: every event once, in order`);
        assert.ok(storeOnly, 'the backlog outgrew memory');
        assert.ok(mostInMemory <= 10, `at most 10 in memory, saw ${mostInMemory}`);
        assert.deepEqual(bus!.backlog, { inMemory: 0, inStoreOnly: false });
      } finally {
        await service.stop();
      }
    });

    it('reads back after a restart a backlog larger than memory, in order, once', async () => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const first: number[] = [];
      let service = await startService(dialect.name, { eventBacklogInMemory: 5 }, {
        beforeBusStart: (bus) =>
          bus.subscribe(async (event) => {
            if (event.type !== 'job') return;
            first.push((event.data as { n: number }).n);
            await gate;
          }),
      });
      try {
        await postJobs(service, 'backlog', 40);
        await until(() => first.length === 1, 'the first job to start');
        setTimeout(release, 50);
        const second: number[] = [];
        let storeOnly = false;
        service = await service.restart({
          beforeBusStart: (bus) =>
            bus.subscribe(async (event) => {
              if (event.type !== 'job') return;
              storeOnly ||= (bus as DurableEventBus).backlog.inStoreOnly;
              second.push((event.data as { n: number }).n);
            }),
        });
        // The stop finishes the turn under way: the first job, and those handed over with it (up to the 5 in memory).
        assert.ok(first.length >= 1 && first.length <= 5, `handled before the restart: ${first.length}`);
        assert.deepEqual(first, Array.from({ length: first.length }, (_, i) => i), 'in order');
        await until(() => first.length + second.length >= 40, 'the other jobs', 20_000);
        await sleep(100);
        assert.deepEqual(second, Array.from({ length: 40 - first.length }, (_, i) => i + first.length), 'the rest, in order, once');
        assert.ok(storeOnly, 'the start loaded only what memory may hold');
      } finally {
        await service.stop();
      }
    });

    it('handles after a restart what was accepted but not yet handled', async () => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const firstRun: number[] = [];
      let service = await startService(dialect.name, {}, {
        beforeBusStart: (bus) =>
          bus.subscribe(async (event) => {
            if (event.type !== 'job') return;
            firstRun.push((event.data as { n: number }).n);
            await gate; // the consumer is stuck on the first event
          }),
      });
      try {
        await postJobs(service, 'durable', 5);
        await until(() => firstRun.length === 1, 'the first job to start');
        // Stop while the first event is being handled: it finishes, the other four stay queued.
        setTimeout(release, 50);
        const secondRun: number[] = [];
        service = await service.restart({
          beforeBusStart: (bus) =>
            bus.subscribe(async (event) => {
              if (event.type === 'job') secondRun.push((event.data as { n: number }).n);
            }),
        });
        await until(() => secondRun.length === 4, 'the other four jobs');
        assert.deepEqual(firstRun, [0]);
        assert.deepEqual(secondRun, [1, 2, 3, 4], 'the rest, in order, once');
        await sleep(100);
        assert.equal(secondRun.length, 4);
      } finally {
        await service.stop();
      }
    });

    it('keeps the execution record of every event handled before a stop, the last ones too', async () => {
      // Executions and the handled cursor are written after the events; a stop must not leave them behind.
      const posted = 30;
      let handled = 0;
      let allHandled!: () => void;
      const done = new Promise<void>((resolve) => (allHandled = resolve));
      let service = await startService(dialect.name, {}, {
        beforeBusStart: (bus) =>
          bus.subscribe(async (event) => {
            if (event.type === 'job' && ++handled === posted) allHandled();
          }),
      });
      try {
        const account = await createAccount(service, 'records');
        const serviceId = await createService(service, account.token);
        for (const key of ['a', 'b', 'c']) await createEndpoint(service, account.token, { key, serviceId });
        const trigger = await service.request('POST', '/triggers', { token: account.token, body: { name: 'count', events: ['job'], script: `log(event.data.n);` } });
        assert.equal(trigger.status, 201);
        const ids = await Promise.all(
          Array.from({ length: posted }, async (_, n) => {
            const response = await service.request('POST', '/events', { token: account.token, body: { type: 'job', endpoint: `k.${'abc'[n % 3]}`, data: { n } } });
            return response.body.id as string;
          }),
        );
        await done;
        service = await service.restart(); // at once: the last executions may not be written yet
        const list = await service.request('GET', `/executions?triggerId=${trigger.body.id}&limit=100`, { token: account.token });
        const recorded = new Set((list.body.items as { eventId: string; status: string }[]).map((execution) => execution.eventId));
        assert.deepEqual(ids.filter((id) => !recorded.has(id)), [], 'every handled event has its execution');
      } finally {
        await service.stop();
      }
    });

    it('never counts an event handled because later ones (other endpoints) were; a stop runs those before them, so none runs twice', async () => {
      // Endpoint slow's first event blocks; fast's events all finish. The stop waits for slow:0 and then runs
      // slow:1 too (it waits below fast's, which are handled): the cursor then covers everything handled, and after
      // the restart nothing runs again and nothing is lost.
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const firstRun: string[] = [];
      let service = await startService(dialect.name, {}, {
        beforeBusStart: (bus) =>
          bus.subscribe(async (event) => {
            if (event.type !== 'job') return;
            firstRun.push(`${event.endpointKey}:${(event.data as { n: number }).n}`);
            if (event.endpointKey === 'slow') await gate;
          }),
      });
      try {
        const account = await createAccount(service, 'cursor');
        const serviceId = await createService(service, account.token);
        await createEndpoint(service, account.token, { key: 'slow', serviceId });
        await createEndpoint(service, account.token, { key: 'fast', serviceId });
        const post = (key: string, n: number) => service.request('POST', '/events', { token: account.token, body: { type: 'job', endpoint: `k.${key}`, data: { n } } });
        await post('slow', 0);
        await post('slow', 1);
        for (let n = 0; n < 5; n++) await post('fast', n);
        await until(() => firstRun.filter((run) => run.startsWith('fast')).length === 5, 'the five events of fast');
        await sleep(50); // a tick or two: the cursor is saved
        assert.deepEqual(firstRun.filter((run) => run.startsWith('slow')), ['slow:0'], 'slow:1 waits behind slow:0');
        setTimeout(release, 50);
        const secondRun: string[] = [];
        service = await service.restart({
          beforeBusStart: (bus) =>
            bus.subscribe(async (event) => {
              if (event.type === 'job') secondRun.push(`${event.endpointKey}:${(event.data as { n: number }).n}`);
            }),
        });
        assert.deepEqual(firstRun.filter((run) => run.startsWith('slow')), ['slow:0', 'slow:1'], 'the stop ran slow:1');
        await post('fast', 99);
        await until(() => secondRun.includes('fast:99'), 'an event after the restart');
        assert.deepEqual(secondRun, ['fast:99'], 'nothing from before the stop runs again');
      } finally {
        await service.stop();
      }
    });

    it('never saves the handled cursor ahead of the execution records of the events it covers', { skip: dialect.name === 'postgres' ? false : 'the embedded hot path commits records and cursor in order (test above)' }, async () => {
      // Another session holds a lock that blocks every insert into executions: the trigger runs, its
      // record waits, and the cursor must wait for it (else a crash now would lose the record for good).
      let handled = 0;
      const service = await startService(dialect.name, {}, { beforeBusStart: (bus) => bus.subscribe(async (event) => void (event.type === 'job' && handled++)) });
      const locker = new pg.Client({ connectionString: service.bridge.config.databaseUrl });
      await locker.connect();
      try {
        const account = await createAccount(service, 'record-first');
        const serviceId = await createService(service, account.token);
        await createEndpoint(service, account.token, { key: 'm', serviceId });
        const trigger = await service.request('POST', '/triggers', { token: account.token, body: { name: 'record', events: ['job'], script: `log(event.data.n);` } });
        assert.equal(trigger.status, 201);
        const cursor = async () => Number((await locker.query(`select handled_through from event_cursor where name = 'bus'`)).rows[0]?.handled_through ?? 0);
        await locker.query('begin');
        await locker.query('lock table executions in share row exclusive mode');
        const posted = await service.request('POST', '/events', { token: account.token, body: { type: 'job', endpoint: 'k.m', data: { n: 1 } } });
        assert.equal(posted.status, 202);
        const seq = Number((await locker.query('select seq from events where id = $1', [posted.body.id])).rows[0].seq);
        await until(() => handled === 1, 'the event handled (its trigger ran)');
        await sleep(200); // many turns: an unguarded cursor is saved within one
        assert.ok((await cursor()) < seq, 'the cursor waits while the record cannot be written');
        await locker.query('rollback');
        await until(async () => (await cursor()) >= seq, 'the cursor saved once the record is written');
        const list = await service.request('GET', `/executions?triggerId=${trigger.body.id}`, { token: account.token });
        assert.deepEqual(list.body.items.map((execution: { eventId: string }) => execution.eventId), [posted.body.id]);
      } finally {
        await locker.end();
        await service.stop();
      }
    });
  });
}
