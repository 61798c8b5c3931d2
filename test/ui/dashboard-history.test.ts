// The Dashboard and History pages in Chromium against the real service: endpoints in two states and two
// protocols (simulated LwM2M devices register), events, trigger runs with one failing; the dashboard's
// numbers and links, the events chart, the history's search, event JSON, live tail, the API's errors, and a
// sub-account's own numbers. IOTBRIDGE_UI_SCREENSHOTS=docs/ui writes dashboard.png, history.png, event.png.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  browserMissing,
  eventually,
  failedRequest,
  launchBrowser,
  openPage,
  PHONE_VIEWPORT,
  screenshot,
  sidewaysOverflow,
  startUiService,
  submitToken,
  type PageProblems,
} from '../helpers/browser.js';
import { waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { ADMIN_TOKEN, type TestService } from '../helpers/service.js';

const skip = browserMissing();

describe('dashboard and history in Chromium', { skip }, () => {
  let service: TestService;
  let browser: Browser;
  let page: Page;
  let problems: PageProblems;
  let tenant: TestAccount;
  let lwm2mId: string;
  let mqttId: string;
  let brokenId: string;
  let readingId: string;
  const devices = new SimulatedDevices(() => service.ports.coap!);
  let expected: readonly RegExp[] = [];

  const api = async (url: string, token = ADMIN_TOKEN) => {
    const answer = await service.request('GET', url, { token });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body;
  };
  const rows = (label: string) => page.locator(`table[aria-label="${label}"] tbody tr`);

  before(async () => {
    [service, browser] = await Promise.all([startUiService(), launchBrowser()]);
    lwm2mId = await createService(service, ADMIN_TOKEN, { name: 'field meters', type: 'lwm2m' });
    mqttId = await createService(service, ADMIN_TOKEN, { name: 'mqtt fleet', type: 'mqtt' });
    for (const key of ['dh-a', 'dh-b', 'dh-c']) await createEndpoint(service, ADMIN_TOKEN, { key, serviceId: lwm2mId });
    await createEndpoint(service, ADMIN_TOKEN, { key: 'dh-d', serviceId: mqttId });
    for (const key of ['dh-a', 'dh-b']) assert.equal(await (await devices.start(key)).register(), '2.01', key);

    const ok = await service.request('POST', '/triggers', { body: { name: 'count readings', events: ['reading'], script: `log('ok');` } });
    const broken = await service.request('POST', '/triggers', { body: { name: 'close valve', events: ['alarm'], script: `trigger.exit('valve stuck');` } });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    brokenId = broken.body.id;
    for (let n = 0; n < 3; n++) {
      const posted = await service.request('POST', '/events', { body: { type: 'reading', endpoint: 'k.dh-a', data: { t: 20 + n } } });
      assert.equal(posted.status, 202);
      readingId = posted.body.id;
    }
    await service.request('POST', '/events', { body: { type: 'alarm', endpoint: 'k.dh-b', data: { valve: 'open' } } });
    await waitFor(async () => ((await api(`/metrics/executions?from=${new Date(Date.now() - 60_000).toISOString()}`)).runs === 4 ? true : undefined), 'four trigger runs recorded');

    tenant = await createAccount(service, 'Tenant H');
    const tenantService = await createService(service, tenant.token, { name: 'tenant coap', type: 'coap' });
    await createEndpoint(service, tenant.token, { key: 'tenant-h-1', serviceId: tenantService });
    for (let n = 0; n < 2; n++) await service.request('POST', '/events', { token: tenant.token, body: { type: 'tenant-reading', endpoint: 'k.tenant-h-1' } });

    ({ page, problems } = await openPage(await browser.newContext({ viewport: { width: 1280, height: 900 } })));
  });

  afterEach(() => {
    problems.expectNone(expected);
    expected = [];
  });

  after(async () => {
    await devices.stopAll();
    await browser?.close();
    await service?.stop();
  });

  it('shows endpoints by state and protocol, events per minute, trigger runs and the recent error', async () => {
    await page.goto(`${service.baseUrl}/`);
    await submitToken(page, ADMIN_TOKEN);
    await page.getByRole('heading', { name: 'Dashboard', exact: true }).waitFor();
    await eventually(() => page.locator('.stat-value').first().textContent(), '4', 'endpoints');
    await eventually(() => page.locator('.stat-value').nth(1).textContent(), '2', 'services');

    // By state: 2 connected (the simulated devices registered), 2 unavailable.
    const connected = page.getByRole('link', { name: '2 connected: show them' });
    assert.equal(await connected.getAttribute('href'), '#/endpoints?state=connected');
    assert.equal(await page.getByRole('link', { name: '2 unavailable: show them' }).getAttribute('href'), '#/endpoints?state=unavailable');
    // By protocol: LwM2M 3 (its service linking to its endpoints), MQTT 1.
    const protocols = await page.locator('#by-protocol-title + ul > li > .breakdown-row').allTextContents();
    assert.deepEqual(protocols, ['LwM2M3', 'MQTT1']);
    assert.equal(await page.getByRole('link', { name: '3 endpoints of service field meters' }).getAttribute('href'), `#/endpoints?serviceId=${lwm2mId}`);

    // Events per minute: the bars add up to the API's count of the last hour (the registrations are events too).
    const counts = await api('/history/counts');
    assert.ok(counts.total >= 4, JSON.stringify(counts));
    await eventually(() => page.locator('.stat-value').nth(2).textContent(), String(counts.total), 'events in the last hour');
    const bars = await page.locator('svg .chart-bar').evaluateAll((nodes) => nodes.map((node) => Number(node.getAttribute('data-count'))));
    assert.equal(bars.length, 61);
    assert.equal(bars.reduce((sum, n) => sum + n, 0), counts.total);
    assert.match((await page.locator('.events-chart svg desc').textContent()) ?? '', new RegExp(`^${counts.total} events from`));

    // Trigger runs: 4 in the last hour and day, 1 failed; the recent error names the trigger and its message.
    assert.deepEqual(await page.locator('.runs-table tbody tr').first().locator('td').allTextContents(), ['4', '1']);
    assert.deepEqual(await page.locator('.runs-table tbody tr').nth(1).locator('td').allTextContents(), ['4', '1']);
    const error = page.locator('table[aria-labelledby="errors-title"] tbody tr');
    assert.equal(await error.count(), 1);
    assert.match((await error.textContent()) ?? '', /close valve.*alarm.*valve stuck/);
    assert.equal(await error.getByRole('link', { name: 'close valve' }).getAttribute('href'), `#/triggers/${brokenId}`);
    assert.equal(await error.getByRole('link', { name: 'its executions' }).getAttribute('href'), `#/triggers/executions?triggerId=${brokenId}`);
    await screenshot(page, 'dashboard', { fullPage: true });

    // The numbers lead to the filtered lists.
    await page.getByRole('link', { name: '1 endpoints of service mqtt fleet' }).click();
    await page.getByRole('heading', { name: 'Endpoints', exact: true }).waitFor();
    assert.equal(new URL(page.url()).hash, `#/endpoints?serviceId=${mqttId}`);
    await eventually(() => page.locator('table[aria-label="Endpoints"] tbody tr td:first-child').allTextContents(), ['dh-d'], 'the service filter');
    await page.goBack();
    await page.getByRole('link', { name: '2 connected: show them' }).click();
    await page.getByRole('heading', { name: 'Endpoints', exact: true }).waitFor();
    assert.equal(new URL(page.url()).hash, '#/endpoints?state=connected');
    await page.goBack();
    await page.getByRole('heading', { name: 'Dashboard', exact: true }).waitFor();
  });

  it('lists the history, filters it by type and endpoint, and opens an event as JSON', async () => {
    await page.getByRole('link', { name: 'History', exact: true }).click();
    await page.getByRole('heading', { name: 'History', level: 1 }).waitFor();
    const all = await api('/history?limit=25');
    await eventually(() => rows('Events').count(), all.items.length, 'the newest events');
    assert.equal(await rows('Events').first().locator('td').nth(1).textContent(), all.items[0].type);

    await page.getByLabel('Types').fill('alarm');
    await page.getByRole('button', { name: 'Search' }).click();
    await eventually(() => page.locator('table[aria-label="Events"] tbody td:nth-child(2)').allTextContents(), ['alarm'], 'filtered by type');
    assert.match(new URL(page.url()).hash, /^#\/history\?type=alarm$/);

    await page.getByLabel('Types').fill('reading');
    await page.getByLabel('Endpoint key or id').fill('dh-a');
    await page.getByRole('button', { name: 'Search' }).click();
    await eventually(() => page.locator('table[aria-label="Events"] tbody td:nth-child(3)').allTextContents(), ['dh-a', 'dh-a', 'dh-a'], 'filtered by type and endpoint');
    assert.equal(new URL(page.url()).hash, '#/history?type=reading&endpoint=k.dh-a');
    await screenshot(page, 'history', { fullPage: true });

    await rows('Events').first().locator('td').first().getByRole('link').click();
    await page.locator('.event-json').waitFor();
    assert.equal(new URL(page.url()).hash, `#/history/${readingId}`);
    const json = JSON.parse((await page.locator('.event-json').textContent()) ?? '');
    assert.deepEqual(json, await api(`/history/${readingId}`));
    assert.match((await page.locator('.event-json').textContent()) ?? '', /\n {2}"type": "reading",\n/);
    const endpoint = await api('/endpoints/k.dh-a');
    assert.equal(await page.getByRole('link', { name: 'dh-a' }).getAttribute('href'), `#/endpoints/${endpoint.id}`);
    await screenshot(page, 'event', { fullPage: true });

    // A missing event: the API's 404 message.
    await page.goto(`${service.baseUrl}/#/history/no-such-event`);
    const missing = await service.request('GET', '/history/no-such-event');
    await eventually(() => page.getByRole('alert').textContent(), missing.body.error.message, 'the API message of a missing event');
    expected = [failedRequest(404)];
  });

  it('tails new events live without a reload, and pauses', async () => {
    await page.goto(`${service.baseUrl}/#/history?type=live-check&type=paused-check`);
    await page.getByRole('button', { name: 'Live tail' }).click();
    await eventually(() => page.locator('.live-status').textContent(), 'live', 'the stream is open');
    await service.request('POST', '/events', { body: { type: 'reading', endpoint: 'k.dh-c' } });
    await service.request('POST', '/events', { body: { type: 'live-check', endpoint: 'k.dh-c', data: { n: 1 } } });
    await eventually(() => page.locator('table[aria-label="Live events"] tbody td:nth-child(2)').allTextContents(), ['live-check'], 'the new event, and only the matching one');
    assert.equal(await page.locator('table[aria-label="Live events"] tbody td:nth-child(3)').textContent(), 'dh-c');

    await page.getByRole('button', { name: 'Pause' }).click();
    await service.request('POST', '/events', { body: { type: 'paused-check' } });
    await eventually(() => page.locator('.live-tail p[aria-live]').textContent().then((text) => text?.startsWith('1 new while paused')), true, 'held while paused');
    assert.equal(await rows('Live events').count(), 1);
    await page.getByRole('button', { name: 'Resume' }).click();
    await eventually(() => page.locator('table[aria-label="Live events"] tbody td:nth-child(2)').allTextContents(), ['paused-check', 'live-check'], 'newest first after resuming');
    await page.getByRole('button', { name: 'Stop live tail' }).click();
    assert.equal(await page.locator('.live-tail').count(), 0);
  });

  it("shows the API's error for a bad filter: a period backwards, an unknown endpoint", async () => {
    await page.goto(`${service.baseUrl}/#/history`);
    await page.getByLabel('From', { exact: true }).fill('2026-03-02T10:00:00');
    await page.getByLabel('To', { exact: true }).fill('2026-03-01T10:00:00');
    await page.getByRole('button', { name: 'Search' }).click();
    const from = new Date('2026-03-02T10:00:00').toISOString();
    const to = new Date('2026-03-01T10:00:00').toISOString();
    const backwards = await service.request('GET', `/history?from=${from}&to=${to}`);
    assert.equal(backwards.status, 400);
    await eventually(() => page.getByRole('alert').textContent(), backwards.body.error.message, 'the API message of a period backwards');

    await page.goto(`${service.baseUrl}/#/history?endpoint=k.nobody`);
    const unknown = await service.request('GET', '/history?endpoint=k.nobody');
    assert.equal(unknown.status, 404);
    await eventually(() => page.getByRole('alert').textContent(), unknown.body.error.message, 'the API message of an unknown endpoint');
    // The live tail says the same.
    await page.getByRole('button', { name: 'Live tail' }).click();
    await eventually(() => page.locator('.live-tail [role="alert"]').textContent(), unknown.body.error.message, 'the stream refused');
    expected = [failedRequest(400), failedRequest(404)];
  });

  it('in a sub-account, shows only its own events and counts', async () => {
    await page.goto(`${service.baseUrl}/#/`);
    await page.getByLabel('Account', { exact: true }).selectOption(tenant.accountId);
    await eventually(() => page.locator('.stat-value').allTextContents(), ['1', '1', '2'], "the sub-account's endpoints, services and events");
    assert.equal(await page.getByRole('link', { name: '1 unavailable: show them' }).count(), 1);
    assert.equal(await page.getByRole('link', { name: '0 connected: show them' }).count(), 1);
    const bars = await page.locator('svg .chart-bar').evaluateAll((nodes) => nodes.map((node) => Number(node.getAttribute('data-count'))));
    assert.equal(bars.reduce((sum, n) => sum + n, 0), 2);
    assert.deepEqual(await page.locator('.runs-table tbody tr').first().locator('td').allTextContents(), ['0', '0']);
    assert.equal(await page.getByText('No trigger run has failed.').count(), 1);

    await page.getByRole('link', { name: 'History', exact: true }).click();
    await eventually(() => page.locator('table[aria-label="Events"] tbody td:nth-child(2)').allTextContents(), ['tenant-reading', 'tenant-reading'], "the sub-account's events only");
    // The root account's event is not found from the sub-account.
    await page.goto(`${service.baseUrl}/#/history/${readingId}`);
    const foreign = await service.request('GET', `/history/${readingId}`, { token: tenant.token });
    assert.equal(foreign.status, 404);
    await eventually(() => page.getByRole('alert').textContent(), foreign.body.error.message, "another account's event");
    await page.getByLabel('Account', { exact: true }).selectOption({ label: 'root' });
    expected = [failedRequest(404)];
  });

  it('fits a phone-width screen', async () => {
    await page.setViewportSize(PHONE_VIEWPORT);
    for (const fragment of ['#/', '#/history', `#/history/${readingId}`]) {
      await page.goto(`${service.baseUrl}/${fragment}`);
      await page.locator('h1').first().waitFor();
      await page.waitForLoadState('networkidle');
      assert.equal(await sidewaysOverflow(page), 0, `nothing sticks out sideways at 390 px on ${fragment}`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});
