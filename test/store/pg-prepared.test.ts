import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { prepared, preparingPool } from '../../src/store/pg-prepared.js';
import { DIALECTS, TEST_POSTGRES_URL } from '../helpers/service.js';

/**
 * Statements a hot path marks are sent to PostgreSQL as named prepared statements (parsed and planned once per
 * connection); every other statement stays unnamed.
 */
const postgres = DIALECTS.find((dialect) => dialect.name === 'postgres')!;

describe('PostgreSQL prepared statements for marked statements', { skip: postgres.skip }, () => {
  let db: Kysely<Record<string, never>>;
  before(() => {
    // One connection, so the session that prepared is the one asked.
    db = new Kysely({ dialect: new PostgresDialect({ pool: preparingPool(new pg.Pool({ connectionString: TEST_POSTGRES_URL, max: 1 })) }) });
  });
  after(async () => {
    await db?.destroy();
  });

  const preparedNames = async () => (await sql<{ name: string }>`select name from pg_prepared_statements order by name`.execute(db)).rows.map((row) => row.name);

  it('sends a marked statement by name, once parsed, with each call\'s own parameters', async () => {
    for (const n of [1, 2, 40]) {
      const result = await sql<{ n: number; text: string }>`${sql.raw(prepared('test-echo'))}select ${n}::int as n, ${`value ${n}`}::text as text`.execute(db);
      assert.deepEqual(result.rows, [{ n, text: `value ${n}` }]);
    }
    assert.deepEqual(await preparedNames(), ['test-echo']);
  });

  it('leaves unmarked statements unnamed, and passes errors through', async () => {
    await sql`select ${1}::int as one`.execute(db);
    assert.deepEqual(await preparedNames(), ['test-echo']);
    await assert.rejects(sql`${sql.raw(prepared('test-fails'))}select 1 / ${0}::int`.execute(db), /division by zero/);
    // The connection still answers after a failed prepared statement.
    assert.deepEqual((await sql<{ ok: boolean }>`select true as ok`.execute(db)).rows, [{ ok: true }]);
  });

  it('refuses a name that would not survive the marker', () => {
    assert.throws(() => prepared('Insert Events'), /not a prepared statement name/);
    assert.throws(() => prepared('x */ drop table events; /*'), /not a prepared statement name/);
  });
});
