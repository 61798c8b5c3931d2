// The Files and FOTA pages of the web UI in a real browser (Debian's Chromium through playwright-core) against
// the real service serving its own copy of the built UI, with a simulated LwM2M device (its Firmware Update
// object) on loopback. One browser for the file; each test goes on from where the previous one left the page.
// Every test ends with no console error and no uncaught exception beyond the failed requests it provoked on
// purpose.
// IOTBRIDGE_UI_SCREENSHOTS=docs/ui also writes files.png, file.png, fota.png and fota-job.png.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { firmwarePackage } from '../../tools/lwm2m-firmware.js';
import { browserMissing, eventually, failedRequest, launchBrowser, openPage, PHONE_VIEWPORT, screenshot, sidewaysOverflow, signIn, startUiService, type PageProblems } from '../helpers/browser.js';
import { createAccount, createEndpoint, createService } from '../helpers/fixtures.js';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { ADMIN_TOKEN, type TestService } from '../helpers/service.js';

const skip = browserMissing();
const EMAIL = 'firmware@example.com';
const PASSWORD = 'correct horse battery';
/** The service's per-file limit here, so a too-large upload is quick to make. */
const FILE_MAX_BYTES = 64 * 1024;
const IMAGE_NAME = 'firmware/app-2.0.0.bin';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('Files and FOTA pages in Chromium', { skip, timeout: 120_000 }, () => {
  let service: TestService;
  let browser: Browser;
  let page: Page;
  let problems: PageProblems;
  let tenantId: string;
  let serviceId: string;
  let work: string;
  const devices = new SimulatedDevices(() => service.ports.coap!);
  const image = firmwarePackage(20_000, { version: '2.0.0' });

  const fileRow = (name: string) => page.locator('table[aria-label="Files"] tbody tr').filter({ has: page.getByRole('link', { name, exact: true }) });
  /** A link of the navigation (pages have breadcrumbs and links of the same name). */
  const section = (name: string) => page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name, exact: true });
  const alertText = () => page.getByRole('alert').first().textContent();
  const jobCounts = () => page.getByTestId('job-counts').textContent();
  /** Writes a file for the page's file input. */
  const localFile = (name: string, bytes: Buffer) => {
    const file = path.join(work, name);
    writeFileSync(file, bytes);
    return file;
  };

  before(async () => {
    [service, browser] = await Promise.all([startUiService({ fileMaxBytes: FILE_MAX_BYTES, publicHost: '127.0.0.1', lwm2mAwakeMs: 300 }), launchBrowser()]);
    work = mkdtempSync(path.join(tmpdir(), 'iotbridge-ui-files-'));

    const user = await service.request('POST', '/users', { body: { email: EMAIL, password: PASSWORD, name: 'Firmware' } });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    serviceId = await createService(service, ADMIN_TOKEN, { name: 'trackers', type: 'lwm2m' });
    tenantId = (await createAccount(service, 'Tenant F')).accountId;

    const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, acceptDownloads: true });
    ({ page, problems } = await openPage(context));
    await signIn(page, service.baseUrl, EMAIL, PASSWORD);
  });

  after(async () => {
    await devices.stopAll();
    await browser?.close();
    await service?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('uploads a file with its name, version and tags, and lists it with its SHA-256', async () => {
    await section('Files').click();
    await page.getByRole('heading', { name: 'Files', level: 1 }).waitFor();
    await page.getByText('No files yet').waitFor();

    await page.getByLabel('Files to upload').setInputFiles(localFile('app.bin', image));
    await page.getByLabel('Name (optional)').fill(IMAGE_NAME);
    await page.getByLabel('Version (optional)').fill('2.0.0');
    await page.getByLabel('Tags (optional)').fill('fw, stable');
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await page.getByRole('status').filter({ hasText: `Uploaded “${IMAGE_NAME}”.` }).waitFor();

    const row = fileRow(IMAGE_NAME);
    assert.equal(await row.locator('td.sha256').textContent(), sha256(image), 'the SHA-256 the list shows is the bytes’ hash');
    assert.deepEqual(await row.locator('.tag').allTextContents(), ['fw', 'stable']);
    assert.equal(await row.locator('td').nth(2).textContent(), '2.0.0');
    const stored = await service.request('GET', `/file/${encodeURIComponent(IMAGE_NAME)}`);
    assert.deepEqual([stored.body.size, stored.body.sha256, stored.body.version, stored.body.tags], [image.length, sha256(image), '2.0.0', ['fw', 'stable']]);

    // Several files at once keep their own names and share the version and tags.
    await page.getByLabel('Files to upload').setInputFiles([localFile('notes.txt', Buffer.from('release notes\n')), localFile('readme.txt', Buffer.from('read me\n'))]);
    assert.equal(await page.getByLabel('Name (optional)').isDisabled(), true, 'no single name for several files');
    await page.getByLabel('Tags (optional)').fill('docs');
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Uploaded “notes.txt”, “readme.txt”.' }).waitFor();
    await eventually(() => page.locator('.pager-range').first().textContent(), '1–3 of 3 files', 'the list with the new files');
    assert.equal(await fileRow('notes.txt').locator('td.sha256').textContent(), sha256(Buffer.from('release notes\n')));
    await screenshot(page, 'files', { fromTop: true });
    problems.expectNone();
  });

  it('shows the file, downloads its exact bytes and edits a tag', async () => {
    await page.getByRole('link', { name: IMAGE_NAME, exact: true }).click();
    await page.getByRole('heading', { name: IMAGE_NAME }).waitFor();
    assert.equal(await page.getByTestId('file-sha256').textContent(), sha256(image));

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download', exact: true }).click()]);
    assert.equal(download.suggestedFilename(), 'app-2.0.0.bin');
    assert.deepEqual(readFileSync(await download.path()), image, 'the downloaded bytes are the uploaded ones');

    await page.getByLabel('Tags', { exact: true }).last().fill('fw, beta');
    await page.getByRole('button', { name: 'Save metadata' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved the metadata.' }).waitFor();
    assert.deepEqual(await page.locator('.fields .tag').allTextContents(), ['fw', 'beta']);
    const stored = await service.request('GET', `/file/${encodeURIComponent(IMAGE_NAME)}`);
    assert.deepEqual(stored.body.tags, ['fw', 'beta']);

    // A tag chip lists the files that have it.
    await page.locator('.fields').getByRole('link', { name: 'beta' }).click();
    await eventually(() => page.locator('table[aria-label="Files"] tbody tr td:first-child').allTextContents(), [IMAGE_NAME], 'files tagged beta');
    problems.expectNone();
  });

  it('a file over the limit shows the API’s 413 message and stores nothing', async () => {
    const tooLarge = Buffer.alloc(FILE_MAX_BYTES + 1, 7);
    const form = new FormData();
    form.append('file', new Blob([tooLarge]), 'expected.bin');
    const expected = await fetch(`${service.baseUrl}/file/upload`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body: form });
    assert.equal(expected.status, 413);
    const { error } = (await expected.json()) as { error: { code: string; message: string } };
    assert.equal(error.code, 'IOTB_FILE_TOO_LARGE');

    await page.getByLabel('Files to upload').setInputFiles(localFile('huge.bin', tooLarge));
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await eventually(alertText, error.message, 'the API message of a refused upload');
    assert.equal((await service.request('GET', '/file/huge.bin')).status, 404, 'nothing stored');
    problems.expectNone([failedRequest(413)]);
  });

  it('makes a download link that works without a token, and revokes it', async () => {
    await page.goto(`${service.baseUrl}/#/files/${encodeURIComponent(IMAGE_NAME)}`);
    await page.getByRole('heading', { name: IMAGE_NAME }).waitFor();
    await page.getByLabel('Append the file name').check();
    await page.getByRole('button', { name: 'Create link' }).click();
    const url = (await page.getByTestId('link-http').textContent()) ?? '';
    assert.match(url, /\/download\/[A-Za-z0-9_-]{32}\/firmware\/app-2\.0\.0\.bin$/);
    const fetched = await fetch(url);
    assert.equal(fetched.status, 200);
    assert.deepEqual(Buffer.from(await fetched.arrayBuffer()), image, 'the link serves the file without a token');
    await screenshot(page, 'file', { fullPage: true, fromTop: true });

    await page.getByRole('group', { name: 'New download link' }).getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('status').filter({ hasText: 'Revoked the link' }).waitFor();
    assert.equal((await fetch(url)).status, 404, 'a revoked link no longer works');
    problems.expectNone();
  });

  it('runs a FOTA campaign on a simulated device and shows it reach success without a reload', async () => {
    await createEndpoint(service, ADMIN_TOKEN, { key: 'tracker-1', serviceId, tags: ['fleet:a'] });
    const client = await devices.start('tracker-1', { transmission: { ackTimeout: 500, maxRetransmit: 2 }, firmware: { version: '1.0.0', updateMs: 50, delivery: 1 } });
    assert.equal(await client.register(), '2.01');

    await section('FOTA').click();
    await page.getByText('No campaigns yet.').waitFor();
    await page.getByLabel('Firmware file').selectOption(IMAGE_NAME);
    await page.getByLabel('Tags', { exact: true }).fill('fleet:a');
    await page.getByLabel('Mode').selectOption('push');
    await page.getByLabel('Step timeout (s)').fill('20');
    await page.getByRole('button', { name: 'Start campaign' }).click();
    await page.getByRole('heading', { name: `Campaign ${IMAGE_NAME}` }).waitFor();
    await page.evaluate('window.__samePage = true');

    await eventually(jobCounts, '1 of 1 done: 1 success, 0 failed, 0 aborted; 0 running, 0 pending', 'the campaign reaches success', 30_000);
    assert.equal(await page.evaluate('window.__samePage'), true, 'the page refreshed itself, no reload');
    const row = page.locator('table[aria-label="Devices"] tbody tr');
    await eventually(async () => (await row.locator('td').allTextContents()).slice(0, 7), ['tracker-1', 'done', 'success', 'push', '1 success', '1.0.0 → 2.0.0', ''], 'the device row');
    await eventually(() => page.locator('.job-head .job-state').textContent(), 'finished', 'the campaign is finished');
    assert.equal(client.firmware!.packages[0]?.sha256, sha256(image), 'the device got the image');
    const jobs = await service.request('GET', '/fota/jobs');
    assert.equal(jobs.body.items[0].counts.success, 1);
    assert.equal(jobs.body.items[0].selector.tags[0], 'fleet:a');
    await screenshot(page, 'fota-job', { fromTop: true });
    problems.expectNone();
  });

  it('cancels a second campaign after a confirmation', async () => {
    // A device that takes long to install: the campaign is still running when it is cancelled.
    await createEndpoint(service, ADMIN_TOKEN, { key: 'tracker-slow', serviceId });
    const slow = await devices.start('tracker-slow', { transmission: { ackTimeout: 500, maxRetransmit: 2 }, firmware: { version: '1.0.0', updateMs: 8000, delivery: 1 } });
    assert.equal(await slow.register(), '2.01');
    await section('FOTA').click();
    await page.getByLabel('Firmware file').selectOption(IMAGE_NAME);
    await page.getByLabel('A list of endpoints').check();
    await page.getByLabel('Endpoints', { exact: true }).fill('k.tracker-slow');
    await page.getByLabel('Mode').selectOption('push');
    await page.getByLabel('Step timeout (s)').fill('20');
    await page.getByRole('button', { name: 'Start campaign' }).click();
    await page.getByRole('heading', { name: `Campaign ${IMAGE_NAME}` }).waitFor();
    assert.equal(await page.locator('.job-head .job-state').textContent(), 'running');
    await eventually(async () => slow.firmware!.state, 3, 'the device installing', 10_000);

    await page.getByRole('button', { name: 'Cancel…' }).click();
    await page.getByRole('button', { name: 'Keep it running' }).click();
    assert.equal(await page.locator('.job-head .job-state').textContent(), 'running', 'not cancelled without the confirmation');
    await page.getByRole('button', { name: 'Cancel…' }).click();
    await page.getByRole('button', { name: 'Cancel campaign' }).click();
    await eventually(() => page.locator('.job-head .job-state').textContent(), 'cancelled', 'the campaign is cancelled');
    await eventually(jobCounts, '1 of 1 done: 0 success, 0 failed, 1 aborted; 0 running, 0 pending', 'its device ends aborted');
    await eventually(() => page.locator('table[aria-label="Devices"] tbody tr td').nth(2).textContent(), 'aborted', 'the device row');
    assert.match((await page.locator('table[aria-label="Devices"] tbody tr td').nth(6).textContent()) ?? '', /cancelled/);

    await section('FOTA').click();
    await eventually(() => page.locator('table[aria-label="Campaigns"] tbody tr .job-state').allTextContents(), ['cancelled', 'finished'], 'both campaigns, newest first');
    await screenshot(page, 'fota', { fromTop: true });
    problems.expectNone();
  });

  it('a sub-account sees none of the root account’s files or campaigns', async () => {
    await page.getByLabel('Account', { exact: true }).selectOption(tenantId);
    await section('Files').click();
    await page.getByText('No files yet').waitFor();
    // The page before (FOTA) may still be leaving: the count is read once the new one shows it.
    await eventually(() => page.locator('.pager-range').first().textContent(), 'No files', 'the empty files list');
    await section('FOTA').click();
    await page.getByText('No campaigns yet.').waitFor();
    await eventually(() => page.locator('.pager-range').first().textContent(), 'No campaigns', 'the empty campaigns list');
    // A file page of the root account answers as missing.
    await page.goto(`${service.baseUrl}/#/files/${encodeURIComponent(IMAGE_NAME)}`);
    const missing = await service.request('GET', `/file/${encodeURIComponent(IMAGE_NAME)}`, { account: tenantId });
    assert.equal(missing.status, 404);
    await eventually(alertText, missing.body.error.message, 'the API’s 404 message');

    await page.getByLabel('Account', { exact: true }).selectOption({ label: 'root' });
    await section('Files').click();
    await eventually(() => page.locator('.pager-range').first().textContent(), '1–3 of 3 files', 'back in the root account');
    problems.expectNone([failedRequest(404)]);
  });

  it('replaces a file’s content, then deletes it after a confirmation', async () => {
    await page.getByRole('link', { name: 'readme.txt', exact: true }).click();
    await page.getByRole('heading', { name: 'readme.txt', exact: true }).waitFor();
    const replacement = Buffer.from('read me, version two\n');
    await page.getByLabel('New content').setInputFiles(localFile('readme-2.txt', replacement));
    await page.getByLabel('Version', { exact: true }).first().fill('2');
    await page.getByRole('button', { name: 'Replace', exact: true }).click();
    await page.getByRole('status').filter({ hasText: `Replaced the content: ${replacement.length} B, SHA-256 ${sha256(replacement)}.` }).waitFor();
    assert.equal(await page.getByTestId('file-sha256').textContent(), sha256(replacement));
    const replaced = await service.request('GET', '/file/readme.txt');
    assert.deepEqual([replaced.body.sha256, replaced.body.version, replaced.body.tags, replaced.body.contentType], [sha256(replacement), '2', ['docs'], 'text/plain']);

    await page.getByRole('button', { name: 'Delete…' }).click();
    await page.getByRole('button', { name: 'Keep it' }).click();
    assert.equal((await service.request('GET', '/file/readme.txt')).status, 200, 'kept without the confirmation');
    await page.getByRole('button', { name: 'Delete…' }).click();
    await page.getByRole('group', { name: 'Confirm deletion' }).getByRole('button', { name: 'Delete file' }).click();
    await page.getByRole('heading', { name: 'Files', level: 1 }).waitFor();
    await eventually(() => page.locator('.pager-range').first().textContent(), '1–2 of 2 files', 'the list without it');
    assert.equal((await service.request('GET', '/file/readme.txt')).status, 404);
    problems.expectNone();
  });

  it('fits a phone-width screen', async () => {
    await page.setViewportSize(PHONE_VIEWPORT);
    for (const route of ['#/files', `#/files/${encodeURIComponent(IMAGE_NAME)}`, '#/fota']) {
      await page.goto(`${service.baseUrl}/${route}`);
      await page.locator('h1').first().waitFor();
      await page.waitForLoadState('networkidle');
      const overflow = await sidewaysOverflow(page);
      const wide = await page.evaluate<string[]>(
        '[...document.querySelectorAll("main *")].filter((e) => !e.closest(".table-scroll") && e.getBoundingClientRect().right > document.documentElement.clientWidth + 1).slice(0, 8).map((e) => e.tagName + "." + e.className)',
      );
      assert.equal(overflow, 0, `nothing sticks out sideways at 390 px on ${route}: ${wide.join(', ')}`);
    }
    await page.locator('table[aria-label="Campaigns"] a').first().click();
    // The list shows each campaign's counts too: wait for the campaign's own page before looking for them.
    await page.waitForFunction('/^#\\/fota\\/[^/]+$/.test(location.hash)');
    await page.getByTestId('job-counts').first().waitFor();
    assert.equal(await sidewaysOverflow(page), 0, 'the campaign page fits');
    await page.setViewportSize({ width: 1280, height: 860 });
    problems.expectNone();
  });
});
