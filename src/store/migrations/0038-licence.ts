import type { Kysely, Migration } from 'kysely';

/**
 * The private-instance licence (src/licence/): one row, written at the first start with licensing on, holding
 * the installed licence text and when the grace period began (never moved by later starts).
 */
export function licence(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('licence')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('licence', 'text')
        .addColumn('grace_started_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  };
}
