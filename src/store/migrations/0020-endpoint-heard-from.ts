import type { Kysely, Migration } from 'kysely';

/**
 * Where each device was last heard from, and on which protocol: the only address the service sends to
 * (`udp.send`, `coap.send`). Written by device presence alone; the API writes `status_details`, whose
 * `remoteAddr` is only a report of it. Existing rows start empty rather than copied from `remoteAddr`,
 * which the API could write until now: a device is sent to again once it has been heard from again.
 * Numbered after 0019 (already applied by databases that ran it; the migrator refuses one sorting before).
 */
export function endpointHeardFrom(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema.alterTable('endpoints').addColumn('heard_protocol', 'text').execute();
      await db.schema.alterTable('endpoints').addColumn('heard_addr', 'text').execute();
    },
  };
}
