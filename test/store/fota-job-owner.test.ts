// Cluster mode, FOTA: each running job is driven by one node. A node that starts takes up its own jobs (and ones
// nobody drives), not another live node's; the jobs of a node that died go to one survivor, once.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FotaJob, FotaStore } from '../../src/lwm2m/fota/model.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { sqlStores } from '../../src/store/stores.js';
import { DIALECTS, throwAwayPostgres } from '../helpers/service.js';

const postgres = DIALECTS.find((dialect) => dialect.name === 'postgres')!;

describe('FOTA jobs have one driving node (PostgreSQL)', { skip: postgres.skip }, () => {
  let dataDir: string;
  let database: Database;
  let drop = async () => {};
  let store: FotaStore;
  const at = '2026-11-29T00:00:00.000Z';
  const job = (id: string, state: FotaJob['state'] = 'running'): FotaJob => ({
    id,
    accountId: 'fota-owner',
    file: { name: 'fw.bin', sha256: 'ab', size: 2, version: null },
    options: {} as FotaJob['options'],
    selector: { endpoints: [] },
    concurrency: 1,
    ratePerMinute: null,
    state,
    createdBy: null,
    createdAt: at,
    updatedAt: at,
    finishedAt: null,
  });
  const ids = (jobs: readonly FotaJob[]) => jobs.map((j) => j.id).sort();

  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-fota-owner-'));
    let databaseUrl: string;
    ({ url: databaseUrl, drop } = await throwAwayPostgres());
    database = openDatabase({ dataDir, databaseUrl });
    await migrateToLatest(database);
    await database.db.insertInto('accounts').values({ id: 'fota-owner', name: 'fota-owner', parent_id: null, path: '/fota-owner/', external_refs: '{}', created_at: 0, updated_at: 0 }).execute();
    store = sqlStores(database, { dataDir }).devices.lwm2m.fota;
  });
  after(async () => {
    await database?.close();
    await drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('a node takes up its own running jobs and unowned ones; a lost node\'s go to one survivor, once', async () => {
    await store.insertJob(job('j-a1'), [], 'node-a');
    await store.insertJob(job('j-a2'), [], 'node-a');
    await store.insertJob(job('j-b1'), [], 'node-b');
    await store.insertJob(job('j-old'), []); // made in one process, before the cluster
    await store.insertJob(job('j-done', 'finished'), [], 'node-a');

    assert.deepEqual(ids(await store.runningJobs('node-b')), ['j-b1'], "node B's start: its own job only");
    assert.deepEqual(ids(await store.runningJobs()), ['j-a1', 'j-a2', 'j-b1', 'j-old'], 'one process: every running job');
    assert.deepEqual(ids(await store.takeJobsOf(null, 'node-b')), ['j-old'], 'a job nobody drives goes to the first node that starts');
    assert.deepEqual(ids(await store.takeJobsOf(null, 'node-c')), []);

    // Node A died: B and C both notice; each job goes to one of them.
    const [toB, toC] = await Promise.all([store.takeJobsOf('node-a', 'node-b'), store.takeJobsOf('node-a', 'node-c')]);
    assert.deepEqual(ids([...toB, ...toC]), ['j-a1', 'j-a2'], 'each of its running jobs once, none of its finished ones');
    assert.deepEqual(ids(await store.runningJobs('node-a')), []);
    assert.deepEqual(ids([...(await store.runningJobs('node-b')), ...(await store.runningJobs('node-c'))]), ['j-a1', 'j-a2', 'j-b1', 'j-old']);
  });
});
