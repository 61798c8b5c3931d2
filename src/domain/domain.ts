import { Accounts, type AccountStore } from './accounts.js';
import { DeviceCredentials } from './device-credentials.js';
import { DeviceSecurity, type DeviceSecurityStore } from './device-security.js';
import { Files, type FileStore } from './files.js';
import { Metrics, type MetricsStore } from './metrics.js';
import { FileLinks, type FileLinkStore } from './file-links.js';
import { EndpointProvisioning } from './endpoint-provisioning.js';
import { Endpoints, type EndpointStore } from './endpoints.js';
import { Services, type ServiceStore } from './services.js';
import { Tokens, type TokenStore } from './tokens.js';
import { Users, type UserStore } from './users.js';
import type { EventBus } from '../events/event-bus.js';
import type { EventStore } from '../events/event-store.js';
import { Events } from '../events/events.js';
import { EventStreams } from '../events/event-streams.js';
import { History } from '../events/history.js';
import { LocalReplies, type Replies } from '../events/replies.js';
import { Executions, type ExecutionStore } from '../triggers/executions.js';
import { createLocation, type Location, type LocationStores } from '../location/location.js';
import type { HttpJson } from '../location/http-json.js';
import { VERSION } from '../version.js';
import type { ReportStore } from '../reports/model.js';
import { AlertNotifier } from '../alerts/alert-notifier.js';
import { AlertRules } from '../alerts/alert-rules.js';
import { Alerts } from '../alerts/alerts.js';
import type { AlertStore } from '../alerts/model.js';
import { ReportMailer } from '../reports/report-mailer.js';
import { Reports } from '../reports/reports.js';
import { Logs } from '../logs/logs.js';
import type { LogStore } from '../logs/model.js';
import { Triggers, type TriggerStore } from '../triggers/triggers.js';
import type { SolutionStore } from '../solutions/model.js';
import { Solutions } from '../solutions/solutions.js';

/** The domain services: the only code that changes state. HTTP routes, scripts and protocol adapters all call these. */
export interface Domain {
  readonly accounts: Accounts;
  readonly tokens: Tokens;
  readonly users: Users;
  readonly services: Services;
  readonly endpoints: Endpoints;
  /** Device passwords (MQTT log-in), generated or chosen. */
  readonly credentials: DeviceCredentials;
  /** Endpoints created together with their credentials, one or many per call. */
  readonly provisioning: EndpointProvisioning;
  /** DTLS security of endpoints (PSK identity and key, or X.509). */
  readonly security: DeviceSecurity;
  /** The account's file repository (firmware images and other assets). */
  readonly files: Files;
  /** Download links of repository files: devices fetch a file without a bearer token. */
  readonly fileLinks: FileLinks;
  readonly events: Events;
  readonly history: History;
  /** Live streams of the accounts' events (`GET /events/stream`). */
  readonly eventStreams: EventStreams;
  /** Waiting `POST /events` requests and the triggers' replies to them. */
  readonly replies: Replies;
  readonly triggers: Triggers;
  readonly executions: Executions;
  /** Counts for the dashboard (endpoints by field, trigger runs per period). */
  readonly metrics: Metrics;
  /** Geolocation, geocoding, geofences and endpoints' positions (src/location/). */
  readonly location: Location;
  /** Tables of entries accounts fill from triggers (src/reports/). */
  readonly reports: Reports;
  /** Mails reports as CSV, on their schedule (started by the service) and on request. */
  readonly reportMailer: ReportMailer;
  /** Alert rules and the alerts they open (src/alerts/). */
  readonly alertRules: AlertRules;
  readonly alerts: Alerts;
  /** What an account may see of its scripts, API calls, devices and changes (src/logs/). */
  readonly logs: Logs;
  /** Solution templates: the catalogue, installs into accounts, their history, once-events (src/solutions/). */
  readonly solutions: Solutions;
}

export interface DomainStores extends LocationStores {
  readonly reports: ReportStore;
  readonly alerts: AlertStore;
  readonly logs: LogStore;
  readonly solutions: SolutionStore;
  readonly accounts: AccountStore;
  readonly tokens: TokenStore;
  readonly users: UserStore;
  readonly services: ServiceStore;
  readonly endpoints: EndpointStore;
  readonly deviceSecurity: DeviceSecurityStore;
  readonly files: FileStore;
  readonly fileLinks: FileLinkStore;
  readonly events: EventStore;
  readonly triggers: TriggerStore;
  readonly executions: ExecutionStore;
  readonly metrics: MetricsStore;
}

export interface DomainOptions {
  readonly userTokenTtlSeconds: number;
  readonly tokenCacheTtlSeconds: number;
  /** Shortest password a person may choose for a device. */
  readonly devicePasswordMinLength: number;
  /** How long a chosen device password's check may expect to wait before the device is told to try later (ms). */
  readonly devicePasswordMaxWaitMs: number;
  /** Caps of live event streams: per account, per process, and the bytes one may hold for a slow client. */
  readonly eventStreamsPerAccount: number;
  readonly eventStreamsMax: number;
  readonly eventStreamQueueBytes: number;
  readonly locationCacheSeconds: number;
  readonly locationProviderTimeoutMs: number;
  readonly geofencesMax: number;
  /** How old `GET /metrics/fields`' census of an account may be before a call refreshes it; default 60. */
  readonly metricsFieldsMaxAgeSeconds?: number | undefined;
}

/** How the domain reaches HTTP APIs a tenant configured (location providers): OutboundHttp in the service. */
export interface DomainOutbound {
  readonly request: HttpJson;
  readonly checkUrl: (url: string) => void;
  /** Mail over the operator's SMTP server (alert notifications); undefined without one. */
  readonly mail?: ((message: { to: string[]; subject: string; text: string; attachments?: Array<{ filename: string; content: string; contentType: string }> }) => Promise<void>) | undefined;
  /** Told when a notification could not be delivered (the service logs it). */
  readonly onDeliveryFailure?: ((what: string, error: unknown) => void) | undefined;
}

/** How often due report schedules are looked for. */
const REPORT_CHECK_INTERVAL_MS = 30_000;

/** Without OutboundHttp (maintenance commands): nothing is reached. */
const NO_OUTBOUND: DomainOutbound = {
  request: () => Promise.reject(new Error('no outbound HTTP in this process')),
  checkUrl: () => {},
};

/** State the nodes of a cluster share (docs/cluster.md); what is left out stays in this process. */
export interface DomainShared {
  readonly replies?: Replies | undefined;
  /** Other nodes change stored settings too: caches without change notices trust what they read briefly only. */
  readonly clustered?: boolean | undefined;
}

export function createDomain(stores: DomainStores, bus: EventBus, options: DomainOptions, outbound: DomainOutbound = NO_OUTBOUND, shared: DomainShared = {}): Domain {
  const accounts = new Accounts(stores.accounts);
  const tokens = new Tokens(stores.tokens, { cacheTtlMs: options.tokenCacheTtlSeconds * 1000 });
  const users = new Users(stores.users, tokens, { tokenTtlSeconds: options.userTokenTtlSeconds });
  const services = new Services(stores.services);
  const endpoints = new Endpoints(stores.endpoints, services);
  const credentials = new DeviceCredentials(stores.endpoints, endpoints, { minPasswordLength: options.devicePasswordMinLength, maxWaitMs: options.devicePasswordMaxWaitMs });
  const provisioning = new EndpointProvisioning(endpoints, credentials);
  const security = new DeviceSecurity(stores.deviceSecurity, endpoints, { changedElsewhere: shared.clustered });
  const files = new Files(stores.files);
  const fileLinks = new FileLinks(stores.fileLinks, files);
  const replies = shared.replies ?? new LocalReplies();
  const events = new Events(bus, endpoints, replies);
  const history = new History(stores.events, endpoints);
  const eventStreams = new EventStreams(bus, stores.events, endpoints, {
    perAccount: options.eventStreamsPerAccount,
    max: options.eventStreamsMax,
    queueBytes: options.eventStreamQueueBytes,
  });
  const triggers = new Triggers(stores.triggers);
  const executions = new Executions(stores.executions);
  const metrics = new Metrics(
    stores.metrics,
    { trigger: (accountId, id) => stores.triggers.get(accountId, id), endpoint: (accountId, id) => stores.endpoints.getById(accountId, id), service: (accountId, id) => stores.services.get(accountId, id) },
    { fieldsMaxAgeMs: (options.metricsFieldsMaxAgeSeconds ?? 60) * 1000 },
  );
  const location = createLocation(stores, endpoints, {
    http: outbound.request,
    checkUrl: outbound.checkUrl,
    cacheSeconds: options.locationCacheSeconds,
    providerTimeoutMs: options.locationProviderTimeoutMs,
    geofencesPerAccount: options.geofencesMax,
    userAgent: `IoT Bridge/${VERSION}`,
    publish: (event) => events.publish(event),
  });
  const reports = new Reports(stores.reports, { mailConfigured: outbound.mail !== undefined });
  const reportMailer = new ReportMailer({
    reports,
    send: outbound.mail,
    checkIntervalMs: REPORT_CHECK_INTERVAL_MS,
    onFailure: outbound.onDeliveryFailure ?? (() => {}),
  });
  const alertRules = new AlertRules(stores.alerts, { checkUrl: outbound.checkUrl });
  const logs = new Logs(stores.logs);
  const notifier = new AlertNotifier({
    http: outbound.request,
    mail: outbound.mail,
    publish: (event) => events.publish(event),
    timeoutMs: options.locationProviderTimeoutMs,
    onFailure: outbound.onDeliveryFailure ?? (() => {}),
    log: (entry) => logs.write(entry),
  });
  const alerts = new Alerts(stores.alerts, alertRules, notifier);
  // Installs run through the Importer, which takes the whole domain: read when an install runs.
  const solutions = new Solutions({
    store: stores.solutions,
    files,
    domain: () => domain,
    publish: (event) => events.publish(event),
    published: async (accountId, eventId) => (await stores.events.get(accountId, eventId)) !== undefined,
    onFailure: (error) => outbound.onDeliveryFailure?.('a once-event', error),
  });
  const domain: Domain = { accounts, tokens, users, services, endpoints, credentials, provisioning, security, files, fileLinks, events, history, eventStreams, replies, triggers, executions, metrics, location, reports, reportMailer, alertRules, alerts, logs, solutions };
  return domain;
}
