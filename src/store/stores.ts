import path from 'node:path';
import type { DomainStores } from '../domain/domain.js';
import type { BootstrapConfigStore } from '../lwm2m/bootstrap/configs.js';
import type { ObjectModelStore } from '../lwm2m/objects/registry.js';
import type { Database } from './database.js';
import { SqlAccountStore } from './account-store.js';
import { SqlBootstrapConfigStore } from './bootstrap-config-store.js';
import { SqlDeviceSecurityStore } from './device-security-store.js';
import { DiskFileStore } from './disk-file-store.js';
import { SqlFileLinkStore } from './file-link-store.js';
import { EndpointReadCache } from './endpoint-read-cache.js';
import { SqlEndpointStore } from './endpoint-store.js';
import { SqlEventStore } from './event-store.js';
import { SqlObjectModelStore } from './object-model-store.js';
import { PgFileStore } from './pg-file-store.js';
import { SqlServiceStore } from './service-store.js';
import { SqlTokenStore } from './token-store.js';
import { SqlExecutionStore, SqlTriggerStore } from './trigger-store.js';
import { SqlMetricsStore } from './metrics-store.js';
import { SqlUserStore } from './user-store.js';
import { SqlGeofenceStore, SqlPositionStore } from './geofence-store.js';
import { SqlLocationServiceStore } from './location-service-store.js';
import { SqlReportStore } from './report-store.js';
import { SqlAlertStore } from './alert-store.js';
import { SqlLogStore } from './log-store.js';
import { SqlLicenceStore } from './licence-store.js';
import { SqlSolutionStore } from './solution-store.js';
import type { LicenceStore } from '../licence/model.js';
import type { ImportJobStore } from '../imex/import-job-store.js';
import { SqlImportJobStore } from './import-job-store.js';
import type { AdminStore } from '../admin/model.js';
import { SqlAdminStore } from './admin-store.js';
import type { OidcStore } from '../oidc/model.js';
import { SqlOidcStore } from './oidc-store.js';
import type { ScriptQueueStore } from '../triggers/queues.js';
import { SqlScriptQueueStore } from './script-queue-store.js';
import type { QueueDepthStore } from '../observability/queue-depths.js';
import { SqlQueueDepthStore } from './queue-depth-store.js';
import type { DeviceStores } from '../devices/device-server.js';
import { SqlRegistrationStore } from './lwm2m-registration-store.js';
import { SqlLastKnownStore } from './lwm2m-last-known-store.js';
import { SqlObservationStore } from './lwm2m-observation-store.js';
import { SqlDeviceQueueStore } from './lwm2m-queue-store.js';
import { SqlFotaStore } from './fota-store.js';
import { SqlMqttSessionStore } from './mqtt-session-store.js';
import { SqlUdpQueueStore } from './udp-queue-store.js';

/**
 * The domain's stores plus those of subsystems beside it (the LwM2M object registry, bootstrap configurations,
 * Super-Admin, sign-in, script queues) and of the device servers: every store the service uses, made here.
 */
export interface Stores extends DomainStores {
  readonly objectModels: ObjectModelStore;
  readonly bootstrapConfigs: BootstrapConfigStore;
  /** The private-instance licence record (src/licence/). */
  readonly licence: LicenceStore;
  /** Import jobs (src/imex/import-jobs.ts). */
  readonly importJobs: ImportJobStore;
  /** Super-Admin account controls and the diagnostics' cross-account reads (src/admin/). */
  readonly admin: AdminStore;
  /** External sign-in: the claim mapping and identity links (src/oidc/). */
  readonly oidc: OidcStore;
  /** Scripts' named queues (`queue.put/get/flush`). */
  readonly scriptQueues: ScriptQueueStore;
  /** What waits for devices, for /metrics. */
  readonly queueDepths: QueueDepthStore;
  /** The device servers' state: the slice each protocol server is given (DeviceServerContext.stores). */
  readonly devices: DeviceStores;
}

export interface StoreOptions {
  /**
   * `config.dataDir`: the embedded file store keeps contents in `<dataDir>/files/`. Defaults to the directory of
   * the SQLite file, which `openDatabase` puts there. Unused on PostgreSQL (contents are in the database).
   */
  readonly dataDir?: string | undefined;
  /**
   * Endpoint rows kept in memory for reads (endpoint-read-cache.ts), 0 or left out for none: only where this
   * process makes every write to the endpoints (not a node of a cluster).
   */
  readonly endpointCacheSize?: number | undefined;
}

/** Every store on one Kysely database (SQLite or PostgreSQL alike; SQLite adds its hot path for the event pipeline). */
export function sqlStores(database: Database, options: StoreOptions = {}): Stores {
  const { db } = database;
  const { hot } = database;
  const endpointCache = options.endpointCacheSize ? new EndpointReadCache(options.endpointCacheSize) : undefined;
  return {
    accounts: new SqlAccountStore(db, endpointCache),
    tokens: new SqlTokenStore(db),
    users: new SqlUserStore(db),
    services: new SqlServiceStore(db, endpointCache),
    endpoints: new SqlEndpointStore(db, database.dialect, { hot, cache: endpointCache }),
    deviceSecurity: new SqlDeviceSecurityStore(db),
    events: new SqlEventStore(db, hot),
    triggers: new SqlTriggerStore(db),
    executions: new SqlExecutionStore(db, hot),
    metrics: new SqlMetricsStore(db),
    objectModels: new SqlObjectModelStore(db),
    bootstrapConfigs: new SqlBootstrapConfigStore(db),
    // File contents: in the database on PostgreSQL (every node of a cluster sees them), beside it on disk embedded.
    files: database.dialect === 'postgres' ? new PgFileStore(db) : new DiskFileStore(db, options.dataDir ?? path.dirname(database.location)),
    fileLinks: new SqlFileLinkStore(db),
    locationServices: new SqlLocationServiceStore(db),
    geofences: new SqlGeofenceStore(db),
    positions: new SqlPositionStore(db),
    reports: new SqlReportStore(db),
    alerts: new SqlAlertStore(db),
    logs: new SqlLogStore(db, database.dialect),
    solutions: new SqlSolutionStore(db),
    licence: new SqlLicenceStore(db),
    importJobs: new SqlImportJobStore(db),
    admin: new SqlAdminStore(db, database.dialect),
    oidc: new SqlOidcStore(db),
    scriptQueues: new SqlScriptQueueStore(db),
    queueDepths: new SqlQueueDepthStore(db),
    devices: deviceStores(database),
  };
}

/** On SQLite, registrations and last-known values are written through the hot path (the busiest LwM2M writes). */
function deviceStores(database: Database): DeviceStores {
  const { db, hot } = database;
  return {
    lwm2m: {
      registrations: new SqlRegistrationStore(db, hot),
      lastKnown: new SqlLastKnownStore(db, hot),
      observations: new SqlObservationStore(db),
      queue: new SqlDeviceQueueStore(db),
      fota: new SqlFotaStore(db),
    },
    mqtt: new SqlMqttSessionStore(db),
    udp: new SqlUdpQueueStore(db),
  };
}
