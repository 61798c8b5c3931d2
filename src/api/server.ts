import swagger from '@fastify/swagger';
import { closeSilentConnectionsOnStop } from './silent-connections.js';
import { shareErrorBody } from './openapi-document.js';
import type { DeviceChannels } from '../devices/device-server.js';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import type { DevicePresence } from '../devices/presence.js';
import type { Domain } from '../domain/domain.js';
import { Readable } from 'node:stream';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../domain/json-depth.js';
import { AppError, errorBody } from '../errors.js';
import type { ServerCertificate } from '../dtls/server-certificate.js';
import type { BootstrapConfigs } from '../lwm2m/bootstrap/configs.js';
import type { ObjectRegistry } from '../lwm2m/objects/registry.js';
import type { TriggerEngine } from '../triggers/engine.js';
import { authPlugin } from './auth.js';
import { installErrorHandling } from './error-handler.js';
import { LazySchemaCompilers } from './lazy-schema-compilers.js';
import type { InternalCalls } from './internal-calls.js';
import { accountRoutes } from './routes/accounts.js';
import { authRoutes } from './routes/auth.js';
import { oidcRoutes } from './routes/oidc.js';
import type { OidcSignIn } from '../oidc/oidc-sign-in.js';
import { endpointRoutes } from './routes/endpoints.js';
import { eventRoutes } from './routes/events.js';
import { metricsRoutes } from './routes/metrics.js';
import { fileRoutes } from './routes/files.js';
import { geofenceRoutes } from './routes/geofences.js';
import { locationRoutes } from './routes/location.js';
import { reportRoutes } from './routes/reports.js';
import { alertRoutes } from './routes/alerts.js';
import { logRoutes } from './routes/logs.js';
import { imexRoutes } from './routes/imex.js';
import type { ImportJobStore } from '../imex/import-job-store.js';
import { solutionRoutes } from './routes/solutions.js';
import { addLicenceHeader, licenceRoutes } from './routes/licence.js';
import type { Licence } from '../licence/licence.js';
import { lazyRequestLogger } from './lazy-request-logger.js';
import { requestLogPlugin } from './request-log.js';
import { prometheusRoutes } from './routes/prometheus.js';
import type { ServiceMetrics } from '../observability/service-metrics.js';
import { downloadRoutes } from './routes/downloads.js';
import { serviceRoutes } from './routes/services.js';
import type { ServiceTypeInfo } from './service-types.js';
import { superRoutes } from './routes/super.js';
import { accountGuardPlugin } from './account-guard.js';
import type { SuperAdmin } from '../admin/super-admin.js';
import type { SuperDiagnostics } from '../admin/diagnostics.js';
import { systemRoutes, type NodeReadiness } from './routes/system.js';
import { tokenRoutes } from './routes/tokens.js';
import { triggerRoutes } from './routes/triggers.js';
import { uiRoutes } from './routes/ui.js';
import { userRoutes } from './routes/users.js';

/** What a protocol's HTTP routes are given (src/protocols/): each takes its slice. */
export interface ProtocolRouteDeps {
  readonly domain: Domain;
  readonly devices: DeviceChannels;
  readonly presence: DevicePresence;
  readonly objects: ObjectRegistry;
  readonly bootstrapConfigs: BootstrapConfigs;
  readonly serverCertificate: ServerCertificate | undefined;
}

/** A protocol's HTTP routes: registers its route plugins on the API. */
export type ProtocolRoutes = (app: FastifyInstance, deps: ProtocolRouteDeps) => Promise<void>;

export interface HttpApiOptions {
  readonly domain: Domain;
  readonly engine: TriggerEngine;
  /** Device presence, for the device-facing routes (LoRa webhooks). */
  readonly presence: DevicePresence;
  readonly internalCalls: InternalCalls;
  readonly logger: FastifyBaseLogger;
  readonly version: string;
  readonly isReady: () => boolean;
  /** In a cluster, this node's share of the event bus (`/ready`). */
  readonly cluster?: (() => NodeReadiness) | undefined;
  /** LwM2M object definitions: shipped and per-account uploads. */
  readonly objects: ObjectRegistry;
  readonly bootstrapConfigs: BootstrapConfigs;
  readonly serverCertificate: ServerCertificate | undefined;
  /** The device servers' APIs (LwM2M device management for `/endpoints/{ref}/lwm2m/…`). */
  readonly devices: DeviceChannels;
  /** The protocols' service types (`GET /services/types`) and HTTP routes (src/protocols/). */
  readonly protocols: { readonly serviceTypes: readonly ServiceTypeInfo[]; readonly routes: readonly ProtocolRoutes[] };
  /** Which proxies' X-Forwarded-For gives the client's address (`IOTBRIDGE_TRUST_PROXY`). */
  readonly trustProxy: boolean | number | string;
  /** The longest file upload, in bytes (`IOTBRIDGE_FILE_MAX_BYTES`). */
  readonly fileMaxBytes: number;
  /** Largest import document (IOTBRIDGE_IMPORT_MAX_BYTES); default 256 MiB. */
  readonly importMaxBytes?: number | undefined;
  /** Where import jobs are kept (`GET /imex/jobs/{id}` after a restart and on every node). */
  readonly importJobs: ImportJobStore;
  /** What download link URLs are made of: `IOTBRIDGE_PUBLIC_HOST` and the bound ports by name (`http`, `coap`, `coaps`), read when a link is made. */
  readonly downloads?: { readonly publicHost: string | undefined; readonly ports: Readonly<Record<string, number>> } | undefined;
  /** The built web UI served at `/` (`IOTBRIDGE_UI_DIR`); unset: no UI routes. */
  readonly uiDir?: string | undefined;
  /** The operator's Prometheus metrics: every request is counted, `GET /metrics` serves them. */
  readonly metrics?: ServiceMetrics | undefined;
  /** The private-instance licence: `GET`/`PUT /licence`, and its header on every response while in grace or expired. */
  readonly licence?: Licence | undefined;
  /** External sign-in (OpenID Connect); undefined when not configured: its routes answer 404. */
  readonly oidc?: OidcSignIn | undefined;
  /** Super-Admin actions (suspension, limits, impersonation, audit) and diagnostics (`/super/*`). */
  readonly superAdmin: { readonly admin: SuperAdmin; readonly diagnostics: SuperDiagnostics };
}

/** The longest path segment the router accepts (see IOTB_REQUEST_PATH_TOO_LONG). */
const MAX_PATH_PARAM = 2048;

/** The HTTP API: one encapsulated plugin per resource; only auth and error handling are shared. */
export async function buildHttpApi({ domain, engine, presence, internalCalls, logger, version, isReady, cluster, objects, bootstrapConfigs, serverCertificate, devices, protocols, trustProxy, downloads, fileMaxBytes, importMaxBytes, importJobs, uiDir, metrics, licence, oidc, superAdmin }: HttpApiOptions): Promise<FastifyInstance> {
  const schemas = new LazySchemaCompilers();
  const app = Fastify({
    loggerInstance: logger,
    // Each route's schemas compiled at its first request, not all at start (lazy-schema-compilers.ts).
    schemaController: { compilersFactory: schemas.factory },
    // One log line per request costs more than the request itself at load; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyRequestLogger,
    // Clients send the same query parameter several times for lists (tag=a&tag=b).
    ajv: { customOptions: { coerceTypes: 'array', removeAdditional: false, allErrors: false } },
    return503OnClosing: true,
    // `k.<key>` with a key of 256 characters, percent-encoded, is up to 771 characters (the default is 100).
    routerOptions: { maxParamLength: MAX_PATH_PARAM },
    // Errors the router raises before any route runs get the one error body too.
    frameworkErrors: (error, _request, reply) => {
      const appError = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? new AppError('IOTB_REQUEST_PATH_TOO_LONG') : new AppError('IOTB_REQUEST_VALIDATION', error.message);
      void (reply as FastifyReply).status(appError.status).send(errorBody(appError));
    },
    // A hop count as the function Fastify's types ask for (proxy-addr reads numbers the same way).
    trustProxy: typeof trustProxy === 'number' ? (_address: string, hop: number) => hop < trustProxy : trustProxy,
  }).withTypeProvider<TypeBoxTypeProvider>();

  installErrorHandling(app);
  if (licence) addLicenceHeader(app, licence);
  closeSilentConnectionsOnStop(app);
  // Storing JSON nested thousands deep overflowed the stack (500); it is refused as it comes in.
  app.addHook('preValidation', (request, _reply, done) => {
    // A streamed body (an import document) is checked item by item as it is read.
    if (request.body === undefined || request.body instanceof Readable || !nestsDeeperThan(request.body)) return done();
    done(new AppError('IOTB_REQUEST_VALIDATION', `The JSON body nests deeper than ${MAX_JSON_DEPTH} levels`));
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'IoT Bridge API',
        version,
        description:
          'Device connectivity and event processing. Authenticate with `Authorization: Bearer <AT:… or UT:…>`; ' +
          'append `:<accountId>` to act in a sub-account. Errors: `{"error":{"code","message","details"}}`.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'AT: API token or UT: user token, optionally followed by :<accountId>' } } },
      security: [{ bearer: [] }],
    },
    transformObject: (documentObject) => ('openapiObject' in documentObject ? shareErrorBody(documentObject.openapiObject) : documentObject.swaggerObject),
  });
  // Static documentation assets carry no data; open them without a token.
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs')) route.config = { ...route.config, public: true };
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list' } });
  app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
  if (uiDir !== undefined) await app.register(uiRoutes, { uiDir });

  metrics?.observeHttp(app);
  await app.register(authPlugin, { tokens: domain.tokens, accounts: domain.accounts, internalCalls });
  // Suspended accounts only read; POST /events within the account's rate.
  await app.register(accountGuardPlugin, { admin: superAdmin.admin });
  // API errors and changes of authenticated callers into the account's log.
  await app.register(requestLogPlugin, { logs: domain.logs });
  await app.register(systemRoutes, { isReady, cluster });
  if (metrics) await app.register(prometheusRoutes, { metrics });
  await app.register(authRoutes, { domain });
  await app.register(oidcRoutes, { oidc });
  await app.register(accountRoutes, { domain });
  await app.register(tokenRoutes, { domain });
  await app.register(userRoutes, { domain });
  await app.register(serviceRoutes, { domain, serviceTypes: protocols.serviceTypes });
  await app.register(endpointRoutes, { domain });
  await app.register(eventRoutes, { domain });
  await app.register(triggerRoutes, { domain, engine });
  await app.register(metricsRoutes, { domain });
  await app.register(superRoutes, { domain, ...superAdmin });
  await app.register(fileRoutes, { domain, fileMaxBytes });
  await app.register(locationRoutes, { domain });
  await app.register(geofenceRoutes, { domain });
  await app.register(reportRoutes, { domain });
  await app.register(alertRoutes, { domain });
  await app.register(logRoutes, { domain });
  await app.register(imexRoutes, { domain, jobStore: importJobs, importMaxBytes: importMaxBytes ?? 256 * 1024 * 1024, bootstrapConfigs });
  await app.register(solutionRoutes, { domain });
  if (licence) await app.register(licenceRoutes, { licence });
  await app.register(downloadRoutes, { domain, publicHost: downloads?.publicHost, ports: downloads?.ports ?? {} });
  for (const routes of protocols.routes) await routes(app, { domain, devices, presence, objects, bootstrapConfigs, serverCertificate });
  internalCalls.attach(app);
  app.decorate('compileRouteSchemas', () => schemas.compileAll());
  return app;
}
