import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import type { Event } from '../../src/events/event.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { SqlEventStore } from '../../src/store/event-store.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { until } from '../helpers/devices.js';
import { rewindMigrations } from '../helpers/migrations.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/**
 * The history's by-endpoint index is written in bulk behind the newest events (migration 0016): searches
 * by endpoint must give the same pages wherever the index stands.
 */
for (const dialect of DIALECTS) {
  describe(`history by endpoint, indexed in the background (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    /** A second connection to the same storage: what another process of the service would see and do. */
    let other: Database;
    let account: TestAccount;
    let sensor: string;
    let neighbour: string;
    /** Which endpoint each posted event (`data.i`) went to, oldest first. */
    const posted: string[] = [];
    const cursor = async (name: string) =>
      Number((await other.db.selectFrom('event_cursor').select('handled_through').where('name', '=', name).executeTakeFirst())?.handled_through ?? 0);
    const newestSeq = async () => Number((await other.db.selectFrom('events').select((eb) => eb.fn.max('seq').as('seq')).executeTakeFirstOrThrow()).seq ?? 0);
    const indexedSeqs = async (endpointId: string) =>
      (await other.db.selectFrom('event_endpoints').select('seq').where('endpoint_id', '=', endpointId).orderBy('seq').execute()).map((row) => Number(row.seq));

    /** Every page of the sensor's history, `limit` at a time, as lists of `data.i`. */
    async function pages(limit: number): Promise<number[][]> {
      const result: number[][] = [];
      let next: string | null = null;
      do {
        const page: { status: number; body: { items: Event[]; next: string | null } } = await service.request('GET', `/history?endpoint=${sensor}&limit=${limit}${next ? `&next=${next}` : ''}`, { token: account.token });
        assert.equal(page.status, 200, JSON.stringify(page.body));
        result.push(page.body.items.map((event: Event) => (event.data as { i: number }).i));
        next = page.body.next;
      } while (next);
      return result;
    }

    async function post(count: number): Promise<void> {
      for (let n = 0; n < count; n++) {
        const i = posted.length;
        // Two of every three to the sensor, the rest to its neighbour: the index must keep them apart.
        const endpoint = i % 3 === 2 ? neighbour : sensor;
        const response = await service.request('POST', '/events', { token: account.token, body: { type: 'reading', endpoint, data: { i } } });
        assert.equal(response.status, 202);
        posted.push(endpoint);
      }
    }
    /** `data.i` of the sensor's events, newest first: what its history shows. */
    const expected = () => posted.flatMap((endpoint, i) => (endpoint === sensor ? [i] : [])).reverse();

    before(async () => {
      service = await startService(dialect.name);
      other = openDatabase(service.bridge.config);
      account = await createAccount(service, 'indexed');
      const serviceId = await createService(service, account.token);
      sensor = (await createEndpoint(service, account.token, { key: 'sensor', serviceId })).id as string;
      neighbour = (await createEndpoint(service, account.token, { key: 'neighbour', serviceId })).id as string;
    });
    after(async () => {
      await other?.close();
      await service?.stop();
    });

    it('indexes handled events in the background, each under its own endpoint', async () => {
      await post(12);
      const newest = await newestSeq();
      await until(async () => (await cursor('endpoint-index')) >= newest, 'the index to cover the posted events', 10_000);
      const sensorSeqs = await indexedSeqs(sensor);
      const ownSeqs = (await other.db.selectFrom('events').select('seq').where('endpoint_id', '=', sensor).orderBy('seq').execute()).map((row) => Number(row.seq));
      assert.deepEqual(sensorSeqs, ownSeqs, "the sensor's index rows are its events, no more, no fewer");
      assert.equal(sensorSeqs.length, 8);
      assert.equal((await indexedSeqs(neighbour)).length, 4);
      assert.deepEqual((await pages(100)).flat(), expected());
    });

    it('pages the same wherever the index stands, newest events not yet indexed included', async () => {
      await post(9);
      const newest = await newestSeq();
      const oldest = Number((await other.db.selectFrom('events').select((eb) => eb.fn.min('seq').as('seq')).executeTakeFirstOrThrow()).seq);
      // Set the index to each point, as if it were that far behind (in increasing order: the background pass
      // may move it on meanwhile, which must not matter either).
      for (const through of [0, oldest, Math.floor((oldest + newest) / 2), newest - 1, newest]) {
        await other.db.transaction().execute(async (trx) => {
          await trx.deleteFrom('event_endpoints').execute();
          await sql`insert into event_endpoints (endpoint_id, seq) select endpoint_id, seq from events where seq <= ${through} and endpoint_id is not null`.execute(trx);
          await trx.updateTable('event_cursor').set({ handled_through: through }).where('name', '=', 'endpoint-index').execute();
        });
        for (const limit of [1, 4, 100]) {
          const got = await pages(limit);
          assert.deepEqual(got.flat(), expected(), `index through ${through}, pages of ${limit}: newest first, nothing twice, nothing missing`);
          assert.ok(got.slice(0, -1).every((page) => page.length === limit), 'only the last page is short');
        }
      }
      // Filters apply to both parts.
      const filtered = await service.request('GET', `/history?endpoint=${sensor}&type=nope`, { token: account.token });
      assert.deepEqual(filtered.body.items, []);
    });

    it("never returns another account's events through the index", async () => {
      const intruder = await createAccount(service, 'intruder');
      await until(async () => (await cursor('endpoint-index')) >= (await newestSeq()), 'the index to cover the events', 10_000);
      // Through the API the endpoint is not the intruder's to name; beneath it, the store still checks the account.
      assert.equal((await service.request('GET', `/history?endpoint=${sensor}`, { token: intruder.token })).status, 404);
      const store = new SqlEventStore(other.db);
      assert.deepEqual(await store.search(intruder.accountId, { endpointId: sensor }, 100), []);
      assert.equal((await store.search(account.accountId, { endpointId: sensor }, 100)).length, expected().length);
    });

    it('passes run at once (here and from other processes) index each event once, none failing', async () => {
      await post(30);
      const newest = await newestSeq();
      await until(async () => (await cursor('bus')) >= newest, 'the bus to handle the posted events', 10_000);
      // The index set back to before them, so there is a range to index; then four passes at once besides the
      // service's own: on PostgreSQL from two more pools (as other nodes of a cluster), each pass a connection of
      // its own; SQLite has one process writing, its passes one after another on its connection.
      const from = newest - 30;
      await other.db.transaction().execute(async (trx) => {
        await trx.deleteFrom('event_endpoints').where('seq', '>', from).execute();
        await trx.updateTable('event_cursor').set({ handled_through: from }).where('name', '=', 'endpoint-index').execute();
      });
      const third = dialect.name === 'postgres' ? openDatabase(service.bridge.config) : other;
      try {
        // Connections opened first, so the passes start together rather than one per connection made.
        if (dialect.name === 'postgres') await Promise.all([other, other, third, third].map((database) => sql`select pg_sleep(0.05)`.execute(database.db)));
        const stores = [new SqlEventStore(other.db), new SqlEventStore(other.db), new SqlEventStore(third.db), new SqlEventStore(third.db)];
        const outcomes = await Promise.allSettled(stores.map((store) => store.indexEndpoints(100_000)));
        assert.deepEqual(outcomes.filter((outcome) => outcome.status === 'rejected'), [], 'no pass failed');
      } finally {
        if (third !== other) await third.close();
      }
      const twice = await other.db.selectFrom('event_endpoints').select(['endpoint_id', 'seq']).groupBy(['endpoint_id', 'seq']).having((eb) => eb.fn.countAll(), '>', 1).execute();
      assert.deepEqual(twice, [], 'no event indexed twice');
      assert.deepEqual(await indexedSeqs(sensor), (await other.db.selectFrom('events').select('seq').where('endpoint_id', '=', sensor).orderBy('seq').execute()).map((row) => Number(row.seq)));
      assert.ok((await cursor('endpoint-index')) >= newest);
      assert.deepEqual((await pages(7)).flat(), expected());
    });

    it('drops the index rows of events past retention', async () => {
      const newest = await newestSeq();
      await until(async () => (await cursor('endpoint-index')) >= newest, 'the index to cover the events', 10_000);
      // The oldest half of the sensor's events are 40 days old.
      const sensorSeqs = await indexedSeqs(sensor);
      const cut = sensorSeqs[Math.floor(sensorSeqs.length / 2)]!;
      await other.db.updateTable('events').set({ time: Date.now() - 40 * 86_400_000 }).where('seq', '<', cut).execute();
      const deleted = await new SqlEventStore(other.db).deleteOlderThan(Date.now() - 30 * 86_400_000);
      assert.ok(deleted >= sensorSeqs.filter((seq) => seq < cut).length);
      assert.deepEqual(await indexedSeqs(sensor), sensorSeqs.filter((seq) => seq >= cut), 'index rows below the oldest event are gone');
      const kept = expected().slice(0, sensorSeqs.filter((seq) => seq >= cut).length);
      assert.deepEqual((await pages(3)).flat(), kept);
    });

    // Runs last: it rewinds this database's migrations.
    it('builds the index from the history of a database made before it (migration 0016)', async () => {
      const rewound = await rewindMigrations(other.db, ['0016-event-endpoint-index', '0017-events-time-index']);
      await other.db.transaction().execute(async (trx) => {
        await trx.schema.dropTable('event_endpoints').execute();
        await trx.deleteFrom('event_cursor').where('name', '=', 'endpoint-index').execute();
        await trx.schema.createIndex('events_endpoint').on('events').columns(['endpoint_id', 'seq']).execute();
        await trx.schema.createIndex('events_time').on('events').column('time').execute();
      });
      assert.deepEqual(await migrateToLatest(other), rewound);
      const all = (await other.db.selectFrom('events').select('seq').where('endpoint_id', '=', sensor).orderBy('seq').execute()).map((row) => Number(row.seq));
      assert.ok(all.length > 0);
      assert.deepEqual(await indexedSeqs(sensor), all);
      assert.equal(await cursor('endpoint-index'), await newestSeq());
      const store = new SqlEventStore(other.db);
      assert.equal((await store.search(account.accountId, { endpointId: sensor }, 100)).length, all.length);
    });
  });
}
