import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createEvent, type Event } from '../../src/events/event.js';
import { newSortableId } from '../../src/domain/ids.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { SqlEventStore } from '../../src/store/event-store.js';
import { SqlExecutionStore } from '../../src/store/trigger-store.js';
import type { Execution } from '../../src/triggers/executions.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/**
 * The bulk inserts of the event pipeline (events, execution records) as the stores write them without the SQLite
 * hot path: a VALUES list on SQLite, one array per column on PostgreSQL. Text that array literals and JSON must
 * carry through untouched (quotes, backslashes, braces, commas, the word NULL, line breaks, astral characters),
 * nulls where columns allow them, and batches past one VALUES chunk (500 rows).
 */
const AWKWARD = ['say "hi", {ok}', 'back\\slash \\" end', 'NULL', '', 'line\nbreak\ttab', '\u{1F600} \u2028 é', '{"a":[1,2]}', ' padded '];

for (const dialect of DIALECTS) {
  describe(`bulk inserts of events and executions (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let database: Database;

    before(async () => {
      service = await startService(dialect.name);
      database = openDatabase(service.bridge.config);
    });
    after(async () => {
      await database?.close();
      await service?.stop();
    });

    it('stores events as given and returns their seqs in the order given, across more than one chunk', async () => {
      const accountId = `acc-bulk-${dialect.name}`;
      const events: Event[] = [];
      for (let i = 0; i < 1203; i++) {
        const text = AWKWARD[i % AWKWARD.length]!;
        events.push(
          createEvent({
            type: i % 2 ? 'custom' : text || 'empty',
            accountId,
            serviceId: i % 3 ? null : `svc-${text}`,
            endpointId: i % 5 ? `ep-${i % 7}` : null,
            endpointKey: i % 5 ? text : null,
            data: i % 11 ? { text, n: i, list: [text, null, { deep: text }] } : text,
          }),
        );
      }
      const store = new SqlEventStore(database.db);
      const seqs = await store.accept(events);
      assert.equal(seqs.length, events.length);
      for (let i = 1; i < seqs.length; i++) assert.ok(seqs[i]! > seqs[i - 1]!, `seq ${i} after seq ${i - 1}`);
      for (const [i, event] of events.entries()) assert.deepEqual(await store.get(accountId, event.id), event, `event ${i}`);
      for (const [i, event] of events.entries()) assert.equal(await store.seqOf(accountId, event.id), seqs[i], `event ${i}'s seq`);
      assert.deepEqual(await store.accept([]), []);
    });

    it('batches accepted at once (on PostgreSQL each on its own connection, their seqs drawn interleaved) each get their own rows\' seqs', async () => {
      const accountId = `acc-bulk-together-${dialect.name}`;
      const batches = Array.from({ length: 6 }, (_, b) =>
        Array.from({ length: 40 + b * 37 }, (_, i) => createEvent({ type: 'custom', accountId, endpointId: `ep-${i % 4}`, data: { b, i } })),
      );
      const store = new SqlEventStore(database.db);
      const seqs = await Promise.all(batches.map((events) => store.accept(events)));
      const rows = await database.db.selectFrom('events').select(['id', 'seq']).where('account_id', '=', accountId).execute();
      const stored = new Map(rows.map((row) => [row.id, Number(row.seq)]));
      assert.equal(stored.size, batches.flat().length);
      for (const [b, events] of batches.entries()) {
        for (let i = 1; i < events.length; i++) assert.ok(seqs[b]![i]! > seqs[b]![i - 1]!, `batch ${b}: seq ${i} after seq ${i - 1}`);
        for (const [i, event] of events.entries()) assert.equal(seqs[b]![i], stored.get(event.id), `batch ${b}, event ${i}`);
      }
    });

    it('the SQLite hot path gives each event its own row\'s seq, whatever the batch size and with batches committed together', { skip: dialect.name !== 'sqlite' }, async () => {
      // Events are written 16 rows to an INSERT and numbered from the last row's seq: a wrong number would
      // misorder dispatch and move the handled cursor past events not handled.
      const accountId = 'acc-bulk-hot';
      const store = new SqlEventStore(database.db, database.hot);
      const sizes = [1, 15, 16, 17, 33, 1, 250];
      const batches = sizes.map((size, b) =>
        Array.from({ length: size }, (_, i) => createEvent({ type: 'custom', accountId, endpointId: `ep-${i % 3}`, data: { b, i, text: AWKWARD[i % AWKWARD.length] } })),
      );
      // All in one turn: they commit in one transaction, one after another.
      const seqs = await Promise.all(batches.map((events) => store.accept(events)));
      const all = batches.flat();
      const numbered = seqs.flat();
      assert.equal(new Set(numbered).size, all.length);
      for (let i = 1; i < numbered.length; i++) assert.equal(numbered[i], numbered[i - 1]! + 1, `seq ${i} follows seq ${i - 1}`);
      const rows = await database.db.selectFrom('events').select(['id', 'seq']).where('account_id', '=', accountId).execute();
      const stored = new Map(rows.map((row) => [row.id, Number(row.seq)]));
      for (const [i, event] of all.entries()) assert.equal(numbered[i], stored.get(event.id), `event ${i}`);
      for (const [i, event] of all.entries()) assert.deepEqual(await store.get(accountId, event.id), event, `event ${i} read back`);
    });

    it('a write of the SQLite hot path that fails does not fail the others of its commit, nor the commits after it', { skip: dialect.name !== 'sqlite' }, async () => {
      // One transaction a turn: when a write in it throws, each is committed again on its own.
      const hot = database.hot;
      assert.ok(hot);
      const accountId = 'acc-bulk-hot-failing';
      const store = new SqlEventStore(database.db, hot);
      const insertCursor = 'insert into event_cursor (name, handled_through) values (?, ?)';
      const events = Array.from({ length: 3 }, (_, i) => createEvent({ type: 'custom', accountId, data: { i } }));
      const [seqs, first, again] = await Promise.allSettled([store.accept(events), hot.execute(insertCursor, ['test-failing', 1]), hot.execute(insertCursor, ['test-failing', 2])]);
      assert.equal(seqs.status, 'fulfilled');
      assert.deepEqual(first, { status: 'fulfilled', value: 1 });
      assert.equal(again.status, 'rejected');
      assert.match(String(again.reason), /UNIQUE constraint failed/);
      for (const event of events) assert.deepEqual(await store.get(accountId, event.id), event);
      const cursor = await database.db.selectFrom('event_cursor').select('handled_through').where('name', '=', 'test-failing').executeTakeFirstOrThrow();
      assert.equal(Number(cursor.handled_through), 1);
      // The next turn's commit goes through as usual.
      const later = createEvent({ type: 'custom', accountId, data: { later: true } });
      assert.equal((await store.accept([later])).length, 1);
      assert.deepEqual(await store.get(accountId, later.id), later);
    });

    it('an event or a record holding NUL or an unpaired surrogate does not fail the others committed with it', async () => {
      // PostgreSQL's jsonb refuses both; the bus commits many devices' and tenants' events in one insert.
      const accountId = `acc-bulk-unstorable-${dialect.name}`;
      const event = (data: unknown) => createEvent({ type: 'custom', accountId, serviceId: null, endpointId: null, endpointKey: null, data });
      const events = [event({ ok: 1 }), event({ text: 'a\u0000b' }), event({ ['key\ud800']: ['\udc00', 'fine'] }), event('\u0000'), event({ ok: 2 })];
      const store = new SqlEventStore(database.db);
      const seqs = await store.accept(events);
      assert.equal(seqs.length, 5);
      const read = await Promise.all(events.map(async (e) => (await store.get(accountId, e.id))?.data));
      assert.deepEqual(read, [{ ok: 1 }, { text: 'a\ufffdb' }, { ['key\ufffd']: ['\ufffd', 'fine'] }, '\ufffd', { ok: 2 }]);
      const triggerId = `trg-unstorable-${dialect.name}`;
      const execution = (i: number, logs: string[]): Execution => ({
        id: newSortableId(), accountId, triggerId, eventId: events[i]!.id, eventType: 'custom', startedAt: new Date(1_700_000_000_000 + i).toISOString(),
        durationMs: 1, status: 'success', error: null, line: null, logs, test: false, context: { note: logs[0] }, groups: [],
      });
      const records = new SqlExecutionStore(database.db);
      await records.insert([execution(0, ['fine']), { ...execution(1, ['nul \u0000 here', 'lone \ud800']), status: 'failed', error: 'thrown \u0000 \ud800' }, execution(2, ['fine too'])]);
      const page = await records.list(accountId, { triggerId }, { limit: 10, offset: 0 });
      assert.deepEqual(page.items.map((record) => record.logs).reverse(), [['fine'], ['nul \ufffd here', 'lone \ufffd'], ['fine too']]);
      assert.deepEqual(page.items.map((record) => record.error).reverse(), [null, 'thrown \ufffd \ufffd', null]);
    });

    it('stores execution records as given, nulls and awkward logs included', async () => {
      const accountId = `acc-bulk-exec-${dialect.name}`;
      const triggerId = `trg-bulk-${dialect.name}`;
      const executions = awkwardExecutions(accountId, triggerId);
      const store = new SqlExecutionStore(database.db);
      await store.insert(executions);
      await store.insert([]);
      const page = await store.list(accountId, { triggerId }, { limit: 100, offset: 0 });
      assert.equal(page.total, executions.length);
      // Listed newest first.
      assert.deepEqual([...page.items].reverse(), executions);
    });

    it('the SQLite hot path stores every execution record in order, one at a time or many, past one INSERT\'s rows', { skip: dialect.name !== 'sqlite' }, async () => {
      const accountId = 'acc-bulk-exec-hot';
      const triggerId = 'trg-bulk-hot';
      // 8 awkward records a round, 5 rounds: 40 recorded one by one in one turn, then 40 at once.
      const one = Array.from({ length: 5 }, () => awkwardExecutions(accountId, triggerId)).flat();
      const many = Array.from({ length: 5 }, () => awkwardExecutions(accountId, triggerId)).flat();
      const store = new SqlExecutionStore(database.db, database.hot);
      await Promise.all(one.map((execution) => store.recordOne!(execution)));
      await store.insert(many);
      const page = await store.list(accountId, { triggerId }, { limit: 100, offset: 0 });
      assert.equal(page.total, one.length + many.length);
      assert.deepEqual([...page.items].reverse(), [...one, ...many]);
    });

    it('stores plain records (no error, log, context or groups; not a test) alone and mixed with others, as given', async () => {
      const accountId = `acc-bulk-exec-plain-${dialect.name}`;
      const triggerId = `trg-bulk-plain-${dialect.name}`;
      const store = new SqlExecutionStore(database.db);
      // On PostgreSQL a batch of plain records alone has a statement of its own.
      const alone = Array.from({ length: 40 }, (_, i) => plainExecution(accountId, triggerId, i));
      await store.insert(alone);
      const mixed = mixedExecutions(accountId, triggerId);
      await store.insert(mixed);
      const page = await store.list(accountId, { triggerId }, { limit: 200, offset: 0 });
      assert.equal(page.total, alone.length + mixed.length);
      assert.deepEqual([...page.items].reverse(), [...alone, ...mixed]);
    });

    it('the SQLite hot path stores plain records and the others in their order, mixed', { skip: dialect.name !== 'sqlite' }, async () => {
      const accountId = 'acc-bulk-exec-plain-hot';
      const triggerId = 'trg-bulk-plain-hot';
      const mixed = mixedExecutions(accountId, triggerId);
      const store = new SqlExecutionStore(database.db, database.hot);
      await store.insert(mixed);
      const oneByOne = mixed.map((execution) => ({ ...execution, id: newSortableId() }));
      await Promise.all(oneByOne.map((execution) => store.recordOne!(execution)));
      const page = await store.list(accountId, { triggerId }, { limit: 200, offset: 0 });
      assert.equal(page.total, mixed.length * 2);
      assert.deepEqual([...page.items].reverse(), [...mixed, ...oneByOne]);
    });
  });
}

/** One execution record per awkward text, alternately succeeded and failed. */
function awkwardExecutions(accountId: string, triggerId: string): Execution[] {
  return AWKWARD.map((text, i) => ({
    id: newSortableId(),
    accountId,
    triggerId,
    eventId: `ev-${i}`,
    eventType: text || 'empty',
    startedAt: new Date(1_700_000_000_000 + i).toISOString(),
    durationMs: 0.25 * i,
    status: i % 2 ? 'failed' : 'success',
    error: i % 2 ? text : null,
    line: i % 2 ? i : null,
    logs: [text, `${text}!`],
    test: i % 3 === 0,
    context: { text, n: i },
    groups: [text],
  }));
}

/** A run's record with nothing but its outcome: no error, line, log, context or groups, not a test. */
function plainExecution(accountId: string, triggerId: string, i: number): Execution {
  return {
    id: newSortableId(),
    accountId,
    triggerId,
    eventId: `ev-plain-${i}`,
    eventType: 'mqtt-publish',
    startedAt: new Date(1_700_000_000_000 + i).toISOString(),
    durationMs: 0.5,
    status: 'success',
    error: null,
    line: null,
    logs: [],
    test: false,
    context: {},
    groups: [],
  };
}

/** Runs of plain records longer and shorter than one INSERT's rows, between records that each differ from a plain one in one field. */
function mixedExecutions(accountId: string, triggerId: string): Execution[] {
  const plain = (i: number) => plainExecution(accountId, triggerId, i);
  const nearlyPlain = (i: number): Execution[] => [
    { ...plain(i), status: 'failed', error: 'thrown' },
    { ...plain(i), line: 3 },
    { ...plain(i), logs: ['one line'] },
    { ...plain(i), test: true },
    { ...plain(i), context: { k: 1 } },
    { ...plain(i), groups: ['g'] },
  ];
  return [
    ...Array.from({ length: 20 }, (_, i) => plain(i)),
    ...nearlyPlain(20),
    ...Array.from({ length: 17 }, (_, i) => plain(30 + i)),
    ...nearlyPlain(50).flatMap((other, i) => [other, plain(60 + i)]),
  ];
}
