import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CrashTestStorage } from '../helpers/crash-storage.js';
import { fuzzAccount, poll, type FuzzService } from '../helpers/fuzz.js';
import { DIALECTS } from '../helpers/service.js';

/**
 * Execution records across kill -9: a record the API listed is still there after the process is killed, and every
 * event accepted before the kill ends with its record — handled before (its record committed no later than the
 * cursor that covers it) or after the restart (events past the cursor run again).
 */
for (const dialect of DIALECTS) {
  describe(`execution records across kill -9 (${dialect.name})`, { skip: dialect.skip }, () => {
    let storage: CrashTestStorage;
    let service: FuzzService;

    before(async () => {
      storage = await CrashTestStorage.create(dialect.name, 'executions-crash');
      service = await storage.start();
    });
    after(async () => {
      await service?.stop();
      await storage?.remove();
    });

    /** The event ids of the account's listed executions of `triggerId`, all pages. */
    async function recordedEvents(token: string, triggerId: string): Promise<string[]> {
      const ids: string[] = [];
      for (let offset = 0; ; offset += 100) {
        const page = await service.request('GET', `/executions?triggerId=${triggerId}&limit=100&offset=${offset}`, { token });
        assert.equal(page.status, 200, page.text);
        const items = page.json.items as { eventId: string }[];
        ids.push(...items.map((execution) => execution.eventId));
        if (items.length < 100) return ids;
      }
    }

    async function post(token: string, count: number, from: number): Promise<string[]> {
      const ids: string[] = [];
      // Ten at a time: the service accepts them in a few commits, as a busy fleet's would be.
      for (let n = from; n < from + count; n += 10) {
        const posted = await Promise.all(
          Array.from({ length: Math.min(10, from + count - n) }, (_, i) => service.request('POST', '/events', { token, body: { type: 'job', data: { n: n + i } } })),
        );
        for (const response of posted) {
          assert.equal(response.status, 202, response.text);
          ids.push(response.json.id as string);
        }
      }
      return ids;
    }

    it('keeps listed records, and gives every event accepted before the kill its record', async () => {
      const a = await fuzzAccount(service, 'crash-records-a');
      const b = await fuzzAccount(service, 'crash-records-b');
      const triggerOf = async (token: string) => {
        const created = await service.request('POST', '/triggers', { token, body: { name: 'record', events: ['job'], script: 'log(event.data.n);' } });
        assert.equal(created.status, 201, created.text);
        return created.json.id as string;
      };
      const triggerA = await triggerOf(a.token);
      const triggerB = await triggerOf(b.token);

      const listed = await post(a.token, 40, 0);
      const ofB = await post(b.token, 5, 0);
      await poll(async () => ((await recordedEvents(a.token, triggerA)).length >= 40 ? true : undefined), 'the first 40 records listed');
      await poll(async () => ((await recordedEvents(b.token, triggerB)).length >= 5 ? true : undefined), "B's records listed");
      await CrashTestStorage.kill(service);
      service = await storage.start();
      assert.deepEqual(new Set(await recordedEvents(a.token, triggerA)), new Set(listed), 'every listed record is still there');

      // Killed while events are being handled: none may be left without its record.
      const accepted = await post(a.token, 300, 40);
      await CrashTestStorage.kill(service);
      service = await storage.start();
      const all = [...listed, ...accepted];
      let missing = all;
      await poll(
        async () => {
          const recorded = new Set(await recordedEvents(a.token, triggerA));
          missing = all.filter((id) => !recorded.has(id));
          return missing.length === 0 ? true : undefined;
        },
        'a record for every accepted event',
        30_000,
      ).catch(() => undefined);
      assert.deepEqual(missing, [], `${missing.length} of ${all.length} accepted events have no record`);

      // Each account sees its own records only.
      assert.deepEqual(new Set(await recordedEvents(b.token, triggerB)), new Set(ofB));
      const crossTenant = await service.request('GET', `/executions?triggerId=${triggerA}`, { token: b.token });
      assert.deepEqual([crossTenant.status, crossTenant.json.items], [200, []]);
    });
  });
}
