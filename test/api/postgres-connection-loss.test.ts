import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import pg from 'pg';
import { DIALECTS, startService, TEST_POSTGRES_URL } from '../helpers/service.js';

const postgres = DIALECTS.find((d) => d.name === 'postgres')!;

describe('PostgreSQL connections closed under the service', { skip: postgres.skip }, () => {
  it('keeps serving: a lost idle connection neither crashes the process nor fails later requests', async () => {
    const service = await startService('postgres');
    try {
      assert.equal((await service.request('GET', '/services')).status, 200);
      const database = new URL(service.bridge.config.databaseUrl!).pathname.slice(1);
      // What a PostgreSQL restart or an administrator does to the service's idle connections.
      const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
      await admin.connect();
      try {
        const killed = await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [database]);
        assert.ok(killed.rowCount! > 0, 'the service had connections to close');
      } finally {
        await admin.end();
      }
      await sleep(200);
      for (let i = 0; i < 3; i++) assert.equal((await service.request('GET', '/services')).status, 200);
    } finally {
      await service.stop();
    }
  });
});
