// The Logs and Health pages of the web UI in Chromium against the real service (SQLite) serving its own copy of
// the build. Seeded through the API: a harbour's meters (one service, two endpoints with status details and
// parameters), a trigger that logs each reading and one that fails on each alarm, a call the API refuses.
// The browser runs in Europe/Berlin. IOTBRIDGE_UI_SCREENSHOTS=docs/ui also writes logs.png and health.png.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, afterEach, before, describe, it } from 'node:test';
import { parse } from 'csv-parse/sync';
import type { Browser, Page } from 'playwright-core';
import type { LogInput } from '../../src/logs/model.js';
import {
  browserMissing,
  eventually,
  failedRequest,
  launchBrowser,
  openPage,
  PHONE_VIEWPORT,
  screenshot,
  sidewaysOverflow,
  signIn,
  startUiService,
  submitToken,
  type PageProblems,
} from '../helpers/browser.js';
import { waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { ADMIN_TOKEN, type TestService } from '../helpers/service.js';

const skip = browserMissing();
const EMAIL = 'harbour-ops@example.com';
const PASSWORD = 'correct horse battery';
const SERVICE = 'Harbour meters';
const READINGS = 'log readings';
const VALVE = 'close valve';
/** Entries seeded straight into the log, two days back: enough steps that a 1 ms search runs out of time. */
const BULK = 30_000;

interface LogAnswer {
  items: { id: string; time: string; level: string; source: string; message: string; endpointId: string | null; endpointKey: string | null; triggerId: string | null }[];
  partial: boolean;
  next: string | null;
}

describe('Logs and Health pages in Chromium', { skip, timeout: 180_000 }, () => {
  let service: TestService;
  let browser: Browser;
  let page: Page;
  let problems: PageProblems;
  let other: TestAccount;
  let meterId: string;
  let readingsId: string;
  let valveId: string;
  let expected: readonly RegExp[] = [];

  const api = async <T = any>(url: string, token = ADMIN_TOKEN): Promise<T> => {
    const answer = await service.request('GET', url, { token });
    assert.equal(answer.status, 200, `${url}: ${JSON.stringify(answer.body)}`);
    return answer.body as T;
  };
  /** A link of the navigation (pages have links of the same name). */
  const section = (name: string) => page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name, exact: true });
  const logRows = () => page.getByRole('table', { name: 'Log entries' }).locator('tbody tr');
  const messages = () => logRows().locator('td.log-message').allTextContents();
  const pagerText = () => page.getByRole('navigation', { name: 'Pages of log entries' }).locator('.pager-range').textContent();
  const filterForm = () => page.getByRole('search', { name: 'Filter log entries' });
  const statusRows = () => page.getByRole('table', { name: 'Status' }).locator('tbody tr');
  const statusNames = () => statusRows().locator('td.hlt-name').allTextContents();
  const fieldRows = () => page.getByRole('table', { name: 'Fields in use' }).locator('tbody tr');
  /** The results' busy flag and the partial notice's time (null without a notice), read at once. */
  const readPartial = () =>
    page.evaluate<{ busy: string | null; reached: string | null }>(`({
      busy: document.querySelector('main [aria-busy]')?.getAttribute('aria-busy') ?? null,
      reached: document.querySelector('.log-partial time')?.getAttribute('datetime') ?? null,
    })`);
  const hashQuery = () => new URLSearchParams(new URL(page.url()).hash.split('?')[1] ?? '');

  before(async () => {
    [service, browser] = await Promise.all([startUiService(), launchBrowser()]);
    const user = await service.request('POST', '/users', { body: { email: EMAIL, password: PASSWORD, name: 'Harbour ops' } });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    const serviceId = await createService(service, ADMIN_TOKEN, { name: SERVICE, type: 'lwm2m' });
    meterId = (await createEndpoint(service, ADMIN_TOKEN, { key: 'quay-meter-1', serviceId, statusDetails: { firmwareVersion: '1.4.2' }, parameters: { interval: 60 } })).id;
    await createEndpoint(service, ADMIN_TOKEN, { key: 'quay-meter-2', serviceId, statusDetails: { firmwareVersion: '1.4.1' } });

    const readings = await service.request('POST', '/triggers', { body: { name: READINGS, events: ['reading'], script: "log('reading ' + event.data.kwh + ' kWh');" } });
    const valve = await service.request('POST', '/triggers', { body: { name: VALVE, events: ['alarm'], script: "throw new Error('valve stuck at quay ' + event.data.quay);" } });
    assert.equal(readings.status, 201, JSON.stringify(readings.body));
    assert.equal(valve.status, 201, JSON.stringify(valve.body));
    [readingsId, valveId] = [readings.body.id, valve.body.id];
    for (const kwh of [21, 22]) assert.equal((await service.request('POST', '/events', { body: { type: 'reading', endpoint: 'k.quay-meter-1', data: { kwh } } })).status, 202);
    // Two failures of the valve trigger, one of them on an endpoint: the trigger has the most errors.
    assert.equal((await service.request('POST', '/events', { body: { type: 'alarm', endpoint: 'k.quay-meter-1', data: { quay: 3 } } })).status, 202);
    assert.equal((await service.request('POST', '/events', { body: { type: 'alarm', data: { quay: 4 } } })).status, 202);
    assert.equal((await service.request('GET', '/endpoints/no-such-meter')).status, 404, 'a call the API refuses (logged as a warning)');
    await waitFor(async () => ((await api<LogAnswer>('/log?text=valve%20stuck')).items.length === 2 ? true : undefined), 'both failures in the log');
    await waitFor(async () => ((await api<LogAnswer>('/log?text=kWh')).items.length === 2 ? true : undefined), 'both readings in the log');
    other = await createAccount(service, 'Other harbour');

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true, timezoneId: 'Europe/Berlin' });
    ({ page, problems } = await openPage(context));
    await signIn(page, service.baseUrl, EMAIL, PASSWORD);
  });

  afterEach(() => {
    problems.expectNone(expected);
    expected = [];
  });

  after(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('lists the log newest first: level, source, endpoint and trigger linked, the message', async () => {
    await section('Logs').click();
    await page.getByRole('heading', { name: 'Logs', level: 1 }).waitFor();
    const log = await api<LogAnswer>('/log?limit=50');
    await eventually(messages, log.items.map((entry) => entry.message), 'the API’s entries, in its order');
    assert.equal(await pagerText(), `${log.items.length} entries, the newest first`);
    const times = await logRows().locator('td:first-child time').evaluateAll((nodes) => nodes.map((node) => node.getAttribute('datetime') ?? ''));
    assert.deepEqual(times, [...times].sort().reverse(), 'newest first');

    const failure = log.items.find((entry) => entry.endpointId === meterId && entry.level === 'error')!;
    assert.match(failure.message, /valve stuck at quay 3/);
    const row = logRows().filter({ hasText: failure.message });
    assert.deepEqual((await row.locator('td').allTextContents()).slice(1, 5), ['error', 'script', 'quay-meter-1', VALVE]);
    assert.equal(await row.getByRole('link', { name: 'quay-meter-1' }).getAttribute('href'), `#/endpoints/${meterId}`);
    assert.equal(await row.getByRole('link', { name: VALVE }).getAttribute('href'), `#/triggers/${valveId}`);
    const refused = logRows().filter({ hasText: 'GET /endpoints/no-such-meter' });
    assert.deepEqual((await refused.locator('td').allTextContents()).slice(1, 3), ['warn', 'api']);
    assert.match((await refused.locator('td.log-message').textContent()) ?? '', /404 IOTB_ENDPOINT_NOT_FOUND: No such endpoint/);
    await screenshot(page, 'logs', { fromTop: true });
  });

  it('filters by level, text and trigger, kept in the URL across a reload', async () => {
    await filterForm().getByLabel('Level').selectOption({ label: 'Errors' });
    await filterForm().getByRole('button', { name: 'Search' }).click();
    await eventually(async () => (await messages()).length, 2, 'the two failures');
    assert.deepEqual(await logRows().locator('td:nth-child(2)').allTextContents(), ['error', 'error']);
    assert.equal(hashQuery().get('level'), 'error');

    await filterForm().getByLabel('Level').selectOption('');
    await filterForm().getByLabel('Message contains').fill('KWH');
    await filterForm().getByRole('button', { name: 'Search' }).click();
    await eventually(messages, ['reading 22 kWh', 'reading 21 kWh'], 'case-insensitive text');
    assert.deepEqual(Object.fromEntries(hashQuery()), { text: 'KWH' });
    assert.equal(await logRows().first().getByRole('link', { name: READINGS }).getAttribute('href'), `#/triggers/${readingsId}`);

    await filterForm().getByLabel('Message contains').fill('');
    await filterForm().getByLabel('Trigger').selectOption({ label: VALVE });
    await filterForm().getByLabel('script').check();
    await filterForm().getByRole('button', { name: 'Search' }).click();
    await eventually(async () => (await messages()).length, 2, 'the valve trigger’s entries');
    assert.deepEqual([hashQuery().get('trigger'), hashQuery().getAll('source')], [valveId, ['script']]);

    await page.reload();
    await eventually(async () => (await messages()).length, 2, 'the same view after a reload');
    assert.equal(await filterForm().getByLabel('Trigger').inputValue(), valveId);
    assert.equal(await filterForm().getByLabel('script').isChecked(), true);
    await filterForm().getByRole('link', { name: 'Clear' }).click();
    await eventually(async () => (await messages()).length > 2, true, 'the whole log again');
  });

  it('shows the API’s message for a period that ends before it starts', async () => {
    await filterForm().getByLabel('From').fill('2026-05-02T10:00:00');
    await filterForm().getByLabel('To (not included)').fill('2026-05-01T10:00:00');
    await filterForm().getByRole('button', { name: 'Search' }).click();
    await eventually(() => page.getByRole('alert').first().textContent(), 'from must be before to', 'the API’s 400 message');
    // A malformed level or cursor in a hand-made link is left out rather than sent.
    await page.goto(`${service.baseUrl}/#/logs?level=loud&next=abc&text=kWh`);
    await eventually(messages, ['reading 22 kWh', 'reading 21 kWh'], 'the text filter alone');
    expected = [failedRequest(400)];
  });

  it('follows an endpoint link from a row, and an error count from Health back to the log', async () => {
    await page.goto(`${service.baseUrl}/#/logs?level=error`);
    await eventually(async () => (await messages()).length, 2, 'the failures');
    // Both failures may name the meter: either row's link leads to it.
    await logRows().getByRole('link', { name: 'quay-meter-1' }).first().click();
    await page.getByRole('heading', { name: 'quay-meter-1', level: 1 }).waitFor();
    assert.equal(new URL(page.url()).hash, `#/endpoints/${meterId}`);
    await page.goBack();
    await eventually(async () => (await messages()).length, 2, 'back on the log');
  });

  it('downloads the CSV of the filtered entries', async () => {
    await page.goto(`${service.baseUrl}/#/logs?text=kWh`);
    await eventually(messages, ['reading 22 kWh', 'reading 21 kWh'], 'the readings');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
    assert.equal(download.suggestedFilename(), 'log.csv');
    const rows: string[][] = parse(readFileSync(await download.path()));
    assert.deepEqual(rows[0], ['time', 'level', 'source', 'endpointKey', 'triggerId', 'message']);
    const log = await api<LogAnswer>('/log?text=kWh');
    assert.deepEqual(
      rows.slice(1),
      log.items.map((entry) => [entry.time, 'info', 'script', 'quay-meter-1', readingsId, entry.message]),
      'the same entries, newest first',
    );
  });

  it('says when a search ran out of time, and searches further from where it stopped', async () => {
    const start = Date.now() - 2 * 86_400_000;
    for (let offset = 0; offset < BULK; offset += 10_000) {
      const batch: LogInput[] = Array.from({ length: 10_000 }, (_, i) => ({
        accountId: service.rootAccountId,
        time: start + (offset + i) * 1000,
        level: 'debug',
        source: 'script',
        message: `bulk line ${offset + i}`,
      }));
      await service.bridge.domain.logs.append(batch);
    }
    await waitFor(async () => ((await api<LogAnswer>('/log?text=bulk%20line&limit=1')).items.length === 1 ? true : undefined), 'the bulk entries stored');

    // `timeout` passes through to the API: 1 ms runs out after the first step of 2,000 entries.
    await page.goto(`${service.baseUrl}/#/logs?timeout=1&text=nomatch`);
    const notice = page.getByRole('status').filter({ hasText: 'The search ran out of time' });
    await notice.waitFor();
    assert.match((await notice.textContent()) ?? '', /^The search ran out of time after reaching \d+ \w+ \d{4}, \d\d:\d\d:\d\d: showing what it found\.Search further$/);
    const reached = await notice.locator('time').getAttribute('datetime');
    assert.ok(Date.parse(reached!) > start, `reached ${reached} lies within the log`);
    assert.equal(await page.getByText('Nothing found in the part of the log searched so far.').count(), 1);
    await screenshot(page, 'logs-partial', { fromTop: true });

    // Each click goes on from where the last search stopped, further back, until the whole log has been looked at.
    let previous = reached!;
    for (let clicks = 0; ; clicks++) {
      assert.ok(clicks < 40, 'the search reaches the end of the log');
      await notice.getByRole('button', { name: 'Search further' }).click();
      const shown = await waitFor(async () => {
        const state = await readPartial();
        return state.busy === 'false' && state.reached !== previous ? state : undefined;
      }, 'the next part of the search');
      assert.ok(hashQuery().get('next'), 'the cursor in the URL');
      assert.equal(hashQuery().get('timeout'), '1', 'the time budget kept');
      if (shown.reached === null) break;
      assert.ok(Date.parse(shown.reached) < Date.parse(previous), `${shown.reached} is further back than ${previous}`);
      previous = shown.reached;
    }
    await page.getByText('No older entry matches.').waitFor();
    assert.equal(await notice.count(), 0, 'the search reached the end of the log');
  });

  it('lists triggers, endpoints and services, the most errors first, with their states', async () => {
    await section('Health').click();
    await page.getByRole('heading', { name: 'Health', level: 1 }).waitFor();
    await eventually(async () => (await statusNames())[0], VALVE, 'the failing trigger first');
    const first = statusRows().first();
    assert.deepEqual((await first.locator('td').allTextContents()).filter((_, i) => [0, 1, 2, 3].includes(i)), [VALVE, 'Trigger', 'enabled', '2']);
    assert.equal(await first.locator('td').nth(5).textContent(), '2', 'its runs');
    const errors = first.getByRole('link', { name: `2 errors of ${VALVE}: its failed runs` });
    assert.equal(await errors.getAttribute('href'), `#/triggers/executions?triggerId=${valveId}&status=failed`);
    const status = await api<{ items: { name: string; errors: number }[] }>('/metrics/status?limit=100');
    await eventually(statusNames, status.items.map((item) => item.name), 'the API’s order');

    const meter = statusRows().filter({ has: page.getByRole('link', { name: 'quay-meter-1', exact: true }) });
    assert.deepEqual((await meter.locator('td').allTextContents()).filter((_, i) => [1, 2, 3].includes(i)), ['Endpoint', 'unavailable', '1']);
    assert.equal(await meter.getByRole('link', { name: 'quay-meter-1', exact: true }).getAttribute('href'), `#/endpoints/${meterId}`);
    const harbour = statusRows().filter({ has: page.getByRole('link', { name: SERVICE, exact: true }) });
    assert.deepEqual((await harbour.locator('td').allTextContents()).filter((_, i) => [1, 2, 3, 6].includes(i)), ['Service', 'down', '1', '0 connected, 2 unavailable']);
    await screenshot(page, 'health', { fullPage: true, fromTop: true });

    // An endpoint's error count opens its error entries in the log.
    await meter.getByRole('link', { name: '1 error of quay-meter-1: its error entries in the log' }).click();
    await page.getByRole('heading', { name: 'Logs', level: 1 }).waitFor();
    assert.deepEqual(Object.fromEntries(hashQuery()), { endpoint: meterId, level: 'error' });
    await eventually(async () => (await messages()).length, 1, 'the endpoint’s one error');
    assert.match((await messages())[0]!, /valve stuck at quay 3/);
    await page.goBack();
    await errors.click();
    await page.getByRole('heading', { name: 'Executions', level: 1 }).waitFor();
    await eventually(() => page.getByRole('table', { name: 'Executions' }).locator('tbody tr').count(), 2, 'the two failed runs');
  });

  it('sorts by a column header or the select, and shows one kind of object', async () => {
    await page.goto(`${service.baseUrl}/#/health`);
    await eventually(async () => (await statusNames())[0], VALVE, 'most errors first');
    await page.getByRole('table', { name: 'Status' }).getByRole('link', { name: 'Name', exact: true }).click();
    const byName = (await api<{ items: { name: string }[] }>('/metrics/status?sort=name&limit=100')).items.map((item) => item.name);
    assert.deepEqual(byName, [SERVICE, VALVE, READINGS, 'quay-meter-1', 'quay-meter-2'], 'code-point order');
    await eventually(statusNames, byName, 'by name');
    assert.equal(hashQuery().get('sort'), 'name');
    assert.equal(await page.getByRole('columnheader', { name: 'Name' }).getAttribute('aria-sort'), 'ascending');
    assert.equal(await page.getByLabel('Sort by', { exact: true }).inputValue(), 'name');

    await page.getByLabel('Sort by', { exact: true }).selectOption({ label: 'Most errors first' });
    await eventually(async () => (await statusNames())[0], VALVE, 'errors again');
    assert.equal(await page.getByRole('columnheader', { name: /^Errors/ }).getAttribute('aria-sort'), 'descending');
    await page.getByLabel('Show', { exact: true }).selectOption({ label: 'Endpoints' });
    await eventually(async () => (await statusNames()).sort(), ['quay-meter-1', 'quay-meter-2'], 'endpoints only');
    assert.equal(hashQuery().get('object'), 'endpoint');
  });

  it('lists the fields in use with when they were counted, filtered as you type', async () => {
    await page.goto(`${service.baseUrl}/#/health`);
    await fieldRows().first().waitFor();
    assert.match((await page.locator('.hlt-census').textContent()) ?? '', /^Counted (just now|\d+ s ago);/);
    const census = await api<{ items: { object: string; field: string; count: number }[] }>('/metrics/fields');
    const all = await fieldRows().evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent)));
    assert.deepEqual(all, census.items.map((item) => [item.object, item.field, String(item.count)]));
    const filter = page.getByLabel('Filter fields');
    await filter.fill('statusdetails');
    await eventually(() => fieldRows().evaluateAll((rows) => rows.map((row) => row.textContent)), ['endpointstatusDetails.firmwareVersion2'], 'the status detail');
    await filter.fill('parameters.');
    await eventually(() => fieldRows().locator('td').allTextContents(), ['endpoint', 'parameters.interval', '1'], 'the parameter');
    await filter.fill('no-such-field');
    await page.getByText('No field matches “no-such-field”.').waitFor();
    await filter.fill('');
    await eventually(() => fieldRows().count(), census.items.length, 'every field again');
  });

  it('fits a phone’s width: nothing overflows sideways on either page', async () => {
    await page.setViewportSize(PHONE_VIEWPORT);
    await page.goto(`${service.baseUrl}/#/health`);
    await fieldRows().first().waitFor();
    await statusRows().first().waitFor();
    assert.equal(await sidewaysOverflow(page), 0, 'Health fits 390 px');
    await section('Logs').click();
    await logRows().first().waitFor();
    assert.equal(await sidewaysOverflow(page), 0, 'Logs fits 390 px');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('shows another account none of it', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const opened = await openPage(context);
    try {
      const otherPage = opened.page;
      await otherPage.goto(`${service.baseUrl}/`);
      await submitToken(otherPage, other.token);
      await otherPage.getByRole('heading', { name: 'Dashboard' }).waitFor();
      await otherPage.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Logs', exact: true }).click();
      await otherPage.getByRole('navigation', { name: 'Pages of log entries' }).waitFor();
      const shown = await otherPage.locator('main').textContent();
      for (const text of ['kWh', 'valve stuck', 'no-such-meter', 'bulk line', 'quay-meter']) assert.ok(!shown?.includes(text), `no “${text}” in the other account’s log`);
      assert.deepEqual((await api<LogAnswer>('/log', other.token)).items.filter((entry) => /kWh|valve|bulk/.test(entry.message)), []);

      await otherPage.goto(`${service.baseUrl}/#/health`);
      await otherPage.getByText('Nothing to watch yet.').waitFor();
      await otherPage.getByText(/^No fields yet\./).waitFor();
      assert.equal(await otherPage.getByRole('table', { name: 'Status' }).count(), 0);
      opened.problems.expectNone();
    } finally {
      await context.close();
    }
  });
});
