// Issue 21's administration pages in a real browser (Debian's Chromium through playwright-core) against the real
// service: Import / export (the export downloaded and parsed, a dry run that writes nothing, an import into
// another account, a refused endpoint, a file that is not JSON, secrets sealed with a passphrase), the Licence page (grace banner, the API's
// message for a bad licence, a valid one installed, absent from an ordinary account's navigation) and the
// external sign-in mapping of the Super-Admin area (the API's messages, and "not configured" without OIDC).
// Each identity has its own browser context, signed in by pasting its token. No test reaches beyond 127.0.0.1:
// the OIDC issuer is configured but never contacted (discovery happens at the first external sign-in).
// IOTBRIDGE_UI_SCREENSHOTS=docs/ui also writes imex.png, licence.png and super-oidc.png.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { signLicence } from '../../scripts/licence-sign.js';
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
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { ADMIN_TOKEN, type TestService } from '../helpers/service.js';

const skip = browserMissing();
const LICENCE_FIXTURES = 'test/fixtures/licence';
const DAY = 24 * 60 * 60 * 1000;
/** Which items the seeded account exports: one service, two endpoints, one report. */
const SEEDED_ITEMS = 4;

interface Signed {
  readonly context: BrowserContext;
  readonly page: Page;
  readonly problems: PageProblems;
}

describe('Import / export, Licence and sign-in mapping pages in Chromium', { skip, timeout: 120_000 }, () => {
  let service: TestService;
  let browser: Browser;
  let acme: TestAccount;
  let beta: TestAccount;
  let acmeUi: Signed;
  let betaUi: Signed;
  let adminUi: Signed;
  /** The document Acme's export downloaded in the browser. */
  let exported: Record<string, any>;

  /** A context signed in by pasting `token`, waiting for the Dashboard. */
  async function signedIn(token: string, viewport: { width: number; height: number } = { width: 1280, height: 860 }): Promise<Signed> {
    const context = await browser.newContext({ viewport, acceptDownloads: true });
    const { page, problems } = await openPage(context);
    await page.goto(`${service.baseUrl}/`);
    await submitToken(page, token);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    return { context, page, problems };
  }

  const section = (page: Page, name: string) => page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name, exact: true });

  /** Clicks Export configuration; gives the file's name and its parsed document. */
  async function exportDocument(page: Page): Promise<{ name: string; document: Record<string, any> }> {
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export configuration' }).click()]);
    return { name: download.suggestedFilename(), document: JSON.parse(readFileSync(await download.path(), 'utf8')) };
  }

  /** Chooses a document as the import's file and presses `button`. */
  async function sendDocument(page: Page, body: string, button: 'Check (dry run)' | 'Import', name = 'config.json'): Promise<void> {
    await page.getByLabel('Document (JSON)').setInputFiles({ name, mimeType: 'application/json', buffer: Buffer.from(body) });
    await page.getByRole('button', { name: button, exact: true }).click();
  }

  /** The job's counts as the page shows them: { Processed: 1, Created: … }. */
  async function shownCounts(page: Page): Promise<Record<string, number>> {
    const items = await page.getByRole('list', { name: 'Counts' }).getByRole('listitem').allTextContents();
    return Object.fromEntries(items.map((text) => {
      const [value, label] = text.split(' ');
      return [label!, Number(value!.replace(/,/g, ''))];
    }));
  }

  /** The counts of a job as the API answers them, in the page's words. */
  const countsOf = (job: Record<string, number>) => ({ Processed: job.processed!, Created: job.created!, Updated: job.updated!, Unchanged: job.unchanged!, Refused: job.refusedCount! });
  const jobState = (page: Page) => page.getByTestId('imex-job-state').textContent();

  before(async () => {
    [service, browser] = await Promise.all([
      startUiService({
        licensing: true,
        licencePublicKeys: [path.join(LICENCE_FIXTURES, 'public.pem')],
        oidcIssuer: 'http://127.0.0.1:9/realms/test',
        oidcClientId: 'iotbridge',
        oidcMode: 'domain',
        // An alert rule's webhook on loopback (never called: no event crosses its threshold).
        outboundAllow: ['127.0.0.1/32'],
      }),
      launchBrowser(),
    ]);
    acme = await createAccount(service, 'Acme');
    beta = await createAccount(service, 'Beta');
    // http: its device keys are not on a shared port, so another account of this installation may import them.
    const serviceId = await createService(service, acme.token, { name: 'meters', type: 'http' });
    await createEndpoint(service, acme.token, { key: 'meter-1', serviceId, tags: ['site:north'], statusDetails: { firmwareVersion: '1.2' } });
    await createEndpoint(service, acme.token, { key: 'meter-2', serviceId, tags: ['site:south'] });
    const report = await service.request('POST', '/reports', { token: acme.token, body: { name: 'energy', description: 'kWh per meter', retentionDays: 30 } });
    assert.equal(report.status, 201, JSON.stringify(report.body));
    [acmeUi, betaUi, adminUi] = await Promise.all([signedIn(acme.token), signedIn(beta.token), signedIn(ADMIN_TOKEN)]);
  });

  after(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('exports the account’s configuration as a file that parses and names its service; no Licence link for an ordinary token', async () => {
    const { page, problems } = acmeUi;
    assert.equal(await section(page, 'Licence').count(), 0, 'no Licence link for an ordinary account');
    assert.equal(await section(page, 'Super-Admin').count(), 0);
    await section(page, 'Import / export').click();
    await page.getByRole('heading', { name: 'Import / export', level: 1 }).waitFor();
    const { name, document } = await exportDocument(page);
    assert.match(name, new RegExp(`^iotbridge-export-${acme.accountId}-\\d{4}-\\d{2}-\\d{2}\\.json$`));
    assert.equal(document.format, 'iotbridge-export');
    assert.deepEqual(
      document.services.map((item: { name: string; type: string }) => [item.name, item.type]),
      [['meters', 'http']],
    );
    assert.deepEqual(document.endpoints.map((item: { key: string }) => item.key).sort(), ['meter-1', 'meter-2']);
    assert.deepEqual(document.reports.map((item: { name: string }) => item.name), ['energy']);
    exported = document;
    problems.expectNone();
  });

  it('another account’s export holds none of the first account’s configuration', async () => {
    const { page, problems } = betaUi;
    await section(page, 'Import / export').click();
    await page.getByRole('heading', { name: 'Import / export', level: 1 }).waitFor();
    const { name, document } = await exportDocument(page);
    assert.match(name, new RegExp(`^iotbridge-export-${beta.accountId}-`));
    assert.deepEqual([document.services ?? [], document.endpoints ?? [], document.reports ?? []], [[], [], []]);
    problems.expectNone();
  });

  it('a dry run of that document in the other account shows what would be created and writes nothing', async () => {
    const { page, problems } = betaUi;
    const body = JSON.stringify(exported);
    const expected = await service.request('POST', '/imex/import?dryRun=true', { token: beta.token, body });
    assert.equal(expected.status, 200, JSON.stringify(expected.body));
    assert.equal(expected.body.created, SEEDED_ITEMS);

    await sendDocument(page, body, 'Check (dry run)');
    await eventually(() => jobState(page), 'Done: nothing was written, the counts say what an import would do.', 'the dry run’s end');
    assert.deepEqual(await shownCounts(page), countsOf(expected.body));
    assert.equal(await page.getByRole('heading', { name: 'Dry run', level: 2 }).count(), 1);
    const services = await service.request('GET', '/services', { token: beta.token });
    assert.deepEqual(services.body.items, [], 'a dry run writes nothing');
    const endpoints = await service.request('GET', '/endpoints', { token: beta.token });
    assert.deepEqual(endpoints.body.items, []);
    problems.expectNone();
  });

  it('imports the document into the other account: the created counts, then the items through the API', async () => {
    const { page, problems } = betaUi;
    await sendDocument(page, JSON.stringify(exported), 'Import');
    await eventually(() => jobState(page), 'Done', 'the import’s end');
    assert.deepEqual(await shownCounts(page), { Processed: SEEDED_ITEMS, Created: SEEDED_ITEMS, Updated: 0, Unchanged: 0, Refused: 0 });
    assert.equal(await page.getByRole('table', { name: 'Refused items' }).count(), 0);
    const services = await service.request('GET', '/services', { token: beta.token });
    assert.deepEqual(services.body.items.map((item: { name: string }) => item.name), ['meters']);
    const endpoints = await service.request('GET', '/endpoints', { token: beta.token });
    assert.deepEqual(endpoints.body.items.map((item: { key: string }) => item.key).sort(), ['meter-1', 'meter-2']);

    // The job is Beta's: Acme's token does not find it.
    const jobId = (await page.locator('.imex-job .mono').textContent()) ?? '';
    assert.equal((await service.request('GET', `/imex/jobs/${jobId}`, { token: beta.token })).status, 200);
    const foreign = await service.request('GET', `/imex/jobs/${jobId}`, { token: acme.token });
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.error.code, 'IOTB_IMPORT_JOB_NOT_FOUND');
    problems.expectNone();
  });

  it('a document with a bad endpoint shows the refusal row; the rest is imported', async () => {
    const { page, problems } = betaUi;
    const body = JSON.stringify({
      format: 'iotbridge-export',
      version: 1,
      endpoints: [
        { key: 'meter-3', service: 'meters', tags: ['site:east'] },
        { key: 'ghost-1', service: 'no such service' },
      ],
    });
    const expected = await service.request('POST', '/imex/import?dryRun=true', { token: beta.token, body });
    assert.equal(expected.body.refusedCount, 1, JSON.stringify(expected.body));
    const refusal = expected.body.refused[0];

    await sendDocument(page, body, 'Import', 'with-a-ghost.json');
    await eventually(() => jobState(page), 'Done', 'the import’s end');
    assert.deepEqual(await shownCounts(page), { Processed: 2, Created: 1, Updated: 0, Unchanged: 0, Refused: 1 });
    const rows = page.getByRole('table', { name: 'Refused items' }).locator('tbody tr');
    assert.deepEqual(await rows.first().locator('td').allTextContents(), [refusal.section, refusal.item, refusal.reason]);
    assert.equal(refusal.item, 'ghost-1');
    await screenshot(page, 'imex', { fullPage: true, fromTop: true });
    const endpoints = await service.request('GET', '/endpoints', { token: beta.token });
    assert.deepEqual(endpoints.body.items.map((item: { key: string }) => item.key).sort(), ['meter-1', 'meter-2', 'meter-3']);
    problems.expectNone();
  });

  it('follows a job the API answers as running (202) with GET /imex/jobs/{id} until it ends', async () => {
    const { page, problems } = betaUi;
    // A document big enough to outlast the API's 2 s wait depends on the machine; instead the real answer is
    // passed on as the 202 of a job still running, and the page must follow the real job to its end.
    await page.route('**/imex/import?dryRun=true', async (route) => {
      const response = await route.fetch();
      const job = (await response.json()) as Record<string, unknown>;
      await route.fulfill({ response, status: 202, json: { ...job, state: 'running', processed: 0, created: 0, finishedAt: null } });
    });
    const polled = page.waitForResponse((response) => /\/imex\/jobs\/[^/?]+$/.test(new URL(response.url()).pathname) && response.request().method() === 'GET');
    polled.catch(() => undefined); // awaited below; a failure before that must not become an unhandled rejection
    try {
      await sendDocument(page, JSON.stringify(exported), 'Check (dry run)');
      await page.getByRole('progressbar', { name: 'Import progress' }).waitFor();
      assert.equal(await jobState(page), 'Running');
      assert.equal(await page.getByText('0 items read so far').count(), 1);
      assert.equal(await page.getByRole('button', { name: 'Import', exact: true }).isDisabled(), true, 'no second import while one runs');
      assert.equal((await polled).status(), 200);
      await eventually(() => jobState(page), 'Done: nothing was written, the counts say what an import would do.', 'the job followed to its end');
      // Imported before: every item of the document is now unchanged.
      assert.deepEqual(await shownCounts(page), { Processed: SEEDED_ITEMS, Created: 0, Updated: 0, Unchanged: SEEDED_ITEMS, Refused: 0 });
      assert.equal(await page.getByRole('progressbar', { name: 'Import progress' }).count(), 0);
    } finally {
      await page.unroute('**/imex/import?dryRun=true');
    }
    problems.expectNone();
  });

  it('a file that is not JSON shows the API’s message and starts no job', async () => {
    const { page, problems } = betaUi;
    const text = 'meter-1;42\nmeter-2;17\n';
    const expected = await service.request('POST', '/imex/import', { token: beta.token, body: text, headers: { 'content-type': 'application/json' } });
    assert.equal(expected.status, 400);
    assert.equal(expected.body.error.code, 'IOTB_IMPORT_DOCUMENT');
    await sendDocument(page, text, 'Import', 'readings.csv');
    await eventually(() => page.getByRole('alert').textContent(), expected.body.error.message, 'the API’s message');
    assert.equal(await page.getByTestId('imex-job-state').count(), 0, 'the previous job is no longer shown');
    problems.expectNone([failedRequest(400)]);
  });

  it('exports secrets sealed with a passphrase typed on the page; the import needs the same passphrase and restores them', async () => {
    const secret = 'webhook-secret-0123456789';
    const rule = await service.request('POST', '/alert-rules', {
      token: acme.token,
      body: { name: 'hook', severity: 'minor', condition: { type: 'threshold', event: 'x', field: 'data.x', op: '>', value: 1 }, notify: { webhook: { url: 'http://127.0.0.1:9/alerts', secret } } },
    });
    assert.equal(rule.status, 201, JSON.stringify(rule.body));
    const passphrase = 'correct horse battery';

    const { page, problems } = acmeUi;
    await section(page, 'Import / export').click();
    await page.getByRole('heading', { name: 'Import / export', level: 1 }).waitFor();
    await page.getByLabel('Include secrets, sealed with a passphrase').check();
    await page.getByLabel('Passphrase', { exact: true }).fill('too short');
    await page.getByRole('button', { name: 'Export configuration' }).click();
    await eventually(() => page.getByRole('alert').textContent(), 'The passphrase needs at least 12 characters.', 'the page’s message');
    await page.getByLabel('Passphrase', { exact: true }).fill(passphrase);
    const { document } = await exportDocument(page);
    assert.equal(document.secrets.kdf, 'scrypt');
    assert.ok(!JSON.stringify(document).includes(secret), 'the secret is sealed');
    const hook = document.alertRules.find((item: { name: string }) => item.name === 'hook');
    assert.ok(hook.notify.webhook.secret.$sealed, JSON.stringify(hook));
    problems.expectNone();

    const text = JSON.stringify(document);
    const wrong = await service.request('POST', '/imex/import', { token: beta.token, body: text, headers: { 'x-iotbridge-passphrase': 'not the passphrase at all' } });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error.code, 'IOTB_IMEX_PASSPHRASE');
    const betaPage = betaUi.page;
    await betaPage.getByLabel('Passphrase (optional)').fill('not the passphrase at all');
    await sendDocument(betaPage, text, 'Import', 'with-secrets.json');
    await eventually(() => betaPage.getByRole('alert').textContent(), wrong.body.error.message, 'the API’s message for a wrong passphrase');
    assert.equal((await service.request('GET', '/alert-rules', { token: beta.token })).body.items.length, 0, 'nothing imported');

    await betaPage.getByLabel('Passphrase (optional)').fill(passphrase);
    await sendDocument(betaPage, text, 'Import', 'with-secrets.json');
    await eventually(() => jobState(betaPage), 'Done', 'the import’s end');
    assert.equal((await shownCounts(betaPage)).Refused, 0);
    const imported = (await service.request('GET', '/alert-rules', { token: beta.token })).body.items;
    assert.deepEqual(imported.map((item: { name: string; notify: { webhook: unknown } }) => [item.name, item.notify.webhook]), [['hook', { url: 'http://127.0.0.1:9/alerts', hasSecret: true }]]);
    await betaPage.getByLabel('Passphrase (optional)').fill('');
    betaUi.problems.expectNone([failedRequest(400)]);
  });

  it('the Licence page of a Super-Admin shows the grace period, the API’s message for a bad licence, then a valid one', async () => {
    const { page, problems } = adminUi;
    await section(page, 'Licence').click();
    await page.getByRole('heading', { name: 'Licence', level: 1 }).waitFor();
    const state = await service.request('GET', '/licence');
    assert.equal(state.body.state, 'grace');
    await eventually(() => page.getByTestId('licence-state').textContent(), 'grace', 'the state');
    const banner = page.locator('.lic-banner');
    assert.match((await banner.textContent()) ?? '', /^Grace period: no valid licence is installed\. Triggers run until .+; install a licence before then\./);
    assert.equal(await banner.locator('time').getAttribute('datetime'), state.body.graceEndsAt);

    const bad = 'eyJpZCI6ImZha2UifQ.bm90LWEtc2lnbmF0dXJl';
    const refused = await service.request('PUT', '/licence', { body: { licence: bad } });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.code, 'IOTB_LICENCE_INVALID');
    await page.getByLabel('Licence text').fill(bad);
    await page.getByRole('button', { name: 'Install licence' }).click();
    await eventually(() => page.locator('form .error-message').textContent(), refused.body.error.message, 'the API’s message');
    await screenshot(page, 'licence', { fromTop: true });
    assert.equal((await service.request('GET', '/licence')).body.state, 'grace', 'nothing stored');

    // A licence signed with the test key the service trusts, read from a file.
    const now = Date.now();
    const licence = signLicence(
      { id: 'lic-ui-1', licensee: 'Acme Utilities', issuedAt: new Date(now).toISOString(), expiresAt: new Date(now + 365 * DAY).toISOString(), limits: { maxEndpoints: 1000, features: ['imex'] } },
      readFileSync(path.join(LICENCE_FIXTURES, 'private.pem'), 'utf8'),
    );
    await page.getByLabel('Or a licence file').setInputFiles({ name: 'licence.txt', mimeType: 'text/plain', buffer: Buffer.from(`${licence}\n`) });
    await eventually(() => page.getByLabel('Licence text').inputValue(), `${licence}\n`, 'the file read into the box');
    await page.getByRole('button', { name: 'Install licence' }).click();
    await page.getByRole('status').filter({ hasText: 'The licence was installed.' }).waitFor();
    await eventually(() => page.getByTestId('licence-state').textContent(), 'valid', 'the new state');
    assert.equal(await page.locator('.lic-banner').count(), 0, 'no banner once valid');
    const fields = await page.getByRole('definition').allTextContents();
    for (const value of ['Acme Utilities', 'lic-ui-1', '1,000', 'imex']) assert.ok(fields.includes(value), `${value} in ${JSON.stringify(fields)}`);
    assert.equal((await service.request('GET', '/licence')).body.licensee, 'Acme Utilities');
    problems.expectNone([failedRequest(400)]);
  });

  it('the sign-in mapping: the page’s message for text that is not JSON, the API’s for a bad mapping, then a saved one', async () => {
    const { page, problems } = adminUi;
    await section(page, 'Super-Admin').click();
    await page.getByRole('link', { name: 'External sign-in mapping' }).click();
    await page.getByRole('heading', { name: 'External sign-in', level: 1 }).waitFor();
    await eventually(() => page.getByTestId('mapping-source').textContent(), 'none yet: nobody can sign in externally', 'no mapping yet');
    const editor = page.getByLabel('Mapping (JSON)');
    assert.deepEqual(JSON.parse(await editor.inputValue()), { mode: 'domain', domains: {} });
    const save = page.getByRole('button', { name: 'Save mapping' });
    const message = () => page.locator('form .error-message').textContent();

    await editor.fill('{"mode": "domain",');
    await save.click();
    await eventually(async () => ((await message()) ?? '').startsWith('The mapping is not JSON: '), true, 'the page’s message');

    // A Super-Admin entry outside the root account: the API refuses it and says why.
    const superOutsideRoot = { mode: 'domain', domains: { 'acme.example': { accountId: acme.accountId, superAdmin: true } } };
    const refused = await service.request('PUT', '/auth/oidc/mapping', { body: superOutsideRoot });
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    await editor.fill(JSON.stringify(superOutsideRoot));
    await save.click();
    await eventually(message, refused.body.error.message, 'the API’s message');

    const mapping = { mode: 'domain', domains: { 'acme.example': { accountId: acme.accountId }, 'ops.example': { accountId: service.rootAccountId, superAdmin: true } } };
    await editor.fill(JSON.stringify(mapping));
    await save.click();
    await page.getByRole('status').filter({ hasText: 'The mapping was saved.' }).waitFor();
    await eventually(() => page.getByTestId('mapping-source').textContent(), 'set here (PUT /auth/oidc/mapping)', 'the saved mapping');
    const rows = page.getByRole('table', { name: 'Mapped accounts' }).locator('tbody tr');
    assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent))), [
      ['acme.example', acme.accountId, 'user'],
      ['ops.example', service.rootAccountId, 'Super-Admin'],
    ]);
    const stored = await service.request('GET', '/auth/oidc/mapping');
    assert.deepEqual(stored.body.mapping, mapping);
    await screenshot(page, 'super-oidc', { fullPage: true, fromTop: true });
    problems.expectNone([failedRequest(400)]);
  });

  it('an ordinary account gets the API’s 403 on the mapping page', async () => {
    const { page, problems } = acmeUi;
    await page.goto(`${service.baseUrl}/#/super/oidc`);
    const forbidden = await service.request('GET', '/auth/oidc/mapping', { token: acme.token });
    assert.equal(forbidden.status, 403);
    await eventually(() => page.getByRole('alert').textContent(), forbidden.body.error.message, 'the API’s 403 message');
    assert.equal(await page.getByLabel('Mapping (JSON)').count(), 0);
    problems.expectNone([failedRequest(403)]);
  });

  it('fits a phone’s width: Import / export with its job, and Licence', async () => {
    const phone = await signedIn(beta.token, PHONE_VIEWPORT);
    await phone.page.goto(`${service.baseUrl}/#/imex`);
    await sendDocument(phone.page, JSON.stringify(exported), 'Check (dry run)');
    await eventually(() => jobState(phone.page), 'Done: nothing was written, the counts say what an import would do.', 'the dry run on a phone');
    assert.equal(await sidewaysOverflow(phone.page), 0, 'Import / export at 390 px');
    await phone.context.close();

    const admin = await signedIn(ADMIN_TOKEN, PHONE_VIEWPORT);
    await admin.page.goto(`${service.baseUrl}/#/licence`);
    await eventually(() => admin.page.getByTestId('licence-state').textContent(), 'valid', 'the licence on a phone');
    assert.equal(await sidewaysOverflow(admin.page), 0, 'Licence at 390 px');
    await admin.page.goto(`${service.baseUrl}/#/super/oidc`);
    await admin.page.getByRole('table', { name: 'Mapped accounts' }).waitFor();
    assert.equal(await sidewaysOverflow(admin.page), 0, 'External sign-in at 390 px');
    phone.problems.expectNone();
    admin.problems.expectNone();
    await admin.context.close();
  });

  it('without OIDC the mapping page says external sign-in is not configured; without licensing the licence is off', async () => {
    const plain = await startUiService();
    try {
      const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
      const { page, problems } = await openPage(context);
      await page.goto(`${plain.baseUrl}/`);
      await submitToken(page, ADMIN_TOKEN);
      await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
      await page.goto(`${plain.baseUrl}/#/super/oidc`);
      await eventually(() => page.getByTestId('oidc-off').textContent(), 'External sign-in is not configured (IOTBRIDGE_OIDC_ISSUER).', 'not configured');
      assert.equal((await plain.request('GET', '/auth/oidc/mapping')).body.error.code, 'IOTB_AUTH_OIDC_OFF');
      await section(page, 'Licence').click();
      await eventually(() => page.getByTestId('licence-state').textContent(), 'off', 'licensing off');
      assert.equal(await page.locator('.lic-banner').count(), 0);
      problems.expectNone([failedRequest(404)]);
      await context.close();
    } finally {
      await plain.stop();
    }
  });
});
