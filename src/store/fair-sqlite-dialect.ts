import { SqliteDialect, SqliteDriver, type DatabaseConnection, type Driver, type SqliteDialectConfig } from 'kysely';

/**
 * Kysely's SQLite dialect with its one connection handed out first come, first served. Kysely's own
 * mutex has every waiter await the same promise, so each release wakes them all and all but one go back
 * to waiting: with N queries waiting, every query costs N wake-ups. Under a log-in storm (thousands of
 * devices' look-ups and presence writes at once) that, not SQL, took most of the service's time.
 */
export class FairSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;

  constructor(config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
  }

  override createDriver(): Driver {
    return new FairSqliteDriver(this.#config);
  }
}

class FairSqliteDriver extends SqliteDriver {
  /** Who waits for the connection, in order; the head is woken by the release before it. */
  readonly #waiting: (() => void)[] = [];
  #held = false;

  override async acquireConnection(): Promise<DatabaseConnection> {
    // Only the holder ever reaches Kysely's mutex, which therefore never has anyone waiting on it.
    if (this.#held) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#held = true;
    return super.acquireConnection();
  }

  override async releaseConnection(): Promise<void> {
    await super.releaseConnection();
    const next = this.#waiting.shift();
    // Handed over: the connection stays held, now by the next in line.
    if (next) next();
    else this.#held = false;
  }
}
