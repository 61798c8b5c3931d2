import type { ColumnType, Generated } from 'kysely';

/**
 * Table shapes as Kysely sees them. JSON columns are `text` on SQLite and `jsonb` on PostgreSQL:
 * written and read as JSON text on both (the pg pool is told not to parse json/jsonb).
 * Times are epoch milliseconds (`bigint` on PostgreSQL, parsed to number by the pool).
 * Flags are integers 0/1 on both, so one code path reads them.
 */
type Json = ColumnType<unknown, string, string>;

export interface AccountsTable {
  id: string;
  name: string;
  parent_id: string | null;
  /** Materialised path `/<root>/<child>/.../<id>/`: "is a descendant" is a prefix test. */
  path: string;
  external_refs: Json;
  created_at: number;
  updated_at: number;
}

export interface UsersTable {
  id: string;
  account_id: string;
  email: string;
  name: string;
  password_hash: string;
  super_admin: number;
  created_at: number;
  updated_at: number;
}

export interface TokensTable {
  id: string;
  account_id: string;
  kind: string;
  name: string;
  secret_hash: string;
  super_admin: number;
  user_id: string | null;
  expires_at: number | null;
  created_at: number;
  /** Who a support token was issued by (`POST /super/impersonate`, migration 0041); null for every other token. */
  impersonated_by: string | null;
}

export interface ServicesTable {
  id: string;
  account_id: string;
  name: string;
  type: string;
  options: Json;
  created_at: number;
  updated_at: number;
}

export interface EndpointsTable {
  id: string;
  account_id: string;
  service_id: string;
  key: string;
  tags: Json;
  status_details: Json;
  parameters: Json;
  trace: number;
  created_at: number;
  updated_at: number;
  /** `connected` | `unavailable`; written only through `setPresence` (device protocols), never by edits. */
  state: Generated<string>;
  last_seen_at: number | null;
  missing_after: number | null;
  /** The protocol and `host:port` the device was last heard from; written only through `setPresence`, never by edits. */
  heard_protocol: string | null;
  heard_addr: string | null;
  /** Cluster mode: the node that heard it there (whose socket it talks to); null in one process. */
  heard_node: string | null;
}

/** One row per tag, so tag filters use an index instead of scanning JSON. */
export interface EndpointTagsTable {
  endpoint_id: string;
  account_id: string;
  name: string;
  /** `''` for a bare `key` tag. */
  value: string;
}

/** An endpoint's device password (MQTT log-in), scrypt `hashPassword` output; never leaves the domain. */
export interface EndpointCredentialsTable {
  endpoint_id: string;
  password_hash: string;
  updated_at: number;
}

export interface EndpointStorageTable {
  endpoint_id: string;
  name: string;
  value: Json;
  updated_at: number;
}

export interface EventsTable {
  seq: Generated<number>;
  id: string;
  account_id: string;
  type: string;
  service_id: string | null;
  endpoint_id: string | null;
  endpoint_key: string | null;
  time: number;
  data: Json;
  /** The event's shard in cluster mode (src/events/shards.ts); written on PostgreSQL, 0 on SQLite's hot path. */
  bus_shard: Generated<number>;
}

/** A shard of cluster mode's event bus: how far it is handled and which node holds its lease until when (ms). */
export interface BusShardsTable {
  shard: number;
  handled_through: number;
  owner: string | null;
  lease_until: number;
}

/** A node of a cluster, alive while `seen_until` (ms, the database's clock) is ahead. */
export interface BusNodesTable {
  node: string;
  seen_until: number;
  started_at: number;
}

/**
 * Positions in the event sequence: `bus`, how far the bus has handled it; `endpoint-index`, how far
 * `event_endpoints` covers it.
 */
export interface EventCursorTable {
  name: string;
  handled_through: number;
}

/** The history's by-endpoint index, written in bulk behind the newest events (migration 0016). */
export interface EventEndpointsTable {
  endpoint_id: string;
  seq: number;
}

export interface TriggersTable {
  id: string;
  account_id: string;
  name: string;
  events: Json;
  filters: Json;
  script: string;
  enabled: number;
  library: number;
  globals: Json;
  form: Json;
  version: number;
  created_at: number;
  updated_at: number;
}

export interface ExecutionsTable {
  seq: Generated<number>;
  id: string;
  account_id: string;
  trigger_id: string;
  event_id: string;
  event_type: string;
  started_at: number;
  duration_ms: number;
  status: string;
  error: string | null;
  line: number | null;
  logs: Json;
  test: number;
  context: Json;
  groups: Json;
}

export interface ScriptQueuesTable {
  seq: Generated<number>;
  account_id: string;
  name: string;
  value: Json;
  expires_at: number;
}

/** LwM2M object definitions uploaded by accounts; `definition` is the object as JSON (ObjectJson). */
export interface ObjectModelsTable {
  account_id: string;
  object_id: number;
  name: string;
  version: string;
  definition: Json;
  created_at: number;
  updated_at: number;
}

export interface UdpQueueTable {
  seq: Generated<number>;
  endpoint_id: string;
  /** base64 */
  payload: string;
  expires_at: number;
}

export interface MqttRetainedTable {
  service_id: string;
  topic: string;
  /** JSON of the stored packet (payload base64), see src/store/mqtt-session-store.ts. */
  packet: string;
}

export interface MqttSubscriptionsTable {
  service_id: string;
  client_id: string;
  topic: string;
  qos: number;
}

export interface MqttOutgoingTable {
  seq: Generated<number>;
  service_id: string;
  client_id: string;
  broker_id: string;
  broker_counter: number;
  message_id: number | null;
  packet: string;
}

export interface MqttIncomingTable {
  service_id: string;
  client_id: string;
  message_id: number;
  packet: string;
}

export interface MqttSessionExpiryTable {
  service_id: string;
  client_id: string;
  expires_at: number;
}

export interface Lwm2mRegistrationsTable {
  id: string;
  endpoint_id: string;
  account_id: string;
  service_id: string;
  peer_address: string;
  peer_port: number;
  /** JSON: what the device said in its Register and Updates (RegistrationParameters). */
  parameters: string;
  registered_at: number;
  updated_at: number;
}

export interface Lwm2mLastKnownTable {
  endpoint_id: string;
  path: string;
  /** JSON: `{path, type, value, time?}`. */
  record: string;
  updated_at: number;
}

export interface Lwm2mObservationsTable {
  token: string;
  endpoint_id: string;
  registration_id: string;
  operation: string;
  path: string;
  /** JSON array of an Observe-Composite's paths; null for a single path. */
  paths: string | null;
  format: number;
  since: number;
}

export interface Lwm2mQueueTable {
  id: string;
  account_id: string;
  endpoint_id: string;
  /** Order per device. */
  seq: number;
  /** `queued` (purged by a new registration) or `proxy` (waits through it, lwm2m.proxy_send). */
  kind: string;
  /** JSON: the operation request (without its timeouts). */
  request: string;
  /** JSON: the caller's context, given back in the lwm2m-result events. */
  context: string;
  created_at: number;
  expires_at: number;
}

export interface Lwm2mBootstrapConfigsTable {
  endpoint_id: string;
  account_id: string;
  /** JSON: the checked configuration (src/lwm2m/bootstrap/config.ts), PSK key included. */
  config: string;
  updated_at: number;
}

export interface EndpointSecurityTable {
  endpoint_id: string;
  account_id: string;
  /** `psk` or `x509`. */
  mode: string;
  /** Unique across accounts. */
  psk_identity: string | null;
  /** Hex. */
  psk_key: string | null;
  updated_at: number;
}

/** The file repository's files (migration 0028): metadata per account and name; the content is the blob `sha256`. */
export interface FilesTable {
  account_id: string;
  /** Compared byte for byte (collation "C" on PostgreSQL, binary on SQLite). */
  name: string;
  size: number;
  /** Lower-case hex: the blob (a file under `<dataDir>/files/` embedded, `file_chunks` rows on PostgreSQL). */
  sha256: string;
  content_type: string;
  version: string | null;
  /** JSON array, in the order given; `file_tags` holds one row per tag for filters. */
  tags: Json;
  created_by: string | null;
  created_at: number;
  updated_at: number;
}

export interface FileTagsTable {
  account_id: string;
  file_name: string;
  tag: string;
}

/** Blob contents on PostgreSQL only: 256 KiB pieces, `idx` from 0 (an empty blob has none). */
export interface FileChunksTable {
  /** The blob's SHA-256 (hex); a temporary key while its upload's transaction is open. */
  blob: string;
  idx: number;
  data: Buffer;
}

/** Download links (migration 0029): the SHA-256 of each token, and the file content it was made for. */
export interface FileLinksTable {
  /** base64url SHA-256 of the token (as `tokens.secret_hash`). */
  token_hash: string;
  account_id: string;
  name: string;
  /** The content pinned at creation: a link serves exactly these bytes or nothing. */
  sha256: string;
  size: number;
  expires_at: number;
  created_at: number;
  created_by: string | null;
}

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

/** An import job (src/imex/import-jobs.ts, migration 0042); `counts` is JSON, `updated_at` the running job's heartbeat. */
export interface ImportJobsTable {
  id: string;
  account_id: string;
  state: string;
  dry_run: number;
  counts: string;
  error: string | null;
  started_at: number;
  finished_at: number | null;
  updated_at: number;
}

/** An account's suspension and limits set by a Super-Admin (src/admin/, migration 0041); no row: neither. */
export interface AccountControlsTable {
  account_id: string;
  suspended_at: number | null;
  suspended_reason: string | null;
  /** Who suspended it: a user id or token id of the root account. */
  suspended_by: string | null;
  max_endpoints: number | null;
  events_per_second: number | null;
  script_cpu_ms_per_minute: number | null;
  updated_at: number;
}

/** One row (id 1): the external sign-in mapping set with PUT /auth/oidc/mapping, as JSON (src/oidc/). */
export interface OidcMappingTable {
  id: number;
  mapping: string;
  updated_at: number;
  updated_by: string | null;
}

/** The user an identity of a provider (issuer, subject) signs in as, per account (src/oidc/). */
export interface OidcIdentitiesTable {
  issuer: string;
  subject: string;
  account_id: string;
  user_id: string;
  created_at: number;
  last_sign_in_at: number;
}

/** One row (id 1): the installed licence text and when the grace period began (src/licence/). */
export interface LicenceTable {
  id: number;
  licence: string | null;
  grace_started_at: number;
  updated_at: number;
}

export interface LogsTable {
  seq: Generated<number>;
  account_id: string;
  time: number;
  /** error, warn, info, debug. */
  level: string;
  /** script, api, device, audit, alert, … */
  source: string;
  message: string;
  endpoint_id: string | null;
  endpoint_key: string | null;
  trigger_id: string | null;
  /** JSON object, or null. */
  data: string | null;
}

export interface AlertRulesTable {
  id: string;
  account_id: string;
  name: string;
  severity: string;
  /** JSON: string[]. */
  tags: string;
  /** JSON: AlertCondition. */
  condition: string;
  /** JSON: AlertNotify (the webhook secret included: never returned by the API). */
  notify: string;
  /** 1 or 0. */
  enabled: number;
  created_at: number;
  updated_at: number;
}

export interface AlertsTable {
  id: string;
  account_id: string;
  rule_id: string | null;
  name: string;
  severity: string;
  /** JSON: string[]. */
  tags: string;
  endpoint_id: string | null;
  endpoint_key: string | null;
  state: string;
  /** JSON. */
  value: string | null;
  occurrences: number;
  opened_at: number;
  updated_at: number;
  closed_at: number | null;
  /** JSON: AlertChange[]. */
  history: string;
}

export interface ReportsTable {
  id: string;
  account_id: string;
  name: string;
  description: string | null;
  /** JSON: ReportColumn[]. */
  columns: string;
  retention_days: number;
  created_at: number;
  updated_at: number;
  /** JSON: ReportSchedule, or null when the report is not mailed. */
  schedule: string | null;
  next_send_at: number | null;
  last_sent_at: number | null;
}

export interface ReportEntriesTable {
  id: Generated<number>;
  report_id: string;
  time: number;
  /** JSON object. */
  data: string;
}

export interface LocationUsageTable {
  account_id: string;
  /** UTC day, YYYY-MM-DD. */
  day: string;
  /** geolocate, geolocate:<provider type>, forward, reverse, geofence-eval. */
  kind: string;
  count: number;
}

export interface LocationServicesTable {
  id: string;
  account_id: string;
  name: string;
  /** embedded, google, unwiredlabs, nominatim. */
  type: string;
  /** Fallback order within the account, from 0. */
  position: number;
  url: string | null;
  /** Write-only: never returned by the API. */
  api_key: string | null;
  created_at: number;
  updated_at: number;
}

export interface LocationCellsTable {
  service_id: string;
  /** OpenCelliD's radio: GSM, UMTS, CDMA, LTE, NR. */
  radio: string;
  mcc: number;
  mnc: number;
  area: number;
  cell: number;
  lat: number;
  lon: number;
  range: number;
  samples: number;
}

export interface LocationWifiTable {
  service_id: string;
  /** Lower case, colon-separated. */
  mac: string;
  lat: number;
  lon: number;
  range: number;
}

export interface GeofencesTable {
  id: string;
  account_id: string;
  name: string;
  description: string | null;
  /** JSON: string[]. */
  tags: string;
  /** JSON: {geometry} or {circle}. */
  shape: string;
  created_at: number;
  updated_at: number;
}

export interface GeofencePresenceTable {
  endpoint_id: string;
  geofence_id: string;
  entered_at: number;
}

export interface EndpointPositionsTable {
  endpoint_id: string;
  account_id: string;
  lat: number;
  lon: number;
  accuracy: number | null;
  source: string;
  at: number;
}

export interface FotaJobsTable {
  id: string;
  account_id: string;
  /** JSON: name, sha256, size, version of the file when the job was made. */
  file: string;
  /** JSON: FotaOptions. */
  options: string;
  /** JSON: FotaSelector. */
  selector: string;
  concurrency: number;
  rate_per_minute: number | null;
  /** running, finished, cancelled. */
  state: string;
  created_by: string | null;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
  /** Cluster mode: the node driving the job; null in one process. */
  node: string | null;
}

export interface FotaDevicesTable {
  job_id: string;
  endpoint_id: string;
  account_id: string;
  /** Order in the job. */
  seq: number;
  step: string;
  outcome: string | null;
  mode: string | null;
  update_result: number | null;
  reason: string | null;
  failed_step: string | null;
  previous_version: string | null;
  version: string | null;
  started_at: number | null;
  finished_at: number | null;
  updated_at: number;
}

export function toJson(value: unknown): string {
  return JSON.stringify(value ?? null);
}

/** Reads a JSON column: both dialects hand it over as JSON text (see database.ts). */
export function fromJson<T>(value: unknown): T {
  return JSON.parse(value as string) as T;
}

/** The template catalogue (src/solutions/): parameters and document as JSON text. */
export interface SolutionTemplatesTable {
  id: string;
  account_id: string;
  account_path: string;
  name: string;
  version: string;
  description: string;
  parameters: string;
  document: string;
  created_by: string;
  created_at: number;
  updated_at: number;
}

/** One installation per template name and account; `snapshot` (JSON) is what it applied, read back. */
export interface SolutionInstallationsTable {
  id: string;
  account_id: string;
  template_id: string;
  template_name: string;
  version: string;
  parameters: string;
  snapshot: string;
  installed_at: number;
  updated_at: number;
  installed_by: string;
}

/** Installs, upgrades and uninstalls, in the order they were recorded (`seq`). */
export interface SolutionHistoryTable {
  seq: Generated<number>;
  id: string;
  account_id: string;
  installation_id: string;
  template_id: string;
  template: string;
  version: string;
  action: string;
  outcome: string;
  parameters: string;
  details: string;
  at: number;
  acted_by: string;
}

/** A trigger's once-event, claimed (unique per trigger and key) before it is published; `emitted_at` once it was. */
export interface OnceEventsTable {
  trigger_id: string;
  claim_key: string;
  account_id: string;
  event_id: string;
  data: string;
  claimed_at: number;
  emitted_at: number | null;
}
