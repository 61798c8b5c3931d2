// Issue 20, reports: report.publish creating a report on its first entry with columns inferred and kept stable,
// /reports CRUD, paged entries, the CSV at /report/details/csv (quoting read back by a CSV parser, BOM, a
// 100,000-entry report streamed without being held in memory), listEntries in scripts, cross-tenant answers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { parse } from 'csv-parse/sync';
import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { assertError, createAccount, type TestAccount } from '../helpers/fixtures.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

async function csv(service: TestService, token: string, query: string): Promise<{ status: number; type: string | null; text: string }> {
  const response = await fetch(`${service.baseUrl}/report/details/csv?${query}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

for (const dialect of DIALECTS) {
  describe(`reports (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;

    before(async () => {
      service = await startService(dialect.name);
      tenant = await createAccount(service, 'reports');
      other = await createAccount(service, 'reports-other');
    });

    after(() => service?.stop());

    it('report.publish creates the report on its first entry; new keys become columns at the end; the CSV has them all', async () => {
      const published = await runScript(
        service,
        tenant.token,
        "report.publish('daily energy', {meter: 'm-1', kwh: 12.5}); report.publish('daily energy', {meter: 'm-2', kwh: 7, note: 'reset, \"manual\"\\nline two'});" +
          " var r = report.publish('daily energy', {kwh: 1, meter: 'm-3', flags: {a: true}, ok: false}); log(typeof r.id, r.reportId.length > 0);",
      );
      assert.equal(published.status, 'success', published.error ?? '');
      assert.deepEqual(published.logs, ['number true']);

      const report = await service.request('GET', `/reports/${encodeURIComponent('daily energy')}`, { token: tenant.token });
      assert.equal(report.status, 200, JSON.stringify(report.body));
      assert.deepEqual(report.body.columns, [
        { name: 'meter', type: 'string' },
        { name: 'kwh', type: 'number' },
        { name: 'note', type: 'string' },
        { name: 'flags', type: 'json' },
        { name: 'ok', type: 'boolean' },
      ]);
      assert.equal(report.body.entries, 3);
      assert.equal(report.body.retentionDays, 90);

      const sheet = await csv(service, tenant.token, `report=${encodeURIComponent('daily energy')}`);
      assert.equal(sheet.status, 200);
      assert.match(sheet.type ?? '', /^text\/csv/);
      const rows: string[][] = parse(sheet.text);
      assert.deepEqual(rows[0], ['time', 'meter', 'kwh', 'note', 'flags', 'ok']);
      assert.deepEqual(rows.slice(1).map((row) => row.slice(1)), [
        ['m-1', '12.5', '', '', ''],
        ['m-2', '7', 'reset, "manual"\nline two', '', ''],
        ['m-3', '1', '', '{"a":true}', 'false'],
      ]);
      assert.ok(rows.slice(1).every((row) => !Number.isNaN(Date.parse(row[0]!))), 'each row starts with its time');
      const withBom = await fetch(`${service.baseUrl}/report/details/csv?report=${report.body.id}&bom=true`, { headers: { authorization: `Bearer ${tenant.token}` } });
      const bytes = Buffer.from(await withBom.arrayBuffer());
      assert.equal(bytes.subarray(0, 8).toString('hex'), Buffer.from('\ufefftime,').toString('hex'), 'a UTF-8 BOM for spreadsheets');
    });

    it('creates, renames, changes and deletes reports; columns only grow at the end; a name is unique per account', async () => {
      const created = await service.request('POST', '/reports', { token: tenant.token, body: { name: 'alarms', description: 'alarm log', columns: [{ name: 'code', type: 'number' }], retentionDays: 7 } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assertError(await service.request('POST', '/reports', { token: tenant.token, body: { name: 'alarms' } }), 409, 'IOTB_REPORT_NAME_TAKEN', 'same name');
      assertError(await service.request('POST', '/reports', { token: tenant.token, body: { name: 'x', columns: [{ name: 'time', type: 'string' }] } }), 400, 'IOTB_REQUEST_VALIDATION', 'time is taken');
      const grown = await service.request('PATCH', `/reports/${created.body.id}`, { token: tenant.token, body: { name: 'alarm log', columns: [{ name: 'code', type: 'number' }, { name: 'text', type: 'string' }] } });
      assert.equal(grown.status, 200, JSON.stringify(grown.body));
      assert.equal(grown.body.name, 'alarm log');
      assertError(await service.request('PATCH', `/reports/${created.body.id}`, { token: tenant.token, body: { columns: [{ name: 'text', type: 'string' }] } }), 400, 'IOTB_REQUEST_VALIDATION', 'columns dropped');
      const listed = await service.request('GET', '/reports', { token: tenant.token });
      assert.deepEqual(listed.body.items.map((r: { name: string }) => r.name), ['alarm log', 'daily energy']);
      assert.equal((await service.request('DELETE', '/reports/alarm%20log', { token: tenant.token })).status, 204);
      assertError(await service.request('GET', `/reports/${created.body.id}`, { token: tenant.token }), 404, 'IOTB_REPORT_NOT_FOUND', 'deleted');
    });

    it('pages entries with next and a time range, over the API and in scripts', async () => {
      const refused = await service.request('POST', '/reports/readings/entries', { token: tenant.token, body: { data: { n: -1 } } });
      assertError(refused, 404, 'IOTB_REPORT_NOT_FOUND', 'the API appends to existing reports only');
      assert.equal((await service.request('POST', '/reports', { token: tenant.token, body: { name: 'readings' } })).status, 201);
      for (let i = 0; i < 25; i++) {
        const appended = await service.request('POST', '/reports/readings/entries', { token: tenant.token, body: { data: { n: i }, time: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString() } });
        assert.equal(appended.status, 201, JSON.stringify(appended.body));
      }
      const seen: number[] = [];
      let next: number | null = null;
      do {
        const page: { body: { items: Array<{ data: { n: number } }>; next: number | null } } = await service.request('GET', `/reports/readings/entries?limit=10${next === null ? '' : `&next=${next}`}`, { token: tenant.token });
        seen.push(...page.body.items.map((entry) => entry.data.n));
        next = page.body.next;
      } while (next !== null);
      assert.deepEqual(seen, Array.from({ length: 25 }, (_, i) => i));
      const range = await service.request('GET', '/reports/readings/entries?from=2026-01-01T00:05:00Z&to=2026-01-01T00:08:00Z', { token: tenant.token });
      assert.deepEqual(range.body.items.map((entry: { data: { n: number } }) => entry.data.n), [5, 6, 7]);

      const script = await runScript(
        service,
        tenant.token,
        "var p = report.listEntries('readings', {limit: 20}); var q = report.listEntries('readings', {next: p.next, from: '2026-01-01T00:00:00Z'}); log(p.items.length, q.items.length, q.next, q.items[0].data.n, report.listEntries('nothing').items.length);",
      );
      assert.equal(script.status, 'success', script.error ?? '');
      assert.deepEqual(script.logs, ['20 5 null 20 0']);
      const bad = await runScript(service, tenant.token, "report.publish('readings', [1, 2]);");
      assert.equal(bad.status, 'failed');
    });

    it("another account neither reads nor changes the tenant's reports; its publish makes its own", async () => {
      const id = (await service.request('GET', '/reports/readings', { token: tenant.token })).body.id as string;
      for (const [method, url, body] of [
        ['GET', `/reports/${id}`, undefined],
        ['PATCH', `/reports/${id}`, { name: 'mine' }],
        ['DELETE', `/reports/${id}`, undefined],
        ['GET', `/reports/${id}/entries`, undefined],
        ['POST', `/reports/${id}/entries`, { data: { n: 1 } }],
        ['GET', '/reports/readings', undefined],
      ] as const) {
        assertError(await service.request(method, url, { token: other.token, body }), 404, 'IOTB_REPORT_NOT_FOUND', `${method} ${url}`);
      }
      assert.equal((await csv(service, other.token, `report=${id}`)).status, 404);
      const script = await runScript(service, other.token, "log(report.listEntries('readings').items.length); report.publish('readings', {mine: true}); log(report.listEntries('readings').items.length);");
      assert.deepEqual(script.logs, ['0', '1']);
      assert.equal((await service.request('GET', '/reports/readings', { token: tenant.token })).body.entries, 25, "the tenant's report is untouched");
      assertError(await service.request('GET', '/reports', { token: null }), 401, 'IOTB_AUTH_TOKEN_MISSING', 'no token');
    });

    it('streams a CSV of 100,000 entries without holding it in memory', { skip: dialect.name === 'postgres' ? 'the size is the point, not the dialect: SQLite only (100,000 inserts)' : false }, async () => {
      const scope = await service.bridge.domain.accounts.scopeFor(await service.bridge.domain.tokens.authenticate(tenant.token));
      const reports = service.bridge.domain.reports;
      const filler = 'x'.repeat(600);
      // The first entry through the service (it makes the report and its columns), the rest written beside it in
      // one transaction: 100,000 separate commits took most of this test's time and are not what it is about.
      const first = await reports.publish(scope, 'big', { n: 0, device: 'dev-0', text: filler });
      const file = new SQLite(path.join(service.bridge.config.dataDir, 'iotbridge.sqlite'));
      try {
        const insert = file.prepare('insert into report_entries (report_id, time, data) values (?, ?, ?)');
        const time = Date.parse(first.time);
        file.transaction(() => {
          for (let n = 1; n < 100_000; n++) insert.run(first.reportId, time, JSON.stringify({ n, device: `dev-${n % 1000}`, text: filler }));
        })();
      } finally {
        file.close();
      }
      // Live memory, not garbage waiting for collection: collected before each sample.
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;
      gc();
      const before = process.memoryUsage().heapUsed;
      let peak = before;
      let chunks = 0;
      const response = await fetch(`${service.baseUrl}/report/details/csv?report=big`, { headers: { authorization: `Bearer ${tenant.token}` } });
      assert.equal(response.status, 200);
      let bytes = 0;
      let lines = 0;
      const decoder = new TextDecoder();
      for await (const chunk of response.body!) {
        bytes += chunk.byteLength;
        lines += decoder.decode(chunk, { stream: true }).split('\n').length - 1;
        if (++chunks % 200 === 0) {
          gc();
          peak = Math.max(peak, process.memoryUsage().heapUsed);
        }
      }
      assert.equal(lines, 100_001, 'a header and 100,000 rows');
      console.log(`report CSV: ${Math.round(bytes / 1e6)} MB streamed, live heap grew at most ${Math.round((peak - before) / 1e6)} MB`);
      assert.ok(bytes > 60_000_000, `${bytes} bytes`);
      // Client and service share this process: together they held a small part of the 60+ MB at any time.
      assert.ok(peak - before < bytes / 4, `heap grew ${Math.round((peak - before) / 1e6)} MB while ${Math.round(bytes / 1e6)} MB streamed`);
    });
  });
}
