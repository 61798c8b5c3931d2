/**
 * Named prepared statements on PostgreSQL for the statements a hot path marks as such. node-postgres parses and
 * plans every unnamed statement anew: for the event pipeline's bulk inserts, a batch of ~50 rows a statement under
 * load, that was ~20 % of each statement's time on the server (parse and bind against execute, docs/performance.md,
 * session 34). A statement whose text starts with {@link prepared}'s marker is sent by name instead: parsed once per
 * connection, its plan kept by the server.
 *
 * Only marked statements: Kysely's texts vary with the length of `in (…)` lists and the like, and every name stays
 * prepared on its connection for the connection's life.
 */
import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';

const NAME = '[a-z][a-z0-9-]*';
const WHOLE_NAME = new RegExp(`^${NAME}$`);
const MARKER = new RegExp(`^/\\* prepared (${NAME}) \\*/`);

/** The start of a statement's text that has it prepared by name (`name`: lowercase words and hyphens). */
export function prepared(name: string): string {
  if (!WHOLE_NAME.test(name)) throw new Error(`not a prepared statement name: ${name}`);
  return `/* prepared ${name} */ `;
}

/** `pool` as Kysely's PostgresDialect takes it, marked statements sent by name. */
export function preparingPool(pool: pg.Pool): PostgresPool {
  // One wrapper per pooled connection: Kysely keeps its own state per client object.
  const wrappers = new WeakMap<pg.PoolClient, PreparingClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (!wrapper) wrappers.set(client, (wrapper = new PreparingClient(client)));
      return wrapper;
    },
    end: () => pool.end(),
  };
}

class PreparingClient implements PostgresPoolClient {
  readonly #client: pg.PoolClient;

  constructor(client: pg.PoolClient) {
    this.#client = client;
  }

  query<R>(sql: string, parameters: readonly unknown[]): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(sqlOrCursor: string | PostgresCursor<R>, parameters?: readonly unknown[]): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    // A cursor (Kysely's streaming, not configured here) goes through as it is.
    if (typeof sqlOrCursor !== 'string') return this.#client.query(sqlOrCursor as unknown as pg.Submittable) as unknown as PostgresCursor<R>;
    const name = MARKER.exec(sqlOrCursor)?.[1];
    const config: pg.QueryConfig = { text: sqlOrCursor, values: parameters as unknown[] };
    if (name) config.name = name;
    return this.#client.query(config) as unknown as Promise<PostgresQueryResult<R>>;
  }

  release(): void {
    this.#client.release();
  }
}
