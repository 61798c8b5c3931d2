import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Page, PageRequest } from '../domain/pagination.js';
import type { HistoryAction, HistoryEntry, Installation, OnceClaim, Outcome, SnapshotItem, SolutionStore, Template } from '../solutions/model.js';
import type { ParameterDefinition } from '../solutions/parameters.js';
import { fromJson, toJson, type OnceEventsTable, type Schema, type SolutionHistoryTable, type SolutionInstallationsTable, type SolutionTemplatesTable } from './schema.js';
import { isUniqueViolation, pageOf, toIso, toMs } from './sql.js';

/** Templates, installations, their history and once-event claims (migration 0040), on SQLite and PostgreSQL alike. */
export class SqlSolutionStore implements SolutionStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async insertTemplate(template: Template): Promise<boolean> {
    return uniquely(() => this.#db.insertInto('solution_templates').values(templateRow(template)).execute());
  }

  async updateTemplate(template: Template): Promise<boolean> {
    const { id, account_id: accountId, created_at: _created, created_by: _by, ...changes } = templateRow(template);
    return uniquely(() => this.#db.updateTable('solution_templates').set(changes).where('id', '=', id).where('account_id', '=', accountId).execute());
  }

  async getTemplate(id: string): Promise<Template | undefined> {
    const row = await this.#db.selectFrom('solution_templates').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toTemplate(row);
  }

  listTemplates(accountIds: readonly string[], filter: { name?: string | undefined }, page: PageRequest): Promise<Page<Omit<Template, 'document'>>> {
    let base = this.#db.selectFrom('solution_templates').where('account_id', 'in', accountIds.length > 0 ? [...accountIds] : ['']);
    if (filter.name !== undefined) base = base.where('name', '=', filter.name);
    return pageOf(
      base,
      (query) => query.select(['id', 'account_id', 'account_path', 'name', 'version', 'description', 'parameters', 'created_by', 'created_at', 'updated_at']).orderBy('name').orderBy('created_at').orderBy('id'),
      page,
      (row) => {
        const { document: _document, ...summary } = toTemplate({ ...row, document: 'null' });
        return summary;
      },
    );
  }

  async deleteTemplate(accountId: string, id: string): Promise<boolean> {
    const result = await this.#db.deleteFrom('solution_templates').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  async getInstallation(accountId: string, id: string): Promise<Installation | undefined> {
    const row = await this.#db.selectFrom('solution_installations').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    return row && toInstallation(row);
  }

  async findInstallation(accountId: string, templateName: string): Promise<Installation | undefined> {
    const row = await this.#db.selectFrom('solution_installations').selectAll().where('account_id', '=', accountId).where('template_name', '=', templateName).executeTakeFirst();
    return row && toInstallation(row);
  }

  listInstallations(accountId: string, page: PageRequest): Promise<Page<Installation>> {
    const base = this.#db.selectFrom('solution_installations').where('account_id', '=', accountId);
    return pageOf(base, (query) => query.selectAll().orderBy('template_name'), page, toInstallation);
  }

  async saveInstallation(installation: Installation, isNew: boolean, entry: HistoryEntry): Promise<boolean> {
    const row = installationRow(installation);
    return uniquely(() =>
      this.#db.transaction().execute(async (trx) => {
        if (isNew) await trx.insertInto('solution_installations').values(row).execute();
        else {
          const { id, account_id: accountId, ...changes } = row;
          await trx.updateTable('solution_installations').set(changes).where('id', '=', id).where('account_id', '=', accountId).execute();
        }
        await appendIn(trx, entry);
      }),
    );
  }

  async removeInstallation(accountId: string, id: string, entry: HistoryEntry): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      await trx.deleteFrom('solution_installations').where('account_id', '=', accountId).where('id', '=', id).execute();
      await appendIn(trx, entry);
    });
  }

  async appendHistory(entry: HistoryEntry): Promise<void> {
    await appendIn(this.#db, entry);
  }

  history(accountId: string, page: PageRequest): Promise<Page<HistoryEntry>> {
    const base = this.#db.selectFrom('solution_history').where('account_id', '=', accountId);
    return pageOf(base, (query) => query.selectAll().orderBy('seq', 'desc'), page, toEntry);
  }

  async claimOnce(claim: OnceClaim): Promise<boolean> {
    const row: OnceEventsTable = {
      trigger_id: claim.triggerId,
      claim_key: claim.claimKey,
      account_id: claim.accountId,
      event_id: claim.eventId,
      data: toJson(claim.data),
      claimed_at: toMs(claim.claimedAt),
      emitted_at: null,
    };
    // One statement: the unique key decides between two claimants, in this process or another.
    const result = await this.#db.insertInto('once_events').values(row).onConflict((conflict) => conflict.columns(['trigger_id', 'claim_key']).doNothing()).executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  async markEmitted(triggerId: string, claimKey: string, at: string): Promise<void> {
    await this.#db.updateTable('once_events').set({ emitted_at: toMs(at) }).where('trigger_id', '=', triggerId).where('claim_key', '=', claimKey).execute();
  }

  async unemitted(before: string, limit: number): Promise<OnceClaim[]> {
    const rows = await this.#db.selectFrom('once_events').selectAll().where('emitted_at', 'is', null).where('claimed_at', '<', toMs(before)).orderBy('claimed_at').limit(limit).execute();
    return rows.map((row) => ({
      triggerId: row.trigger_id,
      claimKey: row.claim_key,
      accountId: row.account_id,
      eventId: row.event_id,
      data: fromJson<Record<string, unknown>>(row.data),
      claimedAt: toIso(row.claimed_at),
      emittedAt: null,
    }));
  }

  async retakeClaim(triggerId: string, claimKey: string, claimedAt: string, now: string): Promise<boolean> {
    const result = await this.#db
      .updateTable('once_events')
      .set({ claimed_at: toMs(now) })
      .where('trigger_id', '=', triggerId)
      .where('claim_key', '=', claimKey)
      .where('claimed_at', '=', toMs(claimedAt))
      .where('emitted_at', 'is', null)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }
}

async function appendIn(db: Kysely<Schema> | Transaction<Schema>, entry: HistoryEntry): Promise<void> {
  await db
    .insertInto('solution_history')
    .values({
      id: entry.id,
      account_id: entry.accountId,
      installation_id: entry.installationId,
      template_id: entry.templateId,
      template: entry.template,
      version: entry.version,
      action: entry.action,
      outcome: entry.outcome,
      parameters: toJson(entry.parameters),
      details: toJson(entry.details),
      at: toMs(entry.at),
      acted_by: entry.by,
    })
    .execute();
}

/** False when the write met a unique key. */
async function uniquely(write: () => Promise<unknown>): Promise<boolean> {
  try {
    await write();
    return true;
  } catch (error) {
    if (isUniqueViolation(error)) return false;
    throw error;
  }
}

function templateRow(template: Template): SolutionTemplatesTable {
  return {
    id: template.id,
    account_id: template.accountId,
    account_path: template.accountPath,
    name: template.name,
    version: template.version,
    description: template.description,
    parameters: toJson(template.parameters),
    document: toJson(template.document),
    created_by: template.createdBy,
    created_at: toMs(template.createdAt),
    updated_at: toMs(template.updatedAt),
  };
}

function toTemplate(row: Selectable<SolutionTemplatesTable>): Template {
  return {
    id: row.id,
    accountId: row.account_id,
    accountPath: row.account_path,
    name: row.name,
    version: row.version,
    description: row.description,
    parameters: fromJson<Record<string, ParameterDefinition>>(row.parameters),
    document: fromJson<Record<string, unknown>>(row.document),
    createdBy: row.created_by,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

function installationRow(installation: Installation): SolutionInstallationsTable {
  return {
    id: installation.id,
    account_id: installation.accountId,
    template_id: installation.templateId,
    template_name: installation.templateName,
    version: installation.version,
    parameters: toJson(installation.parameters),
    snapshot: toJson(installation.snapshot),
    installed_at: toMs(installation.installedAt),
    updated_at: toMs(installation.updatedAt),
    installed_by: installation.by,
  };
}

function toInstallation(row: Selectable<SolutionInstallationsTable>): Installation {
  return {
    id: row.id,
    accountId: row.account_id,
    templateId: row.template_id,
    templateName: row.template_name,
    version: row.version,
    parameters: fromJson<Record<string, unknown>>(row.parameters),
    snapshot: fromJson<SnapshotItem[]>(row.snapshot),
    installedAt: toIso(row.installed_at),
    updatedAt: toIso(row.updated_at),
    by: row.installed_by,
  };
}

function toEntry(row: Selectable<SolutionHistoryTable>): HistoryEntry {
  return {
    id: row.id,
    accountId: row.account_id,
    installationId: row.installation_id,
    templateId: row.template_id,
    template: row.template,
    version: row.version,
    action: row.action as HistoryAction,
    outcome: row.outcome as Outcome,
    parameters: fromJson<Record<string, unknown>>(row.parameters),
    details: fromJson<Record<string, unknown>>(row.details),
    at: toIso(row.at),
    by: row.acted_by,
  };
}
