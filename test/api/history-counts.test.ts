// GET /history/counts (events per interval of a period, with the filters of GET /history) and the period
// check GET /history makes: per account, every bucket listed, and bad input.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../helpers/devices.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

type Counts = { from: string; to: string; interval: number; buckets: { time: string; count: number }[]; total: number };

for (const dialect of DIALECTS) {
  describe(`history counts (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let start: number;
    let end: number;

    const counts = async (query: string, token = tenant.token): Promise<Counts> => {
      const answer = await service.request('GET', `/history/counts?${query}`, { token });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return answer.body as Counts;
    };
    const post = (token: string, body: Record<string, unknown>) => service.request('POST', '/events', { token, body });

    before(async () => {
      service = await startService(dialect.name);
      tenant = await createAccount(service, 'counts');
      other = await createAccount(service, 'counts-other');
      const serviceId = await createService(service, tenant.token, { name: 'lwm2m', type: 'lwm2m' });
      await createEndpoint(service, tenant.token, { key: 'c-a', serviceId });
      await createEndpoint(service, tenant.token, { key: 'c-b', serviceId });
      start = Date.now();
      for (let n = 0; n < 3; n++) assert.equal((await post(tenant.token, { type: 'reading', endpoint: 'k.c-a' })).status, 202);
      await post(tenant.token, { type: 'alarm', endpoint: 'k.c-b' });
      await post(tenant.token, { type: 'note' });
      for (let n = 0; n < 4; n++) await post(other.token, { type: 'reading' });
      // The events are durable once accepted; the search reads them at once.
      await waitFor(async () => ((await service.request('GET', '/history?limit=10', { token: tenant.token })).body.items.length === 5 ? true : undefined), 'five events');
      end = Date.now();
    });
    after(async () => {
      await service?.stop();
    });

    const period = () => `from=${new Date(start - 60_000).toISOString()}&to=${new Date(end + 60_000).toISOString()}`;

    it('lists every interval of the period, empty ones too, and counts the events in them', async () => {
      const answer = await counts(`${period()}&interval=60`);
      assert.equal(answer.interval, 60);
      assert.equal(answer.from, new Date(start - 60_000).toISOString());
      assert.equal(answer.buckets.length, Math.floor((end - start + 120_000) / 60_000) + 1);
      assert.equal(answer.buckets[0]!.time, answer.from);
      assert.equal(answer.buckets[1]!.time, new Date(start).toISOString());
      assert.equal(answer.total, 5);
      assert.equal(answer.buckets.reduce((sum, bucket) => sum + bucket.count, 0), 5);
      assert.equal(answer.buckets[0]!.count, 0, 'the minute before the events');
      assert.equal(answer.buckets.at(-1)!.count, 0, 'the minute after them');
      const seconds = await counts(`${period()}&interval=1`);
      assert.equal(seconds.buckets.length, Math.floor((end - start + 120_000) / 1000) + 1);
      assert.equal(seconds.total, 5);
    });

    it('filters by type, endpoint and service like GET /history', async () => {
      assert.equal((await counts(`${period()}&type=reading`)).total, 3);
      assert.equal((await counts(`${period()}&type=reading&type=alarm`)).total, 4);
      assert.equal((await counts(`${period()}&endpoint=k.c-b`)).total, 1);
      const byId = await service.request('GET', '/endpoints/k.c-a', { token: tenant.token });
      assert.equal((await counts(`${period()}&endpoint=${byId.body.id}&type=alarm`)).total, 0);
      assert.equal((await counts(`${period()}&serviceId=${byId.body.serviceId}`)).total, 4);
    });

    it('defaults to the last hour by minute', async () => {
      const answer = await counts('');
      assert.equal(answer.interval, 60);
      assert.equal(answer.buckets.length, 61);
      assert.equal(Date.parse(answer.to) - Date.parse(answer.from), 3_600_000);
      assert.equal(answer.total, 5);
    });

    it("counts the acting account's events only", async () => {
      assert.equal((await counts(period(), other.token)).total, 4);
      assert.equal((await counts(`${period()}&type=note`, other.token)).total, 0);
      const acting = await service.request('GET', `/history/counts?${period()}`, { account: tenant.accountId });
      assert.equal(acting.body.total, 5);
      // Another account's endpoint is not found from this one.
      assertError(await service.request('GET', `/history/counts?${period()}&endpoint=k.c-a`, { token: other.token }), 404, 'IOTB_ENDPOINT_NOT_FOUND', 'foreign endpoint');
    });

    it('refuses a period backwards, too many intervals and bad values with the one error body', async () => {
      const bad = [
        'from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z',
        'from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&interval=1',
        'interval=0',
        'interval=86401',
        'from=yesterday',
        'interval=x',
      ];
      for (const query of bad) assertError(await service.request('GET', `/history/counts?${query}`, { token: tenant.token }), 400, 'IOTB_REQUEST_VALIDATION', query);
      const tooMany = await service.request('GET', '/history/counts?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z&interval=1', { token: tenant.token });
      assert.match(tooMany.body.error.message, /at most 1440/);
      // 1,440 intervals are allowed: a day by minute.
      assert.equal((await counts('from=2026-01-01T00:00:00Z&to=2026-01-01T23:59:00Z&interval=60')).buckets.length, 1440);
      assertError(await service.request('GET', '/history/counts?endpoint=k.nobody', { token: tenant.token }), 404, 'IOTB_ENDPOINT_NOT_FOUND', 'unknown endpoint');
      assertError(await service.request('GET', '/history/counts', { token: null }), 401, 'IOTB_AUTH_TOKEN_MISSING', 'no token');
    });

    it('GET /history refuses a period backwards too', async () => {
      const refused = await service.request('GET', '/history?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z', { token: tenant.token });
      assertError(refused, 400, 'IOTB_REQUEST_VALIDATION', 'from after to');
      assert.match(refused.body.error.message, /"from" .* is after "to"/);
      const same = await service.request('GET', '/history?from=2026-01-01T00:00:00Z&to=2026-01-01T00:00:00Z', { token: tenant.token });
      assert.equal(same.status, 200, 'an instant is a period');
    });
  });
}
