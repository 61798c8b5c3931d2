import type { Domain } from '../domain/domain.js';
import { PLATFORM_STATUS_DETAILS, type Endpoint } from '../domain/endpoints.js';
import type { Scope } from '../domain/scope.js';
import type { Service } from '../domain/services.js';
import type { BootstrapConfig } from '../lwm2m/bootstrap/config.js';
import type { BootstrapConfigs } from '../lwm2m/bootstrap/configs.js';
import { DOCUMENT_FORMAT, DOCUMENT_VERSION, type AlertRuleItem, type EndpointItem, type GeofenceItem, type ReportItem, type ServiceItem, type TriggerItem } from './document.js';
import type { Sealer } from './sealing.js';

/** Objects read from the store at a time: the export holds one page, never the account. */
const PAGE = 500;

/** Options the service type keeps secret: sealed in a secrets export, left out otherwise. */
const SECRET_SERVICE_OPTIONS = ['webhookSecret', 'apiKey'] as const;

export interface ExportOptions {
  /** Set: secrets are exported, each sealed with the passphrase's key (docs/imex.md "Secrets"). */
  readonly sealer?: Sealer | undefined;
  /** The LwM2M endpoints' own bootstrap configurations (the protocol layer keeps them). */
  readonly bootstrapConfigs?: BootstrapConfigs | undefined;
}

/**
 * The account's configuration as the import/export document, produced piece by piece (docs/imex.md): services,
 * triggers (library ones and globals included), endpoints with their stored objects, reports, alert rules, and
 * file information. Items refer to each other by name and key. Secrets stay behind: device credentials, webhook
 * secrets, DTLS keys.
 */
export async function* exportDocument(domain: Domain, scope: Scope, options: ExportOptions = {}): AsyncGenerator<string> {
  const { sealer } = options;
  yield `{"format":${JSON.stringify(DOCUMENT_FORMAT)},"version":${DOCUMENT_VERSION},"exportedAt":${JSON.stringify(new Date().toISOString())}`;
  if (sealer) yield `,"secrets":${JSON.stringify(sealer.header)}`;
  const services = await all((page) => domain.services.list(scope, {}, page));
  const serviceNames = new Map(services.map((service) => [service.id, service.name]));
  yield* section('services', toItems(services, (service) => serviceItem(service, sealer)));
  const triggers = await all((page) => domain.triggers.list(scope, page));
  const triggerNames = new Map(triggers.map((trigger) => [trigger.id, trigger.name]));
  yield* section(
    'triggers',
    toItems(triggers, (trigger): TriggerItem => ({
      name: trigger.name,
      events: trigger.events,
      filters: trigger.filters,
      script: trigger.script,
      enabled: trigger.enabled,
      library: trigger.library,
      globals: trigger.globals,
      ...(trigger.form === undefined || trigger.form === null ? {} : { form: trigger.form }),
    })),
  );
  yield* section('endpoints', endpointItems(domain, scope, serviceNames, options));
  const geofences = await all((page) => domain.location.geofences.list(scope, {}, page));
  yield* section(
    'geofences',
    toItems(geofences, (geofence): GeofenceItem => ({
      name: geofence.name,
      description: geofence.description,
      tags: geofence.tags,
      ...(geofence.geometry && { geometry: geofence.geometry as unknown as Record<string, unknown> }),
      ...(geofence.circle && { circle: { ...geofence.circle } }),
    })),
  );
  const reports = await domain.reports.list(scope);
  yield* section(
    'reports',
    toItems(reports, (report): ReportItem => ({ name: report.name, description: report.description, columns: report.columns, retentionDays: report.retentionDays })),
  );
  const rules = await domain.alertRules.list(scope, {});
  const webhookSecrets = new Map(sealer ? (await domain.alertRules.withSecrets(scope)).map((rule) => [rule.id, rule.notify.webhook?.secret]) : []);
  yield* section(
    'alertRules',
    toItems(rules, (rule): AlertRuleItem => {
      const { triggerId, ...condition } = rule.condition as { triggerId?: string };
      const trigger = triggerId === undefined ? {} : { trigger: triggerNames.get(triggerId) ?? triggerId };
      const webhook = rule.notify.webhook && { url: rule.notify.webhook.url, ...(sealer && webhookSecrets.get(rule.id) !== undefined && { secret: sealer.seal(webhookSecrets.get(rule.id)) as never }) };
      return {
        name: rule.name,
        severity: rule.severity,
        tags: rule.tags,
        condition: { ...condition, ...trigger },
        notify: { ...(rule.notify.email && { email: rule.notify.email }), ...(webhook && { webhook }) },
        enabled: rule.enabled,
      };
    }),
  );
  const files = await all((page) => domain.files.list(scope.accountId, page));
  yield* section(
    'files',
    toItems(files, (file) => ({ name: file.name, size: file.size, sha256: file.sha256, contentType: file.contentType, version: file.version ?? null })),
  );
  yield '}\n';
}

/** A service's options, its secrets (and its default bootstrap configuration's keys) sealed or left out. */
function serviceItem(service: Service, sealer: Sealer | undefined): ServiceItem {
  const options: Record<string, unknown> = { ...service.options };
  for (const name of SECRET_SERVICE_OPTIONS) {
    if (options[name] === undefined) continue;
    if (sealer) options[name] = sealer.seal(options[name]);
    else delete options[name];
  }
  if (isObject(options.bootstrap)) {
    const bootstrap = sealedBootstrap(options.bootstrap, sealer);
    if (bootstrap) options.bootstrap = bootstrap;
    else delete options.bootstrap;
  }
  return { name: service.name, type: service.type, options };
}

/** A bootstrap configuration with its servers' keys sealed; undefined when it has keys and there is no sealer. */
function sealedBootstrap(config: Record<string, unknown>, sealer: Sealer | undefined): Record<string, unknown> | undefined {
  const servers = Array.isArray(config.servers) ? (config.servers as unknown[]) : [];
  const secret = (server: unknown) => isObject(server) && (server.pskKey !== undefined || server.privateKey !== undefined);
  if (!servers.some(secret)) return config;
  if (!sealer) return undefined;
  return {
    ...config,
    servers: servers.map((server) => {
      if (!isObject(server)) return server;
      const { pskKey, privateKey, ...rest } = server;
      return { ...rest, ...(pskKey !== undefined && { pskKey: sealer.seal(pskKey) }), ...(privateKey !== undefined && { privateKey: sealer.seal(privateKey) }) };
    }),
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

async function* section(name: string, items: AsyncIterable<unknown> | Iterable<unknown>): AsyncGenerator<string> {
  yield `,${JSON.stringify(name)}:[`;
  let first = true;
  for await (const item of items) {
    yield (first ? '\n' : ',\n') + JSON.stringify(item);
    first = false;
  }
  yield ']';
}

function* toItems<T, I>(objects: readonly T[], item: (object: T) => I): Generator<I> {
  for (const object of objects) yield item(object);
}

/** Endpoints a page at a time, in key order, with their stored objects, security and own bootstrap configuration. */
async function* endpointItems(domain: Domain, scope: Scope, serviceNames: ReadonlyMap<string, string>, { sealer, bootstrapConfigs }: ExportOptions): AsyncGenerator<EndpointItem> {
  for await (const page of domain.endpoints.walk(scope, PAGE)) {
    const storage = await domain.endpoints.storageOf(scope, page.map((endpoint) => endpoint.id));
    const security = await domain.security.storedOf(page);
    const hashes = sealer ? await domain.credentials.hashesOf(page) : new Map<string, string>();
    const bootstrap = bootstrapConfigs ? await bootstrapConfigs.ownMany(page) : new Map<string, BootstrapConfig>();
    for (const endpoint of page) {
      const item: EndpointItem = endpointItem(endpoint, serviceNames, storage.get(endpoint.id));
      const hash = hashes.get(endpoint.id);
      if (sealer && hash !== undefined) item.credentials = { passwordHash: sealer.seal(hash) as never };
      const stored = security.get(endpoint.id);
      if (stored?.mode === 'x509') item.security = { mode: 'x509' };
      if (stored?.mode === 'psk' && sealer) item.security = { mode: 'psk', identity: stored.pskIdentity ?? '', key: sealer.seal(stored.pskKey) as never };
      const own = bootstrap.get(endpoint.id);
      const config = own && sealedBootstrap(own as unknown as Record<string, unknown>, sealer);
      if (config) item.bootstrap = config;
      yield item;
    }
  }
}

function endpointItem(endpoint: Endpoint, serviceNames: ReadonlyMap<string, string>, storage: Record<string, unknown> | undefined): EndpointItem {
  return {
    key: endpoint.key,
    service: serviceNames.get(endpoint.serviceId) ?? endpoint.serviceId,
    tags: endpoint.tags,
    statusDetails: Object.fromEntries(Object.entries(endpoint.statusDetails).filter(([name]) => !(PLATFORM_STATUS_DETAILS as readonly string[]).includes(name))),
    parameters: endpoint.parameters,
    trace: endpoint.trace,
    ...(storage && Object.keys(storage).length > 0 ? { storage } : {}),
  };
}

async function all<T>(read: (page: { offset: number; limit: number }) => Promise<{ items: T[] }>): Promise<T[]> {
  const items: T[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const page = await read({ offset, limit: PAGE });
    items.push(...page.items);
    if (page.items.length < PAGE) return items;
  }
}
