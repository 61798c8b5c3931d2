import { sql, type Kysely, type Selectable } from 'kysely';
import type { Alert, AlertChange, AlertCondition, AlertFilter, AlertNotify, AlertRule, AlertState, AlertStore, Severity } from '../alerts/model.js';
import { parseTag } from '../domain/endpoints.js';
import type { Page, PageRequest } from '../domain/pagination.js';
import { fromJson, toJson, type AlertRulesTable, type AlertsTable, type Schema } from './schema.js';
import { pageOf, toIso, toMs } from './sql.js';

/** Alert rules and alerts (migration 0034), on SQLite and PostgreSQL alike. */
export class SqlAlertStore implements AlertStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async rules(accountId: string): Promise<AlertRule[]> {
    return (await this.#db.selectFrom('alert_rules').selectAll().where('account_id', '=', accountId).orderBy('name').orderBy('id').execute()).map(toRule);
  }

  async rule(accountId: string, id: string): Promise<AlertRule | undefined> {
    const row = await this.#db.selectFrom('alert_rules').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    return row && toRule(row);
  }

  async insertRule(rule: AlertRule): Promise<void> {
    await this.#db.insertInto('alert_rules').values(ruleRow(rule)).execute();
  }

  async updateRule(rule: AlertRule): Promise<void> {
    const { id, account_id: accountId, created_at: _created, ...changes } = ruleRow(rule);
    await this.#db.updateTable('alert_rules').set(changes).where('id', '=', id).where('account_id', '=', accountId).execute();
  }

  async deleteRule(accountId: string, id: string): Promise<boolean> {
    const result = await this.#db.deleteFrom('alert_rules').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async get(accountId: string, id: string): Promise<Alert | undefined> {
    const row = await this.#db.selectFrom('alerts').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    return row && toAlert(row);
  }

  async findOpen(accountId: string, ruleId: string, endpointId: string | null): Promise<Alert | undefined> {
    let query = this.#db.selectFrom('alerts').selectAll().where('rule_id', '=', ruleId).where('account_id', '=', accountId).where('state', '!=', 'closed');
    query = endpointId === null ? query.where('endpoint_id', 'is', null) : query.where('endpoint_id', '=', endpointId);
    const row = await query.orderBy('opened_at', 'desc').executeTakeFirst();
    return row && toAlert(row);
  }

  async insert(alert: Alert): Promise<void> {
    await this.#db.insertInto('alerts').values(alertRow(alert)).execute();
  }

  async update(alert: Alert): Promise<void> {
    const { id, account_id: accountId, ...changes } = alertRow(alert);
    await this.#db.updateTable('alerts').set(changes).where('id', '=', id).where('account_id', '=', accountId).execute();
  }

  async openOfRule(accountId: string, ruleId: string): Promise<Alert[]> {
    return (await this.#db.selectFrom('alerts').selectAll().where('rule_id', '=', ruleId).where('account_id', '=', accountId).where('state', '!=', 'closed').execute()).map(toAlert);
  }

  async findOpenByName(accountId: string, name: string, endpointId: string | null): Promise<Alert | undefined> {
    let query = this.#db.selectFrom('alerts').selectAll().where('account_id', '=', accountId).where('rule_id', 'is', null).where('name', '=', name).where('state', '!=', 'closed');
    query = endpointId === null ? query.where('endpoint_id', 'is', null) : query.where('endpoint_id', '=', endpointId);
    const row = await query.orderBy('opened_at', 'desc').executeTakeFirst();
    return row && toAlert(row);
  }

  async enabledRules(): Promise<AlertRule[]> {
    return (await this.#db.selectFrom('alert_rules').selectAll().where('enabled', '=', 1).orderBy('account_id').orderBy('id').execute()).map(toRule);
  }

  async silentEndpoints(
    accountId: string,
    query: { readonly tags: readonly string[]; readonly before: number; readonly unavailableOnly: boolean; readonly limit: number },
  ): Promise<Array<{ id: string; key: string; lastSeenAt: string }>> {
    let q = this.#db.selectFrom('endpoints').select(['id', 'key', 'last_seen_at']).where('account_id', '=', accountId).where('last_seen_at', '<=', query.before);
    if (query.unavailableOnly) q = q.where('state', '=', 'unavailable');
    for (const tag of query.tags) {
      const { name, value } = parseTag(tag);
      q = q.where('id', 'in', (eb) =>
        eb
          .selectFrom('endpoint_tags')
          .select('endpoint_id')
          .where('account_id', '=', accountId)
          .where('name', '=', name)
          .$if(tag.includes(':'), (sub) => sub.where('value', '=', value)),
      );
    }
    const rows = await q.orderBy('last_seen_at').limit(query.limit).execute();
    return rows.map((row) => ({ id: row.id, key: row.key, lastSeenAt: toIso(row.last_seen_at!) }));
  }

  list(accountId: string, filter: AlertFilter, page: PageRequest): Promise<Page<Alert>> {
    let base = this.#db.selectFrom('alerts').where('account_id', '=', accountId);
    if (filter.states?.length) base = base.where('state', 'in', [...filter.states]);
    if (filter.severities?.length) base = base.where('severity', 'in', [...filter.severities]);
    if (filter.endpointId) base = base.where('endpoint_id', '=', filter.endpointId);
    if (filter.ruleId) base = base.where('rule_id', '=', filter.ruleId);
    // Tags are few per alert: matched on the JSON text of the list (each tag quoted, so `a` does not match `ab`).
    for (const tag of filter.tags ?? []) base = base.where(sql<boolean>`tags like ${`%${JSON.stringify(tag).replace(/[\\%_]/g, (c) => `\\${c}`)}%`} escape '\\'`);
    return pageOf(base, (query) => query.selectAll().orderBy('opened_at', 'desc').orderBy('id', 'desc'), page, toAlert);
  }
}

function ruleRow(rule: AlertRule): AlertRulesTable {
  return {
    id: rule.id,
    account_id: rule.accountId,
    name: rule.name,
    severity: rule.severity,
    tags: toJson(rule.tags),
    condition: toJson(rule.condition),
    notify: toJson(rule.notify),
    enabled: rule.enabled ? 1 : 0,
    created_at: toMs(rule.createdAt),
    updated_at: toMs(rule.updatedAt),
  };
}

function toRule(row: Selectable<AlertRulesTable>): AlertRule {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    severity: row.severity as Severity,
    tags: fromJson<string[]>(row.tags),
    condition: fromJson<AlertCondition>(row.condition),
    notify: fromJson<AlertNotify>(row.notify),
    enabled: Boolean(row.enabled),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

function alertRow(alert: Alert): AlertsTable {
  return {
    id: alert.id,
    account_id: alert.accountId,
    rule_id: alert.ruleId,
    name: alert.name,
    severity: alert.severity,
    tags: toJson(alert.tags),
    endpoint_id: alert.endpointId,
    endpoint_key: alert.endpointKey,
    state: alert.state,
    value: alert.value === undefined ? null : toJson(alert.value),
    occurrences: alert.occurrences,
    opened_at: toMs(alert.openedAt),
    updated_at: toMs(alert.updatedAt),
    closed_at: alert.closedAt === null ? null : toMs(alert.closedAt),
    history: toJson(alert.history),
  };
}

function toAlert(row: Selectable<AlertsTable>): Alert {
  return {
    id: row.id,
    accountId: row.account_id,
    ruleId: row.rule_id,
    name: row.name,
    severity: row.severity as Severity,
    tags: fromJson<string[]>(row.tags),
    endpointId: row.endpoint_id,
    endpointKey: row.endpoint_key,
    state: row.state as AlertState,
    value: row.value === null ? null : fromJson<unknown>(row.value),
    occurrences: row.occurrences,
    openedAt: toIso(row.opened_at),
    updatedAt: toIso(row.updated_at),
    closedAt: row.closed_at === null ? null : toIso(row.closed_at),
    history: fromJson<AlertChange[]>(row.history),
  };
}
