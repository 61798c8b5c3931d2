import type { Kysely, Migration } from 'kysely';

/**
 * `endpoints_account_state_service`: the dashboard's counts of an account's endpoints by state and by service
 * (`GET /metrics/distribution`) are grouped counts read from this index alone, never from the rows; a state
 * filter within an account uses its prefix too.
 */
export function dashboardIndexes(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema.createIndex('endpoints_account_state_service').ifNotExists().on('endpoints').columns(['account_id', 'state', 'service_id']).execute();
    },
  };
}
