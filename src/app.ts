import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { InternalCalls } from './api/internal-calls.js';
import { buildHttpApi } from './api/server.js';
import { ConfigError, ENV_NAMES, type Config } from './config.js';
import { createDomain, type Domain } from './domain/domain.js';
import { DurableEventBus, type EventBus } from './events/event-bus.js';
import { RetentionJob } from './events/retention.js';
import { MemoryCache } from './triggers/cache.js';
import { NO_MAILER, SmtpMailer } from './triggers/mailer.js';
import { TriggerEngine } from './triggers/engine.js';
import { SERVICE_NAMESPACES } from './triggers/namespaces/index.js';
import { Signals } from './triggers/signals.js';
import { SqlScriptQueueStore } from './store/script-queue-store.js';
import { WorkerPool } from './triggers/sandbox/worker-pool.js';
import { createLogger } from './logger.js';
import { openDatabase, type Database } from './store/database.js';
import { migrateToLatest } from './store/migrate.js';
import { sqlStores } from './store/stores.js';
import { VERSION } from './version.js';

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
export class IotBridge {
  readonly config: Config;
  readonly logger: Logger;
  #database: Database | undefined;
  #domain: Domain | undefined;
  #http: FastifyInstance | undefined;
  #bus: EventBus | undefined;
  #retention: RetentionJob | undefined;
  #scripts: WorkerPool | undefined;
  #ready = false;

  readonly #beforeBusStart: ((bus: EventBus) => void | Promise<void>) | undefined;

  /** `beforeBusStart` lets consumers subscribe before queued events from the last run are dispatched. */
  constructor(config: Config, logger: Logger = createLogger(config.logLevel), options: { beforeBusStart?: (bus: EventBus) => void | Promise<void> } = {}) {
    this.config = config;
    this.logger = logger;
    this.#beforeBusStart = options.beforeBusStart;
  }

  get domain(): Domain {
    if (!this.#domain) throw new Error('IotBridge is not started');
    return this.#domain;
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
    const database = openDatabase(config);
    this.#database = database;
    const applied = await migrateToLatest(database);
    logger.info({ dialect: database.dialect, location: database.location, migrationsApplied: applied }, 'storage ready');

    const stores = sqlStores(database.db);
    const bus = new DurableEventBus(stores.events, { parallelism: config.eventParallelism, logger });
    this.#bus = bus;
    const domain = createDomain(stores, bus, config);
    this.#domain = domain;
    const { rootAccountId, generatedRootToken } = await this.#bootstrap(domain);
    const internalCalls = new InternalCalls();
    this.#scripts = new WorkerPool({
      workers: config.scriptWorkers,
      limits: { timeoutMs: config.scriptTimeoutMs, wallTimeoutMs: config.scriptWallTimeoutMs, memoryMb: config.scriptMemoryMb },
      logger,
      sqlDir: path.join(config.dataDir, 'sql'),
    });
    const engine = new TriggerEngine({
      domain,
      runner: this.#scripts,
      services: { cache: new MemoryCache(), signals: new Signals(), queues: new SqlScriptQueueStore(database.db),
        api: internalCalls,
        mailer: config.smtpUrl ? new SmtpMailer(config.smtpUrl, config.smtpFrom) : NO_MAILER,
      },
      namespaces: SERVICE_NAMESPACES,
      wallTimeoutMs: config.scriptWallTimeoutMs,
      logger,
    });
    engine.attach(bus);
    await this.#beforeBusStart?.(bus);
    await bus.start();
    this.#retention = new RetentionJob(stores.events, { days: config.historyRetentionDays, logger });
    this.#retention.start();

    const http = await buildHttpApi({ domain, engine, internalCalls, logger, version: VERSION, isReady: () => this.#ready });
    this.#http = http;
    const httpPort = await listen(http, config.httpPort, config.httpHost);
    this.#ready = true;
    logger.info({ ports: { http: httpPort }, version: VERSION }, `IoT Bridge ready: HTTP API on port ${httpPort}`);
    return { ports: { http: httpPort }, rootAccountId, generatedRootToken };
  }

  /** Stops accepting work, lets requests in flight finish, then closes storage. */
  async stop(): Promise<void> {
    this.#ready = false;
    await this.#retention?.stop();
    await this.#http?.close();
    await this.#bus?.stop();
    await this.#scripts?.stop();
    await this.#domain?.executions.flush();
    await this.#database?.close();
    this.#http = undefined;
    this.#bus = undefined;
    this.#scripts = undefined;
    this.#database = undefined;
  }

  /** First start: the root account. Every start: the configured admin token and user, when given. */
  async #bootstrap(domain: Domain): Promise<{ rootAccountId: string; generatedRootToken: string | undefined }> {
    const { config, logger } = this;
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
