// The Endpoints pages in a real browser (Debian's Chromium through playwright-core) against the real service
// and a simulated LwM2M device on loopback: the state filter and bulk edit of the list; an endpoint's page
// with tags, status details, storage, credentials, its live events and the LwM2M object tree with read,
// write, execute and observe. One browser for the file; each test goes on from where the previous one left
// the page and ends with no console error beyond the failed requests it provoked on purpose.
// IOTBRIDGE_UI_SCREENSHOTS=docs/ui also writes docs/ui/endpoint-lwm2m.png and docs/ui/endpoints-bulk.png.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Locator, Page } from 'playwright-core';
import type { SimulatedClient } from '../../tools/lwm2m-client.js';
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
  submitPassword,
  type PageProblems,
} from '../helpers/browser.js';
import { createAccount, createEndpoint, createService } from '../helpers/fixtures.js';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { ADMIN_TOKEN, type TestService } from '../helpers/service.js';

const skip = browserMissing();
const EMAIL = 'fleet@example.com';
const PASSWORD = 'correct horse battery';
const TENANT_EMAIL = 'tenant@example.com';
const SENSORS = 30;

describe('Endpoints pages in Chromium', { skip }, () => {
  let service: TestService;
  let browser: Browser;
  let page: Page;
  let problems: PageProblems;
  let device: SimulatedClient;
  let deviceEndpointId: string;
  let fieldDevices: string;
  const devices = new SimulatedDevices(() => service.ports.coap!);

  const pagerText = () => page.locator('.pager-range').first().textContent();
  const rowKeys = () => page.locator('table[aria-label="Endpoints"] tbody tr td:first-child').allTextContents();
  const tagsOf = async (key: string): Promise<string[]> => (await service.request('GET', `/endpoints/k.${key}`)).body.tags;
  const resourceRow = (resourcePath: string): Locator => page.locator(`tr[data-path="${resourcePath}"]`);
  const valueOf = (resourcePath: string) => resourceRow(resourcePath).getByTestId('value').textContent();
  const panel = (title: string): Locator => page.locator('section.panel', { has: page.getByRole('heading', { name: title, exact: true }) });

  before(async () => {
    [service, browser] = await Promise.all([startUiService(), launchBrowser()]);

    const user = await service.request('POST', '/users', { body: { email: EMAIL, password: PASSWORD, name: 'Fleet operator' } });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    fieldDevices = await createService(service, ADMIN_TOKEN, { name: 'field devices', type: 'lwm2m' });
    const items = Array.from({ length: SENSORS }, (_, index) => ({ key: `sensor-${String(index).padStart(2, '0')}`, serviceId: fieldDevices, tags: ['site:berlin'] }));
    const bulk = await service.request('POST', '/endpoints/bulk', { body: { items } });
    assert.equal(bulk.body.created, SENSORS, JSON.stringify(bulk.body).slice(0, 500));
    deviceEndpointId = (await createEndpoint(service, ADMIN_TOKEN, { key: 'meter-lwm2m', serviceId: fieldDevices, tags: ['site:paris'] })).id;
    device = await devices.start('meter-lwm2m', { lwm2mVersion: '1.1' });
    assert.equal(await device.register(), '2.01');

    const tenant = await createAccount(service, 'Tenant B');
    const tenantUser = await service.request('POST', '/users', { token: tenant.token, body: { email: TENANT_EMAIL, password: PASSWORD, name: 'Tenant user' } });
    assert.equal(tenantUser.status, 201, JSON.stringify(tenantUser.body));

    ({ page, problems } = await openPage(await browser.newContext({ viewport: { width: 1280, height: 900 } })));
  });

  after(async () => {
    await browser?.close();
    await devices.stopAll();
    await service?.stop();
  });

  it('signs in and filters the list by state (in the URL, so the dashboard can link to it)', async () => {
    await signIn(page, service.baseUrl, EMAIL, PASSWORD);

    await page.goto(`${service.baseUrl}/#/endpoints?state=connected`);
    await eventually(pagerText, '1–1 of 1 endpoints', 'connected endpoints');
    assert.deepEqual(await rowKeys(), ['meter-lwm2m']);
    assert.equal(await page.getByLabel('State').inputValue(), 'connected');

    await page.getByLabel('State').selectOption('unavailable');
    await page.getByRole('button', { name: 'Filter' }).click();
    await eventually(pagerText, `1–25 of ${SENSORS} endpoints`, 'unavailable endpoints');
    assert.match(page.url(), /#\/endpoints\?state=unavailable$/);
    assert.ok(!(await rowKeys()).includes('meter-lwm2m'));
    await page.getByRole('link', { name: 'Clear' }).click();
    await eventually(pagerText, `1–25 of ${SENSORS + 1} endpoints`, 'filter cleared');
    problems.expectNone();
  });

  it('bulk edits tags of ticked rows, then of all matching the filter, with the count of changes', async () => {
    await page.getByLabel('Key starts with').fill('sensor-');
    await page.getByRole('button', { name: 'Filter' }).click();
    await eventually(pagerText, `1–25 of ${SENSORS} endpoints`, 'the sensors');

    // Two ticked rows: one PATCH per endpoint, with progress.
    await page.getByLabel('Select sensor-00').check();
    await page.getByLabel('Select sensor-01').check();
    const bulk = page.locator('form.bulk-edit');
    assert.equal(await bulk.getByLabel('the 2 selected').isChecked(), true);
    await bulk.getByLabel('Add tags').fill('batch:one');
    await bulk.getByRole('button', { name: 'Apply' }).click();
    await eventually(() => bulk.locator('.notice').textContent(), 'Changed 2 endpoints.', 'ticked rows changed');
    assert.deepEqual(await tagsOf('sensor-00'), ['site:berlin', 'batch:one']);
    assert.deepEqual(await tagsOf('sensor-02'), ['site:berlin']);
    await eventually(async () => (await page.locator('table[aria-label="Endpoints"] tbody tr').first().locator('.tag').allTextContents()).join(' '), 'site:berlin batch:one', 'the list shows the new tag');

    // Select-all on the page, then clear it.
    await page.getByLabel('Select every endpoint of this page').check();
    assert.equal(await bulk.getByLabel('the 25 selected').isChecked(), true);
    await bulk.getByRole('button', { name: 'Clear selection' }).click();

    // All 30 matching, across pages: the bulk route, one request.
    await bulk.getByLabel(`all ${SENSORS} matching the filter`).check();
    await bulk.getByLabel('Add tags').fill('fleet');
    await bulk.getByLabel('Remove tags').fill('batch');
    await bulk.getByLabel('secondsBeforeMissing').fill('600');
    await bulk.getByRole('button', { name: 'Apply' }).click();
    await eventually(() => bulk.locator('.notice').textContent(), `Changed ${SENSORS} endpoints.`, 'all matching changed');
    assert.deepEqual(await tagsOf('sensor-00'), ['site:berlin', 'fleet']);
    assert.deepEqual(await tagsOf('sensor-29'), ['site:berlin', 'fleet']);
    assert.equal((await service.request('GET', '/endpoints/k.sensor-29')).body.statusDetails.secondsBeforeMissing, 600);
    assert.equal((await service.request('GET', '/endpoints/k.meter-lwm2m')).body.tags.includes('fleet'), false, 'outside the filter: unchanged');

    // With a state filter (which the bulk route does not take) and a status detail: one PATCH each.
    await page.goto(`${service.baseUrl}/#/endpoints?keyPrefix=sensor-1&state=unavailable`);
    await eventually(pagerText, '1–10 of 10 endpoints', 'unavailable sensor-1x');
    await bulk.getByLabel('Set status detail').fill('firmware');
    await bulk.getByLabel('to the value').fill('2.0.1');
    await bulk.getByRole('button', { name: 'Apply' }).click();
    await eventually(() => bulk.locator('.notice').textContent(), 'Changed 10 endpoints.', 'state-filtered change');
    assert.equal((await service.request('GET', '/endpoints/k.sensor-15')).body.statusDetails.firmware, '2.0.1');
    assert.equal((await service.request('GET', '/endpoints/k.sensor-05')).body.statusDetails.firmware, undefined);

    // A bad value: the API's message, per endpoint.
    await page.getByLabel('Select sensor-10').check();
    await bulk.getByLabel('Set status detail').fill('secondsBeforeMissing');
    await bulk.getByLabel('to the value').fill('soon');
    await bulk.getByRole('button', { name: 'Apply' }).click();
    const refused = await service.request('PATCH', '/endpoints/k.sensor-10', { body: { statusDetails: { secondsBeforeMissing: 'soon' } } });
    assert.equal(refused.status, 400);
    await eventually(() => bulk.getByRole('alert').textContent(), `1 failed:sensor-10: ${refused.body.error.message}`, "the API's message for the failure");
    assert.equal(await bulk.locator('.notice').textContent(), 'Changed 0 endpoints.');
    await screenshot(page, 'endpoints-bulk', { fullPage: true });

    await page.setViewportSize(PHONE_VIEWPORT);
    assert.equal(await sidewaysOverflow(page), 0, 'the list with the bulk form fits 390 px');
    await page.setViewportSize({ width: 1280, height: 900 });
    problems.expectNone([failedRequest(400)]);
  });

  it("shows the LwM2M device's object tree named from the registry; read, write, execute and observe from it", async () => {
    await page.goto(`${service.baseUrl}/#/endpoints/${deviceEndpointId}`);
    await page.getByRole('heading', { name: 'meter-lwm2m', exact: true }).waitFor();
    await page.getByRole('heading', { name: 'Device /3', exact: true }).waitFor();
    await resourceRow('/3/0/0').getByText('Manufacturer').waitFor();
    assert.match((await page.getByTestId('registration').textContent()) ?? '', /^Registered · LwM2M 1\.1/);
    await eventually(() => page.getByTestId('stream-status').textContent(), 'Live', 'the event stream is open');

    // Read: the device's own value.
    await device.changeValue('/3/0/0', 'Acme Meters');
    await resourceRow('/3/0/0').getByRole('button', { name: 'Read Manufacturer' }).click();
    await eventually(() => valueOf('/3/0/0'), 'Acme Meters', 'the value read');
    await eventually(() => resourceRow('/3/0/0').locator('.op-result').textContent(), 'Read (2.05)', 'the outcome');

    // Write a writable resource, then read it back.
    await resourceRow('/3/0/14').getByRole('button', { name: 'Write UTC Offset' }).click();
    await resourceRow('/3/0/14').getByLabel('New value (string)').fill('+05:00');
    await resourceRow('/3/0/14').getByRole('button', { name: 'Write', exact: true }).click();
    await eventually(() => resourceRow('/3/0/14').locator('.op-result').textContent(), 'Written (2.04)', 'the write');
    assert.equal(device.values.get('/3/0/14')?.value, '+05:00');
    await device.changeValue('/3/0/14', '+06:00');
    await resourceRow('/3/0/14').getByRole('button', { name: 'Read UTC Offset' }).click();
    await eventually(() => valueOf('/3/0/14'), '+06:00', 'read back');

    // Execute with arguments.
    await resourceRow('/3/0/4').getByRole('button', { name: 'Execute Reboot' }).click();
    await resourceRow('/3/0/4').getByLabel('Arguments (optional)').fill("0='now'");
    await resourceRow('/3/0/4').getByRole('button', { name: 'Execute', exact: true }).click();
    await eventually(() => resourceRow('/3/0/4').locator('.op-result').textContent(), 'Executed (2.04)', 'the execute');
    assert.deepEqual(device.executed.at(-1), { path: '/3/0/4', args: "0='now'" });

    // Observe: a changed value shows without reload.
    await resourceRow('/3303/0/5700').getByRole('button', { name: 'Observe Sensor Value' }).click();
    await eventually(() => resourceRow('/3303/0/5700').locator('.op-result').textContent(), 'Observing (2.05)', 'the observation');
    await resourceRow('/3303/0/5700').getByText('observed').waitFor();
    assert.equal(await device.changeValue('/3303/0/5700', 30.5), 1);
    await eventually(() => valueOf('/3303/0/5700'), '30.5', 'the notified value');
    assert.equal(await device.changeValue('/3303/0/5700', 31.25), 1);
    await eventually(() => valueOf('/3303/0/5700'), '31.25', 'the next notification');
    // The whole instance in one read: every value the device has.
    await page.getByRole('button', { name: 'Read /3/0' }).click();
    await eventually(() => page.locator('.lwm2m-instance', { has: page.getByRole('button', { name: 'Read /3/0' }) }).locator('.instance-heading .op-result').textContent(), 'Read (2.05)', 'instance read');
    await eventually(() => valueOf('/3/0/2'), 'SIM-0001', 'the serial number from the instance read');
    assert.equal(await resourceRow('/3/0/7').locator('.value-list').textContent(), '0: 38001: 5000', 'a multiple resource, each instance');
    await page.setViewportSize({ width: 1280, height: 1400 });
    await page.getByRole('heading', { name: 'Device /3', exact: true }).evaluate((heading) => heading.scrollIntoView({ block: 'start' }));
    await screenshot(page, 'endpoint-lwm2m');
    await page.setViewportSize({ width: 1280, height: 900 });

    await resourceRow('/3303/0/5700').getByRole('button', { name: 'Cancel observing Sensor Value' }).click();
    await eventually(() => resourceRow('/3303/0/5700').locator('.op-result').textContent(), 'Observation cancelled (2.05)', 'cancelled');

    // A read the device refuses (it has no Current Time): the API's message, inline.
    const refused = await service.request('POST', `/endpoints/${deviceEndpointId}/lwm2m/read`, { body: { path: '/3/0/13' } });
    assert.equal(refused.status, 404, JSON.stringify(refused.body));
    await resourceRow('/3/0/13').getByRole('button', { name: 'Read Current Time' }).click();
    await eventually(() => resourceRow('/3/0/13').getByRole('alert').textContent(), refused.body.error.message, "the API's message for the device's 4.04");
    problems.expectNone([failedRequest(404)]);
  });

  it('shows an event sent for the endpoint live, expandable to its JSON; pause holds the list', async () => {
    const events = panel('Live events');
    const sent = await service.request('POST', '/events', { body: { type: 'reading', endpoint: deviceEndpointId, data: { t: 21.5, note: 'from the test' } } });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    const reading = events.locator('.event-list li', { hasText: 'reading' });
    await reading.waitFor();
    await reading.locator('summary').click();
    assert.match((await reading.locator('pre').textContent()) ?? '', /"note": "from the test"/);

    await events.getByRole('button', { name: 'Pause' }).click();
    await service.request('POST', '/events', { body: { type: 'while-paused', endpoint: deviceEndpointId } });
    await eventually(() => page.getByTestId('stream-status').textContent(), 'Paused: 1 new', 'counted while paused');
    assert.equal(await events.locator('.event-list li', { hasText: 'while-paused' }).count(), 0, 'not shown while paused');
    await events.getByRole('button', { name: 'Resume' }).click();
    await events.locator('.event-list li', { hasText: 'while-paused' }).waitFor();
    problems.expectNone();
  });

  it("edits tags and status details; an invalid status detail shows the API's error", async () => {
    const tags = panel('Tags');
    await tags.getByLabel('Add tags').fill('floor:2 vip');
    await tags.getByRole('button', { name: 'Add' }).click();
    await eventually(() => tags.locator('.tag').allTextContents(), ['site:paris', 'floor:2', 'vip'], 'tags added');
    await tags.getByLabel('Remove tag').selectOption('vip');
    await tags.getByRole('button', { name: 'Remove' }).click();
    await eventually(() => tags.locator('.tag').allTextContents(), ['site:paris', 'floor:2'], 'tag removed');
    assert.deepEqual(await tagsOf('meter-lwm2m'), ['site:paris', 'floor:2']);

    const details = panel('Status details');
    await details.getByLabel('Name').fill('firmware');
    await details.getByLabel('Value').fill('1.4.2');
    await details.getByRole('button', { name: 'Set' }).click();
    await details.locator('tr', { hasText: 'firmware' }).waitFor();
    assert.equal((await service.request('GET', `/endpoints/${deviceEndpointId}`)).body.statusDetails.firmware, '1.4.2');

    const refused = await service.request('PATCH', `/endpoints/${deviceEndpointId}`, { body: { statusDetails: { secondsBeforeMissing: 'soon' } } });
    assert.equal(refused.status, 400);
    await details.getByLabel('Name').fill('secondsBeforeMissing');
    await details.getByLabel('Value').fill('soon');
    await details.getByRole('button', { name: 'Set' }).click();
    await eventually(() => details.getByRole('alert').textContent(), refused.body.error.message, "the API's message for a bad status detail");
    problems.expectNone([failedRequest(400)]);
  });

  it('stores, views and deletes an object of the storage', async () => {
    const storage = panel('Storage');
    await storage.getByText('Nothing stored.').waitFor();
    await storage.getByLabel('Store under').fill('calibration');
    await storage.getByLabel('Value (JSON or text)').fill('{"offset": -0.5, "at": "lab"}');
    await storage.getByRole('button', { name: 'Store' }).click();
    await storage.getByRole('rowheader', { name: 'calibration' }).waitFor();
    assert.deepEqual((await service.request('GET', `/endpoints/${deviceEndpointId}/storage/calibration`)).body.value, { offset: -0.5, at: 'lab' });

    await storage.getByRole('button', { name: 'View calibration' }).click();
    assert.match((await storage.locator('pre').textContent()) ?? '', /"offset": -0\.5/);
    await storage.getByRole('button', { name: 'Delete calibration' }).click();
    await storage.getByText('Deleted “calibration”.').waitFor();
    await storage.getByText('Nothing stored.').waitFor();
    assert.equal((await service.request('GET', `/endpoints/${deviceEndpointId}/storage/calibration`)).status, 404);
    problems.expectNone();
  });

  it('generates a device password and shows the secret once; removes it', async () => {
    const credentials = panel('Credentials');
    await eventually(() => page.getByTestId('credentials-state').textContent(), 'No password is set.', 'none at first');
    await credentials.getByRole('button', { name: 'Generate password' }).click();
    const secret = (await page.getByTestId('generated-secret').textContent()) ?? '';
    assert.ok(secret.length >= 20, secret);
    await eventually(async () => /^A generated password is set/.test((await page.getByTestId('credentials-state').textContent()) ?? ''), true, 'now set');
    assert.equal((await service.request('GET', `/endpoints/${deviceEndpointId}/credentials`)).body.kind, 'generated');
    await credentials.getByRole('button', { name: 'Copy' }).waitFor();

    // Shown once: after a reload the page knows only that one is set.
    await page.reload();
    await eventually(async () => /^A generated password is set/.test((await page.getByTestId('credentials-state').textContent()) ?? ''), true, 'still set after reload');
    assert.equal(await page.getByTestId('generated-secret').count(), 0, 'the secret is not shown again');
    assert.equal((await page.content()).includes(secret), false);

    await credentials.getByRole('button', { name: 'Remove password' }).click();
    await eventually(() => page.getByTestId('credentials-state').textContent(), 'No password is set.', 'removed');

    await page.setViewportSize(PHONE_VIEWPORT);
    await page.reload();
    await page.getByRole('heading', { name: 'Device /3', exact: true }).waitFor();
    assert.equal(await sidewaysOverflow(page), 0, 'the endpoint page fits 390 px (tables scroll inside their box)');
    await page.setViewportSize({ width: 1280, height: 900 });
    problems.expectNone();
  });

  it("a sub-account user cannot see the root account's endpoint: the API's 404", async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await submitPassword(page, TENANT_EMAIL, PASSWORD);
    await eventually(() => page.getByTestId('who-am-i').textContent(), TENANT_EMAIL, 'signed in as the sub-account user');
    const login = await service.request('POST', '/auth/login', { token: null, body: { email: TENANT_EMAIL, password: PASSWORD } });
    const missing = await service.request('GET', `/endpoints/${deviceEndpointId}`, { token: login.body.token });
    assert.equal(missing.status, 404, JSON.stringify(missing.body));

    await page.goto(`${service.baseUrl}/#/endpoints/${deviceEndpointId}`);
    await eventually(() => page.getByRole('alert').textContent(), missing.body.error.message, "the API's 404 message");
    assert.equal(await page.locator('section.panel').count(), 0, 'nothing of the endpoint is shown');
    await page.goto(`${service.baseUrl}/#/endpoints`);
    await eventually(pagerText, 'No endpoints', 'the sub-account has none');
    problems.expectNone([failedRequest(404)]);
  });
});
