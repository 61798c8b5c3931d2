import type { Kysely, Selectable } from 'kysely';
import type { ObjectModel } from '../lwm2m/model.js';
import { fromObjectJson, toObjectJson, type ObjectJson } from '../lwm2m/objects/object-json.js';
import type { ObjectModelStore, StoredObjectModel } from '../lwm2m/objects/registry.js';
import { fromJson, toJson, type ObjectModelsTable, type Schema } from './schema.js';
import { toIso, toMs } from './sql.js';

export class SqlObjectModelStore implements ObjectModelStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async all(): Promise<StoredObjectModel[]> {
    const rows = await this.#db.selectFrom('object_models').selectAll().orderBy('account_id').orderBy('object_id').execute();
    return rows.map(toStored);
  }

  async put(accountId: string, models: readonly ObjectModel[], now: string): Promise<void> {
    if (models.length === 0) return;
    const at = toMs(now);
    await this.#db.transaction().execute(async (trx) => {
      for (const model of models) {
        await trx
          .insertInto('object_models')
          .values({ account_id: accountId, object_id: model.id, name: model.name, version: model.version, definition: toJson(toObjectJson(model)), created_at: at, updated_at: at })
          // A new upload of an object id replaces the old one but keeps when it was first uploaded.
          .onConflict((conflict) =>
            conflict.columns(['account_id', 'object_id']).doUpdateSet((eb) => ({
              name: eb.ref('excluded.name'),
              version: eb.ref('excluded.version'),
              definition: eb.ref('excluded.definition'),
              updated_at: eb.ref('excluded.updated_at'),
            })),
          )
          .execute();
      }
    });
  }

  async delete(accountId: string, objectId: number): Promise<boolean> {
    const result = await this.#db.deleteFrom('object_models').where('account_id', '=', accountId).where('object_id', '=', objectId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }
}

function toStored(row: Selectable<ObjectModelsTable>): StoredObjectModel {
  return {
    accountId: row.account_id,
    model: fromObjectJson(fromJson<ObjectJson>(row.definition)),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}
