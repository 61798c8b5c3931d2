import { sql, type Kysely, type Migration } from 'kysely';

/**
 * `GET /metrics/status` on accounts of 100,000 endpoints:
 * - `endpoints_account_seen` (account, last seen, id): the account's endpoints by last activity, newest or oldest
 *   first, read a page (`limit`) at a time instead of sorting them all; the id makes the order total.
 * - `endpoints_service_seen` (service, last seen): a service's last activity (its endpoints' latest) in one
 *   look-up per service.
 * - `logs_endpoint_problems` (account, time) of the log entries that count as an endpoint's errors (level error,
 *   or any entry of a device): partial, so the many info lines of scripts neither pay for it nor are read.
 */
/** The log entries an endpoint's `errors` count; metrics-store.ts repeats it word for word so SQLite uses the index. */
const ENDPOINT_PROBLEM = "endpoint_id is not null and (level = 'error' or source = 'device')";

export function metricsIndexes(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema.createIndex('endpoints_account_seen').ifNotExists().on('endpoints').columns(['account_id', 'last_seen_at', 'id']).execute();
      await db.schema.createIndex('endpoints_service_seen').ifNotExists().on('endpoints').columns(['service_id', 'last_seen_at']).execute();
      await db.schema
        .createIndex('logs_endpoint_problems')
        .ifNotExists()
        .on('logs')
        .columns(['account_id', 'time'])
        .where(sql.raw<boolean>(ENDPOINT_PROBLEM))
        .execute();
    },
  };
}
