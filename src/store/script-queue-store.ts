import type { Kysely } from 'kysely';
import type { ScriptQueueStore } from '../triggers/queues.js';
import { fromJson, toJson, type Schema } from './schema.js';

export class SqlScriptQueueStore implements ScriptQueueStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async put(accountId: string, name: string, value: unknown, expiresAt: number): Promise<number> {
    return this.#db.transaction().execute(async (trx) => {
      await trx.insertInto('script_queues').values({ account_id: accountId, name, value: toJson(value), expires_at: expiresAt }).execute();
      const row = await trx
        .selectFrom('script_queues')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('account_id', '=', accountId)
        .where('name', '=', name)
        .where('expires_at', '>', Date.now())
        .executeTakeFirstOrThrow();
      return Number(row.n);
    });
  }

  async take(accountId: string, name: string, now: number): Promise<{ value: unknown } | undefined> {
    return this.#db.transaction().execute(async (trx) => {
      await trx.deleteFrom('script_queues').where('account_id', '=', accountId).where('name', '=', name).where('expires_at', '<=', now).execute();
      const row = await trx
        .selectFrom('script_queues')
        .select(['seq', 'value'])
        .where('account_id', '=', accountId)
        .where('name', '=', name)
        .orderBy('seq')
        .limit(1)
        .executeTakeFirst();
      if (!row) return undefined;
      await trx.deleteFrom('script_queues').where('seq', '=', row.seq).execute();
      return { value: fromJson<unknown>(row.value) };
    });
  }

  async takeAll(accountId: string, name: string, now: number): Promise<unknown[]> {
    return this.#db.transaction().execute(async (trx) => {
      const rows = await trx
        .selectFrom('script_queues')
        .select(['value', 'expires_at'])
        .where('account_id', '=', accountId)
        .where('name', '=', name)
        .orderBy('seq')
        .execute();
      await trx.deleteFrom('script_queues').where('account_id', '=', accountId).where('name', '=', name).execute();
      return rows.filter((row) => row.expires_at > now).map((row) => fromJson<unknown>(row.value));
    });
  }
}
