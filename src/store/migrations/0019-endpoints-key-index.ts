import type { Kysely, Migration } from 'kysely';

/**
 * `endpoints_key`: a device logging in on a shared port names only its key, so its endpoint is found by key
 * across accounts (`findDevices`), and a key is refused in one account while another account's device of
 * the same protocol holds it. Without this index both probed `endpoints_service_key` once per service.
 */
export function endpointsKeyIndex(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema.createIndex('endpoints_key').on('endpoints').column('key').execute();
    },
  };
}
