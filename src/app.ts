import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { InternalCalls } from './api/internal-calls.js';
import { buildHttpApi } from './api/server.js';
import { BackgroundJobs } from './background-jobs.js';
import { ConfigError, ENV_NAMES, type Config } from './config.js';
import { createDomain, type Domain } from './domain/domain.js';
import type { DeviceChannels, DeviceServer } from './devices/device-server.js';
import { routeDeviceChannels } from './devices/device-routing.js';
import { OutboundHttp } from './devices/outbound-http.js';
import { DevicePresence } from './devices/presence.js';
import { SendCaps } from './devices/send-caps.js';
import { SendGuard } from './devices/send-guard.js';
import { shareCaches } from './domain/change-notices.js';
import { ClusterEventBus } from './events/cluster-bus.js';
import { DurableEventBus, type EventBus } from './events/event-bus.js';
import { MemoryCache } from './triggers/cache.js';
import { NO_MAILER, SmtpMailer } from './triggers/mailer.js';
import { TriggerEngine } from './triggers/engine.js';
import { LocalSignals } from './triggers/signals.js';
import { WorkerPool } from './triggers/sandbox/worker-pool.js';
import { createLogger } from './logger.js';
import { deviceServers, PROTOCOL_ROUTES, SERVICE_NAMESPACES, SERVICE_TYPES } from './protocols/index.js';
import { ServerCertificate } from './dtls/server-certificate.js';
import { BootstrapConfigs } from './lwm2m/bootstrap/configs.js';
import { ObjectRegistry } from './lwm2m/objects/registry.js';
import { openDatabase, type Database } from './store/database.js';
import { migrateToLatest } from './store/migrate.js';
import { sqlStores } from './store/stores.js';
import type { Redis } from 'ioredis';
import { PgBusShardStore } from './store/bus-shard-store.js';
import { VERSION } from './version.js';
import { Registry } from 'prom-client';
import { ScriptMetrics } from './observability/script-metrics.js';
import { ServiceMetrics } from './observability/service-metrics.js';
import { limitEndpoints } from './licence/endpoint-limit.js';
import { trustedKeys } from './licence/keys.js';
import { Licence, LICENCE_STATE_CODES } from './licence/licence.js';
import { createOidcSignIn } from './oidc/setup.js';
import { AccountLimits } from './admin/account-limits.js';
import { SuperDiagnostics } from './admin/diagnostics.js';
import { limitAccountEndpoints } from './admin/endpoint-quota.js';
import { SuperAdmin } from './admin/super-admin.js';

export interface Started {
  /** Bound ports by server name, e.g. `{ http: 8080 }` (the real port when 0 was asked for). */
  readonly ports: Record<string, number>;
  readonly rootAccountId: string;
  /** The root token generated on first start when no `IOTBRIDGE_ADMIN_TOKEN` was given; shown once. */
  readonly generatedRootToken: string | undefined;
}

/**
 * The composition root: builds storage, domain services and servers from configuration, and starts and
 * stops them in order. One instance is one running service.
 */
/** The device servers' ports that receive datagrams (what SendGuard keeps the service from sending to itself). */
const DATAGRAM_PORTS: ReadonlySet<string> = new Set(['udp', 'coap', 'coaps']);

export class IotBridge {
  readonly config: Config;
  readonly logger: Logger;
  #database: Database | undefined;
  /** Shared state of a cluster (`IOTBRIDGE_REDIS_URL`); undefined: it stays in this process. */
  #redis: Redis | undefined;
  #closeShared: (() => void) | undefined;
  #domain: Domain | undefined;
  #http: FastifyInstance | undefined;
  #prometheus: Server | undefined;
  #bus: EventBus | undefined;
  #jobs: BackgroundJobs | undefined;
  #scripts: WorkerPool | undefined;
  #presence: DevicePresence | undefined;
  #licence: Licence | undefined;
  #deviceServers: DeviceServer[] = [];
  readonly #channels: DeviceChannels = {};
  #ready = false;

  readonly #beforeBusStart: ((bus: EventBus) => void | Promise<void>) | undefined;
  readonly #clock: (() => number) | undefined;

  /**
   * `beforeBusStart` lets consumers subscribe before queued events from the last run are dispatched; `clock`
   * (epoch ms) is the time the licence is judged at, so tests move it instead of waiting.
   */
  constructor(config: Config, logger: Logger = createLogger(config.logLevel), options: { beforeBusStart?: (bus: EventBus) => void | Promise<void>; clock?: () => number } = {}) {
    this.config = config;
    this.logger = logger;
    this.#beforeBusStart = options.beforeBusStart;
    this.#clock = options.clock;
  }

  get domain(): Domain {
    if (!this.#domain) throw new Error('IotBridge is not started');
    return this.#domain;
  }

  /** Device presence (connected / unavailable, lifecycle events) shared by every protocol. */
  get presence(): DevicePresence {
    if (!this.#presence) throw new Error('IotBridge is not started');
    return this.#presence;
  }

  /** What the device servers offer scripts and the API (LwM2M device management, `udp.send`, …). */
  get devices(): DeviceChannels {
    return this.#channels;
  }

  /** The private-instance licence: its state (`off` unless `IOTBRIDGE_LICENSING`), installing one. */
  get licence(): Licence {
    if (!this.#licence) throw new Error('IotBridge is not started');
    return this.#licence;
  }

  /** The HTTP API's Fastify instance (tests: `compileRouteSchemas`, `inject`). */
  get http(): FastifyInstance {
    if (!this.#http) throw new Error('IotBridge is not started');
    return this.#http;
  }

  /** The event bus: consumers (the trigger engine, tests) subscribe here. */
  get bus(): EventBus {
    if (!this.#bus) throw new Error('IotBridge is not started');
    return this.#bus;
  }

  async start(): Promise<Started> {
    try {
      return await this.#start();
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  async #start(): Promise<Started> {
    const { config, logger } = this;
    const database = openDatabase(config, logger);
    this.#database = database;
    const applied = await migrateToLatest(database);
    logger.info({ dialect: database.dialect, location: database.location, migrationsApplied: applied }, 'storage ready');

    // With Redis other processes may write the endpoints too: their rows are read from the database every time.
    const sql = sqlStores(database, { dataDir: config.dataDir, endpointCacheSize: config.redisUrl === undefined ? config.endpointCacheSize : 0 });
    // Loaded only with a Redis URL (store/redis-kit.ts).
    const kit = config.redisUrl === undefined ? undefined : await import('./store/redis-kit.js');
    const redis = kit && { kit, client: await kit.openRedis(config.redisUrl!, logger) };
    this.#redis = redis?.client;
    // State the nodes of a cluster share (docs/cluster.md); without Redis it stays in this process.
    const shared = redis && { replies: await redis.kit.RedisReplies.open(redis.client), signals: await redis.kit.RedisSignals.open(redis.client) };
    let closeNotifier = (): void => undefined;
    let closeNotices = (): void => undefined;
    let closeNodeCalls = (): void => undefined;
    // PostgreSQL and Redis together make this process a node of a cluster (docs/cluster.md).
    const clustered = redis !== undefined && database.dialect === 'postgres';
    // A cluster's MQTT brokers of a service hear each other's messages ("MQTT").
    const mqttEmitters = clustered ? new redis.kit.RedisMqttEmitters(config.redisUrl!, logger) : undefined;
    this.#closeShared = () => {
      shared?.replies.close();
      shared?.signals.close();
      closeNotifier();
      closeNotices();
      closeNodeCalls();
      void mqttEmitters?.close();
    };
    const licence = new Licence({ required: config.licensing, store: sql.licence, keys: trustedKeys(config.licencePublicKeys), clock: this.#clock, logger });
    this.#licence = licence;
    await licence.start(config.licenceFile);
    // A licence's maxEndpoints is checked wherever endpoints are created; without licensing nothing is wrapped.
    const licensed = config.licensing ? { ...sql, endpoints: limitEndpoints(sql.endpoints, licence) } : sql;
    // Each account's maxEndpoints (a Super-Admin's limit), wherever endpoints are created.
    const accountLimits = new AccountLimits();
    const stores = { ...licensed, endpoints: limitAccountEndpoints(licensed.endpoints, accountLimits) };
    const adminStore = sql.admin;
    // Execution records of handled events are durable before the cursor passes them: the embedded hot path
    // commits them in order, the other stores are waited for.
    const recordsBeforeCursor = stores.executions.recordOne ? undefined : () => domain.executions.flush();
    const busOptions = { parallelism: config.eventParallelism, maxInMemory: config.eventBacklogInMemory, beforeCursorSave: recordsBeforeCursor, logger };
    // A cluster (PostgreSQL + Redis) shares the queue in shards leased by nodes; one process runs the embedded bus.
    const notifier = clustered ? await redis.kit.RedisBusNotifier.open(redis.client, config.nodeId, logger) : undefined;
    const bus = notifier
      ? new ClusterEventBus({ ...busOptions, node: config.nodeId, shards: new PgBusShardStore(database.db), notifier })
      : new DurableEventBus(stores.events, busOptions);
    closeNotifier = () => notifier?.close();
    if (notifier) logger.info({ node: config.nodeId }, 'cluster mode: events are handled in shards shared with the other nodes');
    this.#bus = bus;
    const outbound = new OutboundHttp(config.outboundAllow);
    const mailer = config.smtpUrl ? new SmtpMailer(config.smtpUrl, config.smtpFrom) : NO_MAILER;
    const domain = createDomain(
      stores,
      bus,
      config,
      {
      request: (request) => outbound.request(request),
      checkUrl: (url) => outbound.checkUrl(url),
      mail: config.smtpUrl ? async (message) => void (await mailer.send(message)) : undefined,
      onDeliveryFailure: (what, error) => logger.warn({ err: error }, `${what} not delivered`),
      },
      { replies: shared?.replies, clustered },
    );
    this.#domain = domain;
    // A cluster's nodes forget what another changed: triggers, services, revoked tokens.
    const notices = redis && (await redis.kit.RedisChangeNotices.open(redis.client, config.nodeId, logger));
    closeNotices = () => notices?.close();
    if (notices) shareCaches({ triggers: domain.triggers, services: domain.services, tokens: domain.tokens }, notices);
    domain.logs.watch((problem, detail) => logger.warn(detail, problem));
    const { rootAccountId, generatedRootToken } = await bootstrapRoot(domain, config, logger);
    // Suspensions and limits in memory before devices connect and queued events are handled.
    const superAdmin = new SuperAdmin({ store: adminStore, domain, rootAccountId, limits: accountLimits });
    await superAdmin.load();
    const oidc = await createOidcSignIn(config, { domain, store: sql.oidc, rootAccountId, logger });
    const internalCalls = new InternalCalls();
    const presence = new DevicePresence(domain, stores.endpoints, bus, { logger, gate: superAdmin, node: clustered ? config.nodeId : undefined });
    // A node that died took its devices' connections with it: they are disconnected once, by a survivor.
    if (bus instanceof ClusterEventBus) bus.onNodeLost((node) => void presence.nodeLost(node).catch((error: unknown) => logger.warn({ err: error, node }, 'could not mark a lost node\'s devices unavailable')));
    this.#presence = presence;
    const channels: DeviceChannels = this.#channels;
    this.#scripts = new WorkerPool({
      workers: config.scriptWorkers,
      limits: { timeoutMs: config.scriptTimeoutMs, wallTimeoutMs: config.scriptWallTimeoutMs, memoryMb: config.scriptMemoryMb },
      logger,
      sqlDir: path.join(config.dataDir, 'sql'),
    });
    // One registry for the operator's /metrics: the service's own families and scripts' (IOTBRIDGE_SCRIPT_METRICS).
    const metricsRegistry = new Registry();
    const scriptMetrics = config.scriptMetrics ? new ScriptMetrics(metricsRegistry, { metricsPerAccount: config.scriptMetricsMax, seriesPerMetric: config.scriptMetricsSeriesMax }) : undefined;
    const engine = new TriggerEngine({
      domain,
      runner: this.#scripts,
      services: { cache: redis ? new redis.kit.RedisCache(redis.client) : new MemoryCache(), signals: shared?.signals ?? new LocalSignals(), queues: sql.scriptQueues,
        api: internalCalls,
        mailer,
        devices: channels,
        scriptMetrics,
      },
      namespaces: SERVICE_NAMESPACES,
      wallTimeoutMs: config.scriptWallTimeoutMs,
      logger,
      runs: () => licence.processing,
      accounts: superAdmin,
    });
    engine.attach(bus);
    bus.subscribe((event) => domain.alerts.evaluate(event));
    // After the engine: the bus hands an event to its consumers in turn, so this one counts it handled.
    const metrics = new ServiceMetrics({
      onAccepted: (listener) => void bus.watch((events) => listener(events.length)),
      onHandled: (listener) => bus.subscribeBatches(async (events) => listener(events.length)),
      backlog: () => bus.backlog,
      onExecution: (listener) => domain.executions.observe(listener),
      connectedByProtocol: () => domain.metrics.connectedByProtocol(),
      scriptWorkers: () => this.#scripts?.pids.length ?? 0,
      deviceQueues: () => sql.queueDepths.deviceQueueDepths(),
      dialect: database.dialect,
      onQuery: (listener) => database.onQuery(listener),
      licenceState: () => LICENCE_STATE_CODES[licence.status().state],
    }, metricsRegistry);
    // LwM2M object registry: shipped definitions plus every account's uploads, read once here.
    const objects = new ObjectRegistry({ store: stores.objectModels });
    await objects.load();
    const bootstrapConfigs = new BootstrapConfigs(stores.bootstrapConfigs);
    const serverCertificate = config.coapsPort === -1 ? undefined : new ServerCertificate({ dataDir: config.dataDir, certFile: config.coapsCert, keyFile: config.coapsKey });
    await serverCertificate?.load();
    const sendGuard = new SendGuard();
    const sendCaps = new SendCaps({
      endpoint: { messagesPerSecond: config.endpointSendRate, bytesPerSecond: config.endpointSendBytes },
      account: { messagesPerSecond: config.accountSendRate, bytesPerSecond: config.accountSendBytes },
    });
    const ports: Record<string, number> = {};
    // The cluster's periodic work (sweeps) is done by the node holding bus shard 0's lease: one node per database.
    const leads = () => bus instanceof ClusterEventBus && bus.state.shards[0] === 0;
    const onNodeLost = (listener: (node: string) => void) => bus instanceof ClusterEventBus && bus.onNodeLost(listener);
    const cluster = mqttEmitters && notices ? { mqtt: { emitterFor: (serviceId: string) => mqttEmitters.forService(serviceId), notices }, lwm2m: { node: config.nodeId, notices, onNodeLost, leads } } : undefined;
    this.#deviceServers = deviceServers({ config, logger, domain, presence, channels, stores: sql.devices, scripts: engine, objects, bootstrapConfigs, serverCertificate, sendGuard, sendCaps, outbound, ports, cluster });
    // A cluster's device calls run on the node that heard the device ("Routing device calls").
    const nodeCalls = clustered ? await redis.kit.RedisNodeCalls.open(redis.client, config.nodeId, logger) : undefined;
    closeNodeCalls = () => nodeCalls?.close();
    if (nodeCalls) routeDeviceChannels(channels, { calls: nodeCalls, heardBy: (endpoint) => presence.heardBy(endpoint), endpointOf: (scope, ref) => domain.endpoints.get(scope, ref) });
    superAdmin.onSuspended(async (accountId) => {
      let ended = 0;
      for (const server of this.#deviceServers) ended += (await server.closeAccount?.(accountId)) ?? 0;
      if (ended > 0) logger.info({ accountId, connections: ended }, 'devices of a suspended account disconnected');
    });
    await this.#beforeBusStart?.(bus);
    await bus.start();
    this.#jobs = new BackgroundJobs({ domain, stores, config, logger });
    this.#jobs.start();
    presence.start();
    for (const server of this.#deviceServers) Object.assign(ports, await server.start());
    // What the guard lets out is datagrams (UDP, CoAP, LwM2M): only the ports that take datagrams could loop. A device
    // whose UDP port number happens to be one of the service's TCP ports (HTTP, MQTT) is an ordinary device.
    sendGuard.addOwnPorts(Object.entries(ports).flatMap(([name, port]) => (DATAGRAM_PORTS.has(name) ? [port] : [])));

    const scripts = this.#scripts;
    const diagnostics = new SuperDiagnostics(adminStore, {
      backlog: () => bus.backlog,
      workers: () => scripts.state,
      workersConfigured: config.scriptWorkers,
      connectedByProtocol: () => domain.metrics.connectedByProtocol(),
      deviceServers: () => Object.fromEntries(Object.entries(ports).filter(([name]) => name !== 'http' && name !== 'prometheus')),
      retention: { historyDays: config.historyRetentionDays, executionDays: config.executionRetentionDays, logDays: config.logRetentionDays },
      dialect: database.dialect,
      suspended: () => superAdmin.suspension.accounts.length,
    });
    // `/ready` in a cluster: this node's share of the bus.
    const readiness = bus instanceof ClusterEventBus ? () => ({ node: bus.state.node, shards: bus.state.shards.length, liveNodes: bus.state.liveNodes }) : undefined;
    const http = await buildHttpApi({ domain, engine, presence, internalCalls, logger, version: VERSION, isReady: () => this.#ready, cluster: readiness, objects, bootstrapConfigs, serverCertificate, devices: channels, protocols: { serviceTypes: SERVICE_TYPES, routes: PROTOCOL_ROUTES }, trustProxy: config.trustProxy, downloads: { publicHost: config.publicHost, ports }, fileMaxBytes: config.fileMaxBytes, importMaxBytes: config.importMaxBytes, importJobs: sql.importJobs, uiDir: config.uiDir, metrics, licence, oidc, superAdmin: { admin: superAdmin, diagnostics } });
    this.#http = http;
    ports.http = await listen(http, config.httpPort, config.httpHost);
    if (config.prometheusPort !== undefined) {
      this.#prometheus = await servePrometheus(metrics, config.prometheusPort, config.prometheusHost);
      ports.prometheus = (this.#prometheus.address() as AddressInfo).port;
    }
    for (const server of this.#deviceServers) await server.ready?.();
    this.#ready = true;
    const listening = Object.entries(ports).map(([name, port]) => `${name} ${port}`).join(', ');
    logger.info({ ports, version: VERSION }, `IoT Bridge ready: ${listening}`);
    return { ports, rootAccountId, generatedRootToken };
  }

  /** Stops accepting work, lets requests in flight finish, then closes storage. */
  async stop(): Promise<void> {
    this.#ready = false;
    this.#licence?.stop();
    await this.#jobs?.stop();
    await this.#http?.close();
    await new Promise((resolve) => (this.#prometheus ? this.#prometheus.close(resolve) : resolve(undefined)));
    this.#prometheus = undefined;
    // Devices first: what they sent before the stop is durable once the bus is stopped.
    for (const server of [...this.#deviceServers].reverse()) await server.stop();
    this.#deviceServers = [];
    await this.#presence?.stop();
    await this.#bus?.stop();
    await this.#scripts?.stop();
    await this.#domain?.executions.flush();
    await this.#domain?.logs.stop();
    await this.#domain?.location.usage.flush();
    await this.#database?.close();
    this.#closeShared?.();
    this.#redis?.disconnect();
    this.#redis = undefined;
    this.#http = undefined;
    this.#bus = undefined;
    this.#scripts = undefined;
    this.#database = undefined;
  }
}

/** First start: the root account. Every start: the configured admin token and user, when given. */
async function bootstrapRoot(domain: Domain, config: Config, logger: Logger): Promise<{ rootAccountId: string; generatedRootToken: string | undefined }> {
  const { account: root, created } = await domain.accounts.ensureRoot();
  let generatedRootToken: string | undefined;
  if (config.adminToken) {
    if (await domain.tokens.ensure(config.adminToken, root.accountId, 'admin (IOTBRIDGE_ADMIN_TOKEN)')) {
      logger.info('created the root account Super-Admin token given in IOTBRIDGE_ADMIN_TOKEN');
    }
  } else if (created) {
    generatedRootToken = (await domain.tokens.issueRootToken(root.accountId, 'root (generated on first start)')).token;
    // The secret goes to the operator's terminal (cli.ts), never into logs that are shipped elsewhere.
    logger.warn({ rootAccountId: root.accountId }, 'first start: generated a Super-Admin API token for the root account (printed once on stderr)');
  }
  if (config.adminEmail && config.adminPassword) {
    if (await domain.users.ensure(root.accountId, config.adminEmail, config.adminPassword)) {
      logger.info({ email: config.adminEmail }, 'created the root account Super-Admin user from IOTBRIDGE_ADMIN_EMAIL');
    }
  }
  return { rootAccountId: root.accountId, generatedRootToken };
}
/** `/metrics` without authentication on a port of its own
 (`IOTBRIDGE_PROMETHEUS_PORT`): for a scraper on the operator's network. */
async function servePrometheus(metrics: ServiceMetrics, port: number, host: string): Promise<Server> {
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || (request.url ?? '').split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('GET /metrics\n');
      return;
    }
    metrics.exposition().then(
      ({ contentType, text }) => response.writeHead(200, { 'content-type': contentType }).end(text),
      (error: unknown) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`${(error as Error).message}\n`),
    );
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, resolve);
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new ConfigError(`Prometheus port ${port} is already in use: set ${ENV_NAMES.prometheusPort} to a free port (0 picks one)`);
    }
    throw error;
  }
  return server;
}

async function listen(http: FastifyInstance, port: number, host: string): Promise<number> {
  try {
    await http.listen({ port, host });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new ConfigError(`HTTP port ${port} is already in use: set ${ENV_NAMES.httpPort} to a free port (0 picks one)`);
    }
    throw error;
  }
  return (http.server.address() as AddressInfo).port;
}
