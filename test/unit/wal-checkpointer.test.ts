import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { until } from '../helpers/devices.js';
import { startWalCheckpointer } from '../../src/store/wal-checkpointer.js';

describe('WAL checkpoint thread', () => {
  it('copies the log back while the writing connection never checkpoints, and the log starts over', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'iotbridge-wal-'));
    const file = path.join(dir, 'db.sqlite');
    const db = new SQLite(file);
    try {
      db.pragma('journal_mode = WAL');
      db.pragma('wal_autocheckpoint = 0'); // the writer never checkpoints: only the thread copies the log
      db.exec('create table t (id integer primary key, v text not null)');
      const checkpointer = startWalCheckpointer(file);
      await checkpointer.ready;
      const insert = db.prepare('insert into t (v) values (?)');
      // NOOP reports the log's frames and how many are copied back, and copies none itself.
      const wal = () => (db.pragma('wal_checkpoint(NOOP)') as { log: number; checkpointed: number }[])[0]!;
      for (let i = 0; i < 1000; i++) {
        insert.run(`${i}:${'x'.repeat(3000)}`);
        if (i % 100 === 99) await sleep(5);
      }
      assert.ok(wal().log >= 1000, 'a commit per row went to the log');
      await until(() => wal().checkpointed === wal().log, 'the thread to copy the whole log back');
      insert.run('last');
      assert.ok(wal().log < 10, `the next commit started the log over (${wal().log} frames)`);
      await checkpointer.stop();
      assert.equal((db.prepare('select count(*) as n from t').get() as { n: number }).n, 1001);
    } finally {
      db.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
