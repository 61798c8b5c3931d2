import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { Database } from './database.js';
import { initial } from './migrations/0001-initial.js';
import { events } from './migrations/0002-events.js';
import { triggers } from './migrations/0003-triggers.js';
import { scriptState } from './migrations/0004-script-state.js';
import { objectModels } from './migrations/0005-object-models.js';
import { endpointPresence } from './migrations/0006-endpoint-presence.js';
import { udpQueue } from './migrations/0008-udp-queue.js';
import { eventCursor } from './migrations/0011-event-cursor.js';
import { endpointCredentials } from './migrations/0012-endpoint-credentials.js';
import { mqttSessions } from './migrations/0013-mqtt-sessions.js';
import { mqttSessionExpiry } from './migrations/0015-mqtt-session-expiry.js';
import { eventEndpointIndex } from './migrations/0016-event-endpoint-index.js';
import { eventsTimeIndex } from './migrations/0017-events-time-index.js';
import { endpointsKeyIndex } from './migrations/0019-endpoints-key-index.js';
import { endpointHeardFrom } from './migrations/0020-endpoint-heard-from.js';
import { usersEmailPerAccount } from './migrations/0021-users-email-per-account.js';
import { lwm2mRegistrations } from './migrations/0022-lwm2m-registrations.js';
import { lwm2mLastKnown } from './migrations/0023-lwm2m-last-known.js';
import { lwm2mObservations } from './migrations/0024-lwm2m-observations.js';
import { lwm2mQueue } from './migrations/0025-lwm2m-queue.js';
import { lwm2mBootstrapConfigs } from './migrations/0026-lwm2m-bootstrap-configs.js';
import { endpointSecurity } from './migrations/0027-endpoint-security.js';
import { files } from './migrations/0028-files.js';
import { fileLinks } from './migrations/0029-file-links.js';
import { fota } from './migrations/0030-fota.js';
import { dashboardIndexes } from './migrations/0031-dashboard-indexes.js';
import { location } from './migrations/0032-location.js';
import { reports } from './migrations/0033-reports.js';
import { alerts } from './migrations/0034-alerts.js';
import { logs } from './migrations/0035-logs.js';
import { metricsIndexes } from './migrations/0036-metrics-indexes.js';
import { reportSchedules } from './migrations/0037-report-schedules.js';
import { licence } from './migrations/0038-licence.js';
import { oidc } from './migrations/0039-oidc.js';
import { solutions } from './migrations/0040-solutions.js';
import { superAdmin } from './migrations/0041-super-admin.js';
import { importJobs } from './migrations/0042-import-jobs.js';
import { busShards } from './migrations/0043-bus-shards.js';
import { heardNode } from './migrations/0044-heard-node.js';
import { fotaJobNode } from './migrations/0045-fota-job-node.js';
import { leanExecutions } from './migrations/0046-lean-executions.js';
import { mqttReleased } from './migrations/0047-mqtt-released.js';
import { mqttSubscriptionOptions } from './migrations/0048-mqtt-subscription-options.js';

/** Versioned migrations, in order. Never edit one that has shipped: add the next. */
function migrations(database: Database): Record<string, Migration> {
  return {
    '0001-initial': initial(database.dialect),
    '0002-events': events(database.dialect),
    '0003-triggers': triggers(database.dialect),
    '0004-script-state': scriptState(database.dialect),
    '0005-object-models': objectModels(database.dialect),
    '0006-endpoint-presence': endpointPresence(database.dialect),
    '0008-udp-queue': udpQueue(database.dialect),
    '0011-event-cursor': eventCursor(database.dialect),
    '0012-endpoint-credentials': endpointCredentials(database.dialect),
    '0013-mqtt-sessions': mqttSessions(database.dialect),
    '0015-mqtt-session-expiry': mqttSessionExpiry(database.dialect),
    '0016-event-endpoint-index': eventEndpointIndex(database.dialect),
    '0017-events-time-index': eventsTimeIndex(database.dialect),
    '0019-endpoints-key-index': endpointsKeyIndex(),
    '0020-endpoint-heard-from': endpointHeardFrom(),
    '0021-users-email-per-account': usersEmailPerAccount(database.dialect),
    '0022-lwm2m-registrations': lwm2mRegistrations(),
    '0023-lwm2m-last-known': lwm2mLastKnown(),
    '0024-lwm2m-observations': lwm2mObservations(),
    '0025-lwm2m-queue': lwm2mQueue(),
    '0026-lwm2m-bootstrap-configs': lwm2mBootstrapConfigs(),
    '0027-endpoint-security': endpointSecurity(),
    '0028-files': files(database.dialect),
    '0029-file-links': fileLinks(database.dialect),
    '0030-fota': fota(),
    '0031-dashboard-indexes': dashboardIndexes(),
    '0032-location': location(),
    '0033-reports': reports(database.dialect),
    '0034-alerts': alerts(),
    '0035-logs': logs(database.dialect),
    '0036-metrics-indexes': metricsIndexes(),
    '0037-report-schedules': reportSchedules(),
    '0038-licence': licence(),
    '0039-oidc': oidc(),
    '0040-solutions': solutions(database.dialect),
    '0041-super-admin': superAdmin(),
    '0042-import-jobs': importJobs(),
    '0043-bus-shards': busShards(),
    '0044-heard-node': heardNode(),
    '0045-fota-job-node': fotaJobNode(),
    '0046-lean-executions': leanExecutions(database.dialect),
    '0047-mqtt-released': mqttReleased(),
    '0048-mqtt-subscription-options': mqttSubscriptionOptions(),
  };
}

/** Brings the schema up to date; run at every start. Returns the names of the migrations applied now. */
export async function migrateToLatest(database: Database): Promise<string[]> {
  const provider: MigrationProvider = { getMigrations: async () => migrations(database) };
  const migrator = new Migrator({ db: database.db, provider, migrationTableName: 'iotbridge_migrations', migrationLockTableName: 'iotbridge_migrations_lock' });
  const { error, results = [] } = await migrator.migrateToLatest();
  const failed = results.find((result) => result.status === 'Error');
  if (error || failed) {
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${String((error as Error | undefined)?.message ?? error)}`);
  }
  return results.filter((result) => result.status === 'Success').map((result) => result.migrationName);
}
