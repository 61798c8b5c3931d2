// Issue 21, external sign-in in the web UI (Chromium through playwright-core): the sign-in page offers
// "Sign in with <name>" when the service has OIDC; the button goes through a real provider's (oidc-provider)
// login and consent pages and back to the UI signed in as the mapped user, at the returnTo path, with the token
// out of the address bar; a person whose domain maps nowhere comes back to the sign-in page with the reason.
// The browser reaches nothing but 127.0.0.1 (the provider's pages ask for a web font: refused here).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { browserMissing, eventually, failedRequest, launchBrowser, openPage, startUiService, type PageProblems } from '../helpers/browser.js';
import { createAccount, type TestAccount } from '../helpers/fixtures.js';
import { oidcConfig, TestProvider } from '../helpers/oidc-provider.js';
import type { TestService } from '../helpers/service.js';

const skip = browserMissing();

const PEOPLE: Record<string, Record<string, unknown>> = {
  ann: { email: 'ann@example.com', email_verified: true, name: 'Ann Example' },
  carl: { email: 'carl@unknown.org', email_verified: true },
};

/** What the browser may not load: anything off this machine. */
const OFF_LOOPBACK = /^https?:\/\/(?!127\.0\.0\.1[:/])/;

describe('external sign-in in Chromium', { skip }, () => {
  const provider = new TestProvider(PEOPLE);
  let service: TestService;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let problems: PageProblems;
  let tenant: TestAccount;

  /** The provider's development login and consent pages, filled in as `login`. */
  async function atProvider(login: string): Promise<void> {
    await page.locator('input[name="login"]').fill(login);
    await page.locator('input[name="password"]').fill('any');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
  }

  before(async () => {
    await provider.listen();
    [service, browser] = await Promise.all([startUiService(oidcConfig(provider, 'domain')), launchBrowser()]);
    provider.serve(service);
    tenant = await createAccount(service, 'Example Inc');
    const mapped = await service.request('PUT', '/auth/oidc/mapping', { body: { domains: { 'example.com': { accountId: tenant.accountId } } } });
    assert.equal(mapped.status, 200, JSON.stringify(mapped.body));
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.route(OFF_LOOPBACK, (route) => route.abort());
    ({ page, problems } = await openPage(context));
  });

  after(async () => {
    await browser?.close();
    await service?.stop();
    await provider.close();
  });

  // The provider's pages ask for a font from the web, which the route above refuses.
  const expected = [/net::ERR_FAILED/, /fonts\.googleapis\.com/];

  it('signs in through the provider and lands where it started, signed in as the mapped user', async () => {
    await page.goto(`${service.baseUrl}/#/endpoints`);
    const button = page.getByRole('link', { name: 'Sign in with Test IdP' });
    await button.waitFor();
    assert.equal(await button.getAttribute('href'), '/auth/oidc/login?returnTo=%2Fendpoints');
    await button.click();
    await atProvider('ann');
    await eventually(() => page.getByTestId('who-am-i').textContent(), 'ann@example.com', 'who am I after external sign-in');
    await page.getByRole('heading', { name: 'Endpoints', exact: true }).waitFor();
    const url = new URL(page.url());
    assert.equal(url.hash, '#/endpoints', 'the token is out of the address bar');
    const stored = await page.evaluate<string | null>("window.sessionStorage.getItem('iotbridge.credentials')");
    assert.match(stored ?? '', /"token":"UT:/);
    problems.expectNone(expected);
  });

  it('a person whose domain maps nowhere comes back to the sign-in page with the reason', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).waitFor();
    // The provider remembers ann: a new context starts without its session there.
    const fresh = await browser.newContext();
    await fresh.route(OFF_LOOPBACK, (route) => route.abort());
    const opened = await openPage(fresh);
    page = opened.page;
    problems = opened.problems;
    await page.goto(`${service.baseUrl}/`);
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
    await atProvider('carl');
    await eventually(() => page.getByRole('alert').textContent(), 'You were signed in by your identity provider, but your e-mail domain or organization is not linked to an account here. Ask the operator of this service.', 'the refusal');
    assert.equal(new URL(page.url()).hash, '#/sign-in?error=IOTB_AUTH_OIDC_NO_ACCOUNT');
    problems.expectNone([...expected, failedRequest(403)]);
    await fresh.close();
  });
});
