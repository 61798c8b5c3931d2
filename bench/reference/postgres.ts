/**
 * A database of its own on the PostgreSQL server the tests use, for a bench run on PostgreSQL: created at the
 * start, dropped at the end; undefined when the server is not reachable (the bench then says PostgreSQL was skipped).
 */
import { userInfo } from 'node:os';
import pg from 'pg';

/** The server (`IOTBRIDGE_TEST_POSTGRES_URL`, as the tests): a database is created and dropped on it. */
export const POSTGRES_URL = process.env.IOTBRIDGE_TEST_POSTGRES_URL ?? `postgres://${userInfo().username}@127.0.0.1:5432/test`;

export async function postgresDatabase(): Promise<{ url: string; drop: () => Promise<void> } | undefined> {
  const admin = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 2000 });
  try {
    await admin.connect();
  } catch {
    return undefined;
  }
  const db = `iotbridge_bench_${Date.now()}`;
  await admin.query(`create database ${db}`);
  await admin.end();
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${db}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`drop database if exists ${db} with (force)`);
      await client.end();
    },
  };
}
