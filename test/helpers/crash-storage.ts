import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FuzzService } from './fuzz.js';
import { throwAwayPostgres, type Dialect } from './service.js';

/**
 * What outlives the service processes of a kill -9 test: a data directory and, on PostgreSQL, a throw-away
 * database. Each `start()` spawns a service on it; `kill()` ends one the hard way.
 */
export class CrashTestStorage {
  readonly #dataDir: string;
  readonly #database: { url: string; drop: () => Promise<void> } | undefined;

  private constructor(dataDir: string, database: { url: string; drop: () => Promise<void> } | undefined) {
    this.#dataDir = dataDir;
    this.#database = database;
  }

  static async create(dialect: Dialect['name'], label: string): Promise<CrashTestStorage> {
    const dataDir = await mkdtemp(path.join(tmpdir(), `iotbridge-${label}-`));
    return new CrashTestStorage(dataDir, dialect === 'postgres' ? await throwAwayPostgres() : undefined);
  }

  /** A service process on this storage. */
  start(): Promise<FuzzService> {
    return FuzzService.start({ IOTBRIDGE_DATA_DIR: this.#dataDir, ...(this.#database && { IOTBRIDGE_DATABASE_URL: this.#database.url }) });
  }

  /** kill -9, and waits for the process to be gone. */
  static async kill(service: FuzzService): Promise<void> {
    const exited = new Promise((resolve) => service.child.once('exit', resolve));
    service.child.kill('SIGKILL');
    await exited;
  }

  async remove(): Promise<void> {
    await rm(this.#dataDir, { recursive: true, force: true });
    await this.#database?.drop();
  }
}
