/** Typed configuration of one service process. Every field has a documented default. */
export interface Config {
  /** HTTP API port. `IOTBRIDGE_HTTP_PORT`, default 8080; 0 picks a free port. */
  readonly httpPort: number;
  /** Address the HTTP API binds. `IOTBRIDGE_HTTP_HOST`, default `0.0.0.0`. */
  readonly httpHost: string;
  /**
   * Which reverse proxies' X-Forwarded-For to believe for a client's address (sign-in throttling, logs).
   * `IOTBRIDGE_TRUST_PROXY`: unset (none), `true` (any), a hop count, or comma-separated addresses/CIDRs.
   */
  readonly trustProxy: boolean | number | string;
  /** CoAP/LwM2M UDP port. `IOTBRIDGE_COAP_PORT`, default 5683; 0 picks a free port. */
  readonly coapPort: number;
  /** Address CoAP binds. `IOTBRIDGE_COAP_HOST`, default unset: `::` dual-stack (IPv6 and IPv4). */
  readonly coapHost: string | undefined;
  /** CoAPS (DTLS) device port. `IOTBRIDGE_COAPS_PORT`, default 5684; 0 picks a free port; -1 turns CoAPS off. */
  readonly coapsPort: number;
  /** DTLS server certificate and key (PEM files); unset: a self-signed one is made at first start and kept in the data directory. `IOTBRIDGE_COAPS_CERT`, `IOTBRIDGE_COAPS_KEY`. */
  readonly coapsCert: string | undefined;
  readonly coapsKey: string | undefined;
  /** How long an LwM2M device in queue mode counts as awake after it was heard from. `IOTBRIDGE_LWM2M_AWAKE_MS`, default 93000 (MAX_TRANSMIT_WAIT). */
  readonly lwm2mAwakeMs: number;
  /**
   * CoAP and CoAPS requests a second one device (address and port) may send before it is answered 4.29, with
   * bursts of twice as many; raise it for gateways that speak for many sensors. `IOTBRIDGE_COAP_PEER_RATE`,
   * default 100; 0 turns the limit off.
   */
  readonly coapPeerRate: number;
  /** How long each request of a bootstrap session waits for the device. `IOTBRIDGE_LWM2M_BOOTSTRAP_STEP_TIMEOUT_MS`, default 30000. */
  readonly lwm2mBootstrapStepTimeoutMs: number;
  /** Cluster mode: how often one node ends the LwM2M requests and observations no node holds (and their grace). `IOTBRIDGE_LWM2M_SWEEP_MS`, default 60000. */
  readonly lwm2mSweepMs: number;
  /** UDP device port, shared by every UDP service (IPv4 and IPv6). `IOTBRIDGE_UDP_PORT`, default 5700; 0 picks a free port. */
  readonly udpPort: number;
  /** TCP device port, shared by every TCP service (IPv4 and IPv6). `IOTBRIDGE_TCP_PORT`, default 5700; 0 picks a free port. */
  readonly tcpPort: number;
  /** MQTT device port (MQTT 3.1.1 over TCP), shared by every MQTT service. `IOTBRIDGE_MQTT_PORT`, default 1883; 0 picks a free port. */
  readonly mqttPort: number;
  /** Address the MQTT listeners bind. `IOTBRIDGE_MQTT_HOST`, default unset: `::` dual-stack. */
  readonly mqttHost: string | undefined;
  /** MQTT over TLS. `IOTBRIDGE_MQTT_TLS_PORT` (8883 is usual), default unset: off. Needs the two files below. */
  readonly mqttTlsPort: number | undefined;
  /** PEM certificate chain and private key of the TLS listener. `IOTBRIDGE_MQTT_TLS_CERT`, `IOTBRIDGE_MQTT_TLS_KEY`. */
  readonly mqttTlsCert: string | undefined;
  readonly mqttTlsKey: string | undefined;
  /** MQTT over WebSocket (path `/mqtt`). `IOTBRIDGE_MQTT_WS_PORT`, default unset: off. */
  readonly mqttWsPort: number | undefined;
  /**
   * Caps on what scripts send to devices (`udp.send`, `udp.queue`, `coap.send`, `coap.notify`, `tcp.send`),
   * per endpoint and per account, in messages and bytes per second; bursts of twice that. Over a cap the call
   * fails with 429 `IOTB_DEVICE_SEND_RATE_LIMITED` and nothing is sent. `IOTBRIDGE_ENDPOINT_SEND_RATE`
   * (default 100), `IOTBRIDGE_ENDPOINT_SEND_BYTES` (1048576), `IOTBRIDGE_ACCOUNT_SEND_RATE` (1000),
   * `IOTBRIDGE_ACCOUNT_SEND_BYTES` (10485760).
   */
  readonly endpointSendRate: number;
  readonly endpointSendBytes: number;
  readonly accountSendRate: number;
  readonly accountSendBytes: number;
  /**
   * Addresses that tenant-configured outbound HTTP (a LoRa service's `apiUrl`) may reach although they are not
   * public: comma-separated CIDRs or addresses, e.g. a network server on the operator's private network.
   * `IOTBRIDGE_OUTBOUND_ALLOW`, default none (only public addresses).
   */
  readonly outboundAllow: readonly string[];
  /** Largest MQTT packet accepted; a bigger one closes the connection before it is read. `IOTBRIDGE_MQTT_MAX_PACKET_BYTES`, default 262144. */
  readonly mqttMaxPacketBytes: number;
  /** Directory for the embedded SQLite database and other local state. `IOTBRIDGE_DATA_DIR`, default `./data`. */
  readonly dataDir: string;
  /** Largest file `POST /file/upload` and `PUT /file/{name}/content` accept (bytes); over it: 413, nothing stored. `IOTBRIDGE_FILE_MAX_BYTES`, default 64 MiB. */
  readonly fileMaxBytes: number;
  /** Largest document `POST /imex/import` and `/import` accept (bytes); over it: 413, nothing imported. `IOTBRIDGE_IMPORT_MAX_BYTES`, default 256 MiB. */
  readonly importMaxBytes: number;
  /**
   * Host name (or address) devices use to reach this service, put into the URLs they are sent (download links,
   * FOTA Package URIs). `IOTBRIDGE_PUBLIC_HOST`, default unset: the address the device's request came to.
   */
  readonly publicHost: string | undefined;
  /** A `postgres://` URL switches storage to PostgreSQL. `IOTBRIDGE_DATABASE_URL`, default unset (SQLite). */
  readonly databaseUrl: string | undefined;
  /**
   * A `redis://` (or `rediss://`) URL: state that several processes share (the script cache first; docs/cluster.md).
   * `IOTBRIDGE_REDIS_URL`, default unset (in this process).
   */
  readonly redisUrl: string | undefined;
  /**
   * This process's name among the nodes of a cluster (with a PostgreSQL database and Redis: docs/cluster.md).
   * `IOTBRIDGE_NODE_ID`, default the host name, process id and a random part: unique for each start.
   */
  readonly nodeId: string;
  /** An `AT:` token made a Super-Admin token of the root account at start. `IOTBRIDGE_ADMIN_TOKEN`. */
  readonly adminToken: string | undefined;
  /** Optional first user of the root account. `IOTBRIDGE_ADMIN_EMAIL` and `IOTBRIDGE_ADMIN_PASSWORD`. */
  readonly adminEmail: string | undefined;
  readonly adminPassword: string | undefined;
  /** Lifetime of a `UT:` user token issued by `POST /auth/login`. `IOTBRIDGE_USER_TOKEN_TTL` seconds, default 86400. */
  readonly userTokenTtlSeconds: number;
  /** How long a verified token is trusted without asking the database. `IOTBRIDGE_TOKEN_CACHE_TTL` seconds, default 10. */
  readonly tokenCacheTtlSeconds: number;
  /**
   * Endpoints whose rows are kept in memory for reads (`GET /endpoints/{ref}`, scripts' `endpoint.get`); each write
   * forgets what it changed. Not used with `IOTBRIDGE_REDIS_URL` (other nodes write too). 0 turns it off.
   * `IOTBRIDGE_ENDPOINT_CACHE_SIZE`, default 100000 (about 0.7 KB a row: ~70 MB when full).
   */
  readonly endpointCacheSize: number;
  /**
   * Shortest password a person may choose for a device (`PUT /endpoints/{ref}/credentials {"password"}`); raise
   * it to push fleets towards generated secrets. `IOTBRIDGE_DEVICE_PASSWORD_MIN_LENGTH`, default 8, at most 256.
   */
  readonly devicePasswordMinLength: number;
  /**
   * How long a log-in with a chosen device password may expect to wait for its check (2 at once, ~5 ms each)
   * before the device is told to try later (MQTT 5 0x89, 3.1.1 CONNACK 3) instead of queueing.
   * `IOTBRIDGE_DEVICE_PASSWORD_MAX_WAIT_MS`, default 10000. Generated secrets never wait.
   */
  readonly devicePasswordMaxWaitMs: number;
  /** How many endpoints' events are handled at once (`core.trigger.event.parallelism`). `IOTBRIDGE_EVENT_PARALLELISM`, default 50. */
  readonly eventParallelism: number;
  /**
   * How many accepted events may wait in memory for their turn; past it, newer ones wait in the database and
   * are read back in order. `IOTBRIDGE_EVENT_BACKLOG_IN_MEMORY`, default 10000.
   */
  readonly eventBacklogInMemory: number;
  /** Live event streams (`GET /events/stream`) one account may have open at once; past it 429. `IOTBRIDGE_EVENT_STREAMS_PER_ACCOUNT`, default 10. */
  readonly eventStreamsPerAccount: number;
  /** Live event streams this process serves at once; past it 503. `IOTBRIDGE_EVENT_STREAMS_MAX`, default 1000. */
  readonly eventStreamsMax: number;
  /**
   * Bytes of events one live stream may hold for a client that does not read them; past it the client is cut off
   * (`event: overflow`). `IOTBRIDGE_EVENT_STREAM_QUEUE_BYTES`, default 262144.
   */
  readonly eventStreamQueueBytes: number;
  /** Days events stay in the history; 0 keeps them forever. `IOTBRIDGE_HISTORY_RETENTION_DAYS`, default 30. */
  readonly historyRetentionDays: number;
  /** Seconds a geolocation answer is reused for the same observations; 0 never. `IOTBRIDGE_LOCATION_CACHE_SECONDS`, default 86400. */
  readonly locationCacheSeconds: number;
  /** How long an HTTP location provider may take to answer. `IOTBRIDGE_LOCATION_PROVIDER_TIMEOUT_MS`, default 5000. */
  readonly locationProviderTimeoutMs: number;
  /** Geofences one account may have. `IOTBRIDGE_GEOFENCES_MAX`, default 100000. */
  readonly geofencesMax: number;
  /** Seconds an account's `GET /metrics/fields` census is answered before a call refreshes it. `IOTBRIDGE_METRICS_FIELDS_MAX_AGE_SECONDS`, default 60. */
  readonly metricsFieldsMaxAgeSeconds: number;
  /**
   * A port of its own for `/metrics` (Prometheus text format) without authentication; unset: only `GET /metrics`
   * on the API with a Super-Admin token. `IOTBRIDGE_PROMETHEUS_PORT` (0 picks a free one).
   */
  readonly prometheusPort: number | undefined;
  /** Host the Prometheus port binds to. `IOTBRIDGE_PROMETHEUS_HOST`, default 127.0.0.1. */
  readonly prometheusHost: string;
  /** The script `prometheus` class: scripts' metrics in `/metrics` with an `account` label. `IOTBRIDGE_SCRIPT_METRICS`, default false. */
  readonly scriptMetrics: boolean;
  /** Script metrics one account may define. `IOTBRIDGE_SCRIPT_METRICS_MAX`, default 50. */
  readonly scriptMetricsMax: number;
  /** Label-value combinations one account may have in one script metric. `IOTBRIDGE_SCRIPT_METRICS_SERIES_MAX`, default 1000. */
  readonly scriptMetricsSeriesMax: number;
  /** Days trigger execution records are kept; 0 keeps them forever. `IOTBRIDGE_EXECUTION_RETENTION_DAYS`, default 30. */
  readonly executionRetentionDays: number;
  /** Days account log entries (`GET /log`) are kept; 0 keeps them forever. `IOTBRIDGE_LOG_RETENTION_DAYS`, default 7. */
  readonly logRetentionDays: number;
  /** How often alert rules over state (unavailable, no data, trigger failures) are checked. `IOTBRIDGE_ALERT_CHECK_SECONDS`, default 30. */
  readonly alertCheckSeconds: number;
  /** Script worker processes. `IOTBRIDGE_SCRIPT_WORKERS`, default 1. */
  readonly scriptWorkers: number;
  /** CPU time one trigger run may use. `IOTBRIDGE_SCRIPT_TIMEOUT_MS`, default 1000. */
  readonly scriptTimeoutMs: number;
  /** Wall time one run may take, host calls included. `IOTBRIDGE_SCRIPT_WALL_TIMEOUT_MS`, default 30000. */
  readonly scriptWallTimeoutMs: number;
  /** Heap of one account's script isolate. `IOTBRIDGE_SCRIPT_MEMORY_MB`, default 64. */
  readonly scriptMemoryMb: number;
  /** SMTP server for scripts' `email.send`: `smtp://user:pass@host:587` or `smtps://…`. `IOTBRIDGE_SMTP_URL`, default unset (email off). */
  readonly smtpUrl: string | undefined;
  /** Sender address of script mail. `IOTBRIDGE_SMTP_FROM`, default `iotbridge@localhost`. */
  readonly smtpFrom: string;
  /** pino level. `IOTBRIDGE_LOG_LEVEL`, default `info`. */
  readonly logLevel: string;
  /**
   * The built web UI served at `/` (`npm run build` writes it). `IOTBRIDGE_UI_DIR`, default `dist/ui` of this
   * package; without an `index.html` there, `/` answers a page that says to build it.
   */
  readonly uiDir: string;
  /**
   * The private-instance licence (docs/admin.md "Licence"): `IOTBRIDGE_LICENSING`, default false (open source: no
   * licence, nothing changes). When true, a 7-day grace period starts at the first start; after it, without a
   * valid licence, triggers stop running.
   */
  readonly licensing: boolean;
  /**
   * Keys trusted to sign licences besides the vendor's built-in one: PEM or base64 SPKI, comma-separated, or file
   * paths. Whoever sets it licenses the installation themselves. `IOTBRIDGE_LICENCE_PUBLIC_KEYS`, default none.
   */
  readonly licencePublicKeys: readonly string[];
  /** A licence file installed at start (unless the stored licence runs as long or longer). `IOTBRIDGE_LICENCE_FILE`. */
  readonly licenceFile: string | undefined;
  /**
   * External sign-in with OpenID Connect (docs/admin.md "External sign-in (OIDC)"): the provider's issuer URL
   * (https; http only on a loopback host). `IOTBRIDGE_OIDC_ISSUER`, default unset: off. With it:
   * `IOTBRIDGE_OIDC_CLIENT_ID` (required), `IOTBRIDGE_OIDC_CLIENT_SECRET` (unset: a public client, PKCE only),
   * `IOTBRIDGE_OIDC_MODE` (`domain` | `organization`; unset: the mapping's `mode`), `IOTBRIDGE_OIDC_SCOPES` (default
   * `openid email profile`), `IOTBRIDGE_OIDC_REDIRECT_URL` (default: the request's own `/auth/oidc/callback`),
   * `IOTBRIDGE_OIDC_MAPPING` (a JSON mapping file; unset: the one set with `PUT /auth/oidc/mapping`) and
   * `IOTBRIDGE_OIDC_NAME` (the label of the UI's sign-in button, default `OpenID Connect`).
   */
  readonly oidcIssuer: string | undefined;
  readonly oidcClientId: string | undefined;
  readonly oidcClientSecret: string | undefined;
  readonly oidcMode: 'domain' | 'organization' | undefined;
  readonly oidcScopes: string;
  readonly oidcRedirectUrl: string | undefined;
  readonly oidcMapping: string | undefined;
  readonly oidcName: string;
}

export const DEFAULTS = {
  httpPort: 8080,
  httpHost: '0.0.0.0',
  // No IANA port exists for raw device UDP/TCP; 5683/5684 belong to CoAP, which this service also serves.
  coapPort: 5683,
  coapsPort: 5684,
  lwm2mAwakeMs: 93_000,
  coapPeerRate: 100,
  lwm2mBootstrapStepTimeoutMs: 30_000,
  lwm2mSweepMs: 60_000,
  udpPort: 5700,
  tcpPort: 5700,
  mqttPort: 1883,
  mqttMaxPacketBytes: 262_144,
  endpointSendRate: 100,
  endpointSendBytes: 1_048_576,
  fileMaxBytes: 64 * 1024 * 1024,
  importMaxBytes: 256 * 1024 * 1024,
  accountSendRate: 1000,
  accountSendBytes: 10_485_760,
  dataDir: './data',
  userTokenTtlSeconds: 86_400,
  tokenCacheTtlSeconds: 10,
  endpointCacheSize: 100_000,
  devicePasswordMinLength: 8,
  devicePasswordMaxWaitMs: 10_000,
  eventParallelism: 50,
  eventBacklogInMemory: 10_000,
  eventStreamsPerAccount: 10,
  eventStreamsMax: 1000,
  eventStreamQueueBytes: 262_144,
  historyRetentionDays: 30,
  locationCacheSeconds: 86_400,
  locationProviderTimeoutMs: 5000,
  geofencesMax: 100_000,
  metricsFieldsMaxAgeSeconds: 60,
  prometheusHost: '127.0.0.1',
  scriptMetrics: false,
  licensing: false,
  oidcScopes: 'openid email profile',
  oidcName: 'OpenID Connect',
  scriptMetricsMax: 50,
  scriptMetricsSeriesMax: 1000,
  executionRetentionDays: 30,
  logRetentionDays: 7,
  alertCheckSeconds: 30,
  scriptWorkers: 1,
  scriptTimeoutMs: 1000,
  scriptWallTimeoutMs: 30_000,
  scriptMemoryMb: 64,
  smtpFrom: 'iotbridge@localhost',
  logLevel: 'info',
} as const;

/** The environment variable that sets each field, used in messages that tell an operator what to change. */
export const ENV_NAMES: Record<keyof Config, string> = {
  httpPort: 'IOTBRIDGE_HTTP_PORT',
  httpHost: 'IOTBRIDGE_HTTP_HOST',
  trustProxy: 'IOTBRIDGE_TRUST_PROXY',
  coapPort: 'IOTBRIDGE_COAP_PORT',
  coapHost: 'IOTBRIDGE_COAP_HOST',
  coapsPort: 'IOTBRIDGE_COAPS_PORT',
  coapsCert: 'IOTBRIDGE_COAPS_CERT',
  coapsKey: 'IOTBRIDGE_COAPS_KEY',
  lwm2mAwakeMs: 'IOTBRIDGE_LWM2M_AWAKE_MS',
  coapPeerRate: 'IOTBRIDGE_COAP_PEER_RATE',
  lwm2mBootstrapStepTimeoutMs: 'IOTBRIDGE_LWM2M_BOOTSTRAP_STEP_TIMEOUT_MS',
  lwm2mSweepMs: 'IOTBRIDGE_LWM2M_SWEEP_MS',
  udpPort: 'IOTBRIDGE_UDP_PORT',
  tcpPort: 'IOTBRIDGE_TCP_PORT',
  mqttPort: 'IOTBRIDGE_MQTT_PORT',
  mqttHost: 'IOTBRIDGE_MQTT_HOST',
  mqttTlsPort: 'IOTBRIDGE_MQTT_TLS_PORT',
  mqttTlsCert: 'IOTBRIDGE_MQTT_TLS_CERT',
  mqttTlsKey: 'IOTBRIDGE_MQTT_TLS_KEY',
  mqttWsPort: 'IOTBRIDGE_MQTT_WS_PORT',
  mqttMaxPacketBytes: 'IOTBRIDGE_MQTT_MAX_PACKET_BYTES',
  outboundAllow: 'IOTBRIDGE_OUTBOUND_ALLOW',
  endpointSendRate: 'IOTBRIDGE_ENDPOINT_SEND_RATE',
  endpointSendBytes: 'IOTBRIDGE_ENDPOINT_SEND_BYTES',
  accountSendRate: 'IOTBRIDGE_ACCOUNT_SEND_RATE',
  accountSendBytes: 'IOTBRIDGE_ACCOUNT_SEND_BYTES',
  dataDir: 'IOTBRIDGE_DATA_DIR',
  fileMaxBytes: 'IOTBRIDGE_FILE_MAX_BYTES',
  importMaxBytes: 'IOTBRIDGE_IMPORT_MAX_BYTES',
  publicHost: 'IOTBRIDGE_PUBLIC_HOST',
  databaseUrl: 'IOTBRIDGE_DATABASE_URL',
  redisUrl: 'IOTBRIDGE_REDIS_URL',
  nodeId: 'IOTBRIDGE_NODE_ID',
  adminToken: 'IOTBRIDGE_ADMIN_TOKEN',
  adminEmail: 'IOTBRIDGE_ADMIN_EMAIL',
  adminPassword: 'IOTBRIDGE_ADMIN_PASSWORD',
  userTokenTtlSeconds: 'IOTBRIDGE_USER_TOKEN_TTL',
  tokenCacheTtlSeconds: 'IOTBRIDGE_TOKEN_CACHE_TTL',
  endpointCacheSize: 'IOTBRIDGE_ENDPOINT_CACHE_SIZE',
  devicePasswordMinLength: 'IOTBRIDGE_DEVICE_PASSWORD_MIN_LENGTH',
  devicePasswordMaxWaitMs: 'IOTBRIDGE_DEVICE_PASSWORD_MAX_WAIT_MS',
  eventParallelism: 'IOTBRIDGE_EVENT_PARALLELISM',
  eventBacklogInMemory: 'IOTBRIDGE_EVENT_BACKLOG_IN_MEMORY',
  eventStreamsPerAccount: 'IOTBRIDGE_EVENT_STREAMS_PER_ACCOUNT',
  eventStreamsMax: 'IOTBRIDGE_EVENT_STREAMS_MAX',
  eventStreamQueueBytes: 'IOTBRIDGE_EVENT_STREAM_QUEUE_BYTES',
  historyRetentionDays: 'IOTBRIDGE_HISTORY_RETENTION_DAYS',
  locationCacheSeconds: 'IOTBRIDGE_LOCATION_CACHE_SECONDS',
  locationProviderTimeoutMs: 'IOTBRIDGE_LOCATION_PROVIDER_TIMEOUT_MS',
  geofencesMax: 'IOTBRIDGE_GEOFENCES_MAX',
  metricsFieldsMaxAgeSeconds: 'IOTBRIDGE_METRICS_FIELDS_MAX_AGE_SECONDS',
  prometheusPort: 'IOTBRIDGE_PROMETHEUS_PORT',
  prometheusHost: 'IOTBRIDGE_PROMETHEUS_HOST',
  scriptMetrics: 'IOTBRIDGE_SCRIPT_METRICS',
  scriptMetricsMax: 'IOTBRIDGE_SCRIPT_METRICS_MAX',
  scriptMetricsSeriesMax: 'IOTBRIDGE_SCRIPT_METRICS_SERIES_MAX',
  executionRetentionDays: 'IOTBRIDGE_EXECUTION_RETENTION_DAYS',
  logRetentionDays: 'IOTBRIDGE_LOG_RETENTION_DAYS',
  alertCheckSeconds: 'IOTBRIDGE_ALERT_CHECK_SECONDS',
  scriptWorkers: 'IOTBRIDGE_SCRIPT_WORKERS',
  scriptTimeoutMs: 'IOTBRIDGE_SCRIPT_TIMEOUT_MS',
  scriptWallTimeoutMs: 'IOTBRIDGE_SCRIPT_WALL_TIMEOUT_MS',
  scriptMemoryMb: 'IOTBRIDGE_SCRIPT_MEMORY_MB',
  smtpUrl: 'IOTBRIDGE_SMTP_URL',
  smtpFrom: 'IOTBRIDGE_SMTP_FROM',
  logLevel: 'IOTBRIDGE_LOG_LEVEL',
  uiDir: 'IOTBRIDGE_UI_DIR',
  licensing: 'IOTBRIDGE_LICENSING',
  licencePublicKeys: 'IOTBRIDGE_LICENCE_PUBLIC_KEYS',
  licenceFile: 'IOTBRIDGE_LICENCE_FILE',
  oidcIssuer: 'IOTBRIDGE_OIDC_ISSUER',
  oidcClientId: 'IOTBRIDGE_OIDC_CLIENT_ID',
  oidcClientSecret: 'IOTBRIDGE_OIDC_CLIENT_SECRET',
  oidcMode: 'IOTBRIDGE_OIDC_MODE',
  oidcScopes: 'IOTBRIDGE_OIDC_SCOPES',
  oidcRedirectUrl: 'IOTBRIDGE_OIDC_REDIRECT_URL',
  oidcMapping: 'IOTBRIDGE_OIDC_MAPPING',
  oidcName: 'IOTBRIDGE_OIDC_NAME',
};
