// The Reports pages of the web UI in a real browser (Debian's Chromium through playwright-core) against the real
// service serving its own copy of the built UI. One browser for the file; each test goes on from where the
// previous one left the page, and ends with no console error (a CSP violation included) and no uncaught exception
// beyond the failed requests it provoked on purpose.
// The report is a cold chain's log (2–8 °C, the range of the WHO's cold chain for vaccines): a truck's readings
// every 10 minutes from 2026-11-02 08:00 UTC, at Hamburg's Rathaus (53.550556 N, 9.9925 E, Rathausmarkt 1). The
// browser runs in Europe/Berlin, which is UTC+1 in November (CET), so 08:00 UTC shows as 09:00.
// IOTBRIDGE_UI_SCREENSHOTS=docs/ui also writes reports.png and report.png.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import type { Browser, Page } from 'playwright-core';
import { browserMissing, eventually, failedRequest, launchBrowser, openPage, PHONE_VIEWPORT, screenshot, sidewaysOverflow, signIn, startUiService, type PageProblems } from '../helpers/browser.js';
import type { TestService } from '../helpers/service.js';

const skip = browserMissing();
const EMAIL = 'cold-chain@example.com';
const PASSWORD = 'correct horse battery';
const REPORT = 'Cold chain Hamburg';
const RATHAUS = { lat: 53.550556, lon: 9.9925 };
/** A value with a comma and quotes: RFC 4180 doubles the quotes and encloses the field in quotes. */
const DELIVERED = 'Delivered to "Rathausmarkt 1", Hamburg';
const DELIVERED_CSV = '"Delivered to ""Rathausmarkt 1"", Hamburg"';
const START = Date.parse('2026-11-02T08:00:00Z');
const ENTRY_COUNT = 25;
const TEN_MINUTES = 10 * 60_000;
/** A UTF-8 byte order mark, as spreadsheet programs want it. */
const BOM = [0xef, 0xbb, 0xbf];

/** Entry i (0-based): its time and data; the first one carries the comma and the quotes. */
function entry(i: number) {
  return {
    time: new Date(START + i * TEN_MINUTES).toISOString(),
    data: { truck: 'truck-7', temperatureC: 4 + (i % 5) / 2, doorOpen: i % 6 === 0, position: RATHAUS, note: i === 0 ? DELIVERED : `reading ${i + 1}` },
  };
}

describe('Reports pages in Chromium', { skip, timeout: 120_000 }, () => {
  let service: TestService;
  let browser: Browser;
  let page: Page;
  let problems: PageProblems;
  let reportId: string;
  let smtp: SMTPServer | undefined;
  const mails: string[] = [];

  /** A link of the navigation (pages have breadcrumbs of the same name). */
  const section = (name: string) => page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name, exact: true });
  const reportRow = (name: string) => page.locator('table[aria-label="Reports"] tbody tr').filter({ has: page.getByRole('link', { name, exact: true }) });
  const listedNames = () => page.locator('table[aria-label="Reports"] tbody td.rep-name').allTextContents();
  const entryRows = () => page.getByRole('table', { name: 'Entries' }).locator('tbody tr');
  const pagerText = () => page.getByRole('navigation', { name: 'Pages of entries' }).locator('.pager-range').textContent();
  const newReportForm = () => page.getByRole('form', { name: 'New report' });
  /** Clicks Download CSV and gives the file's name and bytes. */
  const downloadCsv = async () => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
    return { name: download.suggestedFilename(), bytes: readFileSync(await download.path()) };
  };

  before(async () => {
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      onData(stream, _session, callback) {
        let data = '';
        stream.on('data', (chunk: Buffer) => (data += chunk.toString()));
        stream.on('end', () => {
          mails.push(data);
          callback();
        });
      },
    });
    smtp = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    [service, browser] = await Promise.all([startUiService({ smtpUrl: `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}` }), launchBrowser()]);
    const user = await service.request('POST', '/users', { body: { email: EMAIL, password: PASSWORD, name: 'Cold chain' } });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    // Kept forever: the hourly retention job must not take the seeded entries during the test.
    const created = await service.request('POST', '/reports', { body: { name: REPORT, description: 'Truck 7, vaccines to the Rathaus', retentionDays: 0 } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    reportId = created.body.id;
    for (let i = 0; i < ENTRY_COUNT; i++) {
      const published = await service.request('POST', `/reports/${reportId}/entries`, { body: entry(i) });
      assert.equal(published.status, 201, JSON.stringify(published.body));
    }

    const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, acceptDownloads: true, timezoneId: 'Europe/Berlin' });
    ({ page, problems } = await openPage(context));
    await signIn(page, service.baseUrl, EMAIL, PASSWORD);
  });

  after(async () => {
    await browser?.close();
    await service?.stop();
    await new Promise<void>((resolve) => (smtp ? smtp.close(() => resolve()) : resolve()));
  });

  it('lists the seeded report with its columns and retention', async () => {
    await section('Reports').click();
    await page.getByRole('heading', { name: 'Reports', level: 1 }).waitFor();
    const row = reportRow(REPORT);
    await row.waitFor();
    assert.equal(await row.getByRole('link', { name: REPORT }).getAttribute('href'), `#/reports/${reportId}`);
    const cells = await row.locator('td').allTextContents();
    assert.deepEqual(cells.slice(1, 4), ['Truck 7, vaccines to the Rathaus', '5', 'forever']);
    problems.expectNone();
  });

  it('creates a report from the form; a name taken shows the API’s 409 message', async () => {
    const form = newReportForm();
    await form.getByLabel('Name').fill('Energy per meter');
    await form.getByLabel('Description (optional)').fill('kWh a day');
    await form.getByLabel('Retention (days)').fill('30');
    await form.getByRole('button', { name: 'Create report' }).click();
    await page.getByRole('status').filter({ hasText: 'Created “Energy per meter”.' }).waitFor();
    await eventually(listedNames, [REPORT, 'Energy per meter'], 'the new report in the list');
    assert.deepEqual((await reportRow('Energy per meter').locator('td').allTextContents()).slice(1, 4), ['kWh a day', '0', '30 days']);
    assert.equal(await form.getByLabel('Name').inputValue(), '', 'the form is empty again');
    const stored = await service.request('GET', `/reports/${encodeURIComponent('Energy per meter')}`);
    assert.deepEqual([stored.body.description, stored.body.retentionDays, stored.body.columns], ['kWh a day', 30, []]);

    const expected = await service.request('POST', '/reports', { body: { name: REPORT } });
    assert.equal(expected.status, 409);
    assert.equal(expected.body.error.code, 'IOTB_REPORT_NAME_TAKEN');
    await form.getByLabel('Name').fill(REPORT);
    await form.getByRole('button', { name: 'Create report' }).click();
    await eventually(() => form.getByRole('alert').textContent(), expected.body.error.message, 'the API’s message');
    assert.equal((await service.request('GET', '/reports')).body.items.length, 2, 'nothing stored');
    await screenshot(page, 'reports', { fromTop: true });
    problems.expectNone([failedRequest(409)]);
  });

  it('shows the report’s columns and its first page of entries; Next page and First page follow the cursor', async () => {
    await reportRow(REPORT).getByRole('link', { name: REPORT }).click();
    await page.getByRole('heading', { name: REPORT, level: 1 }).waitFor();
    const columns = page.getByRole('list', { name: 'Columns' }).getByRole('listitem');
    assert.deepEqual(await columns.allTextContents(), ['truck string', 'temperatureC number', 'doorOpen boolean', 'position json', 'note string']);

    await eventually(() => entryRows().count(), 20, 'the first page');
    assert.equal(await pagerText(), '20 entries from the first (25 in all)');
    const headers = await page.getByRole('table', { name: 'Entries' }).locator('thead th').allTextContents();
    assert.deepEqual(headers, ['Time', 'truck', 'temperatureC', 'doorOpen', 'position', 'note']);
    // 08:00 UTC is 09:00 in Berlin in November; strings as text, the rest as compact JSON.
    assert.deepEqual(await entryRows().first().locator('td').allTextContents(), ['2 Nov 2026, 09:00:00', 'truck-7', '4', 'true', '{"lat":53.550556,"lon":9.9925}', DELIVERED]);
    assert.deepEqual(await entryRows().nth(19).locator('td').allTextContents(), ['2 Nov 2026, 12:10:00', 'truck-7', '6', 'false', '{"lat":53.550556,"lon":9.9925}', 'reading 20']);
    assert.equal(await page.getByRole('link', { name: 'First page' }).count(), 0, 'no First page link on the first page');

    await page.getByRole('link', { name: 'Next page' }).click();
    await eventually(pagerText, '5 entries further on (25 in all)', 'the second page');
    assert.deepEqual(await entryRows().locator('td:last-child').allTextContents(), ['reading 21', 'reading 22', 'reading 23', 'reading 24', 'reading 25']);
    assert.equal(await page.getByRole('link', { name: 'Next page' }).count(), 0, 'the last page has no Next page link');

    await page.getByRole('link', { name: 'First page' }).click();
    await eventually(pagerText, '20 entries from the first (25 in all)', 'back on the first page');
    assert.equal(await entryRows().first().locator('td').last().textContent(), DELIVERED);
    await screenshot(page, 'report', { fullPage: true, fromTop: true });
    problems.expectNone();
  });

  it('narrows the entries to a time range typed in the browser’s time zone', async () => {
    const range = page.getByRole('search', { name: 'Time range' });
    // 09:30–10:20 in Berlin is 08:30–09:20 UTC: the entries of 08:30, 08:40, 08:50, 09:00 and 09:10 (the end is excluded).
    await range.getByLabel('From').fill('2026-11-02T09:30:00');
    await range.getByLabel('To (not included)').fill('2026-11-02T10:20:00');
    await range.getByRole('button', { name: 'Show' }).click();
    await eventually(pagerText, '5 entries from the first', 'the range');
    assert.deepEqual(await entryRows().locator('td:first-child').allTextContents(), [
      '2 Nov 2026, 09:30:00',
      '2 Nov 2026, 09:40:00',
      '2 Nov 2026, 09:50:00',
      '2 Nov 2026, 10:00:00',
      '2 Nov 2026, 10:10:00',
    ]);
    const query = new URLSearchParams(new URL(page.url()).hash.split('?')[1]);
    assert.deepEqual([query.get('from'), query.get('to')], ['2026-11-02T08:30:00.000Z', '2026-11-02T09:20:00.000Z'], 'the range in the URL, as ISO times');
    assert.equal(await page.getByRole('link', { name: 'Next page' }).count(), 0);

    // A reload keeps the range: the fields show it again in local time (Chromium leaves out seconds of 00).
    await page.reload();
    await eventually(pagerText, '5 entries from the first', 'the range after a reload');
    assert.deepEqual([await range.getByLabel('From').inputValue(), await range.getByLabel('To (not included)').inputValue()], ['2026-11-02T09:30', '2026-11-02T10:20']);
    problems.expectNone();
  });

  it('downloads the CSV of the range, then of every entry, with a BOM when asked', async () => {
    const ranged = await downloadCsv();
    assert.equal(ranged.name, `${REPORT}.csv`);
    const rangedRows: string[][] = parse(ranged.bytes);
    assert.deepEqual(
      rangedRows.map((row) => row[0]),
      ['time', '2026-11-02T08:30:00.000Z', '2026-11-02T08:40:00.000Z', '2026-11-02T08:50:00.000Z', '2026-11-02T09:00:00.000Z', '2026-11-02T09:10:00.000Z'],
    );

    await page.getByRole('link', { name: 'All times' }).click();
    await eventually(pagerText, '20 entries from the first (25 in all)', 'every entry again');
    const plain = await downloadCsv();
    assert.notDeepEqual([...plain.bytes.subarray(0, 3)], BOM, 'no BOM unless asked');
    const text = plain.bytes.toString('utf8');
    assert.equal(text.split('\n')[0], 'time,truck,temperatureC,doorOpen,position,note');
    assert.ok(text.includes(DELIVERED_CSV), 'the comma and the quotes quoted as RFC 4180 says');
    const rows: string[][] = parse(plain.bytes);
    assert.equal(rows.length, 1 + ENTRY_COUNT, 'the header and every entry, not only the page shown');
    assert.deepEqual(rows[1], ['2026-11-02T08:00:00.000Z', 'truck-7', '4', 'true', '{"lat":53.550556,"lon":9.9925}', DELIVERED]);

    await page.getByLabel('UTF-8 BOM for spreadsheets').check();
    const withBom = await downloadCsv();
    assert.deepEqual([...withBom.bytes.subarray(0, 3)], BOM, 'EF BB BF first');
    assert.deepEqual(withBom.bytes.subarray(3), plain.bytes, 'then the same CSV');
    problems.expectNone();
  });

  it('renames the report and changes its retention (PATCH)', async () => {
    const form = page.getByRole('form', { name: 'Settings' });
    assert.equal(await form.getByLabel('Name').inputValue(), REPORT);
    await form.getByLabel('Name').fill('Cold chain Hamburg 2026');
    await form.getByLabel('Description').fill('Truck 7, vaccines to the Rathaus, November');
    await form.getByLabel('Retention (days)').fill('365');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved “Cold chain Hamburg 2026”.' }).waitFor();
    await page.getByRole('heading', { name: 'Cold chain Hamburg 2026', level: 1 }).waitFor();
    const stored = await service.request('GET', `/reports/${reportId}`);
    assert.deepEqual([stored.body.name, stored.body.description, stored.body.retentionDays, stored.body.entries], ['Cold chain Hamburg 2026', 'Truck 7, vaccines to the Rathaus, November', 365, 25]);

    // Renaming onto another report's name: the API's 409 message, nothing changed.
    const taken = await service.request('PATCH', `/reports/${reportId}`, { body: { name: 'Energy per meter' } });
    assert.equal(taken.status, 409);
    await form.getByLabel('Name').fill('Energy per meter');
    await form.getByRole('button', { name: 'Save settings' }).click();
    await eventually(() => form.getByRole('alert').textContent(), taken.body.error.message, 'the API’s message');
    assert.equal((await service.request('GET', `/reports/${reportId}`)).body.name, 'Cold chain Hamburg 2026');

    await page.reload();
    await page.getByRole('heading', { name: 'Cold chain Hamburg 2026', level: 1 }).waitFor();
    assert.equal(await page.getByRole('form', { name: 'Settings' }).getByLabel('Retention (days)').inputValue(), '365');
    problems.expectNone([failedRequest(409)]);
  });

  it('schedules the report by e-mail, mails the last period now, and stops the schedule', async () => {
    const form = page.getByRole('form', { name: 'E-mail schedule' });
    await form.getByLabel('Mail the report every').selectOption('week');
    await form.getByLabel('At (UTC)').fill('07:30');
    await form.getByLabel('On', { exact: true }).selectOption('Friday');
    await form.getByLabel('Recipients').fill('ops@example.com, driver@example.com');
    await form.getByLabel('UTF-8 BOM (for spreadsheet programs)').check();
    await form.getByRole('button', { name: 'Save schedule' }).click();
    await form.getByText('Next mail').waitFor();
    const stored = (await service.request('GET', `/reports/${reportId}`)).body;
    assert.deepEqual(stored.schedule, { every: 'week', at: '07:30', weekday: 5, recipients: ['ops@example.com', 'driver@example.com'], bom: true });
    const next = new Date(stored.nextSendAt);
    assert.deepEqual([next.getUTCDay(), next.toISOString().slice(11, 16)], [5, '07:30']);

    // Mail now: the seeded entries are weeks old, so the last full week holds none; the mail goes anyway.
    await form.getByRole('button', { name: 'Mail the last period now' }).click();
    await page.getByRole('status').filter({ hasText: 'Mailed 0 entries to ops@example.com, driver@example.com.' }).waitFor();
    await eventually(async () => mails.some((m) => m.includes('Subject: Report Cold chain')), true, 'the mail at the SMTP server');
    await screenshot(page, 'report-schedule', { fullPage: true });

    await form.getByLabel('Mail the report every').selectOption('');
    await form.getByRole('button', { name: 'Save schedule' }).click();
    await eventually(async () => (await service.request('GET', `/reports/${reportId}`)).body.schedule, null, 'the schedule stopped');
    problems.expectNone();
  });

  it('fits a phone’s width: nothing overflows sideways on either page', async () => {
    await page.setViewportSize(PHONE_VIEWPORT);
    await eventually(() => entryRows().count(), 20, 'the entries on the phone');
    assert.equal(await sidewaysOverflow(page), 0, 'the report page fits 390 px');
    await section('Reports').click();
    await page.getByRole('heading', { name: 'Reports', level: 1 }).waitFor();
    await reportRow('Energy per meter').waitFor();
    assert.equal(await sidewaysOverflow(page), 0, 'the list fits 390 px');
    await page.setViewportSize({ width: 1280, height: 860 });
    problems.expectNone();
  });

  it('deletes only after the confirmation; with none left, says how scripts create one', async () => {
    const row = reportRow('Energy per meter');
    await row.getByRole('button', { name: 'Delete Energy per meter' }).click();
    await row.getByText('Delete “Energy per meter” and all its entries?').waitFor();
    assert.equal((await service.request('GET', '/reports')).body.items.length, 2, 'nothing deleted before the confirmation');
    await row.getByRole('button', { name: 'Cancel' }).click();
    await row.getByRole('button', { name: 'Delete Energy per meter' }).click();
    await row.getByRole('button', { name: 'Yes, delete' }).click();
    await eventually(listedNames, ['Cold chain Hamburg 2026'], 'the list without it');
    assert.deepEqual((await service.request('GET', '/reports')).body.items.map((item: { name: string }) => item.name), ['Cold chain Hamburg 2026']);

    const last = reportRow('Cold chain Hamburg 2026');
    await last.getByRole('button', { name: 'Delete Cold chain Hamburg 2026' }).click();
    await last.getByRole('button', { name: 'Yes, delete' }).click();
    await page.getByText('No reports yet.').waitFor();
    assert.match((await page.locator('.rep-empty').textContent()) ?? '', /report\.publish\('daily-energy'/);
    assert.equal((await service.request('GET', `/reports/${reportId}/entries`)).status, 404, 'its entries went with it');
    problems.expectNone();
  });
});
