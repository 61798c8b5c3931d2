import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FuzzService, fuzzAccount, poll } from '../helpers/fuzz.js';
import { CrashTestStorage } from '../helpers/crash-storage.js';
import { DIALECTS } from '../helpers/service.js';

type Doc = Record<string, any>;

/** An import document of `count` MQTT endpoints in one service. */
function documentOf(count: number, prefix: string): string {
  const endpoints = Array.from({ length: count }, (_, i) => JSON.stringify({ key: `${prefix}-${i}`, service: 'restarted', tags: ['imported'], parameters: { n: i } }));
  return `{"format":"iotbridge-export","version":1,"services":[{"name":"restarted","type":"mqtt"}],"endpoints":[${endpoints.join(',')}]}`;
}

/** Import jobs are stored: a job id answers after kill -9, and a job the crash cut short says so and how to finish it. */
for (const dialect of DIALECTS) {
  describe(`import jobs across kill -9 (${dialect.name})`, { skip: dialect.skip, timeout: 240_000 }, () => {
    let storage: CrashTestStorage;
    let service: FuzzService;

    before(async () => {
      storage = await CrashTestStorage.create(dialect.name, 'imex-restart');
      service = await storage.start();
    });
    after(async () => {
      await service?.stop();
      await storage?.remove();
    });

    it('keeps finished jobs, fails the interrupted one with a way forward, and a second import completes it', async () => {
      const { token } = await fuzzAccount(service, 'imex-restart');
      const other = await fuzzAccount(service, 'imex-restart-other');
      const small = await service.request('POST', '/imex/import', { token, body: documentOf(20, 'small') });
      assert.equal(small.status, 200, small.text);
      assert.equal(small.json.state, 'done');
      const dry = await service.request('POST', '/imex/import?dryRun=true', { token, body: documentOf(5, 'dry') });
      assert.equal(dry.status, 200, dry.text);

      // Large enough to outlast the 2 s `POST /imex/import` waits before answering 202 (SQLite imports ~7,000
      // endpoints a second on a fast day, PostgreSQL ~2,000), and to be killed halfway.
      const total = dialect.name === 'sqlite' ? 30_000 : 10_000;
      const large = documentOf(total, 'large');
      const started = await service.request('POST', '/imex/import', { token, body: large, timeoutMs: 60_000 });
      assert.equal(started.status, 202, `a large import answers while it runs: ${started.text.slice(0, 300)}`);
      const jobId = started.json.jobId as string;
      // Killed once past the real-time items, while bulk batches are being written.
      await poll(async () => {
        const job = (await service.request('GET', `/imex/jobs/${jobId}`, { token })).json;
        assert.equal(job.state, 'running', 'the import must still run when the process is killed: make the document larger');
        return (job.processed as number) > 1000 ? true : undefined;
      }, 'the import under way', 60_000);
      await CrashTestStorage.kill(service);
      service = await storage.start();

      const kept = await service.request('GET', `/imex/jobs/${small.json.jobId as string}`, { token });
      assert.equal(kept.status, 200, kept.text);
      assert.deepEqual([kept.json.state, kept.json.created, kept.json.processed, kept.json.dryRun], ['done', 21, 21, false], 'the finished job as it ended (a service and 20 endpoints)');
      const keptDry = await service.request('GET', `/imex/jobs/${dry.json.jobId as string}`, { token });
      assert.deepEqual([keptDry.json.state, keptDry.json.dryRun], ['done', true]);

      // The cut job: its heartbeat stops, and after a while it is shown failed, saying what to do.
      const interrupted = await poll(
        async () => {
          const job = await service.request('GET', `/imex/jobs/${jobId}`, { token });
          assert.equal(job.status, 200, job.text);
          return job.json.state === 'failed' ? (job.json as Doc) : undefined;
        },
        'the interrupted job shown failed',
        60_000,
      );
      assert.match(interrupted.error as string, /stopped while this import ran.*import the same document again/);
      // Bulk batches move the count in large steps: on a fast machine the kill can land after the last one was counted
      // (a service and `total` endpoints) but before the job ended, which is an interruption all the same.
      assert.ok((interrupted.processed as number) > 0 && (interrupted.processed as number) <= total + 1, `progress as last stored: ${String(interrupted.processed)}`);
      assert.ok(interrupted.finishedAt, 'a failed job has an end');

      // Another account sees neither job.
      for (const id of [jobId, small.json.jobId as string]) {
        const foreign = await service.request('GET', `/imex/jobs/${id}`, { token: other.token });
        assert.equal(foreign.status, 404, foreign.text);
        assert.equal(foreign.json.error.code, 'IOTB_IMPORT_JOB_NOT_FOUND');
      }

      // Imports are idempotent: the same document again writes what is missing and nothing twice.
      const again = await service.request('POST', '/import', { token, body: large, timeoutMs: 180_000 });
      assert.equal(again.status, 200, again.text.slice(0, 300));
      assert.deepEqual([again.json.state, again.json.refusedCount], ['done', 0]);
      assert.equal((again.json.created as number) + (again.json.unchanged as number) + (again.json.updated as number), total + 1);
      const count = await service.request('GET', '/endpoint/count?tag=imported', { token });
      assert.equal(count.status, 200, count.text);
      assert.equal(count.json.count, total + 20);
    });

    it('answers 404 for an unknown job id and refuses a malformed one', async () => {
      const { token } = await fuzzAccount(service, 'imex-restart-ids');
      const unknown = await service.request('GET', '/imex/jobs/no-such-job', { token });
      assert.equal(unknown.status, 404, unknown.text);
      assert.equal(unknown.json.error.code, 'IOTB_IMPORT_JOB_NOT_FOUND');
      const tooLong = await service.request('GET', `/imex/jobs/${'x'.repeat(65)}`, { token });
      assert.equal(tooLong.status, 400, tooLong.text);
    });
  });
}
