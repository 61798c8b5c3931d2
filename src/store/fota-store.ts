import { sql, type Kysely, type Selectable } from 'kysely';
import type { PageRequest, Page } from '../domain/pagination.js';
import type { DeviceCounts, DeviceOutcome, DeviceStep, FotaDevice, FotaJob, FotaStore, JobState } from '../lwm2m/fota/model.js';
import { fromJson, toJson, type FotaDevicesTable, type FotaJobsTable, type Schema } from './schema.js';
import { pageOf, toIso, toMs } from './sql.js';

/** FOTA jobs and their devices in the service's database (migration 0030). */
export class SqlFotaStore implements FotaStore {
  readonly #db: Kysely<Schema>;

  constructor(db: Kysely<Schema>) {
    this.#db = db;
  }

  async insertJob(job: FotaJob, endpointIds: readonly string[], node?: string): Promise<void> {
    const now = toMs(job.createdAt);
    await this.#db.transaction().execute(async (trx) => {
      await trx
        .insertInto('fota_jobs')
        .values({
          id: job.id,
          account_id: job.accountId,
          file: toJson(job.file),
          options: toJson(job.options),
          selector: toJson(job.selector),
          concurrency: job.concurrency,
          rate_per_minute: job.ratePerMinute,
          state: job.state,
          created_by: job.createdBy,
          created_at: now,
          updated_at: now,
          finished_at: null,
          node: node ?? null,
        })
        .execute();
      // In slices: SQLite takes at most 32,766 parameters per statement.
      for (let from = 0; from < endpointIds.length; from += 1000) {
        const rows = endpointIds.slice(from, from + 1000).map((endpointId, i) => ({ job_id: job.id, endpoint_id: endpointId, account_id: job.accountId, seq: from + i, step: 'pending', updated_at: now }));
        await trx.insertInto('fota_devices').values(rows).execute();
      }
    });
  }

  async job(accountId: string, id: string): Promise<FotaJob | undefined> {
    const row = await this.#db.selectFrom('fota_jobs').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
    return row && jobOf(row);
  }

  jobs(accountId: string, page: PageRequest): Promise<Page<FotaJob>> {
    const base = this.#db.selectFrom('fota_jobs').where('account_id', '=', accountId);
    return pageOf(base, (q) => q.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc'), page, jobOf);
  }

  async runningJobs(node?: string): Promise<FotaJob[]> {
    let query = this.#db.selectFrom('fota_jobs').selectAll().where('state', '=', 'running');
    if (node !== undefined) query = query.where('node', '=', node);
    return (await query.orderBy('created_at').execute()).map(jobOf);
  }

  async takeJobsOf(lost: string | null, node: string): Promise<FotaJob[]> {
    const rows = await this.#db
      .updateTable('fota_jobs')
      .set({ node })
      .where((eb) => (lost === null ? eb('node', 'is', null) : eb('node', '=', lost)))
      .where('state', '=', 'running')
      .returningAll()
      .execute();
    return rows.map(jobOf);
  }

  async setJobState(id: string, state: JobState, at: string): Promise<void> {
    const ms = toMs(at);
    await this.#db.updateTable('fota_jobs').set({ state, updated_at: ms, finished_at: state === 'running' ? null : ms }).where('id', '=', id).execute();
  }

  async counts(jobId: string): Promise<DeviceCounts> {
    const rows = await this.#db
      .selectFrom('fota_devices')
      .select(['step', 'outcome', sql<number | string>`count(*)`.as('n')])
      .where('job_id', '=', jobId)
      .groupBy(['step', 'outcome'])
      .execute();
    const counts = { total: 0, pending: 0, running: 0, success: 0, failed: 0, aborted: 0 };
    for (const row of rows) {
      const n = Number(row.n);
      counts.total += n;
      if (row.outcome === 'success' || row.outcome === 'failed' || row.outcome === 'aborted') counts[row.outcome] += n;
      else if (row.step === 'pending') counts.pending += n;
      else counts.running += n;
    }
    return counts;
  }

  devices(accountId: string, jobId: string, page: PageRequest, step?: DeviceStep): Promise<Page<FotaDevice>> {
    let base = this.#db.selectFrom('fota_devices').where('job_id', '=', jobId).where('account_id', '=', accountId);
    if (step) base = base.where('step', '=', step);
    return pageOf(base, (q) => q.selectAll().orderBy('seq'), page, deviceOf);
  }

  async unfinished(jobId: string): Promise<FotaDevice[]> {
    const rows = await this.#db.selectFrom('fota_devices').selectAll().where('job_id', '=', jobId).where('step', '!=', 'done').orderBy('seq').execute();
    // Those under way first: a restart takes them up before starting new ones.
    return [...rows.filter((row) => row.step !== 'pending'), ...rows.filter((row) => row.step === 'pending')].map(deviceOf);
  }

  async latestFor(accountId: string, endpointId: string): Promise<FotaDevice | undefined> {
    const row = await this.#db
      .selectFrom('fota_devices')
      .selectAll()
      .where('endpoint_id', '=', endpointId)
      .where('account_id', '=', accountId)
      .orderBy(sql`case when step = 'done' then 1 else 0 end`)
      .orderBy('updated_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row && deviceOf(row);
  }

  async busy(endpointIds: readonly string[]): Promise<Set<string>> {
    const busy = new Set<string>();
    for (let from = 0; from < endpointIds.length; from += 1000) {
      const rows = await this.#db
        .selectFrom('fota_devices')
        .select('endpoint_id')
        .where('endpoint_id', 'in', endpointIds.slice(from, from + 1000))
        .where('step', '!=', 'done')
        .execute();
      for (const row of rows) busy.add(row.endpoint_id);
    }
    return busy;
  }

  async updateDevice(jobId: string, endpointId: string, change: Partial<Omit<FotaDevice, 'jobId' | 'accountId' | 'endpointId' | 'outcome'>>): Promise<void> {
    const set: Partial<FotaDevicesTable> = { updated_at: Date.now() };
    if (change.step !== undefined) set.step = change.step;
    if (change.mode !== undefined) set.mode = change.mode;
    if (change.updateResult !== undefined) set.update_result = change.updateResult;
    if (change.reason !== undefined) set.reason = change.reason;
    if (change.failedStep !== undefined) set.failed_step = change.failedStep;
    if (change.previousVersion !== undefined) set.previous_version = change.previousVersion;
    if (change.version !== undefined) set.version = change.version;
    if (change.startedAt !== undefined) set.started_at = change.startedAt === null ? null : toMs(change.startedAt);
    await this.#db.updateTable('fota_devices').set(set).where('job_id', '=', jobId).where('endpoint_id', '=', endpointId).where('step', '!=', 'done').execute();
  }

  async finishDevice(jobId: string, endpointId: string, end: { outcome: DeviceOutcome; reason: string | null; failedStep: DeviceStep | null; updateResult: number | null; version: string | null; at: string }): Promise<boolean> {
    const at = toMs(end.at);
    const result = await this.#db
      .updateTable('fota_devices')
      .set({ step: 'done', outcome: end.outcome, reason: end.reason, failed_step: end.failedStep, update_result: end.updateResult, ...(end.version !== null && { version: end.version }), finished_at: at, updated_at: at })
      .where('job_id', '=', jobId)
      .where('endpoint_id', '=', endpointId)
      .where('step', '!=', 'done')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }
}

function jobOf(row: Selectable<FotaJobsTable>): FotaJob {
  return {
    id: row.id,
    accountId: row.account_id,
    file: fromJson<FotaJob['file']>(row.file),
    options: fromJson<FotaJob['options']>(row.options),
    selector: fromJson<FotaJob['selector']>(row.selector),
    concurrency: row.concurrency,
    ratePerMinute: row.rate_per_minute,
    state: row.state as JobState,
    createdBy: row.created_by,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    finishedAt: row.finished_at === null ? null : toIso(row.finished_at),
  };
}

function deviceOf(row: Selectable<FotaDevicesTable>): FotaDevice {
  return {
    jobId: row.job_id,
    accountId: row.account_id,
    endpointId: row.endpoint_id,
    step: row.step as DeviceStep,
    outcome: row.outcome as DeviceOutcome | null,
    mode: row.mode as FotaDevice['mode'],
    updateResult: row.update_result,
    reason: row.reason,
    failedStep: row.failed_step as DeviceStep | null,
    previousVersion: row.previous_version,
    version: row.version,
    startedAt: row.started_at === null ? null : toIso(row.started_at),
    finishedAt: row.finished_at === null ? null : toIso(row.finished_at),
    updatedAt: toIso(row.updated_at),
  };
}
