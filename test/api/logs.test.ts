// Issue 20, logs: GET /log and GET /log/csv. Each source appears (a script's lines and a failed run, an API error,
// an audit entry of a change, a device's refused log-in), the filters (level, text, from/to, endpoint, trigger,
// source) and paging, the CSV read back by a CSV parser, cross-tenant and sub-account answers, bad input, and a
// search over 200,000 entries that runs out of time and answers partial results.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parse } from 'csv-parse/sync';
import pino from 'pino';
import { option, OptionNumber } from '../../src/coap/index.js';
import { RetentionJob } from '../../src/events/retention.js';
import { Logs } from '../../src/logs/logs.js';
import type { LogChunk, LogInput, LogRow, LogStore } from '../../src/logs/model.js';
import { CONTENT_FORMATS } from '../../src/lwm2m/model.js';
import { openDatabase } from '../../src/store/database.js';
import { sqlStores } from '../../src/store/stores.js';
import { waitFor } from '../helpers/devices.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { connackCode, setPassword } from '../helpers/mqtt.js';
import { runScript } from '../helpers/scripts.js';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

interface Entry {
  id: string;
  time: string;
  level: string;
  source: string;
  message: string;
  endpointId: string | null;
  endpointKey: string | null;
  triggerId: string | null;
  data: Record<string, any> | null;
}
interface Page {
  items: Entry[];
  partial: boolean;
  searchedTo: string | null;
  next: string | null;
}

/** 2020-01-01, where the filter tests' entries lie: nothing the service writes itself comes near. */
const T0 = Date.UTC(2020, 0, 1);
const RANGE = 'from=2020-01-01T00:00:00Z&to=2020-01-01T01:00:00Z';

for (const dialect of DIALECTS) {
  describe(`logs (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let child: TestAccount;
    const devices = new SimulatedDevices(() => service.ports.coap!);

    const log = async (token: string, query: string, account?: string): Promise<Page> => {
      const found = await service.request<Page>('GET', `/log?${query}`, { token, account });
      assert.equal(found.status, 200, JSON.stringify(found.body));
      return found.body;
    };
    /** The entries matching `query` once at least `count` are there (entries are written within ~250 ms). */
    const entriesOnce = (token: string, query: string, count = 1, account?: string) =>
      waitFor(async () => {
        const page = await log(token, query, account);
        return page.items.length >= count ? page.items : undefined;
      }, `log entries for ${query}`);
    const messages = (page: Page) => page.items.map((entry) => entry.message);

    before(async () => {
      service = await startService(dialect.name);
      tenant = await createAccount(service, 'logs');
      other = await createAccount(service, 'logs-other');
      child = await createAccount(service, 'logs-child', { token: tenant.token, parentId: tenant.accountId });
    });

    after(async () => {
      await devices.stopAll();
      await service?.stop();
    });

    it("a trigger's log lines at info and a failed run at error, with the trigger and the event's endpoint", async () => {
      const serviceId = await createService(service, tenant.token, { name: 'logs-svc', type: 'udp' });
      const endpoint = await createEndpoint(service, tenant.token, { key: 'meter-1', serviceId });
      const ran = await runScript(service, tenant.token, "log('hello from', event.endpointKey); console.log('second line');", { endpoint: endpoint.id as string });
      assert.equal(ran.status, 'success', ran.error ?? '');
      const triggerId = (ran as unknown as { triggerId: string }).triggerId;
      const lines = await entriesOnce(tenant.token, `source=script&trigger=${triggerId}`, 2);
      assert.deepEqual(lines.map((entry) => entry.message).sort(), ['hello from meter-1', 'second line']);
      for (const entry of lines) {
        assert.equal(entry.level, 'info');
        assert.equal(entry.source, 'script');
        assert.equal(entry.triggerId, triggerId);
        assert.equal(entry.endpointId, endpoint.id);
        assert.equal(entry.endpointKey, 'meter-1');
        assert.equal(typeof entry.data?.executionId, 'string');
        assert.ok(!Number.isNaN(Date.parse(entry.time)));
      }

      const failed = await runScript(service, tenant.token, "log('before the fall'); throw new Error('boom 42');");
      assert.equal(failed.status, 'failed');
      const failedTrigger = (failed as unknown as { triggerId: string }).triggerId;
      const [error] = await entriesOnce(tenant.token, `level=error&trigger=${failedTrigger}`);
      assert.equal(error!.source, 'script');
      assert.match(error!.message, /^run failed: .*boom 42/);
      assert.equal(error!.endpointId, null, 'an event without an endpoint');
      const all = await log(tenant.token, `trigger=${failedTrigger}`);
      assert.deepEqual(
        all.items.map((entry) => [entry.level, entry.message.slice(0, 10)]),
        [
          ['error', 'run failed'],
          ['info', 'before the'],
        ],
        'newest first: the error was written after the line',
      );
    });

    it('API errors of authenticated callers at warn, without the query string; nothing for calls without an account', async () => {
      assertError(await service.request('GET', '/endpoints/no-such-endpoint?access_token=secret-value', { token: tenant.token }), 404, 'IOTB_ENDPOINT_NOT_FOUND', 'unknown endpoint');
      const [entry] = await entriesOnce(tenant.token, 'source=api&text=no-such-endpoint');
      assert.equal(entry!.level, 'warn');
      assert.match(entry!.message, /^GET \/endpoints\/no-such-endpoint → 404 IOTB_ENDPOINT_NOT_FOUND: /);
      assert.ok(!JSON.stringify(entry).includes('secret-value'), 'no query string');
      assert.equal(entry!.data?.status, 404);
      assert.equal(entry!.data?.code, 'IOTB_ENDPOINT_NOT_FOUND');

      assertError(await service.request('GET', '/endpoints/unauthenticated-probe', { token: null }), 401, 'IOTB_AUTH_TOKEN_MISSING', 'no token');
      assertError(await service.request('GET', '/endpoints/unauthenticated-probe', { token: 'AT:not-a-token-of-anyone' }), 401, 'IOTB_AUTH_TOKEN_INVALID', 'bad token');
      // Written after the probes: once it is there, they would be too.
      assertError(await service.request('GET', '/endpoints/after-the-probes', { token: tenant.token }), 404, 'IOTB_ENDPOINT_NOT_FOUND', 'marker');
      await entriesOnce(tenant.token, 'text=after-the-probes');
      for (const token of [tenant.token, undefined]) assert.equal((await log(token!, 'text=unauthenticated-probe')).items.length, 0);
    });

    it('audit entries of changes: the route, who made it and the object; reads and event posts are not audited', async () => {
      const tokens = await service.request('GET', '/tokens', { token: tenant.token });
      const tokenId = (tokens.body.items as { id: string; name: string }[]).find((item) => item.name === 'logs token')!.id;
      const serviceId = await createService(service, tenant.token, { name: 'audited', type: 'udp' });
      const endpoint = await createEndpoint(service, tenant.token, { key: 'audited-1', serviceId });
      const patched = await service.request('PATCH', `/endpoints/${endpoint.id}`, { token: tenant.token, body: { tags: ['x'] } });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      assert.equal((await service.request('DELETE', `/endpoints/${endpoint.id}`, { token: tenant.token })).status, 204);
      const mine = await entriesOnce(tenant.token, `source=audit&endpoint=${endpoint.id}`, 3);
      assert.deepEqual(mine.map((entry) => entry.message), ['DELETE /endpoints/:ref', 'PATCH /endpoints/:ref', 'POST /endpoints'], "the endpoint's changes, found by its id");
      assert.ok(mine.every((entry) => entry.data?.objectId === endpoint.id));
      for (const entry of mine) {
        assert.equal(entry.level, 'info');
        assert.equal(entry.data?.tokenId, tokenId, 'the principal');
      }
      const created = (await log(tenant.token, 'source=audit&text=POST /services')).items.find((entry) => entry.data?.objectId === serviceId);
      assert.ok(created, 'a created object is named by the id in the answer');

      assert.equal((await service.request('POST', '/events', { token: tenant.token, body: { type: 'not-audited' } })).status, 202);
      assert.equal((await service.request('GET', `/services/${serviceId}`, { token: tenant.token })).status, 200);
      assert.equal((await service.request('DELETE', `/services/${serviceId}`, { token: tenant.token })).status, 204);
      await entriesOnce(tenant.token, 'source=audit&text=DELETE /services');
      assert.equal((await log(tenant.token, 'source=audit&text=/events')).items.length, 0, 'POST /events is data, not a change');
      assert.equal((await log(tenant.token, 'source=audit&text=GET')).items.length, 0, 'reads are not audited');
    });

    it("device errors: a known endpoint's MQTT log-in with a wrong password, once per window", async () => {
      const serviceId = await createService(service, tenant.token, { name: 'logs-mqtt', type: 'mqtt' });
      const endpoint = await createEndpoint(service, tenant.token, { key: 'mq-logs-1', serviceId });
      await setPassword(service, tenant.token, endpoint.id as string, 'right-password-1');
      assert.equal(await connackCode(service.ports.mqtt!, { key: 'mq-logs-1', password: 'wrong-password' }), 4);
      assert.equal(await connackCode(service.ports.mqtt!, { key: 'mq-logs-1', password: 'wrong-again' }), 4);
      const [entry] = await entriesOnce(tenant.token, `source=device&endpoint=${endpoint.id}`);
      assert.equal(entry!.level, 'warn');
      assert.equal(entry!.message, 'MQTT log-in refused: wrong password');
      assert.equal(entry!.endpointKey, 'mq-logs-1');
      assert.match(String(entry!.data?.remoteAddr), /^127\.0\.0\.1:\d+$/);
      assert.equal((await log(tenant.token, 'source=device&endpoint=k.mq-logs-1')).items.length, 1, 'the second refusal within the window is not written again');
      assert.equal((await log(other.token, 'source=device')).items.length, 0, 'not in another account');
    });

    it('device errors: an LwM2M Send whose payload cannot be decoded', async () => {
      const serviceId = await createService(service, tenant.token, { name: 'logs-lwm2m', type: 'lwm2m' });
      const meter = await createEndpoint(service, tenant.token, { key: 'urn:logs:meter-1', serviceId });
      const device = await devices.start('urn:logs:meter-1');
      assert.equal(await device.register(), '2.01');
      const options = [option(OptionNumber.UriPath, 'dp'), option(OptionNumber.ContentFormat, CONTENT_FORMATS.senmlJson)];
      const answer = await device.coap.request({ address: '127.0.0.1', port: service.ports.coap! }, { code: '0.02', options, payload: Buffer.from('{not json') });
      assert.equal(answer.code, '4.00');
      const [entry] = await entriesOnce(tenant.token, `source=device&endpoint=k.urn:logs:meter-1`);
      assert.match(entry!.message, /^LwM2M Send refused: /);
      assert.equal(entry!.endpointId, meter.id);
      assert.equal(entry!.level, 'warn');
    });

    describe('filters, paging and CSV', () => {
      const entries: LogInput[] = [];
      before(async () => {
        const base = { accountId: '' };
        entries.push(
          { ...base, time: T0 + 1000, level: 'debug', source: 'script', message: 'debug line', triggerId: 'trig-a', endpointId: 'ep-1', endpointKey: 'key-1' },
          { ...base, time: T0 + 2000, level: 'info', source: 'script', message: 'Temperature 21% ok', triggerId: 'trig-a', endpointId: 'ep-1', endpointKey: 'key-1', data: { n: 1 } },
          { ...base, time: T0 + 3000, level: 'warn', source: 'device', message: 'refused, "quoted"\nsecond line', endpointId: 'ep-2', endpointKey: 'key-2' },
          { ...base, time: T0 + 4000, level: 'error', source: 'script', message: 'run failed: TEMPERATURE_sensor', triggerId: 'trig-b' },
          { ...base, time: T0 + 5000, level: 'info', source: 'audit', message: 'POST /endpoints' },
        );
        await service.bridge.domain.logs.append(entries.map((entry) => ({ ...entry, accountId: tenant.accountId })));
      });

      it('level, text, from/to, endpoint, trigger and source filter; newest first', async () => {
        const all = await log(tenant.token, RANGE);
        assert.deepEqual(messages(all), entries.map((entry) => entry.message).reverse());
        assert.equal(all.partial, false);
        assert.equal(all.searchedTo, '2020-01-01T00:00:00.000Z', 'looked back to from');
        assert.equal(all.next, null);
        assert.deepEqual(all.items[3], { id: all.items[3]!.id, time: '2020-01-01T00:00:02.000Z', level: 'info', source: 'script', message: 'Temperature 21% ok', endpointId: 'ep-1', endpointKey: 'key-1', triggerId: 'trig-a', data: { n: 1 } });
        assert.equal(new Set(all.items.map((entry) => entry.id)).size, 5, 'ids are unique');
        const check = async (query: string, expected: string[], what: string) => assert.deepEqual(messages(await log(tenant.token, `${RANGE}&${query}`)), expected, what);
        await check('level=warn', ['run failed: TEMPERATURE_sensor', 'refused, "quoted"\nsecond line'], 'warn and more severe');
        await check('level=error', ['run failed: TEMPERATURE_sensor'], 'error only');
        await check('level=info', messages(all).slice(0, 4), 'all but debug');
        await check('text=temperature', ['run failed: TEMPERATURE_sensor', 'Temperature 21% ok'], 'case-insensitive');
        await check(`text=${encodeURIComponent('%')}`, ['Temperature 21% ok'], '% is literal');
        await check('text=_', ['run failed: TEMPERATURE_sensor'], '_ is literal');
        await check('text=nothing-like-it', [], 'no match');
        await check('endpoint=ep-1', ['Temperature 21% ok', 'debug line'], 'endpoint id');
        await check('endpoint=k.key-2', ['refused, "quoted"\nsecond line'], 'endpoint key');
        await check('trigger=trig-a&level=info', ['Temperature 21% ok'], 'trigger and level');
        await check('source=audit&source=device', ['POST /endpoints', 'refused, "quoted"\nsecond line'], 'sources');
        const narrow = await log(tenant.token, 'from=2020-01-01T00:00:02Z&to=2020-01-01T00:00:04Z');
        assert.deepEqual(messages(narrow), ['refused, "quoted"\nsecond line', 'Temperature 21% ok'], 'from inclusive, to exclusive');
      });

      it('pages with limit and next', async () => {
        const seen: string[] = [];
        let next: string | null = null;
        let pages = 0;
        do {
          const page: Page = await log(tenant.token, `${RANGE}&limit=2${next === null ? '' : `&next=${next}`}`);
          seen.push(...messages(page));
          next = page.next;
          pages++;
        } while (next !== null && pages < 10);
        assert.deepEqual(seen, entries.map((entry) => entry.message).reverse());
        assert.equal(pages, 3, 'two full pages, then the last');
      });

      it('GET /log/csv: the same entries as CSV, quoted as a parser reads them', async () => {
        const response = await fetch(`${service.baseUrl}/log/csv?${RANGE}`, { headers: { authorization: `Bearer ${tenant.token}` } });
        assert.equal(response.status, 200);
        assert.match(response.headers.get('content-type') ?? '', /^text\/csv/);
        const rows: string[][] = parse(await response.text());
        assert.deepEqual(rows[0], ['time', 'level', 'source', 'endpointKey', 'triggerId', 'message']);
        assert.deepEqual(rows.slice(1), [
          ['2020-01-01T00:00:05.000Z', 'info', 'audit', '', '', 'POST /endpoints'],
          ['2020-01-01T00:00:04.000Z', 'error', 'script', '', 'trig-b', 'run failed: TEMPERATURE_sensor'],
          ['2020-01-01T00:00:03.000Z', 'warn', 'device', 'key-2', '', 'refused, "quoted"\nsecond line'],
          ['2020-01-01T00:00:02.000Z', 'info', 'script', 'key-1', 'trig-a', 'Temperature 21% ok'],
          ['2020-01-01T00:00:01.000Z', 'debug', 'script', 'key-1', 'trig-a', 'debug line'],
        ]);
        const filtered = await fetch(`${service.baseUrl}/log/csv?${RANGE}&level=warn&limit=1&bom=true`, { headers: { authorization: `Bearer ${tenant.token}` } });
        const bytes = Buffer.from(await filtered.arrayBuffer());
        assert.equal(bytes.subarray(0, 8).toString('hex'), Buffer.from('\ufefftime,').toString('hex'), 'a UTF-8 BOM for spreadsheets');
        assert.deepEqual(parse(bytes.subarray(3).toString('utf8')).slice(1), [['2020-01-01T00:00:04.000Z', 'error', 'script', '', 'trig-b', 'run failed: TEMPERATURE_sensor']]);
      });

      it('another account sees none of them; a parent sees a sub-account only when acting in it', async () => {
        assert.equal((await log(other.token, RANGE)).items.length, 0);
        const csv = await fetch(`${service.baseUrl}/log/csv?${RANGE}`, { headers: { authorization: `Bearer ${other.token}` } });
        assert.deepEqual(parse(await csv.text()), [['time', 'level', 'source', 'endpointKey', 'triggerId', 'message']]);

        assertError(await service.request('GET', '/endpoints/child-only-marker', { token: child.token }), 404, 'IOTB_ENDPOINT_NOT_FOUND', 'child');
        await entriesOnce(child.token, 'text=child-only-marker');
        await entriesOnce(tenant.token, 'text=child-only-marker', 1, child.accountId);
        assert.equal((await log(tenant.token, 'text=child-only-marker')).items.length, 0, "the parent's own log");
        assert.equal((await log(child.token, RANGE)).items.length, 0, "the child does not see its parent's");
        assertError(await service.request('GET', '/log', { token: other.token, account: child.accountId }), 403, 'IOTB_AUTH_ACCOUNT_FORBIDDEN', 'another tree');
      });
    });

    it('bad input is refused with 400', async () => {
      for (const query of ['level=verbose', 'from=yesterday', 'to=2020-13-45', 'timeout=0', 'timeout=60001', 'timeout=abc', 'limit=0', 'limit=1001', 'next=garbage', 'source=somewhere', `${RANGE.replace('from=2020-01-01T00:00:00Z', 'from=2020-01-02T00:00:00Z')}`]) {
        assertError(await service.request('GET', `/log?${query}`, { token: tenant.token }), 400, 'IOTB_REQUEST_VALIDATION', query);
      }
      for (const query of ['level=verbose', 'from=yesterday', 'limit=0']) {
        assertError(await service.request('GET', `/log/csv?${query}`, { token: tenant.token }), 400, 'IOTB_REQUEST_VALIDATION', `csv ${query}`);
      }
      assertError(await service.request('GET', '/log', { token: null }), 401, 'IOTB_AUTH_TOKEN_MISSING', 'no token');
    });

    it('a search that runs out of time answers what it found with partial: true and how far it got', async () => {
      const big = await createAccount(service, 'logs-big');
      const start = Date.now() - 3_600_000;
      const total = 200_000;
      for (let offset = 0; offset < total; offset += 10_000) {
        const batch: LogInput[] = Array.from({ length: 10_000 }, (_, i) => {
          const n = offset + i;
          return { accountId: big.accountId, time: start + n * 10, level: 'info', source: 'script', message: n % 50_000 === 25_000 ? `needle ${n}` : `reading ${n} of meter-${n % 100}`, triggerId: 'bulk' };
        });
        await service.bridge.domain.logs.append(batch);
      }

      const hurried = await log(big.token, 'text=matches-nothing&timeout=1');
      assert.deepEqual(hurried.items, []);
      assert.equal(hurried.partial, true, 'stopped at the deadline');
      assert.equal(typeof hurried.searchedTo, 'string');
      const reached = Date.parse(hurried.searchedTo!);
      assert.ok(reached > start && reached <= start + total * 10, `searchedTo ${hurried.searchedTo} lies within the entries`);
      assert.match(hurried.next ?? '', /^\d+\.\d+$/, 'next goes on from there');
      const goOn = await log(big.token, `text=matches-nothing&timeout=1&next=${hurried.next}`);
      assert.deepEqual(goOn.items, []);
      if (goOn.partial) assert.ok(Date.parse(goOn.searchedTo!) <= reached, 'the next search goes on from where the last one stopped');

      const patient = await log(big.token, 'text=matches-nothing');
      assert.deepEqual(patient, { items: [], partial: false, searchedTo: null, next: null }, 'the same search with time to finish');
      const needles = await log(big.token, 'text=NEEDLE');
      assert.deepEqual(messages(needles), ['needle 175000', 'needle 125000', 'needle 75000', 'needle 25000']);
      assert.equal(needles.partial, false);
      const newest = await log(big.token, 'trigger=bulk&limit=3&timeout=1');
      assert.deepEqual(messages(newest), ['reading 199999 of meter-99', 'reading 199998 of meter-98', 'reading 199997 of meter-97'], 'the newest need one step only');
    });

    // Last: it deletes every account's entries past the retention, the filter tests' of 2020 too.
    it('the retention job deletes entries older than IOTBRIDGE_LOG_RETENTION_DAYS', async () => {
      const kept = await createAccount(service, 'logs-retention');
      const day = 86_400_000;
      await service.bridge.domain.logs.append([8, 6, 1].map((days) => ({ accountId: kept.accountId, time: Date.now() - days * day, level: 'info' as const, source: 'script' as const, message: `${days} days old` })));
      const other = openDatabase(service.bridge.config);
      try {
        const stores = sqlStores(other);
        const job = (days: number) => new RetentionJob(stores.events, stores.executions, { historyDays: 0, executionDays: 0, logs: { days, deleteOlderThan: (time) => stores.logs.deleteOlderThan(time) }, logger: pino({ level: 'silent' }) });
        assert.equal((await job(0).run()).logEntries, undefined, '0 keeps entries forever');
        const deleted = (await job(7).run()).logEntries!;
        assert.ok(deleted >= 6, `the 8-day-old entry and the five of 2020 went (${deleted})`);
        assert.deepEqual(messages(await log(kept.token, 'source=script')), ['1 days old', '6 days old']);
        assert.equal(service.bridge.config.logRetentionDays, 7, 'the default');
      } finally {
        await other.close();
      }
    });
  });
}

/** A store whose writes are counted, and held until `release` when `hold` is set. */
class CountingStore implements LogStore {
  readonly statements: number[] = [];
  readonly rows: LogRow[] = [];
  hold = false;
  fail = false;
  #waiting: Array<() => void> = [];

  async insert(rows: readonly LogRow[]): Promise<void> {
    if (this.hold) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    if (this.fail) throw new Error('the store is down');
    this.statements.push(rows.length);
    this.rows.push(...rows);
  }
  release(): void {
    this.hold = false;
    for (const resolve of this.#waiting.splice(0)) resolve();
  }
  async chunk(): Promise<LogChunk> {
    return { items: [], reached: undefined, more: false };
  }
  async deleteOlderThan(): Promise<number> {
    return 0;
  }
}

describe('the log buffer', () => {
  const entry = (n: number, level: LogInput['level'] = 'info'): LogInput => ({ accountId: 'a', level, source: 'script', message: `line ${n}` });

  it('writes entries in multi-row batches, never a statement per entry, and all of them on stop', async () => {
    const store = new CountingStore();
    const logs = new Logs(store, { flushIntervalMs: 50, flushRows: 500 });
    for (let i = 0; i < 1234; i++) logs.write(entry(i));
    await logs.stop();
    assert.equal(store.rows.length, 1234);
    assert.ok(store.statements.length <= 3 && store.statements.every((rows) => rows <= 500), `statements of ${store.statements.join(', ')} rows`);
    assert.deepEqual(store.rows.map((row) => row.message).slice(0, 2), ['line 0', 'line 1'], 'in the order written');
    logs.write(entry(9999));
    await logs.flush();
    assert.equal(store.rows.length, 1234, 'nothing is taken after stop');
  });

  it('holds at most bufferMax entries while the store lags: the oldest debug and info go first, and are counted', async () => {
    const store = new CountingStore();
    const logs = new Logs(store, { flushIntervalMs: 10, flushRows: 10, bufferMax: 100 });
    const problems: string[] = [];
    logs.watch((problem) => problems.push(problem));
    store.hold = true;
    logs.write(entry(-1, 'error')); // taken by the first write, which waits
    await new Promise((resolve) => setTimeout(resolve, 30));
    for (let i = 0; i < 30; i++) logs.write(entry(i, 'warn'));
    for (let i = 0; i < 200; i++) logs.write(entry(i, i % 2 === 0 ? 'debug' : 'info'));
    assert.ok(logs.stats.buffered <= 100, `buffered ${logs.stats.buffered}`);
    assert.ok(logs.stats.dropped >= 130, `dropped ${logs.stats.dropped}`);
    assert.ok(problems.some((problem) => problem.includes('dropped')));
    store.release();
    await logs.stop();
    const written = store.rows.map((row) => row.level);
    assert.equal(written.filter((level) => level === 'warn').length, 30, 'every warning kept');
    assert.equal(written.filter((level) => level === 'error').length, 1);
    assert.equal(logs.stats.written + logs.stats.dropped, 231, 'each entry written or counted as dropped');
    const kept = store.rows.filter((row) => row.level === 'info' || row.level === 'debug').map((row) => Number(row.message.split(' ')[1]));
    assert.ok(kept.length > 0 && kept.every((n) => n >= 200 - kept.length), 'the newest debug and info entries are the ones kept');
  });

  it('a write the store refuses is counted as dropped and told, and later writes go on', async () => {
    const store = new CountingStore();
    const logs = new Logs(store, { flushIntervalMs: 10 });
    const problems: string[] = [];
    logs.watch((problem) => problems.push(problem));
    store.fail = true;
    logs.write(entry(1));
    await logs.flush();
    store.fail = false;
    logs.write({ ...entry(2), message: `nul\u0000 and ${'x'.repeat(3000)}`, data: { big: 'y'.repeat(5000) } });
    await logs.stop();
    assert.deepEqual(problems, ['log entries not written']);
    assert.equal(logs.stats.dropped, 1);
    assert.equal(store.rows.length, 1);
    assert.ok(!store.rows[0]!.message.includes('\u0000'), 'no NUL (PostgreSQL text holds none)');
    assert.equal(store.rows[0]!.message.length, 2001, 'cut at 2,000 characters and …');
    assert.equal(store.rows[0]!.data, '{"truncated":true}');
  });
});
