// The web UI in a real browser (Debian's Chromium through playwright-core) against the real service serving
// its own copy of the built UI (dist/ui, built first when missing or stale). One browser for the file; each test
// goes on from where the previous one left the page. Every test ends with no console error and no uncaught
// exception beyond the failed requests it provoked on purpose.
// IOTBRIDGE_UI_SCREENSHOTS=docs/ui (npm run screenshots:ui) also writes sign-in.png, endpoints.png, endpoint.png
// and endpoints-phone.png (docs/ui.md's dashboard.png and services.png come from dashboard-history and admin-pages).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { UI_CONTENT_SECURITY_POLICY } from '../../src/api/routes/ui.js';
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
  submitPassword,
  submitToken,
  type PageProblems,
} from '../helpers/browser.js';
import { createAccount, createService } from '../helpers/fixtures.js';
import { ADMIN_TOKEN, type TestService } from '../helpers/service.js';

const skip = browserMissing();
const EMAIL = 'operator@example.com';
const PASSWORD = 'correct horse battery';
const ENDPOINTS = 1000;
/** Issue 18: every page's first render under 1 s on this machine with 1,000 endpoints in the account. */
const FIRST_RENDER_MS = 1000;

describe('web UI in Chromium', { skip }, () => {
  let service: TestService;
  let browser: Browser;
  let page: Page;
  let problems: PageProblems;
  let tenantB: string;
  let mqttServiceId: string;

  const rowKeys = () => page.locator('table[aria-label="Endpoints"] tbody tr td:first-child').allTextContents();
  const pagerText = () => page.locator('.pager-range').first().textContent();

  before(async () => {
    [service, browser] = await Promise.all([startUiService(), launchBrowser()]);

    const user = await service.request('POST', '/users', { body: { email: EMAIL, password: PASSWORD, name: 'Operator' } });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    const fieldDevices = await createService(service, ADMIN_TOKEN, { name: 'field devices', type: 'lwm2m' });
    mqttServiceId = await createService(service, ADMIN_TOKEN, { name: 'mqtt fleet', type: 'mqtt' });
    const items = Array.from({ length: ENDPOINTS }, (_, index) => ({
      key: `meter-${String(index).padStart(4, '0')}`,
      serviceId: index % 10 === 9 ? mqttServiceId : fieldDevices,
      tags: [index % 2 === 0 ? 'site:berlin' : 'site:paris', ...(index % 3 === 0 ? ['battery'] : [])],
      ...(index === 0 ? { statusDetails: { firmware: '1.4.2', battery: 87, secondsBeforeMissing: 3600 }, parameters: { client_id: 'meter-0000', apn: 'iot.example' } } : {}),
    }));
    const bulk = await service.request('POST', '/endpoints/bulk', { body: { items } });
    assert.equal(bulk.body.created, ENDPOINTS, JSON.stringify(bulk.body).slice(0, 500));

    const tenant = await createAccount(service, 'Tenant B');
    tenantB = tenant.accountId;
    const tenantService = await createService(service, tenant.token, { name: 'tenant sensors', type: 'coap' });
    for (const n of [1, 2, 3]) {
      const created = await service.request('POST', '/endpoints', { token: tenant.token, body: { key: `tenant-b-sensor-${n}`, serviceId: tenantService, tags: ['floor:2'] } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
    }

    ({ page, problems } = await openPage(await browser.newContext({ viewport: { width: 1280, height: 800 } })));
  });

  after(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('serves the UI at / with its CSP and caching headers; the API keeps its paths', async () => {
    const index = await fetch(`${service.baseUrl}/`);
    assert.equal(index.status, 200);
    assert.match(index.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(index.headers.get('content-security-policy'), UI_CONTENT_SECURITY_POLICY);
    assert.equal(index.headers.get('cache-control'), 'no-cache');
    const html = await index.text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    assert.ok(script, html);
    const asset = await fetch(service.baseUrl + script);
    assert.equal(asset.status, 200);
    assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.match(asset.headers.get('content-type') ?? '', /javascript/);
    // The build's compressed copies (ui/precompress.ts) to a client that accepts them: Chromium asks for brotli.
    assert.match(asset.headers.get('content-encoding') ?? '', /^(?:br|gzip)$/);
    assert.match(asset.headers.get('vary') ?? '', /accept-encoding/i);
    const loaded = page.waitForResponse((response) => response.url().endsWith(script));
    await page.goto(`${service.baseUrl}/`);
    assert.equal(await (await loaded).headerValue('content-encoding'), 'br');
    // Nothing at run time comes from elsewhere: no absolute URL in the page or the code it loads.
    assert.doesNotMatch(html, /https?:\/\//);

    assert.equal((await fetch(`${service.baseUrl}/openapi.json`)).status, 200);
    assert.equal((await fetch(`${service.baseUrl}/docs/`)).status, 200);
    const api = await fetch(`${service.baseUrl}/endpoints`);
    assert.equal(api.status, 401, 'API routes still need a token');
    const unknown = await fetch(`${service.baseUrl}/no-such-page`);
    assert.notEqual(unknown.status, 200, 'no catch-all: a path that is no file is not the UI');
  });

  it('signs in with email and password; a wrong password shows the API message', async () => {
    await page.goto(`${service.baseUrl}/`);
    await screenshot(page, 'sign-in');
    const wrong = await service.request('POST', '/auth/login', { token: null, body: { email: EMAIL, password: 'not the password' } });
    assert.equal(wrong.status, 401);
    await submitPassword(page, EMAIL, 'not the password');
    await eventually(() => page.getByRole('alert').textContent(), wrong.body.error.message, 'the API message of a failed sign-in');

    await submitPassword(page, EMAIL, PASSWORD);
    await page.getByRole('heading', { name: 'Dashboard', exact: true }).waitFor();
    await eventually(() => page.getByTestId('who-am-i').textContent(), EMAIL, 'who am I');
    await eventually(() => page.locator('.stat-value').first().textContent(), '1,000', 'endpoint count on the dashboard');
    const stored = await page.evaluate<string | null>('sessionStorage.getItem("iotbridge.credentials")');
    assert.match(stored ?? '', /"token":"UT:/);
    problems.expectNone([failedRequest(401)]);
  });

  it(`pages through ${ENDPOINTS} endpoints, first render under ${FIRST_RENDER_MS} ms, and filters by key prefix, tag and service`, async () => {
    // A full load (not a change of fragment): the page, its code, then the API's answers.
    await page.goto('about:blank');
    const started = Date.now();
    await page.goto(`${service.baseUrl}/#/endpoints`);
    await page.getByRole('link', { name: 'meter-0024' }).waitFor();
    const firstRender = Date.now() - started;
    assert.ok(firstRender < FIRST_RENDER_MS, `the endpoint list took ${firstRender} ms to show`);
    assert.equal(await pagerText(), '1–25 of 1,000 endpoints');
    const firstPage = await rowKeys();
    assert.equal(firstPage.length, 25);
    assert.equal(firstPage[0], 'meter-0000');
    const firstRow = await page.locator('table[aria-label="Endpoints"] tbody tr').first().locator('td').allTextContents();
    assert.deepEqual(firstRow.slice(1, 5), ['field devices', 'unavailable', 'LwM2M', 'site:berlinbattery']);
    await screenshot(page, 'endpoints');

    await page.getByRole('link', { name: 'Next' }).first().click();
    await eventually(pagerText, '26–50 of 1,000 endpoints', 'second page');
    assert.equal((await rowKeys())[0], 'meter-0025');
    await page.getByRole('link', { name: 'Previous' }).first().click();
    await eventually(pagerText, '1–25 of 1,000 endpoints', 'back to the first page');

    await page.getByLabel('Key starts with').fill('meter-001');
    await page.getByRole('button', { name: 'Filter' }).click();
    await eventually(pagerText, '1–10 of 10 endpoints', 'key prefix filter');
    assert.match(page.url(), /#\/endpoints\?keyPrefix=meter-001$/);
    assert.deepEqual(await rowKeys(), Array.from({ length: 10 }, (_, n) => `meter-00${10 + n}`));

    // A tag chip filters the list by that tag; tags and service combine.
    await page.getByRole('link', { name: 'site:paris' }).first().click();
    await eventually(pagerText, '1–25 of 500 endpoints', 'tag filter');
    await page.getByLabel('Service').selectOption({ label: 'mqtt fleet' });
    await page.getByLabel('Tags', { exact: true }).fill('site:paris, battery');
    await page.getByRole('button', { name: 'Filter' }).click();
    // meter-0009, -0039, -0069, …: every 10th from 9 that is also a multiple of 3 → 34 of them.
    await eventually(pagerText, '1–25 of 34 endpoints', 'service and two tags');
    assert.equal((await rowKeys())[0], 'meter-0009');
    await page.getByRole('link', { name: 'Clear' }).click();
    await eventually(pagerText, '1–25 of 1,000 endpoints', 'filter cleared');
    problems.expectNone();
  });

  it("opens an endpoint's page with its fields, tags, status details and parameters", async () => {
    await page.getByRole('link', { name: 'meter-0000' }).click();
    await page.getByRole('heading', { name: 'meter-0000', exact: true }).waitFor();
    const fields = await page.locator('dl.fields').textContent();
    assert.match(fields ?? '', /Servicefield devices \(LwM2M\)/);
    assert.match(fields ?? '', /Stateunavailable/);
    const status = await page.locator('table:has(caption:text("Status details")) tbody tr').allTextContents();
    assert.deepEqual(status, ['battery87', 'firmware1.4.2', 'secondsBeforeMissing3600']);
    const parameters = await page.locator('table:has(caption:text("Parameters")) tbody tr').allTextContents();
    assert.deepEqual(parameters, ['apniot.example', 'client_idmeter-0000']);
    assert.deepEqual(await page.locator('main .tag-list .tag').allTextContents(), ['site:berlin', 'battery']);
    await screenshot(page, 'endpoint');

    await page.goto(`${service.baseUrl}/#/endpoints/no-such-endpoint`);
    const missing = await service.request('GET', '/endpoints/no-such-endpoint');
    await eventually(() => page.getByRole('alert').textContent(), missing.body.error.message, 'the API message of a 404');
    problems.expectNone([failedRequest(404)]);
  });

  it("creating a service with a bad option shows the API's error; a good one is listed", async () => {
    await page.getByRole('link', { name: 'Services', exact: true }).click();
    await page.getByRole('heading', { name: 'Services', exact: true }).waitFor();
    await eventually(pagerText, '1–2 of 2 services', 'the services');
    const bad = { name: 'gateway', type: 'lwm2m', options: { coapMaxMessageSize: 8 } };
    const refused = await service.request('POST', '/services', { body: bad });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));

    await page.getByLabel('Name').fill('gateway');
    await page.getByLabel('Type').selectOption('lwm2m');
    await page.getByLabel('Options (JSON, optional)').fill('{"coapMaxMessageSize": 8');
    await page.getByRole('button', { name: 'Create service' }).click();
    await eventually(async () => /^Options are not JSON/.test((await page.getByRole('alert').textContent()) ?? ''), true, 'a local message for text that is not JSON');

    await page.getByLabel('Options (JSON, optional)').fill(JSON.stringify(bad.options));
    await page.getByRole('button', { name: 'Create service' }).click();
    await eventually(() => page.getByRole('alert').textContent(), refused.body.error.message, "the API's message for a bad option");

    await page.getByLabel('Options (JSON, optional)').fill('{"coapMaxMessageSize": 512}');
    await page.getByRole('button', { name: 'Create service' }).click();
    await page.getByText(/Created service “gateway”/).waitFor();
    await eventually(pagerText, '1–3 of 3 services', 'the new service is listed');
    assert.equal(await page.getByRole('alert').count(), 0, 'the error is gone');
    problems.expectNone([failedRequest(400)]);
  });

  it('switching to a sub-account shows only its endpoints, and back', async () => {
    await page.getByRole('link', { name: 'Endpoints', exact: true }).click();
    await eventually(pagerText, '1–25 of 1,000 endpoints', 'the root account');
    await page.getByLabel('Account', { exact: true }).selectOption(tenantB);
    await eventually(pagerText, '1–3 of 3 endpoints', "the sub-account's endpoints");
    assert.deepEqual(await rowKeys(), ['tenant-b-sensor-1', 'tenant-b-sensor-2', 'tenant-b-sensor-3']);
    // The protocol comes from the endpoint's service, read beside the page of endpoints: it may show a moment later.
    await eventually(() => page.locator('table[aria-label="Endpoints"] tbody tr td:nth-child(4)').allTextContents(), ['CoAP', 'CoAP', 'CoAP'], "the sub-account's protocols");
    const stored = await page.evaluate<string | null>('sessionStorage.getItem("iotbridge.credentials")');
    assert.match(stored ?? '', new RegExp(`"accountId":"${tenantB}"`));
    await page.getByRole('link', { name: 'Services', exact: true }).click();
    await eventually(() => page.locator('table[aria-label="Services"] tbody td:first-child').allTextContents(), ['tenant sensors'], "the sub-account's services");

    await page.getByLabel('Account', { exact: true }).selectOption({ label: 'root' });
    await page.getByRole('link', { name: 'Endpoints', exact: true }).click();
    await eventually(pagerText, '1–25 of 1,000 endpoints', 'back in the root account');
    problems.expectNone();
  });

  it('is usable by keyboard and fits a phone-width screen', async () => {
    // Tab from the top of the page: the skip link first, then the header and the sections.
    await page.goto(`${service.baseUrl}/#/endpoints`);
    await page.reload();
    await page.getByRole('link', { name: 'meter-0000' }).waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate<string>('document.activeElement.textContent'), 'Skip to content');
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate<string>('document.activeElement.id'), 'main');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate<string>('document.activeElement.labels?.[0]?.textContent'), 'Key starts with', 'the first field of the page is next');

    await page.setViewportSize(PHONE_VIEWPORT);
    await page.reload();
    await page.getByRole('link', { name: 'meter-0000' }).waitFor();
    assert.equal(await sidewaysOverflow(page), 0, 'nothing sticks out sideways at 390 px (the table scrolls inside its box)');
    await screenshot(page, 'endpoints-phone');
    await page.setViewportSize({ width: 1280, height: 800 });
    problems.expectNone();
  });

  it('signs out: the user token is revoked and the sign-in page shows', async () => {
    const stored = JSON.parse((await page.evaluate<string | null>('sessionStorage.getItem("iotbridge.credentials")')) ?? '{}');
    assert.match(stored.token, /^UT:/);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
    assert.equal(await page.evaluate<string | null>('sessionStorage.getItem("iotbridge.credentials")'), null);
    // Revoked right after the pages are gone (none of them may ask with it meanwhile).
    await eventually(async () => (await service.request('GET', '/auth/whoami', { token: stored.token })).status, 401, 'the signed-out token no longer works');
    problems.expectNone();
  });

  it('signs in with a pasted API token that names a sub-account', async () => {
    await submitToken(page, `${ADMIN_TOKEN}:${tenantB}`);
    await eventually(() => page.getByTestId('who-am-i').textContent(), 'API token', 'who am I for an API token');
    await page.getByRole('link', { name: 'Endpoints', exact: true }).click();
    await eventually(pagerText, '1–3 of 3 endpoints', 'acting in the sub-account the token named');
    assert.equal(await page.getByLabel('Account', { exact: true }).inputValue(), tenantB);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Use token' }).waitFor();
    // An API token is not revoked by signing out of the UI.
    assert.equal((await service.request('GET', '/auth/whoami')).status, 200);
    problems.expectNone();
  });
});
