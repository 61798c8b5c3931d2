import type { Domain } from '../domain/domain.js';
import { PLATFORM_STATUS_DETAILS, type Endpoint } from '../domain/endpoints.js';
import type { Scope } from '../domain/scope.js';
import type { Service } from '../domain/services.js';
import { DOCUMENT_FORMAT, DOCUMENT_VERSION, type AlertRuleItem, type EndpointItem, type ReportItem, type ServiceItem, type TriggerItem } from './document.js';

/** Objects read from the store at a time: the export holds one page, never the account. */
const PAGE = 500;

/**
 * The account's configuration as the import/export document, produced piece by piece (docs/imex.md): services,
 * triggers (library ones and globals included), endpoints with their stored objects, reports, alert rules, and
 * file information. Items refer to each other by name and key. Secrets stay behind: device credentials, webhook
 * secrets, DTLS keys.
 */
export async function* exportDocument(domain: Domain, scope: Scope): AsyncGenerator<string> {
  yield `{"format":${JSON.stringify(DOCUMENT_FORMAT)},"version":${DOCUMENT_VERSION},"exportedAt":${JSON.stringify(new Date().toISOString())}`;
  const services = await all((page) => domain.services.list(scope, {}, page));
  const serviceNames = new Map(services.map((service) => [service.id, service.name]));
  yield* section('services', toItems(services, serviceItem));
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
  yield* section('endpoints', endpointItems(domain, scope, serviceNames));
  const reports = await domain.reports.list(scope);
  yield* section(
    'reports',
    toItems(reports, (report): ReportItem => ({ name: report.name, description: report.description, columns: report.columns, retentionDays: report.retentionDays })),
  );
  const rules = await domain.alertRules.list(scope, {});
  yield* section(
    'alertRules',
    toItems(rules, (rule): AlertRuleItem => {
      const { triggerId, ...condition } = rule.condition as { triggerId?: string };
      const trigger = triggerId === undefined ? {} : { trigger: triggerNames.get(triggerId) ?? triggerId };
      const webhook = rule.notify.webhook && { url: rule.notify.webhook.url };
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

function serviceItem(service: Service): ServiceItem {
  return { name: service.name, type: service.type, options: service.options };
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

/** Endpoints a page at a time, in key order, with their stored objects. */
async function* endpointItems(domain: Domain, scope: Scope, serviceNames: ReadonlyMap<string, string>): AsyncGenerator<EndpointItem> {
  for (let offset = 0; ; offset += PAGE) {
    const page = await domain.endpoints.list(scope, {}, { offset, limit: PAGE });
    const storage = await domain.endpoints.storageOf(scope, page.items.map((endpoint) => endpoint.id));
    for (const endpoint of page.items) yield endpointItem(endpoint, serviceNames, storage.get(endpoint.id));
    if (page.items.length < PAGE) return;
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
