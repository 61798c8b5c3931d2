// The Services (create and edit with the options form generated from the API's schema), Users & tokens and
// Super-Admin pages in a real browser (Debian's Chromium through playwright-core) against the real service
// serving its own copy of the built UI. One browser for the file; each test goes on from where the previous
// one left the page, and ends with no console error and no uncaught exception beyond the failed requests it
// provoked on purpose.
// IOTBRIDGE_UI_SCREENSHOTS=docs/ui also writes services.png, service-edit.png, users.png and super.png.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
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
  watchPageProblems,
  type PageProblems,
} from '../helpers/browser.js';
import { createAccount, createService, type TestAccount } from '../helpers/fixtures.js';
import { ADMIN_TOKEN, type TestService } from '../helpers/service.js';

const skip = browserMissing();
const USER_EMAIL = 'field.tech@example.com';
const USER_PASSWORD = 'eight chars or more';
const TENANT_USER = 'tenant.admin@example.com';

describe('Services, Users & tokens and Super-Admin pages in Chromium', { skip }, () => {
  let service: TestService;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let problems: PageProblems;
  let tenant: TestAccount;
  let gatewayId: string;

  const alertText = () => page.getByRole('alert').textContent();
  const columnTexts = (table: string, column: number) => page.locator(`table[aria-label="${table}"] tbody tr td:nth-child(${column})`).allTextContents();
  const whoAmI = (token: string) => fetch(`${service.baseUrl}/auth/whoami`, { headers: { authorization: `Bearer ${token}` } });

  /** A new browser context signed in by pasting `token` on the sign-in page. */
  async function signInWithToken(target: Page, token: string): Promise<void> {
    await target.goto(`${service.baseUrl}/`);
    await submitToken(target, token);
    await eventually(() => target.getByTestId('who-am-i').textContent(), 'API token', 'who am I for an API token');
  }

  before(async () => {
    [service, browser] = await Promise.all([startUiService(), launchBrowser()]);
    await createService(service, ADMIN_TOKEN, { name: 'field devices', type: 'lwm2m' });
    tenant = await createAccount(service, 'Tenant B');
    await createService(service, tenant.token, { name: 'tenant sensors', type: 'coap' });
    const tenantUser = await service.request('POST', '/users', { token: tenant.token, body: { email: TENANT_USER, password: USER_PASSWORD } });
    assert.equal(tenantUser.status, 201, JSON.stringify(tenantUser.body));

    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: service.baseUrl });
    ({ page, problems } = await openPage(context));
  });

  after(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('signs in as the Super-Admin: the navigation offers the Super-Admin area', async () => {
    const admin = await service.request('GET', '/auth/whoami');
    assert.equal(admin.body.superAdmin, true, 'ADMIN_TOKEN is a Super-Admin token');
    await signInWithToken(page, ADMIN_TOKEN);
    await page.getByRole('link', { name: 'Super-Admin', exact: true }).waitFor();
    problems.expectNone();
  });

  it('creates a service through the form generated from the API schema; a bad option shows the API error', async () => {
    await page.getByRole('link', { name: 'Services', exact: true }).click();
    await page.getByRole('heading', { name: 'Services', exact: true }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('gateway');
    await page.getByLabel('Type', { exact: true }).selectOption('lwm2m');
    // The fields come from each type's schema of `options` (GET /services/types): publicHost is an LwM2M option only.
    await page.getByLabel('coapMaxMessageSize', { exact: true }).waitFor();
    assert.equal(await page.getByLabel('publicHost', { exact: true }).count(), 1);
    await page.getByLabel('Type', { exact: true }).selectOption('mqtt');
    assert.equal(await page.getByLabel('publicHost', { exact: true }).count(), 0, 'an LwM2M option is not offered for MQTT');
    assert.equal(await page.getByLabel('keepAliveMode', { exact: true }).count(), 0, 'nor a CoAP keep-alive option');
    assert.equal(await page.getByLabel('topicPattern', { exact: true }).getAttribute('placeholder'), 'default: {key}/#', "MQTT's own option, with its default");
    await page.getByLabel('Type', { exact: true }).selectOption('lwm2m');

    const bad = { name: 'gateway', type: 'lwm2m', options: { coapMaxMessageSize: 8 } };
    const refused = await service.request('POST', '/services', { body: bad });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    await page.getByLabel('coapMaxMessageSize', { exact: true }).fill('8');
    await page.getByRole('button', { name: 'Create service' }).click();
    await eventually(alertText, refused.body.error.message, "the API's message for a bad option value");
    await screenshot(page, 'services', { fullPage: true });

    await page.getByLabel('coapMaxMessageSize', { exact: true }).fill('512');
    await page.getByLabel('keepAliveMode', { exact: true }).selectOption('touch');
    await page.getByLabel('Options (JSON, optional)').fill('{"allowNoSec": false}');
    await page.getByRole('button', { name: 'Create service' }).click();
    await page.getByText(/Created service “gateway”/).waitFor();
    await eventually(() => columnTexts('Services', 1), ['field devices', 'gateway'], 'the new service is listed');
    assert.equal(await page.getByRole('alert').count(), 0, 'the error is gone');

    const listed = await service.request('GET', '/services?limit=100');
    const gateway = listed.body.items.find((item: { name: string }) => item.name === 'gateway');
    assert.ok(gateway, JSON.stringify(listed.body));
    gatewayId = gateway.id;
    assert.equal(gateway.options.coapMaxMessageSize, 512);
    assert.equal(gateway.options.keepAliveMode, 'touch');
    assert.equal(gateway.options.allowNoSec, false, 'the JSON field adds what the fields leave out');
    const endpoints = page.getByRole('link', { name: 'Endpoints of gateway' });
    assert.match((await endpoints.getAttribute('href')) ?? '', new RegExp(`serviceId=${gatewayId}`));
    problems.expectNone([failedRequest(400)]);
  });

  it("offers UDP's and TCP's own options as fields, each type with its own choices, and saves them typed", async () => {
    const choices = (label: string) => page.getByLabel(label, { exact: true }).locator('option').allTextContents();
    await page.getByLabel('Name', { exact: true }).fill('trackers');
    await page.getByLabel('Type', { exact: true }).selectOption('udp');
    assert.deepEqual(await choices('keyRule'), ['default (prefix)', 'prefix', 'address', 'script']);
    await page.getByLabel('keyRule', { exact: true }).selectOption('address');
    await page.getByLabel('keyAddress', { exact: true }).selectOption('host:port');
    await page.getByLabel('queueLimit', { exact: true }).fill('50');
    await screenshot(page, 'services-udp-options', { fullPage: true });
    await page.getByRole('button', { name: 'Create service' }).click();
    await page.getByText(/Created service “trackers”/).waitFor();

    await page.getByLabel('Name', { exact: true }).fill('gps boxes');
    await page.getByLabel('Type', { exact: true }).selectOption('tcp');
    assert.deepEqual(await choices('keyRule'), ['default (login)', 'login', 'prefix'], "TCP's key rules, not UDP's");
    await page.getByLabel('framing', { exact: true }).selectOption('length');
    await page.getByLabel('lengthBytes', { exact: true }).selectOption('4');
    await page.getByLabel('loginReplyHex', { exact: true }).fill('01');
    await page.getByRole('button', { name: 'Create service' }).click();
    await page.getByText(/Created service “gps boxes”/).waitFor();

    const listed = (await service.request('GET', '/services?limit=100')).body.items as { name: string; options: Record<string, unknown> }[];
    assert.deepEqual(listed.find((item) => item.name === 'trackers')?.options, { keyRule: 'address', keyAddress: 'host:port', queueLimit: 50 });
    assert.deepEqual(listed.find((item) => item.name === 'gps boxes')?.options, { framing: 'length', lengthBytes: 4, loginReplyHex: '01' }, 'a numeric choice is sent as a number');
    problems.expectNone();
  });

  it('edits the service: its options fill the fields, a change is saved, a bad value shows the API error', async () => {
    await page.getByRole('link', { name: 'gateway', exact: true }).click();
    await page.getByRole('heading', { name: 'gateway', exact: true }).waitFor();
    assert.equal(await page.getByLabel('coapMaxMessageSize', { exact: true }).inputValue(), '512');
    assert.equal(await page.getByLabel('keepAliveMode', { exact: true }).inputValue(), 'touch');
    assert.equal(await page.getByLabel('allowNoSec', { exact: true }).inputValue(), 'false');

    await page.getByLabel('coapMaxMessageSize', { exact: true }).fill('2048');
    await page.getByRole('button', { name: 'Save service' }).click();
    await page.getByText('Saved service “gateway”.').waitFor();
    await eventually(async () => (await service.request('GET', `/services/${gatewayId}`)).body.options.coapMaxMessageSize, 2048, 'the option is saved');
    const saved = (await service.request('GET', `/services/${gatewayId}`)).body;
    assert.equal(saved.options.keepAliveMode, 'touch', 'the other options stay');
    assert.equal(saved.options.allowNoSec, false);

    const refused = await service.request('PUT', `/services/${gatewayId}`, { body: { name: 'gateway', type: 'lwm2m', options: { ...saved.options, publicHost: 'not a host!' } } });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    await page.getByLabel('publicHost', { exact: true }).fill('not a host!');
    await page.getByRole('button', { name: 'Save service' }).click();
    await eventually(alertText, refused.body.error.message, "the API's message for a bad option value");
    await page.getByLabel('publicHost', { exact: true }).fill('devices.example.com');
    await page.getByRole('button', { name: 'Save service' }).click();
    await eventually(async () => (await service.request('GET', `/services/${gatewayId}`)).body.options.publicHost, 'devices.example.com', 'the host is saved');
    await eventually(() => page.getByLabel('publicHost', { exact: true }).inputValue(), 'devices.example.com', 'the form shows the stored value');
    await screenshot(page, 'service-edit', { fullPage: true });
    problems.expectNone([failedRequest(400)]);
  });

  it('deletes the service after a confirmation; with endpoints only when they go too', async () => {
    const endpoint = await service.request('POST', '/endpoints', { body: { key: 'gateway-1', serviceId: gatewayId } });
    assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
    await page.reload();
    await page.getByRole('link', { name: '1 endpoint', exact: true }).waitFor();

    const refused = await service.request('DELETE', `/services/${gatewayId}`);
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    await page.getByRole('button', { name: 'Delete service gateway' }).click();
    assert.equal(await page.evaluate<string>('document.activeElement.textContent'), 'Yes, delete', 'focus moves to the confirmation');
    await page.keyboard.press('Escape');
    await eventually(() => page.evaluate<string | null>('document.activeElement.getAttribute("aria-label")'), 'Delete service gateway', 'Escape goes back to the button');
    await page.getByRole('button', { name: 'Delete service gateway' }).click();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await eventually(alertText, refused.body.error.message, "the API's 409 while the service has endpoints");

    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByLabel('Also delete its endpoints').check();
    await page.getByRole('button', { name: 'Delete service gateway' }).click();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await page.getByRole('heading', { name: 'Services', exact: true }).waitFor();
    await eventually(() => columnTexts('Services', 1), ['field devices', 'gps boxes', 'trackers'], 'the service is gone from the list');
    assert.equal((await service.request('GET', `/services/${gatewayId}`)).status, 404);
    assert.equal((await service.request('GET', '/endpoints/gateway-1')).status, 404, 'its endpoint went with it');
    problems.expectNone([failedRequest(409)]);
  });

  it('creates a user who can sign in, edits and deletes them', async () => {
    await page.getByRole('link', { name: 'Users & tokens', exact: true }).click();
    await page.getByRole('heading', { name: 'Users & tokens', exact: true }).waitFor();
    await page.getByLabel('Email', { exact: true }).fill(USER_EMAIL);
    await page.getByLabel('Password', { exact: true }).fill('short');
    await page.getByRole('button', { name: 'Create user' }).click();
    const short = await service.request('POST', '/users', { body: { email: USER_EMAIL, password: 'short' } });
    assert.equal(short.status, 400);
    await eventually(alertText, short.body.error.message, "the API's message for a short password");
    await page.getByLabel('Password', { exact: true }).fill(USER_PASSWORD);
    await page.getByLabel('Display name (optional)').fill('Field Tech');
    await page.getByRole('button', { name: 'Create user' }).click();
    await page.getByText(`Created user ${USER_EMAIL}.`).waitFor();
    await eventually(() => columnTexts('Users', 1), [USER_EMAIL], 'the new user is listed (only this account’s users)');

    // The new user signs in in a second browser context.
    const second = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const other = await second.newPage();
    const otherProblems = watchPageProblems(other);
    await other.goto(`${service.baseUrl}/`);
    await submitPassword(other, USER_EMAIL, USER_PASSWORD);
    await eventually(() => other.getByTestId('who-am-i').textContent(), USER_EMAIL, 'the new user is signed in');
    const session = JSON.parse((await other.evaluate<string | null>('sessionStorage.getItem("iotbridge.credentials")')) ?? '{}');
    assert.equal((await whoAmI(session.token)).status, 200);
    otherProblems.expectNone();
    await second.close();

    await page.getByRole('button', { name: `Edit user ${USER_EMAIL}` }).click();
    await page.getByLabel('Display name', { exact: true }).fill('Field Technician');
    await page.getByRole('button', { name: 'Save user' }).click();
    await page.getByText(`Saved user ${USER_EMAIL}.`).waitFor();
    await eventually(() => columnTexts('Users', 2), ['Field Technician'], 'the new name is listed');

    await page.getByRole('button', { name: `Delete user ${USER_EMAIL}` }).click();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await page.getByText(`Deleted user ${USER_EMAIL}.`).waitFor();
    await eventually(() => page.locator('table[aria-label="Users"]').count(), 0, 'no users left in the list');
    assert.equal((await whoAmI(session.token)).status, 401, "the deleted user's session ended");
    problems.expectNone([failedRequest(400)]);
  });

  it('creates an API token, shows its secret once with a copy button, and revokes it', async () => {
    await page.getByLabel('Token name').fill('ci deploys');
    await page.getByRole('button', { name: 'Create token' }).click();
    const secretField = page.getByLabel('Secret of the new token');
    await secretField.waitFor();
    const secret = await secretField.inputValue();
    assert.match(secret, /^AT:/);
    const tokenNames = async () => (await columnTexts('API tokens', 1)).filter((name) => !name.includes('(this session)'));
    await eventually(tokenNames, ['ci deploys'], 'the new token is listed (without its secret)');
    assert.equal(await page.locator('table[aria-label="API tokens"]').getByText(secret).count(), 0);
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    assert.equal(await page.evaluate<string>('navigator.clipboard.readText()'), secret);
    await screenshot(page, 'users', { fullPage: true });

    const used = await whoAmI(secret);
    assert.equal(used.status, 200, 'the secret works against the API');
    assert.equal(((await used.json()) as { type: string }).type, 'api');

    await page.getByRole('button', { name: 'Done, hide it' }).click();
    assert.equal(await secretField.count(), 0, 'the secret is gone');
    await page.reload();
    await eventually(tokenNames, ['ci deploys'], 'listed after a reload');
    assert.equal(await page.getByLabel('Secret of the new token').count(), 0, 'never shown again');

    await page.getByRole('button', { name: 'Revoke token ci deploys' }).click();
    await page.getByRole('button', { name: 'Yes, revoke' }).click();
    await page.getByText('Revoked token “ci deploys”.').waitFor();
    assert.equal((await whoAmI(secret)).status, 401, 'the revoked token is refused');
    problems.expectNone();
  });

  it('the Super-Admin page lists every account and rotates the CoAPS certificate after a confirmation', async () => {
    await page.getByRole('link', { name: 'Super-Admin', exact: true }).click();
    await page.getByRole('heading', { name: 'Super-Admin', exact: true }).waitFor();
    const accounts = await service.request('GET', '/super/accounts?limit=25');
    assert.equal(accounts.status, 200);
    const total = accounts.body.total as number;
    await eventually(() => page.locator('.pager-range').first().textContent(), `1–${total} of ${total} accounts`, 'the accounts pager');
    await eventually(() => columnTexts('Accounts', 1), accounts.body.items.map((item: { name: string }) => item.name), 'every account');
    assert.ok((await columnTexts('Accounts', 1)).includes('Tenant B'));

    await page.getByRole('button', { name: 'Rotate certificate' }).click();
    await page.getByRole('button', { name: 'Yes, rotate certificate' }).click();
    await page.getByText('The certificate was rotated.').waitFor();
    const fingerprint = await page.locator('.super-certificate dd').first().textContent();
    assert.match(fingerprint ?? '', /[0-9A-Fa-f]{2}/);
    await screenshot(page, 'super');
    problems.expectNone();
  });

  it("a sub-account sees only its own users, tokens and services, and the API's 403 on the Super-Admin page", async () => {
    const tenantContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const { page: tenantPage, problems: tenantProblems } = await openPage(tenantContext);
    await signInWithToken(tenantPage, tenant.token);
    assert.equal(await tenantPage.getByRole('link', { name: 'Super-Admin', exact: true }).count(), 0, 'no Super-Admin link');

    const forbidden = await service.request('GET', '/super/accounts', { token: tenant.token });
    assert.equal(forbidden.status, 403);
    await tenantPage.goto(`${service.baseUrl}/#/super`);
    await eventually(() => tenantPage.getByRole('alert').textContent(), forbidden.body.error.message, "the API's 403 message");
    assert.equal(await tenantPage.getByRole('button', { name: 'Rotate certificate' }).count(), 0);

    await tenantPage.getByRole('link', { name: 'Users & tokens', exact: true }).click();
    await eventually(() => tenantPage.locator('table[aria-label="Users"] tbody td:first-child').allTextContents(), [TENANT_USER], "the sub-account's users");
    await eventually(() => tenantPage.locator('table[aria-label="API tokens"] tbody td:first-child').allTextContents(), ['Tenant B token (this session)'], "the sub-account's tokens");
    await tenantPage.getByRole('link', { name: 'Services', exact: true }).click();
    await eventually(() => tenantPage.locator('table[aria-label="Services"] tbody td:first-child').allTextContents(), ['tenant sensors'], "the sub-account's services");

    // At phone width nothing sticks out sideways (the tables scroll inside their box).
    await tenantPage.setViewportSize(PHONE_VIEWPORT);
    for (const route of ['#/users', '#/services']) {
      await tenantPage.goto(`${service.baseUrl}/${route}`);
      await tenantPage.locator('table').first().waitFor();
      assert.equal(await sidewaysOverflow(tenantPage), 0, `${route} at 390 px`);
    }
    tenantProblems.expectNone([failedRequest(403)]);
    await tenantContext.close();
    problems.expectNone();
  });
});
