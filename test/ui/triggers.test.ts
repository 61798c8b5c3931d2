// The Triggers pages of the web UI in a real browser (Debian's Chromium through playwright-core) against the
// real service serving its own copy of the built UI: the list, the editor (CodeMirror 6 with the namespaces'
// completions, a test-run of the unsaved definition), the executions log with its trace, and a sub-account's
// own triggers.
// One browser for the file; each test goes on from where the previous one left the page, and ends with no
// console error (a CSP violation among them) and no uncaught exception beyond the failed requests it provoked.
// IOTBRIDGE_UI_SCREENSHOTS=docs/ui also writes the screenshots docs/ui.md shows.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { PLATFORM_EVENT_TYPES } from '../../src/events/event.js';
import { browserMissing, eventually, failedRequest, launchBrowser, openPage, PHONE_VIEWPORT, screenshot, sidewaysOverflow, signIn, startUiService, type PageProblems } from '../helpers/browser.js';
import { createAccount, createEndpoint, createService } from '../helpers/fixtures.js';
import { ADMIN_TOKEN, type TestService } from '../helpers/service.js';

const skip = browserMissing();
const EMAIL = 'scripter@example.com';
const PASSWORD = 'correct horse battery';

describe('Triggers pages in Chromium', { skip }, () => {
  let service: TestService;
  let browser: Browser;
  let page: Page;
  let problems: PageProblems;
  let tenantB: string;
  let triggerId: string;

  const editor = () => page.locator('.cm-content');
  // The editor's lines as shown (CodeMirror draws some spaces as no-break spaces).
  const script = async () => (await page.locator('.cm-content .cm-line').allTextContents()).join('\n').replaceAll('\u00a0', ' ');
  const triggerNames = () => page.locator('table[aria-label="Triggers"] tbody tr td:first-child').allTextContents();

  before(async () => {
    [service, browser] = await Promise.all([startUiService(), launchBrowser()]);
    const user = await service.request('POST', '/users', { body: { email: EMAIL, password: PASSWORD, name: 'Scripter' } });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    const serviceId = await createService(service, ADMIN_TOKEN, { name: 'sensors', type: 'lwm2m' });
    await createEndpoint(service, ADMIN_TOKEN, { key: 'sensor-1', serviceId });

    const tenant = await createAccount(service, 'Tenant B');
    tenantB = tenant.accountId;
    const theirs = await service.request('POST', '/triggers', { token: tenant.token, body: { name: 'tenant-only trigger', events: ['reading'], script: 'log(1);' } });
    assert.equal(theirs.status, 201);

    ({ page, problems } = await openPage(await browser.newContext({ viewport: { width: 1280, height: 900 } })));
  });

  after(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('signs in and opens the empty list of triggers', async () => {
    await signIn(page, service.baseUrl, EMAIL, PASSWORD);
    await page.goto(`${service.baseUrl}/#/triggers`);
    await page.getByText('No triggers yet').waitFor();
    await eventually(() => page.locator('.pager-range').first().textContent(), 'No triggers', 'the pager');
    problems.expectNone();
  });

  it('writes a trigger with completions, test-runs it unsaved against a sample event, and saves it', async () => {
    await page.getByRole('link', { name: 'New trigger' }).click();
    await page.getByRole('heading', { name: 'New trigger', exact: true }).waitFor();
    await page.getByLabel('Name').fill('hot sensor');
    const offered = await page.locator('datalist[data-testid="platform-event-types"] option').evaluateAll((options) => options.map((option) => (option as { value: string }).value));
    assert.deepEqual(offered, [...PLATFORM_EVENT_TYPES], 'the platform event types are offered');
    await page.getByLabel('Event type to add').fill('reading');
    await page.getByLabel('Event type to add').press('Enter');
    await page.getByRole('list', { name: 'Event types' }).getByText('reading').waitFor();

    await page.getByRole('button', { name: 'Add filter' }).click();
    const filter = page.getByRole('group', { name: 'Filter 1' });
    await filter.getByLabel('Type').selectOption('>');
    await filter.getByLabel('Field').fill('data.t');
    await filter.getByLabel('Value (JSON or text)').fill('30');

    // The script in CodeMirror: `endpoint.ge` offers endpoint's functions; choosing `get` completes it.
    await editor().click();
    await page.keyboard.type('var e = endpoint.ge');
    const option = page.locator('.cm-tooltip-autocomplete li', { hasText: 'get' }).first();
    await option.waitFor();
    const labels = await page.locator('.cm-tooltip-autocomplete li .cm-completionLabel').allTextContents();
    assert.ok(labels.includes('get'), `completions: ${labels.join(', ')}`);
    await option.click();
    await page.locator('.cm-tooltip-autocomplete').waitFor({ state: 'detached' });
    await page.keyboard.type("('k.sensor-1'); log('hot', event.data.t, e.key);");
    assert.equal((await script()).trim(), "var e = endpoint.get('k.sensor-1'); log('hot', event.data.t, e.key);");
    // Tab indents inside the editor; Escape then Tab leaves it.
    await page.keyboard.press('Escape');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate<boolean>('document.activeElement.closest(".cm-editor") === null'), true, 'Escape then Tab moves focus out of the editor');

    await page.getByLabel('Event (JSON: type, endpoint?, data?)').fill(JSON.stringify({ type: 'reading', endpoint: 'k.sensor-1', data: { t: 35 } }));
    await page.getByRole('button', { name: 'Run test' }).click();
    const result = page.locator('.trg-test-run-result');
    await eventually(() => result.getByRole('list', { name: 'Log lines' }).textContent(), 'hot 35 sensor-1', 'the log line of the test-run');
    assert.equal(await result.locator('.state').textContent(), 'success');
    assert.match((await result.textContent()) ?? '', /Duration\d+\.\d ms/);
    await screenshot(page, 'trigger-editor');

    await page.getByRole('button', { name: 'Create trigger' }).click();
    await eventually(() => page.getByRole('status').textContent(), 'Saved “hot sensor” (version 1).', 'saved');
    triggerId = decodeURIComponent(/#\/triggers\/([^?]+)/.exec(page.url())![1]!);
    const saved = await service.request('GET', `/triggers/${triggerId}`);
    assert.equal(saved.status, 200);
    assert.deepEqual(saved.body.events, ['reading']);
    assert.deepEqual(saved.body.filters, [{ type: '>', field: 'data.t', value: 30 }]);
    assert.equal(saved.body.script.trim(), "var e = endpoint.get('k.sensor-1'); log('hot', event.data.t, e.key);");
    problems.expectNone();
  });

  it('runs on a real event; the execution is in the executions log with its trace', async () => {
    const posted = await service.request('POST', '/events', { body: { type: 'reading', endpoint: 'k.sensor-1', data: { t: 41 } } });
    assert.equal(posted.status, 202, JSON.stringify(posted.body));
    await page.getByRole('link', { name: 'Its executions' }).click();
    await page.getByRole('heading', { name: 'Executions', exact: true }).waitFor();
    const rows = page.locator('table[aria-label="Executions"] tbody tr');
    const deadline = Date.now() + 10_000;
    while ((await rows.count()) === 0 && Date.now() < deadline) {
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.getByRole('button', { name: 'Refresh' }).waitFor();
    }
    assert.equal(await rows.count(), 1, 'the real run, not the unsaved test-run');
    assert.match((await rows.first().textContent()) ?? '', /hot sensor.*reading.*success/);
    await rows.first().getByRole('button', { name: 'Trace' }).click();
    await eventually(() => page.getByRole('list', { name: 'Log lines' }).textContent(), 'hot 41 sensor-1', 'the trace of the real run');
    assert.match((await page.locator('.trg-trace-row').textContent()) ?? '', new RegExp(posted.body.id));
    await screenshot(page, 'executions');

    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No execution matches.').waitFor();
    problems.expectNone();
  });

  it('shows a script error of a test-run with its line, and the API message for a bad form', async () => {
    await page.goto(`${service.baseUrl}/#/triggers/${triggerId}`);
    await page.getByRole('heading', { name: 'hot sensor', exact: true }).waitFor();
    await editor().click();
    await page.keyboard.press('Control+a');
    await page.keyboard.type('var x = 1;');
    await page.keyboard.press('Enter');
    await page.keyboard.type('nope();');
    await page.getByRole('button', { name: 'Run test' }).click();
    const error = page.locator('.trg-test-run-result .trg-execution-error');
    await error.waitFor();
    assert.match((await error.textContent()) ?? '', /^Error at line 2: .*nope/);
    assert.equal(await page.locator('.trg-test-run-result .state').textContent(), 'failed');

    const refused = await service.request('PUT', `/triggers/${triggerId}`, { body: { name: '', events: ['reading'], script: '' } });
    assert.equal(refused.status, 400);
    await page.getByLabel('Name').fill('');
    await page.getByRole('button', { name: 'Save trigger' }).click();
    await eventually(() => page.getByRole('alert').textContent(), refused.body.error.message, "the API's message for an empty name");
    const oneOf = page.getByRole('group', { name: 'Filter 1' });
    await page.getByLabel('Name').fill('hot sensor');
    await oneOf.getByLabel('Type').selectOption('one-of');
    await oneOf.getByLabel('Values (JSON array)').fill('30');
    await page.getByRole('button', { name: 'Save trigger' }).click();
    await eventually(() => page.getByRole('alert').textContent(), 'Filter 1: the values must be a JSON array, e.g. ["a", "b"]', 'the page refuses a one-of filter without a list');
    assert.equal((await service.request('GET', `/triggers/${triggerId}`)).body.version, 1, 'nothing was saved');
    problems.expectNone([failedRequest(400)]);
  });

  it('a library trigger with a protected global variable round-trips; the list deletes with a confirmation', async () => {
    await page.goto(`${service.baseUrl}/#/triggers/new`);
    await page.getByLabel('Name').fill('units');
    await page.getByLabel('Library').check();
    await page.getByRole('button', { name: 'Add variable' }).click();
    const variable = page.getByRole('group', { name: 'Global variable 1' });
    await variable.getByLabel('Name').fill('rate');
    await variable.getByLabel('Value (JSON)').fill('{"eur": 1.1}');
    await variable.getByLabel('Protected').check();
    await editor().click();
    await page.keyboard.type('exports.rate = rate;');
    await page.getByRole('button', { name: 'Create trigger' }).click();
    await eventually(() => page.getByRole('status').textContent(), 'Saved “units” (version 1).', 'saved');
    const id = decodeURIComponent(/#\/triggers\/([^?]+)/.exec(page.url())![1]!);
    const saved = await service.request('GET', `/triggers/${id}`);
    assert.equal(saved.body.library, true);
    assert.deepEqual(saved.body.globals, { rate: { value: { eur: 1.1 }, protected: true } });

    await page.reload();
    await page.getByRole('heading', { name: 'units', exact: true }).waitFor();
    assert.equal(await page.getByLabel('Library').isChecked(), true);
    const reloaded = page.getByRole('group', { name: 'Global variable 1' });
    assert.equal(await reloaded.getByLabel('Name').inputValue(), 'rate');
    assert.equal(await reloaded.getByLabel('Value (JSON)').inputValue(), '{"eur":1.1}');
    assert.equal(await reloaded.getByLabel('Protected').isChecked(), true);
    assert.equal(await script(), 'exports.rate = rate;');

    await service.request('POST', '/triggers', { body: { name: 'to delete', events: ['x'], script: '' } });
    await page.getByRole('link', { name: 'Triggers', exact: true }).first().click();
    await eventually(triggerNames, ['hot sensor', 'to delete', 'units'].sort(), 'the list');
    const units = page.locator('table[aria-label="Triggers"] tbody tr', { hasText: 'units' });
    assert.match((await units.textContent()) ?? '', /enabled.*library/);
    await screenshot(page, 'triggers');
    await page.getByRole('button', { name: 'Delete to delete' }).click();
    await page.getByRole('group', { name: 'Confirm deleting to delete' }).getByRole('button', { name: 'Delete', exact: true }).click();
    await eventually(() => page.getByRole('status').textContent(), 'Deleted trigger “to delete”.', 'deleted');
    await eventually(triggerNames, ['hot sensor', 'units'], 'the list without it');
    problems.expectNone();
  });

  it('fits a phone-width screen', async () => {
    await page.setViewportSize(PHONE_VIEWPORT);
    for (const target of ['#/triggers', `#/triggers/${triggerId}`, `#/triggers/executions?triggerId=${triggerId}`]) {
      await page.goto(`${service.baseUrl}/${target}`);
      await page.reload();
      await page.locator('h1').first().waitFor();
      await page.locator('.loading').waitFor({ state: 'detached' });
      assert.equal(await sidewaysOverflow(page), 0, `nothing sticks out sideways at 390 px on ${target}`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    problems.expectNone();
  });

  it('a sub-account sees only its own triggers', async () => {
    await page.goto(`${service.baseUrl}/#/triggers`);
    await eventually(triggerNames, ['hot sensor', 'units'], 'the root account');
    await page.getByLabel('Account', { exact: true }).selectOption(tenantB);
    await page.getByRole('link', { name: 'Triggers', exact: true }).first().click();
    await eventually(triggerNames, ['tenant-only trigger'], "the sub-account's triggers");
    await page.goto(`${service.baseUrl}/#/triggers/${triggerId}`);
    await page.getByRole('alert').waitFor();
    assert.match((await page.getByRole('alert').textContent()) ?? '', /trigger/i);
    await page.getByLabel('Account', { exact: true }).selectOption({ label: 'root' });
    problems.expectNone([failedRequest(404)]);
  });
});
