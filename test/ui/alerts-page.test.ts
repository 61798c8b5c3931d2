// The Alerts pages of the web UI in a real browser (Debian's Chromium through playwright-core) against the real
// service serving its own copy of the built UI. One browser for the file; each test goes on from where the
// previous one left the page, and ends with no console error (a CSP violation included) and no uncaught exception
// beyond the failed requests it provoked on purpose.
// A cold chain: two fridges in Hamburg; a rule made in the form ("fridge too warm": readings above 8 °C) with a
// webhook to a local receiver; readings posted to the API open alerts that appear in the list by themselves,
// which are acknowledged and closed from the page. Another account sees none of it.
// IOTBRIDGE_UI_SCREENSHOTS=docs/ui also writes alerts.png, alert.png and alert-rules.png.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Locator, Page } from 'playwright-core';
import { browserMissing, eventually, failedRequest, launchBrowser, openPage, PHONE_VIEWPORT, screenshot, sidewaysOverflow, signIn, startUiService, submitToken, type PageProblems } from '../helpers/browser.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/devices.js';
import { ADMIN_TOKEN, type TestService } from '../helpers/service.js';

const skip = browserMissing();
const EMAIL = 'cold-chain@example.com';
const PASSWORD = 'correct horse battery';
const RULE = 'fridge too warm';
const SECRET = 'webhook-secret-0123456789';
/** Alerts appear by the `alert` events of the live stream; what changes without one shows by the 15 s reload. */
const LIVE_MS = 20_000;

interface Hook {
  readonly event: string;
  readonly signature: string;
  readonly body: string;
}

describe('Alerts pages in Chromium', { skip, timeout: 240_000 }, () => {
  let service: TestService;
  let browser: Browser;
  let page: Page;
  let problems: PageProblems;
  let receiver: Server;
  let hookUrl: string;
  let other: TestAccount;
  let fridge1: string;
  let ruleId: string;
  let alertId: string;
  let otherAlertId: string;
  let triggerId: string;
  const hooks: Hook[] = [];

  /** A link of the navigation (pages have breadcrumbs of the same name). */
  const section = (name: string) => page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name, exact: true });
  const tab = (name: string) => page.getByRole('navigation', { name: 'Alerts and rules' }).getByRole('link', { name, exact: true });
  const alertRows = () => page.locator('table[aria-label="Alerts"] tbody tr');
  /** The row of the alert on this endpoint key. */
  const alertRow = (key: string) => alertRows().filter({ has: page.getByRole('link', { name: key, exact: true }) });
  const ruleRow = (name: string) => page.locator('table[aria-label="Alert rules"] tbody tr').filter({ has: page.getByRole('link', { name, exact: true }) });
  const ruleForm = () => page.getByRole('form', { name: /^(New alert rule|Edit “.*”)$/ });
  /** The message shown next to a field of the rule form, once the field is marked invalid and described by it; else null. */
  const fieldError = async (form: Locator, label: string): Promise<string | null> => {
    const field = form.getByLabel(label, { exact: true });
    if ((await field.getAttribute('aria-invalid')) !== 'true') return null;
    const errorId = ((await field.getAttribute('aria-describedby')) ?? '').split(' ').find((id) => id.endsWith('-error'));
    return errorId === undefined ? null : page.locator(`[id="${errorId}"]`).textContent();
  };
  const reading = async (key: string, temperature: number, token?: string) => {
    const posted = await service.request('POST', '/events', { token, body: { type: 'reading', endpoint: `k.${key}`, data: { temperature } } });
    assert.equal(posted.status, 202, JSON.stringify(posted.body));
  };
  /** The API's answer to the rule body the form is about to send, to compare the page's message with. */
  const refusal = async (body: Record<string, unknown>) => {
    const refused = await service.request('POST', '/alert-rules', { body });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    return refused.body.error.message as string;
  };

  before(async () => {
    receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        hooks.push({ event: String(request.headers['x-iotbridge-event']), signature: String(request.headers['x-iotbridge-signature']), body });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/alerts`;
    [service, browser] = await Promise.all([startUiService({ outboundAllow: ['127.0.0.1/32'] }), launchBrowser()]);
    const user = await service.request('POST', '/users', { body: { email: EMAIL, password: PASSWORD, name: 'Cold chain' } });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    const serviceId = await createService(service, ADMIN_TOKEN, { name: 'cold chain', type: 'http' });
    fridge1 = (await createEndpoint(service, ADMIN_TOKEN, { key: 'fridge-1', serviceId, tags: ['site:hamburg'] })).id as string;
    await createEndpoint(service, ADMIN_TOKEN, { key: 'fridge-2', serviceId, tags: ['site:hamburg'] });

    // A trigger for the trigger-failures condition (it watches door events, which the test never sends).
    const trigger = await service.request('POST', '/triggers', { body: { name: 'door log', events: ['door'], script: 'log(event.data.open);' } });
    assert.equal(trigger.status, 201, JSON.stringify(trigger.body));
    triggerId = trigger.body.id;

    // Another account with an endpoint of the same key, a rule and an open alert of its own.
    other = await createAccount(service, 'other dairy');
    const otherService = await createService(service, other.token, { name: 'dairy', type: 'http' });
    await createEndpoint(service, other.token, { key: 'fridge-1', serviceId: otherService });
    const otherRule = await service.request('POST', '/alert-rules', {
      token: other.token,
      body: { name: 'dairy too warm', severity: 'minor', condition: { type: 'threshold', event: 'reading', field: 'data.temperature', op: '>', value: 6 } },
    });
    assert.equal(otherRule.status, 201, JSON.stringify(otherRule.body));
    await reading('fridge-1', 7, other.token);
    otherAlertId = await waitFor(async () => (await service.request('GET', '/alerts', { token: other.token })).body.items[0]?.id as string | undefined, 'the other account’s alert');

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'Europe/Berlin' });
    ({ page, problems } = await openPage(context));
    await signIn(page, service.baseUrl, EMAIL, PASSWORD);
  });

  after(async () => {
    await browser?.close();
    await service?.stop();
    await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
  });

  it('says what to do while there is no rule: create one', async () => {
    await section('Alerts').click();
    await page.getByRole('heading', { name: 'Alerts', level: 1 }).waitFor();
    await page.getByText('No alert rules yet: alerts open when an event crosses a rule’s condition.').waitFor();
    await page.getByRole('link', { name: 'Create an alert rule' }).click();
    await page.getByRole('heading', { name: 'Alert rules', level: 1 }).waitFor();
    await page.getByText('No alert rules yet: create one with the form.').waitFor();
    assert.equal(await tab('Rules').getAttribute('aria-current'), 'page');
    problems.expectNone();
  });

  it('shows the fields of each kind of condition', async () => {
    const form = ruleForm();
    const labels = () => form.locator('fieldset').first().locator('label').allTextContents();
    assert.deepEqual(await labels(), ['Kind', 'Event type', 'Field', 'Operator', 'Value']);
    await form.getByLabel('Kind').selectOption('unavailable');
    assert.deepEqual(await labels(), ['Kind', 'Minutes', 'Endpoint tags (optional)']);
    await form.getByLabel('Kind').selectOption('no-data');
    assert.deepEqual(await labels(), ['Kind', 'Minutes', 'Endpoint tags']);
    await form.getByLabel('Kind').selectOption('trigger-failures');
    assert.deepEqual(await labels(), ['Kind', 'Minutes', 'Failed runs (%)', 'Runs at least (optional)', 'Trigger']);
    assert.deepEqual(await form.getByLabel('Trigger', { exact: true }).locator('option').allTextContents(), ['All the account’s triggers', 'door log']);
    await form.getByLabel('Kind').selectOption('threshold');
    assert.deepEqual(await labels(), ['Kind', 'Event type', 'Field', 'Operator', 'Value']);
    problems.expectNone();
  });

  it('creates a threshold rule from the form; what the API refuses shows next to its field', async () => {
    const form = ruleForm();
    await form.getByLabel('Name').fill(RULE);
    await form.getByLabel('Severity').selectOption('major');
    await form.getByLabel('Tags (optional)').fill('cold-chain, site:hamburg');
    await form.getByLabel('Event type').fill('reading');
    await form.getByLabel('Field').fill('data.temperature');
    await form.getByLabel('Operator').selectOption('>');
    // Text compares only with == and !=: the rule check names condition.op.
    await form.getByLabel('Value').fill('warm');
    const body = { name: RULE, severity: 'major', tags: ['cold-chain', 'site:hamburg'], condition: { type: 'threshold', event: 'reading', field: 'data.temperature', op: '>', value: 'warm' }, notify: {}, enabled: true };
    const opMessage = await refusal(body);
    await form.getByRole('button', { name: 'Create rule' }).click();
    await eventually(() => fieldError(form, 'Operator'), opMessage, 'the API’s message next to Operator');
    await eventually(() => page.evaluate<string | null>("document.activeElement?.getAttribute('aria-invalid') ?? null"), 'true', 'the field named gets the focus');

    // A webhook secret too short: its message next to the secret.
    await form.getByLabel('Value').fill('8');
    await form.getByLabel('Webhook URL (optional)').fill(hookUrl);
    await form.getByLabel('Webhook secret').fill('too short');
    const secretMessage = await refusal({ ...body, condition: { ...body.condition, value: 8 }, notify: { webhook: { url: hookUrl, secret: 'too short' } } });
    await form.getByRole('button', { name: 'Create rule' }).click();
    await eventually(() => fieldError(form, 'Webhook secret'), secretMessage, 'the API’s message next to the secret');
    assert.equal(await form.getByLabel('Operator').getAttribute('aria-invalid'), null, 'the earlier complaint is gone');

    await form.getByLabel('Webhook secret').fill(SECRET);
    await form.getByRole('button', { name: 'Create rule' }).click();
    await page.getByRole('status').filter({ hasText: `Created “${RULE}”.` }).waitFor();
    const row = ruleRow(RULE);
    await row.waitFor();
    assert.deepEqual((await row.locator('td').allTextContents()).slice(0, 3), [`${RULE}majorcold-chainsite:hamburg`, 'reading: data.temperature > 8', 'webhook']);
    assert.equal(await ruleForm().getByLabel('Name').inputValue(), '', 'a new, empty form');

    const stored = await service.request('GET', '/alert-rules');
    assert.equal(stored.body.items.length, 1, 'the refused attempts stored nothing');
    const [rule] = stored.body.items;
    ruleId = rule.id;
    assert.deepEqual(rule.condition, { type: 'threshold', event: 'reading', field: 'data.temperature', op: '>', value: 8 });
    assert.deepEqual(rule.notify, { webhook: { url: hookUrl, hasSecret: true } });
    assert.deepEqual([rule.severity, rule.tags, rule.enabled], ['major', ['cold-chain', 'site:hamburg'], true]);
    problems.expectNone([failedRequest(400)]);
  });

  it('creates a no-data rule: minutes and the endpoints’ tags, which it needs', async () => {
    const form = ruleForm();
    await form.getByLabel('Name').fill('Hamburg fridges silent');
    await form.getByLabel('Severity').selectOption('warning');
    await form.getByLabel('Kind').selectOption('no-data');
    await form.getByLabel('Minutes').fill('30');
    // The schema tries each kind of condition; the page keeps the API's complaint about this kind's field.
    const refused = await service.request('POST', '/alert-rules', { body: { name: 'Hamburg fridges silent', severity: 'warning', tags: [], condition: { type: 'no-data', minutes: 30, tags: [] }, notify: {}, enabled: true } });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    const issue = (refused.body.error.details as Array<{ path: string; message: string }>).find((detail) => detail.path === '/condition/tags');
    assert.ok(issue, JSON.stringify(refused.body));
    assert.ok(refused.body.error.message.includes(`body/condition/tags ${issue.message}`));
    await form.getByRole('button', { name: 'Create rule' }).click();
    await eventually(() => fieldError(form, 'Endpoint tags'), `Invalid body: body/condition/tags ${issue.message}`, 'the API’s complaint next to the endpoint tags');
    await form.getByLabel('Endpoint tags').fill('site:hamburg');
    await form.getByRole('button', { name: 'Create rule' }).click();
    await page.getByRole('status').filter({ hasText: 'Created “Hamburg fridges silent”.' }).waitFor();
    await ruleRow('Hamburg fridges silent').waitFor();
    assert.equal(await ruleRow('Hamburg fridges silent').locator('td').nth(1).textContent(), 'No data from endpoints tagged site:hamburg for 30 min');
    const stored = (await service.request('GET', '/alert-rules')).body.items.find((rule: { name: string }) => rule.name === 'Hamburg fridges silent');
    assert.deepEqual(stored.condition, { type: 'no-data', minutes: 30, tags: ['site:hamburg'] });
    problems.expectNone([failedRequest(400)]);
  });

  it('creates a trigger-failures rule for one trigger', async () => {
    const form = ruleForm();
    await form.getByLabel('Name').fill('door log failing');
    await form.getByLabel('Severity').selectOption('minor');
    await form.getByLabel('Kind').selectOption('trigger-failures');
    await form.getByLabel('Minutes').fill('10');
    await form.getByLabel('Failed runs (%)').fill('20');
    await form.getByLabel('Runs at least (optional)').fill('5');
    await form.getByLabel('Trigger', { exact: true }).selectOption({ label: 'door log' });
    await form.getByRole('button', { name: 'Create rule' }).click();
    await page.getByRole('status').filter({ hasText: 'Created “door log failing”.' }).waitFor();
    await ruleRow('door log failing').waitFor();
    assert.equal(await ruleRow('door log failing').locator('td').nth(1).textContent(), 'Trigger “door log”: ≥ 20 % of runs failed over 10 min, 5 runs at least');
    const stored = (await service.request('GET', '/alert-rules')).body.items.find((rule: { name: string }) => rule.name === 'door log failing');
    assert.deepEqual(stored.condition, { type: 'trigger-failures', minutes: 10, percent: 20, minRuns: 5, triggerId });
    problems.expectNone();
  });

  it('edits a rule: the form holds it, and an empty secret keeps the stored one', async () => {
    await ruleRow(RULE).getByRole('link', { name: RULE, exact: true }).click();
    const form = page.getByRole('form', { name: `Edit “${RULE}”` });
    await form.waitFor();
    assert.deepEqual(
      [await form.getByLabel('Name').inputValue(), await form.getByLabel('Event type').inputValue(), await form.getByLabel('Value').inputValue(), await form.getByLabel('Webhook URL (optional)').inputValue(), await form.getByLabel('Webhook secret').inputValue()],
      [RULE, 'reading', '8', hookUrl, ''],
    );
    await form.getByText('A secret is stored (it is never shown): leave this empty to keep it, or type a new one.').waitFor();
    assert.equal(await ruleRow(RULE).getAttribute('aria-current'), 'true', 'the rule being edited is marked');
    await form.getByLabel('Severity').selectOption('critical');
    await screenshot(page, 'alert-rules', { fullPage: true, fromTop: true });
    await form.getByRole('button', { name: 'Save rule' }).click();
    await page.getByRole('status').filter({ hasText: `Saved “${RULE}”.` }).waitFor();
    await page.getByRole('form', { name: 'New alert rule' }).waitFor();
    const rule = (await service.request('GET', `/alert-rules/${ruleId}`)).body;
    assert.deepEqual([rule.severity, rule.notify.webhook], ['critical', { url: hookUrl, hasSecret: true }]);
    problems.expectNone();
  });

  it('shows alerts as readings cross the rule, open ones first; acknowledges one from its row', async () => {
    await tab('Alerts').click();
    await page.getByRole('heading', { name: 'Alerts', level: 1 }).waitFor();
    await page.getByText('No open alerts.').waitFor();
    await page.locator('.alt-live-on').waitFor();

    // fridge-2 first, then fridge-1: newest first puts fridge-1 on top.
    await reading('fridge-2', 9);
    await alertRow('fridge-2').waitFor({ timeout: LIVE_MS });
    await reading('fridge-1', 5);
    await reading('fridge-1', 9.5);
    await alertRow('fridge-1').waitFor({ timeout: LIVE_MS });
    const cells = await alertRow('fridge-1').locator('td').allTextContents();
    assert.deepEqual([cells[0], cells[1], cells[2], cells[3], cells[6], cells[7]], [`critical${RULE}`, 'fridge-1', 'cold-chainsite:hamburg', 'open', '1', '9.5']);
    // Opened today: the time alone (the date too if midnight passed in Berlin since).
    assert.match(cells[4]!, /^(\d{2}:\d{2}:\d{2}|\d{1,2} \w{3}, \d{2}:\d{2})$/, 'opened, in the browser’s time zone');
    assert.equal(await alertRow('fridge-1').getByRole('link', { name: 'fridge-1' }).getAttribute('href'), `#/endpoints/${fridge1}`);
    alertId = (await service.request('GET', '/alerts?endpoint=k.fridge-1')).body.items[0].id;
    assert.equal(await alertRow('fridge-1').getByRole('link', { name: RULE }).getAttribute('href'), `#/alerts/${alertId}`);

    // Another crossing counts on the same alert. It is no `alert` event (the API notifies changes of state only),
    // so the list's reload every 15 s shows it.
    await reading('fridge-1', 11);
    await eventually(async () => (await alertRow('fridge-1').locator('td').allTextContents()).slice(6, 8), ['2', '11'], 'the second crossing', LIVE_MS);

    // The webhook was called, signed with the secret kept through the edit.
    const hook = hooks.find((h) => h.event === 'alert.opened' && JSON.parse(h.body).alert.endpointKey === 'fridge-1');
    assert.ok(hook, 'the webhook call for fridge-1');
    const [t, v1] = hook.signature.split(',').map((part) => part.split('=')[1]);
    assert.equal(v1, createHmac('sha256', SECRET).update(`${t}.${hook.body}`).digest('hex'));

    await alertRow('fridge-1').getByRole('button', { name: `Acknowledge ${RULE} on fridge-1` }).click();
    const ack = page.getByRole('form', { name: `Acknowledge ${RULE} on fridge-1` });
    await ack.getByLabel('Note (optional)').fill('Technician on the way');
    await ack.getByRole('button', { name: 'Acknowledge', exact: true }).click();
    await page.getByRole('status').filter({ hasText: `Acknowledged “${RULE} on fridge-1”.` }).waitFor();
    await eventually(async () => alertRow('fridge-1').locator('td').nth(3).textContent(), 'acknowledged', 'the row’s new state');
    // Open before acknowledged, whatever their age.
    await eventually(async () => (await alertRows().locator('td:nth-child(2)').allTextContents()), ['fridge-2', 'fridge-1'], 'open first');
    const stored = (await service.request('GET', `/alerts/${alertId}`)).body;
    assert.deepEqual([stored.state, stored.history.at(-1).note], ['acknowledged', 'Technician on the way']);
    await screenshot(page, 'alerts', { fromTop: true });

    // The filters: by state, then by a tag chip.
    const filter = page.getByRole('search', { name: 'Filter alerts' });
    await filter.getByLabel('State').selectOption('acknowledged');
    await filter.getByRole('button', { name: 'Search' }).click();
    await eventually(async () => alertRows().locator('td:nth-child(2)').allTextContents(), ['fridge-1'], 'the acknowledged ones');
    assert.match(page.url(), /#\/alerts\?state=acknowledged$/);
    await page.getByRole('link', { name: 'Clear' }).click();
    await eventually(async () => alertRows().count(), 2, 'both again');
    problems.expectNone();
  });

  it('closes the alert with a note on its page, which shows the history', async () => {
    await alertRow('fridge-1').getByRole('link', { name: RULE }).click();
    await page.getByRole('heading', { name: RULE, level: 1 }).waitFor();
    await page.getByRole('link', { name: RULE, exact: true }).first().waitFor();
    await page.getByRole('button', { name: `Close ${RULE} on fridge-1` }).click();
    const close = page.getByRole('form', { name: `Close ${RULE} on fridge-1` });
    await close.getByLabel('Note (optional)').fill('Door seal replaced');
    await close.getByRole('button', { name: 'Close', exact: true }).click();
    const history = page.getByRole('table', { name: 'History' }).locator('tbody tr');
    await eventually(() => history.count(), 3, 'three changes');
    const rows = await Promise.all([0, 1, 2].map(async (n) => (await history.nth(n).locator('td').allTextContents()).filter((_, i) => i !== 1)));
    assert.deepEqual(rows, [
      ['open', 'the rule', '—'],
      ['acknowledged', `you (${EMAIL})`, 'Technician on the way'],
      ['closed', `you (${EMAIL})`, 'Door seal replaced'],
    ]);
    await page.locator('.alt-headline').getByText('closed').waitFor();
    assert.equal(await page.getByRole('button', { name: /^Close / }).count(), 0, 'nothing left to do');
    assert.equal((await service.request('GET', `/alerts/${alertId}`)).body.state, 'closed');
    await screenshot(page, 'alert', { fromTop: true });

    // Closed alerts leave the default list; the state filter shows them.
    await page.getByRole('link', { name: 'Alerts', exact: true }).first().click();
    await eventually(async () => alertRows().locator('td:nth-child(2)').allTextContents(), ['fridge-2'], 'the active ones');
    await page.goto(`${service.baseUrl}/#/alerts?state=closed`);
    await eventually(async () => alertRows().locator('td:nth-child(4)').allTextContents(), ['closed'], 'the closed one');
    problems.expectNone();
  });

  it('fits a phone’s width: nothing overflows sideways', async () => {
    await page.setViewportSize(PHONE_VIEWPORT);
    await page.goto(`${service.baseUrl}/#/alerts`);
    await alertRow('fridge-2').waitFor();
    assert.equal(await sidewaysOverflow(page), 0, 'the list fits 390 px');
    await page.goto(`${service.baseUrl}/#/alerts/rules`);
    await ruleRow(RULE).waitFor();
    assert.equal(await sidewaysOverflow(page), 0, 'the rules fit 390 px');
    await page.goto(`${service.baseUrl}/#/alerts/${alertId}`);
    await page.getByRole('table', { name: 'History' }).waitFor();
    assert.equal(await sidewaysOverflow(page), 0, 'an alert fits 390 px');
    await page.setViewportSize({ width: 1280, height: 900 });
    problems.expectNone();
  });

  it('shows another account only its own alerts and rules', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const { page: otherPage, problems: otherProblems } = await openPage(context);
    await otherPage.goto(`${service.baseUrl}/`);
    await submitToken(otherPage, other.token);
    await otherPage.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await otherPage.goto(`${service.baseUrl}/#/alerts?state=all`);
    const rows = otherPage.locator('table[aria-label="Alerts"] tbody tr');
    await rows.first().waitFor();
    assert.deepEqual(await rows.locator('td.alt-name > a').allTextContents(), ['dairy too warm']);
    assert.equal(await rows.getByRole('link', { name: 'dairy too warm' }).getAttribute('href'), `#/alerts/${otherAlertId}`);

    const missing = await service.request('GET', `/alerts/${alertId}`, { token: other.token });
    assert.equal(missing.status, 404);
    await otherPage.goto(`${service.baseUrl}/#/alerts/${alertId}`);
    await eventually(() => otherPage.getByRole('alert').first().textContent(), missing.body.error.message, 'the API’s 404 message');
    assert.equal(await otherPage.getByText(RULE).count(), 0);

    await otherPage.goto(`${service.baseUrl}/#/alerts/rules?edit=${ruleId}`);
    await otherPage.getByText('No such alert rule: it was deleted, or belongs to another account.').waitFor();
    assert.deepEqual(await otherPage.locator('table[aria-label="Alert rules"] tbody td.alt-name > a').allTextContents(), ['dairy too warm']);
    otherProblems.expectNone([failedRequest(404)]);
    await context.close();
  });

  it('deletes a rule only after the confirmation; its alerts stay', async () => {
    await section('Alerts').click();
    await tab('Rules').click();
    const row = ruleRow(RULE);
    await row.getByRole('button', { name: `Delete ${RULE}` }).click();
    await row.getByText(`Delete “${RULE}”? Its alerts stay.`).waitFor();
    await row.getByRole('button', { name: 'Yes, delete' }).click();
    await page.getByRole('status').filter({ hasText: `Deleted “${RULE}”; its alerts stay.` }).waitFor();
    await eventually(() => page.locator('table[aria-label="Alert rules"] tbody td.alt-name > a').allTextContents(), ['Hamburg fridges silent', 'door log failing'], 'the other rules left');
    assert.equal((await service.request('GET', `/alerts/${alertId}`)).status, 200, 'the alert stays');
    problems.expectNone();
  });
});

