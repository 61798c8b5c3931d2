import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase, type Database } from '../../src/store/database.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { createAccount, type TestAccount } from '../helpers/fixtures.js';
import { rewindMigrations } from '../helpers/migrations.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/**
 * Migration 0046: the executions table without the unique index on `id` (and, on SQLite, without AUTOINCREMENT).
 * A database of the release before, with executions recorded, is upgraded while the service runs: every record
 * keeps its seq and fields, the service records on after it (numbered past the highest), and each account still
 * sees only its own.
 */
for (const dialect of DIALECTS) {
  describe(`executions table upgrade (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    /** A second connection to the same storage: what another process of the service would see and do. */
    let other: Database;
    let a: TestAccount;
    let b: TestAccount;
    let triggerA: string;
    let triggerB: string;

    before(async () => {
      service = await startService(dialect.name);
      other = openDatabase(service.bridge.config);
      a = await createAccount(service, 'lean-a');
      b = await createAccount(service, 'lean-b');
      triggerA = await createTrigger(a);
      triggerB = await createTrigger(b);
    });
    after(async () => {
      await other?.close();
      await service?.stop();
    });

    async function createTrigger(account: TestAccount): Promise<string> {
      const created = await service.request('POST', '/triggers', { token: account.token, body: { name: 'note', events: ['reading'], script: 'log(event.data.n);' } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body.id as string;
    }

    /** Posts `count` readings to the account and waits until it lists `total` executions of its trigger. */
    async function run(account: TestAccount, trigger: string, from: number, count: number, total: number): Promise<Record<string, any>[]> {
      for (let n = from; n < from + count; n++) {
        const posted = await service.request('POST', '/events', { token: account.token, body: { type: 'reading', data: { n } } });
        assert.equal(posted.status, 202, JSON.stringify(posted.body));
      }
      const deadline = Date.now() + 10_000;
      for (;;) {
        const list = await service.request('GET', `/executions?triggerId=${trigger}&limit=100`, { token: account.token });
        assert.equal(list.status, 200, JSON.stringify(list.body));
        if (list.body.items.length >= total || Date.now() > deadline) return list.body.items as Record<string, any>[];
        await sleep(25);
      }
    }

    const rows = async () =>
      (await sql<Record<string, unknown>>`select * from executions order by seq`.execute(other.db)).rows.map((row) => ({ ...row, seq: Number(row.seq), started_at: Number(row.started_at) }));

    /** The executions table as 0003/0004 made it; forgets 0046 and undoes later ones → the migrations to apply. */
    async function rewind(): Promise<string[]> {
      if (dialect.name === 'postgres') {
        await sql`alter table executions add constraint executions_id_key unique (id)`.execute(other.db);
      } else {
        await other.db.transaction().execute(async (trx) => {
          await sql`create table executions_old (seq integer primary key autoincrement, id text not null unique, account_id text not null, trigger_id text not null,
            event_id text not null, event_type text not null, started_at integer not null, duration_ms real not null, status text not null, error text, line integer,
            logs text not null, test integer not null, context text default '{}' not null, groups text default '[]' not null)`.execute(trx);
          await sql`insert into executions_old select * from executions`.execute(trx);
          await sql`drop table executions`.execute(trx);
          await sql`alter table executions_old rename to executions`.execute(trx);
          await sql`create index executions_account on executions (account_id, seq)`.execute(trx);
          await sql`create index executions_trigger on executions (trigger_id, seq)`.execute(trx);
        });
      }
      return rewindMigrations(other.db, ['0046-lean-executions']);
    }

    /** What could make a second row with the same id fail: unique indexes (SQLite) or constraints (PostgreSQL) on `id`. */
    async function uniqueOnId(): Promise<string[]> {
      if (dialect.name === 'postgres') {
        const { rows } = await sql<{ name: string }>`
          select c.conname as name from pg_constraint c join pg_attribute a on a.attrelid = c.conrelid and a.attname = 'id'
          where c.conrelid = 'executions'::regclass and c.contype in ('u', 'p') and c.conkey = array[a.attnum]`.execute(other.db);
        return rows.map((row) => row.name);
      }
      const { rows } = await sql<{ name: string }>`select name from pragma_index_list('executions') where "unique" = 1`.execute(other.db);
      return rows.map((row) => row.name);
    }

    it('keeps every record and its seq, drops the unique index on id, and the service records on past the highest seq', async () => {
      await run(a, triggerA, 0, 3, 3);
      await run(b, triggerB, 0, 2, 2);
      const expected = await rewind();
      assert.deepEqual(await uniqueOnId(), dialect.name === 'postgres' ? ['executions_id_key'] : ['sqlite_autoindex_executions_1'], 'the old shape, rewound');
      const before = await rows();
      assert.equal(before.length, 5);

      assert.deepEqual(await migrateToLatest(other), expected);
      assert.deepEqual(await rows(), before, 'every record, seq and field as it was');
      assert.deepEqual(await uniqueOnId(), []);
      if (dialect.name === 'sqlite') {
        const { rows: table } = await sql<{ sql: string }>`select sql from sqlite_master where type = 'table' and name = 'executions'`.execute(other.db);
        assert.doesNotMatch(table[0]!.sql, /autoincrement/i);
        const { rows: indexes } = await sql<{ name: string }>`select name from pragma_index_list('executions') order by name`.execute(other.db);
        assert.deepEqual(indexes.map((index) => index.name), ['executions_account', 'executions_trigger']);
      }
      // Run again (a crash between its commit and the migrator's record of it): nothing changes.
      assert.deepEqual(await rewindMigrations(other.db, ['0046-lean-executions']), expected);
      assert.deepEqual(await migrateToLatest(other), expected);
      assert.deepEqual(await rows(), before);

      // The running service records on: new records numbered past the highest, each account seeing its own only.
      const listedA = await run(a, triggerA, 3, 2, 5);
      const listedB = await run(b, triggerB, 2, 1, 3);
      const highest = Math.max(...before.map((row) => row.seq));
      const after = (await rows()).slice(before.length);
      assert.equal(after.length, 3);
      assert.ok(after.every((row) => row.seq > highest), `seqs ${after.map((row) => row.seq).join(', ')} after ${highest}`);
      assert.deepEqual(listedA.map((execution) => execution.logs[0]).sort(), ['0', '1', '2', '3', '4']);
      assert.deepEqual(listedB.map((execution) => execution.logs[0]).sort(), ['0', '1', '2']);
      assert.ok(listedA.every((execution) => execution.triggerId === triggerA));
      const crossTenant = await service.request('GET', `/executions?triggerId=${triggerA}`, { token: b.token });
      assert.deepEqual([crossTenant.status, crossTenant.body.items], [200, []], "B lists none of A's executions");
    });
  });
}
