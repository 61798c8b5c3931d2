// What `/` answers without a built UI (running from source, or before `npm run build`), and that the UI's
// routes stay out of the API's way. The built UI itself is tested in a browser: test/ui/web-ui.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { UI_CONTENT_SECURITY_POLICY } from '../../src/api/routes/ui.js';
import { startService, type TestService } from '../helpers/service.js';

describe('web UI not built', () => {
  let service: TestService;
  let emptyDir: string;

  before(async () => {
    emptyDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-no-ui-'));
    service = await startService('sqlite', { uiDir: emptyDir });
  });

  after(async () => {
    await service?.stop();
    await rm(emptyDir, { recursive: true, force: true });
  });

  it('answers / with a page that says to run npm run build, without a token', async () => {
    const response = await fetch(`${service.baseUrl}/`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(response.headers.get('content-security-policy'), UI_CONTENT_SECURITY_POLICY);
    assert.equal(response.headers.get('cache-control'), 'no-cache');
    assert.match(await response.text(), /npm run build/);
  });

  it('leaves every other path to the API: tokens still needed, the OpenAPI document has no UI route', async () => {
    assert.equal((await fetch(`${service.baseUrl}/index.html`)).status, 401);
    assert.equal((await fetch(`${service.baseUrl}/endpoints`)).status, 401);
    const document = (await service.request('GET', '/openapi.json', { token: null })).body;
    assert.equal(document.paths['/'], undefined);
  });
});
