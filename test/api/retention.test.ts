import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { RetentionJob } from '../../src/events/retention.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { sqlStores } from '../../src/store/stores.js';
import { until } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

const DAY = 86_400_000;

/** History and execution records past their retention periods go; the rest stays, whatever the table's size. */
for (const dialect of DIALECTS) {
  describe(`retention of history and execution records (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    /** A second connection to the same storage: the job runs on it as it would in the service. */
    let other: Database;
    let account: TestAccount;
    let triggerId: string;

    const job = (historyDays: number, executionDays: number) => {
      const stores = sqlStores(other);
      return new RetentionJob(stores.events, stores.executions, { historyDays, executionDays, logger: pino({ level: 'silent' }) });
    };
    const history = async () => (await service.request('GET', '/history?type=reading&limit=1000', { token: account.token })).body.items.map((e: { data: { i: number } }) => e.data.i) as number[];
    const executions = async () => (await service.request('GET', `/executions?triggerId=${triggerId}&limit=1000`, { token: account.token })).body.total as number;

    before(async () => {
      service = await startService(dialect.name);
      other = openDatabase(service.bridge.config);
      account = await createAccount(service, 'retained');
      const serviceId = await createService(service, account.token);
      await createEndpoint(service, account.token, { key: 'meter', serviceId });
      const trigger = await service.request('POST', '/triggers', { token: account.token, body: { name: 'note', events: ['reading'], script: 'log(event.data.i);' } });
      assert.equal(trigger.status, 201);
      triggerId = trigger.body.id;
      for (let i = 0; i < 10; i++) {
        assert.equal((await service.request('POST', '/events', { token: account.token, body: { type: 'reading', endpoint: 'k.meter', data: { i } } })).status, 202);
      }
      await until(async () => (await executions()) === 10, 'ten executions recorded', 10_000);
    });
    after(async () => {
      await other?.close();
      await service?.stop();
    });

    it('deletes events and execution records past their periods, each by its own setting', async () => {
      // The first six readings and their runs happened 40 days ago.
      const seqs = (await other.db.selectFrom('events').select('seq').where('type', '=', 'reading').orderBy('seq').execute()).map((row) => Number(row.seq));
      // Only handled events are deleted, and the bus saves how far it handled a moment after the runs are recorded.
      const handledThrough = async () => Number((await other.db.selectFrom('event_cursor').select('handled_through').where('name', '=', 'bus').executeTakeFirst())?.handled_through ?? 0);
      await until(async () => (await handledThrough()) >= seqs[seqs.length - 1]!, 'the bus past every reading', 10_000);
      await other.db.updateTable('events').set({ time: Date.now() - 40 * DAY }).where('seq', '<=', seqs[5]!).execute();
      const runs = (await other.db.selectFrom('executions').select('seq').where('trigger_id', '=', triggerId).orderBy('seq').execute()).map((row) => Number(row.seq));
      await other.db.updateTable('executions').set({ started_at: Date.now() - 40 * DAY }).where('seq', '<=', runs[5]!).execute();

      // Executions kept forever (0): only the history goes.
      const first = await job(30, 0).run();
      assert.ok(first.events >= 6, `deleted ${first.events} events`);
      assert.equal(first.executions, 0);
      assert.deepEqual(await history(), [9, 8, 7, 6]);
      assert.equal(await executions(), 10);

      const second = await job(30, 30).run();
      assert.deepEqual(second, { events: 0, executions: 6, reportEntries: 0 });
      assert.equal(await executions(), 4);
      // A period longer than the data's age deletes nothing.
      assert.deepEqual(await job(50, 50).run(), { events: 0, executions: 0, reportEntries: 0 });
    });

    it('deletes a large backlog of old records in chunks, and keeps the recent ones', async () => {
      // 25,000 records of old runs (more than two chunks of 10,000), then the four recent ones.
      const old = Date.now() - 90 * DAY;
      await other.db.deleteFrom('executions').execute();
      for (let chunk = 0; chunk < 50; chunk++) {
        await other.db
          .insertInto('executions')
          .values(
            Array.from({ length: 500 }, (_, i) => ({
              id: `old-${chunk}-${i}`, account_id: account.accountId, trigger_id: triggerId, event_id: `e-${chunk}-${i}`, event_type: 'reading',
              started_at: old, duration_ms: 0.1, status: 'success', error: null, line: null, logs: '[]', test: 0, context: '{}', groups: '[]',
            })),
          )
          .execute();
      }
      await other.db
        .insertInto('executions')
        .values({ id: 'recent', account_id: account.accountId, trigger_id: triggerId, event_id: 'e-recent', event_type: 'reading', started_at: Date.now(), duration_ms: 0.1, status: 'success', error: null, line: null, logs: '[]', test: 0, context: '{}', groups: '[]' })
        .execute();
      assert.equal(await executions(), 25_001);
      assert.deepEqual(await job(0, 30).run(), { events: 0, executions: 25_000, reportEntries: 0 });
      const left = await service.request('GET', `/executions?triggerId=${triggerId}`, { token: account.token });
      assert.deepEqual(left.body.items.map((e: { id: string }) => e.id), ['recent']);
    });
    it("deletes report entries past their own report's retention, keeping reports kept forever", async () => {
      for (const [name, retentionDays] of [['short', 30], ['forever', 0]] as const) {
        assert.equal((await service.request('POST', '/reports', { token: account.token, body: { name, retentionDays } })).status, 201);
        for (let i = 0; i < 5; i++) assert.equal((await service.request('POST', `/reports/${name}/entries`, { token: account.token, body: { data: { i } } })).status, 201);
      }
      // The first three entries of each happened 40 days ago.
      for (const name of ['short', 'forever']) {
        const report = (await service.request('GET', `/reports/${name}`, { token: account.token })).body as { id: string };
        const ids = (await other.db.selectFrom('report_entries').select('id').where('report_id', '=', report.id).orderBy('id').execute()).map((row) => Number(row.id));
        await other.db.updateTable('report_entries').set({ time: Date.now() - 40 * DAY }).where('id', 'in', ids.slice(0, 3)).execute();
      }
      const stores = sqlStores(other);
      const result = await new RetentionJob(stores.events, stores.executions, { historyDays: 0, executionDays: 0, reports: stores.reports, logger: pino({ level: 'silent' }) }).run();
      assert.equal(result.reportEntries, 3);
      const left = async (name: string) => (await service.request('GET', `/reports/${name}/entries`, { token: account.token })).body.items.map((entry: { data: { i: number } }) => entry.data.i);
      assert.deepEqual(await left('short'), [3, 4]);
      assert.deepEqual(await left('forever'), [0, 1, 2, 3, 4]);
    });
  });
}
