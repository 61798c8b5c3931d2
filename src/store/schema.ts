/**
 * Table shapes as Kysely sees them. JSON columns are `text` on SQLite and `jsonb` on PostgreSQL:
 * written and read as JSON text on both (the pg pool is told not to parse json/jsonb).
 * Times are epoch milliseconds (`bigint` on PostgreSQL, parsed to number by the pool).
 * Flags are integers 0/1 on both, so one code path reads them.
 *
 * This file is the front: it holds `Schema`, which maps each table name to its shape, and re-exports the
 * shapes and helpers, which sit beside it by concept:
 * - schema-accounts.ts:   accounts, users, tokens, account controls, OIDC sign-in, the licence
 * - schema-devices.ts:    services, endpoints and their tags, credentials, storage and security
 * - schema-events.ts:     events, bus, cursor, endpoint index, triggers, executions, script queues, once-events
 * - schema-protocols.ts:  the UDP queue, MQTT sessions, LwM2M tables, bootstrap configurations, object models
 * - schema-files.ts:      the file repository (files, tags, chunks, links) and FOTA jobs
 * - schema-location.ts:   location services, cells, Wi-Fi, usage, geofences, endpoint positions
 * - schema-operations.ts: import jobs, logs, alerts, reports, solutions
 * - schema-json.ts:       the `Json` column type and `toJson`/`fromJson`
 */
import type {
  AccountControlsTable,
  AccountsTable,
  LicenceTable,
  OidcIdentitiesTable,
  OidcMappingTable,
  TokensTable,
  UsersTable,
} from './schema-accounts.js';
import type {
  EndpointCredentialsTable,
  EndpointSecurityTable,
  EndpointsTable,
  EndpointStorageTable,
  EndpointTagsTable,
  ServicesTable,
} from './schema-devices.js';
import type {
  BusNodesTable,
  BusShardsTable,
  EventCursorTable,
  EventEndpointsTable,
  EventsTable,
  ExecutionsTable,
  OnceEventsTable,
  ScriptQueuesTable,
  TriggersTable,
} from './schema-events.js';
import type {
  Lwm2mBootstrapConfigsTable,
  Lwm2mLastKnownTable,
  Lwm2mObservationsTable,
  Lwm2mQueueTable,
  Lwm2mRegistrationsTable,
  MqttIncomingTable,
  MqttOutgoingTable,
  MqttRetainedTable,
  MqttSessionExpiryTable,
  MqttSubscriptionsTable,
  ObjectModelsTable,
  UdpQueueTable,
} from './schema-protocols.js';
import type {
  FileChunksTable,
  FileLinksTable,
  FilesTable,
  FileTagsTable,
  FotaDevicesTable,
  FotaJobsTable,
} from './schema-files.js';
import type {
  EndpointPositionsTable,
  GeofencePresenceTable,
  GeofencesTable,
  LocationCellsTable,
  LocationServicesTable,
  LocationUsageTable,
  LocationWifiTable,
} from './schema-location.js';
import type {
  AlertRulesTable,
  AlertsTable,
  ImportJobsTable,
  LogsTable,
  ReportEntriesTable,
  ReportsTable,
  SolutionHistoryTable,
  SolutionInstallationsTable,
  SolutionTemplatesTable,
} from './schema-operations.js';

// The shapes and helpers live beside the front; importers keep naming them from here.
export type * from './schema-accounts.js';
export type * from './schema-devices.js';
export type * from './schema-events.js';
export type * from './schema-protocols.js';
export type * from './schema-files.js';
export type * from './schema-location.js';
export type * from './schema-operations.js';
export { fromJson, toJson } from './schema-json.js';

export interface Schema {
  accounts: AccountsTable;
  users: UsersTable;
  tokens: TokensTable;
  services: ServicesTable;
  endpoints: EndpointsTable;
  endpoint_tags: EndpointTagsTable;
  endpoint_storage: EndpointStorageTable;
  endpoint_credentials: EndpointCredentialsTable;
  events: EventsTable;
  event_cursor: EventCursorTable;
  event_endpoints: EventEndpointsTable;
  triggers: TriggersTable;
  executions: ExecutionsTable;
  script_queues: ScriptQueuesTable;
  object_models: ObjectModelsTable;
  udp_queue: UdpQueueTable;
  mqtt_retained: MqttRetainedTable;
  mqtt_subscriptions: MqttSubscriptionsTable;
  mqtt_outgoing: MqttOutgoingTable;
  mqtt_incoming: MqttIncomingTable;
  mqtt_session_expiry: MqttSessionExpiryTable;
  lwm2m_registrations: Lwm2mRegistrationsTable;
  lwm2m_last_known: Lwm2mLastKnownTable;
  lwm2m_observations: Lwm2mObservationsTable;
  lwm2m_queue: Lwm2mQueueTable;
  lwm2m_bootstrap_configs: Lwm2mBootstrapConfigsTable;
  endpoint_security: EndpointSecurityTable;
  files: FilesTable;
  file_tags: FileTagsTable;
  file_chunks: FileChunksTable;
  file_links: FileLinksTable;
  fota_jobs: FotaJobsTable;
  fota_devices: FotaDevicesTable;
  location_services: LocationServicesTable;
  location_cells: LocationCellsTable;
  location_wifi: LocationWifiTable;
  geofences: GeofencesTable;
  geofence_presence: GeofencePresenceTable;
  endpoint_positions: EndpointPositionsTable;
  location_usage: LocationUsageTable;
  reports: ReportsTable;
  report_entries: ReportEntriesTable;
  alert_rules: AlertRulesTable;
  alerts: AlertsTable;
  logs: LogsTable;
  licence: LicenceTable;
  oidc_mapping: OidcMappingTable;
  oidc_identities: OidcIdentitiesTable;
  solution_templates: SolutionTemplatesTable;
  solution_installations: SolutionInstallationsTable;
  solution_history: SolutionHistoryTable;
  once_events: OnceEventsTable;
  account_controls: AccountControlsTable;
  import_jobs: ImportJobsTable;
  bus_shards: BusShardsTable;
  bus_nodes: BusNodesTable;
}
