import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { Kysely, sql, type Generated } from 'kysely';
import { FairSqliteDialect } from '../../src/store/fair-sqlite-dialect.js';

interface Tables {
  counter: { id: number; value: number };
  calls: { seq: Generated<number>; caller: number };
}

/** The SQLite connection handed out first come, first served: transactions whole, callers in order. */
describe('FairSqliteDialect', () => {
  let dir: string;
  let db: Kysely<Tables>;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'iotbridge-fair-sqlite-'));
    db = new Kysely<Tables>({ dialect: new FairSqliteDialect({ database: new SQLite(path.join(dir, 'test.sqlite')) }) });
    await sql`create table counter (id integer primary key, value integer not null)`.execute(db);
    await sql`create table calls (seq integer primary key autoincrement, caller integer not null)`.execute(db);
    await db.insertInto('counter').values({ id: 1, value: 0 }).execute();
  });
  after(async () => {
    await db.destroy();
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps each transaction whole while hundreds wait, with plain queries between them', async () => {
    const increments = Array.from({ length: 300 }, () =>
      db.transaction().execute(async (trx) => {
        const { value } = await trx.selectFrom('counter').select('value').where('id', '=', 1).executeTakeFirstOrThrow();
        // A turn of the event loop inside the transaction: another caller must not get the connection now.
        await new Promise((resolve) => setImmediate(resolve));
        await trx.updateTable('counter').set({ value: value + 1 }).where('id', '=', 1).execute();
      }),
    );
    const reads = Array.from({ length: 300 }, () => db.selectFrom('counter').select('value').executeTakeFirstOrThrow());
    await Promise.all([...increments, ...reads]);
    const { value } = await db.selectFrom('counter').select('value').executeTakeFirstOrThrow();
    assert.equal(value, 300, 'no increment lost to an interleaved transaction');
  });

  it('serves waiting callers in the order they asked', async () => {
    await Promise.all(Array.from({ length: 2000 }, (_, caller) => db.insertInto('calls').values({ caller }).execute()));
    const rows = await db.selectFrom('calls').select(['caller']).orderBy('seq').execute();
    assert.deepEqual(
      rows.map((row) => row.caller),
      Array.from({ length: 2000 }, (_, caller) => caller),
    );
  });

  it('hands the connection on after a failed query and a rolled-back transaction', async () => {
    await assert.rejects(sql`select * from no_such_table`.execute(db));
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await trx.updateTable('counter').set({ value: -1 }).execute();
        throw new Error('roll back');
      }),
    );
    const { value } = await db.selectFrom('counter').select('value').executeTakeFirstOrThrow();
    assert.equal(value, 300);
  });
});
