// The items of a template's document as the account has them: read back in the import document's shape (so what
// an install left and what the account holds later compare as plain JSON), and removed one by one.
import type { Domain } from '../domain/domain.js';
import { PLATFORM_STATUS_DETAILS } from '../domain/endpoints.js';
import type { Scope } from '../domain/scope.js';
import { SECTIONS, type Section } from '../imex/document.js';
import type { ItemRef, TemplateDocument } from './model.js';

/** One item of the document with its reference. */
export interface DocumentItem {
  readonly ref: ItemRef;
  readonly item: Record<string, unknown>;
}

/** A map key for a reference. */
export function refKey(ref: ItemRef): string {
  return `${ref.section}\u0000${ref.service ?? ''}\u0000${ref.name}`;
}

/** The items of the document's known sections that have a name (or key): others are the Importer's to refuse. */
export function itemsOf(document: TemplateDocument): DocumentItem[] {
  const items: DocumentItem[] = [];
  for (const section of SECTIONS) {
    const list = document[section];
    if (!Array.isArray(list)) continue;
    for (const raw of list as unknown[]) {
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) continue;
      const item = raw as Record<string, unknown>;
      if (section === 'endpoints') {
        if (typeof item.key === 'string' && typeof item.service === 'string') items.push({ ref: { section, name: item.key, service: item.service }, item });
      } else if (typeof item.name === 'string') items.push({ ref: { section, name: item.name }, item });
    }
  }
  return items;
}

/** The document holding only these items, in their sections. */
export function documentOf(header: TemplateDocument, items: readonly DocumentItem[]): TemplateDocument {
  const document: TemplateDocument = { format: header.format, version: header.version };
  for (const section of SECTIONS) document[section] = items.filter((entry) => entry.ref.section === section).map((entry) => entry.item);
  return document;
}

/**
 * The account's current version of each item, in the document's shape; undefined where the account has none.
 * Stored objects and status details are read only by the names `like` (the template's item) has: a device or
 * a script writing others is not an edit of the installed item.
 */
export async function readCurrent(domain: Domain, scope: Scope, wanted: ReadonlyArray<{ ref: ItemRef; like: unknown }>): Promise<Map<string, unknown>> {
  const found = new Map<string, unknown>();
  const sections = new Set(wanted.map((entry) => entry.ref.section));
  const services = new Map((await all((page) => domain.services.list(scope, {}, page))).map((service) => [service.name, service]));
  const triggers = sections.has('triggers') || sections.has('alertRules') ? await all((page) => domain.triggers.list(scope, page)) : [];
  const triggerNames = new Map(triggers.map((trigger) => [trigger.id, trigger.name]));
  const triggersByName = new Map(triggers.map((trigger) => [trigger.name, trigger]));
  const reports = new Map((sections.has('reports') ? await domain.reports.list(scope) : []).map((report) => [report.name, report]));
  const rules = new Map((sections.has('alertRules') ? await domain.alertRules.list(scope, {}) : []).map((rule) => [rule.name, rule]));
  for (const { ref, like } of wanted) {
    const key = refKey(ref);
    if (ref.section === 'services') {
      const service = services.get(ref.name);
      if (service) found.set(key, { name: service.name, type: service.type, options: service.options });
    } else if (ref.section === 'triggers') {
      const trigger = triggersByName.get(ref.name);
      if (trigger) {
        found.set(key, {
          name: trigger.name,
          events: trigger.events,
          filters: trigger.filters,
          script: trigger.script,
          enabled: trigger.enabled,
          library: trigger.library,
          globals: trigger.globals,
          ...(trigger.form === undefined || trigger.form === null ? {} : { form: trigger.form }),
        });
      }
    } else if (ref.section === 'endpoints') {
      const service = services.get(ref.service ?? '');
      const endpoint = service && (await domain.endpoints.byKeys(scope, service.id, [ref.name])).get(ref.name);
      if (!service || !endpoint) continue;
      const stored = (await domain.endpoints.storageOf(scope, [endpoint.id])).get(endpoint.id) ?? {};
      const shape = (like ?? {}) as { statusDetails?: Record<string, unknown>; storage?: Record<string, unknown> };
      found.set(key, {
        key: endpoint.key,
        service: service.name,
        tags: endpoint.tags,
        statusDetails: pick(endpoint.statusDetails, Object.keys(shape.statusDetails ?? {}).filter((name) => !(PLATFORM_STATUS_DETAILS as readonly string[]).includes(name))),
        parameters: endpoint.parameters,
        trace: endpoint.trace,
        storage: pick(stored, Object.keys(shape.storage ?? {})),
      });
    } else if (ref.section === 'reports') {
      const report = reports.get(ref.name);
      if (report) found.set(key, { name: report.name, description: report.description, columns: report.columns, retentionDays: report.retentionDays });
    } else {
      const rule = rules.get(ref.name);
      if (!rule) continue;
      const { triggerId, ...condition } = rule.condition as { triggerId?: string };
      found.set(key, {
        name: rule.name,
        severity: rule.severity,
        tags: rule.tags,
        condition: { ...condition, ...(triggerId === undefined ? {} : { trigger: triggerNames.get(triggerId) ?? triggerId }) },
        notify: rule.notify,
        enabled: rule.enabled,
      });
    }
  }
  return found;
}

/** Removes the item from the account; false when it is not there (any more). Services go without their endpoints only. */
export async function removeItem(domain: Domain, scope: Scope, ref: ItemRef): Promise<boolean> {
  switch (ref.section) {
    case 'services': {
      const service = (await all((page) => domain.services.list(scope, {}, page))).find((candidate) => candidate.name === ref.name);
      if (!service) return false;
      await domain.services.delete(scope, service.id, { cascade: false });
      return true;
    }
    case 'triggers': {
      const trigger = (await all((page) => domain.triggers.list(scope, page))).find((candidate) => candidate.name === ref.name);
      if (!trigger) return false;
      await domain.triggers.delete(scope, trigger.id);
      return true;
    }
    case 'endpoints': {
      const service = (await all((page) => domain.services.list(scope, {}, page))).find((candidate) => candidate.name === ref.service);
      const endpoint = service && (await domain.endpoints.byKeys(scope, service.id, [ref.name])).get(ref.name);
      if (!endpoint) return false;
      await domain.endpoints.delete(scope, endpoint.id);
      return true;
    }
    case 'reports': {
      if (!(await domain.reports.list(scope)).some((report) => report.name === ref.name)) return false;
      await domain.reports.delete(scope, ref.name);
      return true;
    }
    case 'alertRules': {
      const rule = (await domain.alertRules.list(scope, {})).find((candidate) => candidate.name === ref.name);
      if (!rule) return false;
      await domain.alertRules.delete(scope, rule.id);
      return true;
    }
    default:
      return false;
  }
}

/** Sections in the order items are removed: what refers to others first. */
export const REMOVAL_ORDER: readonly Section[] = [...SECTIONS].reverse();

function pick(values: Readonly<Record<string, unknown>>, names: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(names.filter((name) => Object.hasOwn(values, name)).map((name) => [name, values[name]]));
}

async function all<T>(read: (page: { offset: number; limit: number }) => Promise<{ items: T[] }>): Promise<T[]> {
  const items: T[] = [];
  for (let offset = 0; ; offset += 500) {
    const page = await read({ offset, limit: 500 });
    items.push(...page.items);
    if (page.items.length < 500) return items;
  }
}
