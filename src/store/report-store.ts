import { sql, type Kysely, type Selectable } from 'kysely';
import type { EntryQuery, Report, ReportColumn, ReportEntry, ReportStore } from '../reports/model.js';
import type { ReportSchedule } from '../reports/report-schedule.js';
import { fromJson, toJson, type ReportsTable, type Schema } from './schema.js';
import { isUniqueViolation, toIso, toMs } from './sql.js';

/** Entries deleted per statement by the retention sweep, a turn of the event loop between. */
const DELETE_CHUNK = 10_000;

/** Reports and their entries (migration 0033), on SQLite and PostgreSQL alike. */
export class SqlReportStore implements ReportStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async list(accountId: string): Promise<Report[]> {
    return (await this.#db.selectFrom('reports').selectAll().where('account_id', '=', accountId).orderBy('name').execute()).map(toReport);
  }

  async get(accountId: string, id: string): Promise<Report | undefined> {
    const row = await this.#db.selectFrom('reports').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
    return row && toReport(row);
  }

  async findByName(accountId: string, name: string): Promise<Report | undefined> {
    const row = await this.#db.selectFrom('reports').selectAll().where('account_id', '=', accountId).where('name', '=', name).executeTakeFirst();
    return row && toReport(row);
  }

  async insert(report: Report): Promise<boolean> {
    try {
      await this.#db.insertInto('reports').values(toRow(report)).execute();
      return true;
    } catch (error) {
      if (isUniqueViolation(error)) return false;
      throw error;
    }
  }

  async dueSchedules(now: number, limit: number): Promise<Report[]> {
    const rows = await this.#db.selectFrom('reports').selectAll().where('next_send_at', '<=', now).orderBy('next_send_at').limit(limit).execute();
    return rows.map(toReport);
  }

  async claimSchedule(id: string, due: number, next: number, sentAt: number): Promise<boolean> {
    const result = await this.#db.updateTable('reports').set({ next_send_at: next, last_sent_at: sentAt }).where('id', '=', id).where('next_send_at', '=', due).executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async update(report: Report): Promise<void> {
    const { id, account_id: accountId, created_at: _created, ...changes } = toRow(report);
    await this.#db.updateTable('reports').set(changes).where('id', '=', id).where('account_id', '=', accountId).execute();
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const found = await trx.selectFrom('reports').select('id').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
      if (!found) return false;
      await trx.deleteFrom('report_entries').where('report_id', '=', id).execute();
      await trx.deleteFrom('reports').where('id', '=', id).execute();
      return true;
    });
  }

  async append(report: Report, time: number, data: Record<string, unknown>): Promise<number> {
    const row = await this.#db.insertInto('report_entries').values({ report_id: report.id, time, data: toJson(data) }).returning('id').executeTakeFirstOrThrow();
    return Number(row.id);
  }

  async entries(reportId: string, query: EntryQuery): Promise<ReportEntry[]> {
    let select = this.#db.selectFrom('report_entries').select(['id', 'time', 'data']).where('report_id', '=', reportId);
    if (query.from !== undefined) select = select.where('time', '>=', query.from);
    if (query.to !== undefined) select = select.where('time', '<', query.to);
    if (query.after !== undefined) select = select.where('id', '>', query.after);
    const rows = await select.orderBy('id').limit(query.limit).execute();
    return rows.map((row) => ({ id: Number(row.id), time: toIso(row.time), data: fromJson<Record<string, unknown>>(row.data) }));
  }

  async countEntries(reportId: string): Promise<number> {
    const row = await this.#db.selectFrom('report_entries').select(sql<number | string>`count(*)`.as('n')).where('report_id', '=', reportId).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async deleteExpired(now: number): Promise<number> {
    const kept = await this.#db.selectFrom('reports').select(['id', 'retention_days']).where('retention_days', '>', 0).execute();
    let deleted = 0;
    for (const report of kept) {
      const before = now - report.retention_days * 86_400_000;
      for (;;) {
        const chunk = this.#db.selectFrom('report_entries').select('id').where('report_id', '=', report.id).where('time', '<', before).orderBy('id').limit(DELETE_CHUNK);
        const result = await this.#db.deleteFrom('report_entries').where('id', 'in', chunk).executeTakeFirst();
        const count = Number(result.numDeletedRows);
        deleted += count;
        if (count < DELETE_CHUNK) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    return deleted;
  }
}

function toRow(report: Report): ReportsTable {
  return {
    id: report.id,
    account_id: report.accountId,
    name: report.name,
    description: report.description,
    columns: toJson(report.columns),
    retention_days: report.retentionDays,
    created_at: toMs(report.createdAt),
    updated_at: toMs(report.updatedAt),
    schedule: report.schedule === null ? null : toJson(report.schedule),
    next_send_at: report.nextSendAt === null ? null : toMs(report.nextSendAt),
    last_sent_at: report.lastSentAt === null ? null : toMs(report.lastSentAt),
  };
}

function toReport(row: Selectable<ReportsTable>): Report {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    description: row.description,
    columns: fromJson<ReportColumn[]>(row.columns),
    retentionDays: row.retention_days,
    schedule: row.schedule === null ? null : fromJson<ReportSchedule>(row.schedule),
    nextSendAt: row.next_send_at === null ? null : toIso(row.next_send_at),
    lastSentAt: row.last_sent_at === null ? null : toIso(row.last_sent_at),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}
