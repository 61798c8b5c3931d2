// Issue 21's Solutions page and the Super-Admin page's actions and diagnostics in a real browser (Debian's Chromium
// through playwright-core) against the real service: a template pasted (and the page's message for text that is not
// JSON), installed with values from the form generated from its parameters (the API's message for a missing
// required one), upgraded to a 1.1.0 added from the file repository, uninstalled after a confirmation; another
// account sees none of it. Super-Admin: suspend and resume from an account's row, a limit set, an endpoint of
// another account found by key, the diagnostics' numbers against the API's, an impersonation token opened in the
// tab, and an ordinary account without the link and refused by the API. Each identity has its own browser context.
// IOTBRIDGE_UI_SCREENSHOTS=docs/ui also writes solutions.png, solution-install.png, super-admin.png and
// super-diagnostics.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
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
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { ADMIN_TOKEN, type TestService } from '../helpers/service.js';

const skip = browserMissing();
const SERVICE_NAME = 'greenhouse-sensors';
const LOOKUP_KEY = 'meter-42';

/** Version `version` of the "greenhouse" template; 1.1.0 adds a report. */
function template(version: string): Record<string, unknown> {
  return {
    name: 'greenhouse',
    version,
    description: 'Sensors of a greenhouse',
    parameters: {
      serviceName: { type: 'string', title: 'Service name', required: true },
      threshold: { type: 'number', default: 5, description: 'Alarm above' },
      mode: { type: 'string', enum: ['eco', 'full'], default: 'eco' },
    },
    document: {
      format: 'iotbridge-export',
      version: 1,
      // http: its device keys are on no shared port.
      services: [{ name: '{{serviceName}}', type: 'http' }],
      endpoints: [{ key: 'sensor-1', service: '{{serviceName}}', parameters: { threshold: '{{threshold}}', label: 'mode {{mode}}' } }],
      triggers: [{ name: 'setup', events: ['once-event'], script: "log('set up');" }],
      ...(version === '1.0.0' ? {} : { reports: [{ name: 'readings', description: 'from the template', retentionDays: 30 }] }),
    },
  };
}

interface Signed {
  readonly context: BrowserContext;
  readonly page: Page;
  readonly problems: PageProblems;
}

describe('Solutions and Super-Admin pages in Chromium', { skip, timeout: 180_000 }, () => {
  let service: TestService;
  let browser: Browser;
  let acme: TestAccount;
  let beta: TestAccount;
  let acmeUi: Signed;
  let betaUi: Signed;
  let adminUi: Signed;
  let templateId: string;

  async function signedIn(token: string, viewport: { width: number; height: number } = { width: 1280, height: 900 }): Promise<Signed> {
    const context = await browser.newContext({ viewport });
    const { page, problems } = await openPage(context);
    await page.goto(`${service.baseUrl}/`);
    await submitToken(page, token);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    return { context, page, problems };
  }

  const section = (page: Page, name: string) => page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name, exact: true });
  /** The texts of a table's body cells, row by row (`columns` of each). */
  const rowsOf = (table: Locator, columns = 99) =>
    table.locator('tbody tr').evaluateAll((trs, count) => trs.map((tr) => [...tr.querySelectorAll('td')].slice(0, count).map((td) => td.textContent ?? '')), columns);
  const accountRow = (page: Page, name: string) => page.getByRole('table', { name: 'Accounts' }).locator('tbody tr').filter({ has: page.getByRole('cell', { name, exact: true }) });
  const stateOf = (page: Page, name: string) => accountRow(page, name).getByTestId('account-state').textContent();

  async function openSolutions(page: Page): Promise<void> {
    await section(page, 'Solutions').click();
    await page.getByRole('heading', { name: 'Solutions', level: 1 }).waitFor();
  }

  before(async () => {
    [service, browser] = await Promise.all([startUiService(), launchBrowser()]);
    acme = await createAccount(service, 'Acme');
    beta = await createAccount(service, 'Beta');
    const delta = await createAccount(service, 'Delta Farms');
    const serviceId = await createService(service, beta.token, { name: 'beta meters', type: 'http' });
    await createEndpoint(service, beta.token, { key: LOOKUP_KEY, serviceId });
    // An account suspended beforehand, so the page shows one.
    const suspended = await service.request('POST', `/super/accounts/${delta.accountId}/suspend`, { body: { reason: 'contract ended' } });
    assert.equal(suspended.status, 200, JSON.stringify(suspended.body));
    [acmeUi, betaUi, adminUi] = await Promise.all([signedIn(acme.token), signedIn(beta.token), signedIn(ADMIN_TOKEN)]);
  });

  after(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('adds a pasted template (the page’s message for text that is not JSON) and lists it in the catalogue', async () => {
    const { page, problems } = acmeUi;
    await openSolutions(page);
    await page.getByText('No templates yet: add one.').waitFor();
    const box = page.getByLabel('Template (JSON)');
    await box.fill('{"name": "greenhouse",');
    await page.getByRole('button', { name: 'Add template' }).click();
    await eventually(async () => ((await page.getByRole('alert').textContent()) ?? '').startsWith('The template is not JSON: '), true, 'the page’s message');

    await box.fill(JSON.stringify(template('1.0.0'), null, 2));
    await page.getByRole('button', { name: 'Add template' }).click();
    await page.getByRole('status').filter({ hasText: 'Added greenhouse 1.0.0.' }).waitFor();
    const templates = page.getByRole('table', { name: 'Templates' });
    await eventually(() => rowsOf(templates), [['greenhouse', '1.0.0', 'Sensors of a greenhouse', 'own', '3']], 'the catalogue');
    const listed = await service.request('GET', '/solutions/templates', { token: acme.token });
    assert.equal(listed.body.total, 1);
    templateId = listed.body.items[0].id;
    problems.expectNone();
  });

  it('installs it with values from the form generated from its parameters; the items through the API; the history row', async () => {
    const { page, problems } = acmeUi;
    await page.getByRole('table', { name: 'Templates' }).getByRole('link', { name: 'greenhouse' }).click();
    await page.getByRole('heading', { name: 'greenhouse 1.0.0', level: 1 }).waitFor();
    const serviceName = page.getByLabel('Service name');
    const threshold = page.getByLabel('threshold', { exact: true });
    const mode = page.getByLabel('mode', { exact: true });
    assert.deepEqual([await serviceName.inputValue(), await threshold.inputValue(), await mode.inputValue()], ['', '5', 'eco'], 'the defaults filled in');
    assert.equal(await threshold.getAttribute('type'), 'number');
    assert.deepEqual(await mode.locator('option').allTextContents(), ['default (eco)', 'eco', 'full']);
    assert.equal(await serviceName.getAttribute('aria-required'), 'true');

    // The required one left empty: the API's message, nothing installed.
    const refused = await service.request('POST', '/solutions/install', { token: acme.token, body: { templateId, parameters: { threshold: 5, mode: 'eco' } } });
    assertError(refused, 400, 'IOTB_TEMPLATE_PARAMETERS', 'a required parameter missing');
    await page.getByRole('button', { name: 'Install', exact: true }).click();
    await eventually(() => page.locator('form .error-message').textContent(), refused.body.error.message, 'the API’s message');

    await serviceName.fill(SERVICE_NAME);
    await threshold.fill('7.5');
    await mode.selectOption('full');
    await page.getByRole('button', { name: 'Install', exact: true }).click();
    const result = page.getByRole('status', { name: 'Install result' });
    await result.getByRole('heading', { name: 'Installed greenhouse 1.0.0' }).waitFor();
    assert.equal(await result.getByTestId('sol-outcome').textContent(), 'Done: every item was applied.');
    assert.deepEqual(await result.getByRole('list', { name: 'Counts' }).getByRole('listitem').allTextContents(), ['3 created', '0 updated', '0 unchanged', '0 refused']);
    await screenshot(page, 'solution-install', { fromTop: true });

    const services = await service.request('GET', '/services', { token: acme.token });
    assert.deepEqual(services.body.items.map((item: { name: string }) => item.name), [SERVICE_NAME]);
    const triggers = await service.request('GET', '/triggers', { token: acme.token });
    assert.deepEqual(triggers.body.items.map((item: { name: string }) => item.name), ['setup']);
    const endpoints = await service.request('GET', '/endpoints?keyPrefix=sensor-', { token: acme.token });
    assert.deepEqual(endpoints.body.items[0].parameters, { threshold: 7.5, label: 'mode full' }, 'typed values from the form');

    await page.getByRole('link', { name: 'Solutions', exact: true }).first().click();
    const history = await service.request('GET', '/solutions/history', { token: acme.token });
    assert.equal(history.body.total, 1);
    await eventually(() => rowsOf(page.getByRole('table', { name: 'History' }), 4), [['greenhouse', '1.0.0', 'install', 'done']], 'the history row');
    assert.equal(await page.getByRole('table', { name: 'History' }).locator('tbody td').last().textContent(), history.body.items[0].by);
    await eventually(() => rowsOf(page.getByRole('table', { name: 'Installations' }), 3), [['greenhouse', '1.0.0', '3']], 'the installation');
    assert.equal(await page.getByRole('link', { name: /^Upgrade greenhouse/ }).count(), 0, 'no newer version yet');
    problems.expectNone([failedRequest(400)]);
  });

  it('upgrades to a 1.1.0 added from the file repository, with the installed values', async () => {
    const { page, problems } = acmeUi;
    const stored = await fetch(`${service.baseUrl}/file/greenhouse-1.1.0.json/content`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${acme.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(template('1.1.0')),
    });
    assert.ok(stored.ok, `stored the file: ${stored.status}`);
    await page.getByLabel('Or a file of the repository').fill('greenhouse-1.1.0.json');
    await page.getByRole('button', { name: 'Add template' }).click();
    await page.getByRole('status').filter({ hasText: 'Added greenhouse 1.1.0.' }).waitFor();

    await page.getByRole('link', { name: 'Upgrade greenhouse to 1.1.0' }).click();
    await page.getByRole('heading', { name: 'greenhouse 1.1.0', level: 1 }).waitFor();
    assert.equal(await page.getByLabel('Service name').inputValue(), SERVICE_NAME, 'the installed values filled in');
    assert.equal(await page.getByLabel('threshold', { exact: true }).inputValue(), '7.5');
    assert.equal(await page.getByLabel('mode', { exact: true }).inputValue(), 'full');
    await page.getByRole('button', { name: 'Upgrade from 1.0.0' }).click();
    const result = page.getByRole('status', { name: 'Install result' });
    await result.getByRole('heading', { name: 'Upgraded greenhouse from 1.0.0 to 1.1.0' }).waitFor();
    assert.deepEqual(await result.getByRole('list', { name: 'Counts' }).getByRole('listitem').allTextContents(), ['1 created', '0 updated', '3 unchanged', '0 refused']);

    const installations = await service.request('GET', '/solutions/installations', { token: acme.token });
    assert.deepEqual(installations.body.items.map((item: { version: string }) => item.version), ['1.1.0']);
    const reports = await service.request('GET', '/reports', { token: acme.token });
    assert.deepEqual(reports.body.items.map((item: { name: string }) => item.name), ['readings']);

    await page.getByRole('link', { name: 'Solutions', exact: true }).first().click();
    await eventually(() => rowsOf(page.getByRole('table', { name: 'Templates' }), 2), [['greenhouse', '1.0.0'], ['greenhouse', '1.1.0']], 'both versions');
    await eventually(() => rowsOf(page.getByRole('table', { name: 'History' }), 4), [['greenhouse', '1.1.0', 'upgrade', 'done'], ['greenhouse', '1.0.0', 'install', 'done']], 'the history');
    await eventually(() => rowsOf(page.getByRole('table', { name: 'Installations' }), 2), [['greenhouse', '1.1.0']], 'the upgraded installation');
    await screenshot(page, 'solutions', { fullPage: true, fromTop: true });
    problems.expectNone();
  });

  it('uninstalls after a confirmation: the created items go, the history says so', async () => {
    const { page, problems } = acmeUi;
    await page.getByRole('button', { name: 'Uninstall greenhouse' }).click();
    await page.getByRole('button', { name: 'Yes, uninstall' }).click();
    const result = page.getByRole('status', { name: 'Uninstall result' });
    await result.getByRole('heading', { name: 'Uninstalled greenhouse 1.1.0' }).waitFor();
    assert.equal(await result.getByTestId('sol-outcome').textContent(), 'Done: 4 items removed.');
    await page.getByText('Nothing is installed in this account.').waitFor();
    await eventually(() => rowsOf(page.getByRole('table', { name: 'History' }), 3).then((rows) => rows.map((row) => row[2])), ['uninstall', 'upgrade', 'install'], 'the history');
    for (const list of ['/services', '/triggers', '/reports', '/endpoints']) {
      assert.deepEqual((await service.request('GET', list, { token: acme.token })).body.items, [], `${list} after the uninstall`);
    }
    problems.expectNone();
  });

  it('another account sees none of it: no templates, installations or history, and the API’s 404 for the template', async () => {
    const { page, problems } = betaUi;
    await openSolutions(page);
    await page.getByText('No templates yet: add one.').waitFor();
    await page.getByText('Nothing is installed in this account.').waitFor();
    await page.getByText('No installs yet.').waitFor();
    const foreign = await service.request('GET', `/solutions/templates/${templateId}`, { token: beta.token });
    assertError(foreign, 404, 'IOTB_TEMPLATE_NOT_FOUND', 'another account’s template');
    await page.goto(`${service.baseUrl}/#/solutions/${templateId}`);
    await eventually(() => page.getByRole('alert').textContent(), foreign.body.error.message, 'the API’s 404');
    assert.equal(await page.getByRole('button', { name: 'Install', exact: true }).count(), 0);
    assert.equal((await service.request('GET', '/solutions/history', { token: beta.token })).body.total, 0);
    problems.expectNone([failedRequest(404)]);
  });

  it('suspends an account from its row with a reason (state shown, the API agrees), then resumes it', async () => {
    const { page, problems } = adminUi;
    await section(page, 'Super-Admin').click();
    await page.getByRole('heading', { name: 'Super-Admin', level: 1 }).waitFor();
    await eventually(() => stateOf(page, 'Acme'), 'active', 'Acme active');
    assert.match((await stateOf(page, 'Delta Farms')) ?? '', /^suspendedcontract ended \(by /);

    await page.getByRole('button', { name: 'Suspend Acme' }).click();
    await page.getByLabel('Reason for suspending Acme').fill('unpaid invoice');
    await page.getByRole('button', { name: 'Suspend account' }).click();
    await eventually(async () => /^suspendedunpaid invoice \(by /.test((await stateOf(page, 'Acme')) ?? ''), true, 'Acme suspended');
    const status = await service.request('GET', `/super/accounts/${acme.accountId}/limits`);
    assert.equal(status.body.suspended, true);
    assert.equal(status.body.suspension.reason, 'unpaid invoice');
    assertError(await service.request('POST', '/triggers', { token: acme.token, body: { name: 'x', events: ['e'], script: '' } }), 403, 'IOTB_ACCOUNT_SUSPENDED', 'a suspended account writes nothing');

    await page.getByRole('button', { name: 'Resume Acme' }).click();
    await page.getByRole('button', { name: 'Yes, resume' }).click();
    await eventually(() => stateOf(page, 'Acme'), 'active', 'Acme resumed');
    assert.equal((await service.request('GET', `/super/accounts/${acme.accountId}/limits`)).body.suspended, false);
    problems.expectNone();
  });

  it('sets a limit (empty fields stay no limit) and shows it in the row', async () => {
    const { page, problems } = adminUi;
    await page.getByRole('button', { name: 'Limits of Acme' }).click();
    const form = page.getByRole('form', { name: 'Limits of Acme' });
    assert.deepEqual(await form.getByRole('spinbutton').evaluateAll((inputs) => inputs.map((input) => (input as unknown as { value: string }).value)), ['', '', '']);
    await form.getByLabel('Max endpoints').fill('10');
    await form.getByRole('button', { name: 'Save limits' }).click();
    await form.getByRole('status').filter({ hasText: 'The limits were saved.' }).waitFor();
    await eventually(() => accountRow(page, 'Acme').locator('td').nth(4).textContent(), '10 endpoints', 'the row’s limits');
    const limits = await service.request('GET', `/super/accounts/${acme.accountId}/limits`);
    assert.deepEqual(limits.body.limits, { maxEndpoints: 10, eventsPerSecond: null, scriptCpuMsPerMinute: null });
    problems.expectNone();
  });

  it('finds an endpoint of another account by key, naming the account', async () => {
    const { page, problems } = adminUi;
    const expected = await service.request('GET', `/super/endpoints?key=${LOOKUP_KEY}`);
    assert.equal(expected.body.items.length, 1);
    await page.getByLabel('Endpoint key').fill(LOOKUP_KEY);
    await page.getByRole('button', { name: 'Find', exact: true }).click();
    const found = page.getByRole('list', { name: 'Endpoints found' }).getByRole('listitem');
    await eventually(() => found.count(), 1, 'one endpoint found');
    const text = (await found.textContent()) ?? '';
    assert.ok(text.includes(`in Beta ${beta.accountId}`), text);
    assert.ok(text.includes('service beta meters (http)'), text);
    assert.equal(expected.body.items[0].accountId, beta.accountId);
    await screenshot(page, 'super-admin', { fullPage: true, fromTop: true });

    await page.getByLabel('Endpoint key').fill('no-such-key');
    await page.getByRole('button', { name: 'Find', exact: true }).click();
    await page.getByText('No endpoint has the key no-such-key.').waitFor();
    problems.expectNone();
  });

  it('the diagnostics show the API’s numbers: event bus, script workers, devices, table sizes', async () => {
    const { page, problems } = adminUi;
    await page.getByRole('navigation', { name: 'Super-Admin views' }).getByRole('link', { name: 'Diagnostics' }).click();
    const [triggers, devices, storage] = await Promise.all(['/super/triggers?top=10', '/super/devices', '/super/storage'].map(async (url) => (await service.request('GET', url)).body));
    const stats = (name: string) => page.getByRole('list', { name }).locator('.stat-value').allTextContents();

    await eventually(async () => (await stats('Event bus')).length, 3, 'the event bus');
    const [pending, inMemory] = await stats('Event bus');
    assert.match(pending!, /^[\d,]+$/);
    assert.match(inMemory!, /^[\d,]+$/);
    await eventually(stats.bind(null, 'Script workers'), [`${String(triggers.workers.count)} of ${String(triggers.workers.configured)}`, '0', '0'], 'the workers');
    const slowest = await rowsOf(page.getByRole('table', { name: 'Slowest scripts' }));
    assert.equal(slowest.length, Math.max(1, triggers.recent.slowest.length));
    await eventually(async () => (await stats('Devices'))[1], String(devices.suspendedAccounts), 'suspended accounts');
    assert.equal(devices.suspendedAccounts, 1, 'Delta Farms');
    const accounts = storage.tables.find((table: { table: string }) => table.table === 'accounts');
    const shownTables = await rowsOf(page.getByRole('table', { name: 'Table sizes' }));
    assert.deepEqual(shownTables.find((row) => row[0] === 'accounts')?.[1], `${accounts.estimated ? '≈ ' : ''}${accounts.rows}`);
    assert.equal(shownTables.length, storage.tables.length);
    await screenshot(page, 'super-diagnostics', { fullPage: true, fromTop: true });
    problems.expectNone();
  });

  it('an ordinary account has no Super-Admin link; the API and the page refuse it', async () => {
    const { page, problems } = acmeUi;
    assert.equal(await section(page, 'Super-Admin').count(), 0);
    const forbidden = await service.request('GET', '/super/events', { token: acme.token });
    assertError(forbidden, 403, 'IOTB_AUTH_FORBIDDEN', 'an ordinary token');
    assertError(await service.request('POST', `/super/accounts/${beta.accountId}/suspend`, { token: acme.token, body: { reason: 'x' } }), 403, 'IOTB_AUTH_FORBIDDEN', 'suspend');
    await page.goto(`${service.baseUrl}/#/super?view=diagnostics`);
    await eventually(() => page.getByRole('alert').allTextContents(), Array(4).fill(forbidden.body.error.message), 'the API’s 403 in each section');
    problems.expectNone([failedRequest(403)]);
  });

  it('impersonation: a support token for the account, opened as this tab’s session', async () => {
    const admin = await signedIn(ADMIN_TOKEN);
    const { page, problems } = admin;
    await page.goto(`${service.baseUrl}/#/super`);
    await page.getByRole('button', { name: 'Impersonate Beta' }).click();
    await page.getByLabel('Support token for Beta, valid for (minutes)').fill('5');
    await page.getByRole('button', { name: 'Issue support token' }).click();
    const secret = page.getByLabel('Support token (shown this once)');
    await secret.waitFor();
    const token = await secret.inputValue();
    const whoAmI = await service.request('GET', '/auth/whoami', { token });
    assert.equal(whoAmI.body.accountId, beta.accountId);
    assert.equal(whoAmI.body.superAdmin, false);
    assert.ok(whoAmI.body.impersonatedBy, JSON.stringify(whoAmI.body));

    await page.getByRole('button', { name: 'Open as this account' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await eventually(() => section(page, 'Solutions').count(), 1, 'the navigation');
    assert.equal(await section(page, 'Super-Admin').count(), 0, 'a support token is no Super-Admin');
    await page.getByRole('link', { name: 'Endpoints', exact: true }).first().click();
    await page.getByRole('table', { name: 'Endpoints' }).getByRole('link', { name: LOOKUP_KEY }).waitFor();
    problems.expectNone();
    await admin.context.close();
  });

  it('fits a phone’s width: Solutions and Super-Admin', async () => {
    const phone = await signedIn(ADMIN_TOKEN, PHONE_VIEWPORT);
    await phone.page.goto(`${service.baseUrl}/#/solutions`);
    await phone.page.getByRole('heading', { name: 'Templates' }).waitFor();
    assert.equal(await sidewaysOverflow(phone.page), 0, 'Solutions at 390 px');
    await phone.page.goto(`${service.baseUrl}/#/super`);
    await phone.page.getByRole('table', { name: 'Accounts' }).waitFor();
    assert.equal(await sidewaysOverflow(phone.page), 0, 'Super-Admin at 390 px');
    await phone.page.goto(`${service.baseUrl}/#/super?view=diagnostics`);
    await phone.page.getByRole('table', { name: 'Table sizes' }).waitFor();
    assert.equal(await sidewaysOverflow(phone.page), 0, 'Diagnostics at 390 px');
    phone.problems.expectNone();
    await phone.context.close();
  });
});
