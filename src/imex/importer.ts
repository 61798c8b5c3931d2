import { isDeepStrictEqual } from 'node:util';
import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { checkCondition } from '../alerts/alert-conditions.js';
import type { AlertRuleInput } from '../alerts/alert-rules.js';
import type { Severity } from '../alerts/model.js';
import type { Domain } from '../domain/domain.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../domain/json-depth.js';
import { PLATFORM_STATUS_DETAILS, type Endpoint, type EndpointInput, type JsonObject } from '../domain/endpoints.js';
import type { Scope } from '../domain/scope.js';
import type { Service, ServiceInput } from '../domain/services.js';
import { AppError } from '../errors.js';
import { createEvent } from '../events/event.js';
import type { GlobalVariable, Trigger, TriggerInput } from '../triggers/triggers.js';
import { checkImportedHash } from '../domain/device-secrets.js';
import type { Geofence } from '../location/model.js';
import { normalizeBootstrapConfig } from '../lwm2m/bootstrap/config.js';
import type { BootstrapConfigs } from '../lwm2m/bootstrap/configs.js';
import { AlertRuleItem, EndpointItem, GeofenceItem, ReportItem, ServiceItem, TriggerItem, type Section } from './document.js';
import { openSealedValues, type Sealer } from './sealing.js';

/** Items that go through the real-time path (one by one, as the API would) before bulk mode takes over. */
export const REAL_TIME_ITEMS = 500;
/** Endpoints written in one transaction in bulk mode. */
const BATCH = 500;
/** Refusals listed in a job's report; more are counted. */
const REFUSALS_LISTED = 1000;

export interface Refusal {
  readonly section: Section | 'document';
  /** The item's name or key, or its position when it has none. */
  readonly item: string;
  readonly reason: string;
}

export interface ImportOptions {
  readonly dryRun: boolean;
  readonly sealer?: Sealer | undefined;
  readonly bootstrapConfigs?: BootstrapConfigs | undefined;
}

export interface ImportCounts {
  processed: number;
  created: number;
  updated: number;
  unchanged: number;
  refusedCount: number;
  readonly refused: Refusal[];
}

/** What `read` gives: the items of one section of the document, in order. */
export type SectionReader = (section: Section) => AsyncIterable<unknown>;

/**
 * Applies an import document to an account (docs/imex.md): sections in dependency order, each item matched by
 * name or key to what the account has, and created, updated or left unchanged (so importing a document twice
 * changes nothing the second time). The first REAL_TIME_ITEMS items go through the domain one by one as the API
 * would; later new endpoints are written in batches (one transaction per BATCH, a failed batch retried item by item
 * to find the refused ones). Triggers' protected globals keep their current values. In a dry run nothing is
 * written and the counts say what would change.
 */
export class Importer {
  readonly #domain: Domain;
  readonly #scope: Scope;
  readonly #dryRun: boolean;
  readonly counts: ImportCounts = { processed: 0, created: 0, updated: 0, unchanged: 0, refusedCount: 0, refused: [] };
  #services = new Map<string, Service>();
  /** Service names a dry run would create: endpoints may refer to them. */
  readonly #plannedServices = new Set<string>();
  #triggerIds = new Map<string, string>();
  #batch: Array<{ endpoint: Endpoint; item: EndpointItem }> = [];
  readonly #sealer: Sealer | undefined;
  readonly #bootstrapConfigs: BootstrapConfigs | undefined;
  #geofences = new Map<string, Geofence>();
  /** Service id and key of every endpoint read so far: a key twice in the document is refused the second time. */
  readonly #endpointsSeen = new Set<string>();

  /** `sealer` opens the document's sealed secrets; `bootstrapConfigs` takes endpoints' own LwM2M bootstrap configurations. */
  constructor(domain: Domain, scope: Scope, options: ImportOptions) {
    this.#domain = domain;
    this.#scope = scope;
    this.#dryRun = options.dryRun;
    this.#sealer = options.sealer;
    this.#bootstrapConfigs = options.bootstrapConfigs;
  }

  get bulk(): boolean {
    return this.counts.processed >= REAL_TIME_ITEMS;
  }

  async run(read: SectionReader): Promise<void> {
    this.#services = new Map((await all((page) => this.#domain.services.list(this.#scope, {}, page))).map((service) => [service.name, service]));
    for await (const item of read('services')) await this.#item('services', item, ServiceItem, (value) => this.#service(value));
    this.#triggerIds = new Map((await all((page) => this.#domain.triggers.list(this.#scope, page))).map((trigger) => [trigger.name, trigger.id]));
    for await (const item of read('triggers')) await this.#item('triggers', item, TriggerItem, (value) => this.#trigger(value));
    for await (const item of read('endpoints')) await this.#item('endpoints', item, EndpointItem, (value) => this.#endpoint(value));
    await this.#flush();
    this.#geofences = new Map((await all((page) => this.#domain.location.geofences.list(this.#scope, {}, page))).map((geofence) => [geofence.name, geofence]));
    for await (const item of read('geofences')) await this.#item('geofences', item, GeofenceItem, (value) => this.#geofence(value));
    for await (const item of read('reports')) await this.#item('reports', item, ReportItem, (value) => this.#report(value));
    this.#triggerIds = new Map((await all((page) => this.#domain.triggers.list(this.#scope, page))).map((trigger) => [trigger.name, trigger.id]));
    for await (const item of read('alertRules')) await this.#item('alertRules', item, AlertRuleItem, (value) => this.#alertRule(value));
    if (!this.#dryRun) {
      const { refused: _listed, ...summary } = this.counts;
      await this.#domain.events.publish(createEvent({ type: 'imex-import', accountId: this.#scope.accountId, data: summary }));
    }
  }

  /** One item: checked against its schema, applied, counted; a refusal is recorded and the import goes on. */
  async #item<S extends TSchema>(section: Section, sealed: unknown, schema: S, apply: (value: never) => Promise<'created' | 'updated' | 'unchanged' | 'batched'>): Promise<void> {
    const label = itemLabel(sealed, this.counts.processed);
    this.counts.processed++;
    if (nestsDeeperThan(sealed)) return this.refuse(section, label, `the item nests deeper than ${MAX_JSON_DEPTH} levels`);
    let raw: unknown;
    try {
      raw = openSealedValues(sealed, this.#sealer);
    } catch (error) {
      return this.refuse(section, label, reasonOf(error));
    }
    if (!Value.Check(schema, raw)) {
      const first = Value.Errors(schema, raw)[0];
      this.refuse(section, label, first ? `${first.instancePath || '/'} ${first.message}` : 'not an item of this section');
      return;
    }
    try {
      const outcome = await apply(raw as never);
      if (outcome !== 'batched') this.counts[outcome]++;
    } catch (error) {
      this.refuse(section, label, reasonOf(error));
    }
  }

  refuse(section: Refusal['section'], item: string, reason: string): void {
    this.counts.refusedCount++;
    if (this.counts.refused.length < REFUSALS_LISTED) this.counts.refused.push({ section, item, reason });
  }

  async #service(item: ServiceItem): Promise<'created' | 'updated' | 'unchanged'> {
    const current = this.#services.get(item.name);
    const input: ServiceInput = { name: item.name, type: item.type, options: item.options ?? {} };
    if (!current) {
      if (this.#dryRun) return this.#plannedServices.add(item.name), 'created';
      this.#services.set(item.name, await this.#domain.services.create(this.#scope, input));
      return 'created';
    }
    if (current.type !== item.type) throw new AppError('IOTB_REQUEST_VALIDATION', `the account's service "${item.name}" is of type ${current.type}, not ${item.type}`);
    const wanted = item.options ?? {};
    if (Object.entries(wanted).every(([name, value]) => isDeepStrictEqual((current.options as Record<string, unknown>)[name], value))) return 'unchanged';
    if (!this.#dryRun) this.#services.set(item.name, await this.#domain.services.replace(this.#scope, current.id, { ...input, options: { ...current.options, ...wanted } }));
    return 'updated';
  }

  async #trigger(item: TriggerItem): Promise<'created' | 'updated' | 'unchanged'> {
    const id = this.#triggerIds.get(item.name);
    const current = id === undefined ? undefined : await this.#domain.triggers.get(this.#scope, id);
    const input: TriggerInput = { ...item, globals: protectedGlobals(current, item.globals ?? {}) };
    if (!current) {
      if (!this.#dryRun) this.#triggerIds.set(item.name, (await this.#domain.triggers.create(this.#scope, input)).id);
      return 'created';
    }
    const same =
      current.script === input.script &&
      isDeepStrictEqual(current.events, input.events) &&
      isDeepStrictEqual(current.filters, input.filters ?? []) &&
      current.enabled === (input.enabled ?? true) &&
      current.library === (input.library ?? false) &&
      isDeepStrictEqual(current.globals, input.globals) &&
      isDeepStrictEqual(current.form ?? null, input.form ?? null);
    if (same) return 'unchanged';
    if (!this.#dryRun) await this.#domain.triggers.replace(this.#scope, current.id, input);
    return 'updated';
  }

  async #endpoint(item: EndpointItem): Promise<'created' | 'updated' | 'unchanged' | 'batched'> {
    const service = this.#services.get(item.service);
    if (!service) {
      if (this.#dryRun && this.#plannedServices.has(item.service)) return 'created';
      throw new AppError('IOTB_REQUEST_VALIDATION', `no service "${item.service}" in the document or the account`);
    }
    const seen = `${service.id}\u0000${item.key}`;
    if (this.#endpointsSeen.has(seen)) throw new AppError('IOTB_ENDPOINT_KEY_TAKEN', 'the key is twice in the document for this service');
    this.#endpointsSeen.add(seen);
    const input: EndpointInput = { key: item.key, serviceId: service.id, tags: item.tags, statusDetails: withoutPlatformDetails(item.statusDetails ?? {}), parameters: item.parameters, trace: item.trace };
    const current = (await this.#domain.endpoints.byKeys(this.#scope, service.id, [item.key])).get(item.key);
    if (current) return this.#existingEndpoint(current, input, item);
    if (this.#dryRun) {
      await this.#extras(this.#domain.endpoints.build(this.#scope, input), item, true);
      return 'created';
    }
    if (!this.bulk) {
      const created = await this.#domain.endpoints.create(this.#scope, input);
      await this.#putStorage(created, item.storage);
      await this.#extras(created, item, false);
      return 'created';
    }
    this.#batch.push({ endpoint: this.#domain.endpoints.build(this.#scope, input), item });
    if (this.#batch.length >= BATCH) await this.#flush();
    return 'batched';
  }

  async #existingEndpoint(current: Endpoint, input: EndpointInput, item: EndpointItem): Promise<'updated' | 'unchanged'> {
    const storage = item.storage;
    const stored = (await this.#domain.endpoints.storageOf(this.#scope, [current.id])).get(current.id) ?? {};
    const storageChanged = storage !== undefined && Object.entries(storage).some(([name, value]) => !isDeepStrictEqual(stored[name], value));
    const fieldsChanged =
      !isDeepStrictEqual(current.tags, input.tags ?? []) ||
      !isDeepStrictEqual(withoutPlatformDetails(current.statusDetails), input.statusDetails ?? {}) ||
      !isDeepStrictEqual(current.parameters, input.parameters ?? {}) ||
      current.trace !== (input.trace ?? false);
    const extrasChanged = await this.#extras(current, item, true);
    if (!fieldsChanged && !storageChanged && !extrasChanged) return 'unchanged';
    if (this.#dryRun) return 'updated';
    const saved = fieldsChanged ? await this.#domain.endpoints.replace(this.#scope, current.id, input) : current;
    if (storageChanged) await this.#putStorage(saved, storage);
    if (extrasChanged) await this.#extras(saved, item, false);
    return 'updated';
  }

  /** Writes the queued new endpoints in one transaction; a refused batch is retried one by one to name the refused. */
  async #flush(): Promise<void> {
    const batch = this.#batch;
    this.#batch = [];
    if (batch.length === 0) return;
    let inserted = false;
    try {
      await this.#domain.endpoints.insertMany(this.#scope, batch.map((queued) => queued.endpoint));
      inserted = true;
    } catch {
      // Found item by item below.
    }
    if (inserted) {
      for (const { endpoint, item } of batch) {
        this.counts.created++;
        try {
          await this.#putStorage(endpoint, item.storage);
          await this.#extras(endpoint, item, false);
        } catch (error) {
          this.refuse('endpoints', endpoint.key, `created, but: ${reasonOf(error)}`);
        }
      }
    } else {
      for (const queued of batch) {
        try {
          const { key, serviceId, tags, statusDetails, parameters, trace } = queued.endpoint;
          const created = await this.#domain.endpoints.create(this.#scope, { key, serviceId, tags, statusDetails, parameters, trace });
          await this.#putStorage(created, queued.item.storage);
          await this.#extras(created, queued.item, false);
          this.counts.created++;
        } catch (error) {
          this.refuse('endpoints', queued.endpoint.key, reasonOf(error));
        }
      }
    }
  }

  /**
   * The endpoint's device password hash, DTLS security and own bootstrap configuration from the item (what the item
   * leaves out is left as it is) → whether any differs from what is stored. `check`: only compare (and validate).
   */
  async #extras(endpoint: Endpoint, item: EndpointItem, check: boolean): Promise<boolean> {
    let changed = false;
    if (item.credentials) {
      checkImportedHash(item.credentials.passwordHash);
      const current = (await this.#domain.credentials.hashesOf([endpoint])).get(endpoint.id);
      if (current !== item.credentials.passwordHash) {
        changed = true;
        if (!check) await this.#domain.credentials.storeHash(endpoint, item.credentials.passwordHash);
      }
    }
    if (item.security) {
      const wanted = item.security;
      const current = (await this.#domain.security.storedOf([endpoint])).get(endpoint.id);
      const same = wanted.mode === 'x509' ? current?.mode === 'x509' : current?.mode === 'psk' && current.pskIdentity === wanted.identity && current.pskKey === wanted.key.toLowerCase();
      if (!same) {
        changed = true;
        if (!check) await this.#domain.security.put(this.#scope, endpoint.id, wanted);
      }
    }
    if (item.bootstrap && this.#bootstrapConfigs) {
      const wanted = normalizeBootstrapConfig(item.bootstrap);
      const current = (await this.#bootstrapConfigs.ownMany([endpoint])).get(endpoint.id);
      if (!isDeepStrictEqual(current, wanted)) {
        changed = true;
        if (!check) await this.#bootstrapConfigs.put(endpoint, item.bootstrap);
      }
    }
    return changed;
  }

  async #geofence(item: GeofenceItem): Promise<'created' | 'updated' | 'unchanged'> {
    const current = this.#geofences.get(item.name);
    const geofences = this.#domain.location.geofences;
    if (!current) {
      if (!this.#dryRun) this.#geofences.set(item.name, await geofences.create(this.#scope, item));
      return 'created';
    }
    const same =
      (item.description ?? null) === current.description &&
      isDeepStrictEqual(item.tags ?? [], current.tags) &&
      isDeepStrictEqual(item.geometry, current.geometry) &&
      isDeepStrictEqual(item.circle, current.circle);
    if (same) return 'unchanged';
    if (!this.#dryRun) this.#geofences.set(item.name, await geofences.replace(this.#scope, current.id, item));
    return 'updated';
  }

  async #putStorage(endpoint: Endpoint, storage: Record<string, unknown> | undefined): Promise<void> {
    for (const [name, value] of Object.entries(storage ?? {})) await this.#domain.endpoints.storagePut(this.#scope, endpoint.id, name, value);
  }

  async #report(item: ReportItem): Promise<'created' | 'updated' | 'unchanged'> {
    const current = (await this.#domain.reports.list(this.#scope)).find((report) => report.name === item.name);
    if (!current) {
      if (!this.#dryRun) await this.#domain.reports.create(this.#scope, item);
      return 'created';
    }
    const same =
      (item.description === undefined || current.description === item.description) &&
      (item.retentionDays === undefined || current.retentionDays === item.retentionDays) &&
      (item.columns === undefined || isDeepStrictEqual(current.columns, item.columns));
    if (same) return 'unchanged';
    if (!this.#dryRun) await this.#domain.reports.update(this.#scope, current.id, item);
    return 'updated';
  }

  async #alertRule(item: AlertRuleItem): Promise<'created' | 'updated' | 'unchanged'> {
    const current = (await this.#domain.alertRules.list(this.#scope, {})).find((rule) => rule.name === item.name);
    const { trigger, ...condition } = item.condition;
    if (trigger !== undefined) {
      const triggerId = typeof trigger === 'string' ? (this.#triggerIds.get(trigger) ?? (this.#dryRun ? trigger : undefined)) : undefined;
      if (triggerId === undefined) throw new AppError('IOTB_REQUEST_VALIDATION', `no trigger ${JSON.stringify(trigger)} in the document or the account`);
      condition.triggerId = triggerId;
    }
    const webhook = item.notify?.webhook;
    if (webhook && !webhook.secret && !current?.notify.webhook) throw new AppError('IOTB_REQUEST_VALIDATION', 'the webhook secret is not in the document: import the rule without its webhook, or give the secret');
    const input: AlertRuleInput = {
      name: item.name,
      severity: item.severity as Severity,
      tags: item.tags,
      condition,
      notify: { email: item.notify?.email, webhook: webhook && { url: webhook.url, secret: webhook.secret ?? '' } },
      enabled: item.enabled,
    };
    if (!current) {
      if (!this.#dryRun) await this.#domain.alertRules.create(this.#scope, input);
      return 'created';
    }
    const same =
      current.severity === input.severity &&
      isDeepStrictEqual(current.tags, [...new Set(input.tags ?? [])]) &&
      isDeepStrictEqual(current.condition, checkCondition(condition)) &&
      isDeepStrictEqual(current.notify.email ?? [], input.notify?.email ?? []) &&
      current.notify.webhook?.url === webhook?.url &&
      !webhook?.secret &&
      current.enabled === (input.enabled ?? true);
    if (same) return 'unchanged';
    if (!this.#dryRun) await this.#domain.alertRules.replace(this.#scope, current.id, input);
    return 'updated';
  }
}

/** A trigger's globals after an import: one protected in the account keeps its current value and flag. */
export function protectedGlobals(current: Trigger | undefined, imported: Record<string, GlobalVariable>): Record<string, GlobalVariable> {
  const globals: Record<string, GlobalVariable> = { ...imported };
  for (const [name, variable] of Object.entries(current?.globals ?? {})) if (variable.protected) globals[name] = variable;
  return globals;
}

function withoutPlatformDetails(details: Record<string, unknown>): JsonObject {
  const platform = new Set<string>(PLATFORM_STATUS_DETAILS);
  return Object.fromEntries<JsonObject[string]>(Object.entries(details).filter((entry): entry is [string, JsonObject[string]] => !platform.has(entry[0])));
}

function itemLabel(raw: unknown, index: number): string {
  const item = raw as { name?: unknown; key?: unknown } | null;
  const label = typeof item?.key === 'string' ? item.key : typeof item?.name === 'string' ? item.name : `#${index + 1}`;
  return label.slice(0, 300);
}

function reasonOf(error: unknown): string {
  if (error instanceof AppError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

async function all<T>(read: (page: { offset: number; limit: number }) => Promise<{ items: T[] }>): Promise<T[]> {
  const items: T[] = [];
  for (let offset = 0; ; offset += 500) {
    const page = await read({ offset, limit: 500 });
    items.push(...page.items);
    if (page.items.length < 500) return items;
  }
}
