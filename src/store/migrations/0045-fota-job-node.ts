import type { Kysely, Migration } from 'kysely';

/**
 * Cluster mode: the node that drives each FOTA job (docs/cluster.md). A node that starts takes up only its own
 * running jobs, and the survivors take up those of a node that died; null in one process, which drives them all.
 */
export function fotaJobNode(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema.alterTable('fota_jobs').addColumn('node', 'text').execute();
    },
  };
}
