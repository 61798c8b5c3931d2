// What `/` answers without a built UI (running from source, or before `npm run build`), and that the UI's
// routes stay out of the API's way; a build's compressed copies sent by Accept-Encoding. The built UI itself is
// tested in a browser: test/ui/web-ui.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
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

/** A GET whose Accept-Encoding is exactly `acceptEncoding` (fetch would add its own and decompress), with the raw body. */
function rawGet(url: string, acceptEncoding?: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
    });
    request.on('error', reject);
  });
}

describe('web UI built: compressed copies by Accept-Encoding', () => {
  let service: TestService;
  let uiDir: string;
  const script = Buffer.from(`console.log(${JSON.stringify('x'.repeat(4000))});\n`);
  const html = Buffer.from(`<!doctype html><html><head><script type="module" src="/assets/app-0123.js"></script></head><body>${'<p>ui</p>'.repeat(200)}</body></html>`);

  before(async () => {
    uiDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-ui-compressed-'));
    await mkdir(path.join(uiDir, 'assets'));
    for (const [name, contents] of [['index.html', html], ['assets/app-0123.js', script]] as const) {
      await writeFile(path.join(uiDir, name), contents);
      await writeFile(path.join(uiDir, `${name}.br`), brotliCompressSync(contents));
      await writeFile(path.join(uiDir, `${name}.gz`), gzipSync(contents));
    }
    service = await startService('sqlite', { uiDir });
  });

  after(async () => {
    await service?.stop();
    await rm(uiDir, { recursive: true, force: true });
  });

  it('sends the brotli or gzip copy to a client that accepts it, the file itself to one that does not, and says it varies', async () => {
    const url = `${service.baseUrl}/assets/app-0123.js`;
    const brotli = await rawGet(url, 'gzip, deflate, br');
    assert.equal(brotli.status, 200);
    assert.equal(brotli.headers['content-encoding'], 'br');
    assert.deepEqual(brotliDecompressSync(brotli.body), script);
    const gzip = await rawGet(url, 'gzip');
    assert.equal(gzip.headers['content-encoding'], 'gzip');
    assert.deepEqual(gunzipSync(gzip.body), script);
    for (const acceptEncoding of [undefined, 'identity', 'zstd', 'nonsense;q=x, ,,']) {
      const plain = await rawGet(url, acceptEncoding);
      assert.equal(plain.status, 200, String(acceptEncoding));
      assert.equal(plain.headers['content-encoding'], undefined, String(acceptEncoding));
      assert.deepEqual(plain.body, script, String(acceptEncoding));
    }
    for (const answer of [brotli, gzip]) {
      assert.match(answer.headers['content-type'] ?? '', /javascript/);
      assert.equal(answer.headers['cache-control'], 'public, max-age=31536000, immutable');
      assert.match(String(answer.headers.vary), /accept-encoding/i);
    }
  });

  it('a compressed index.html keeps the page headers; the copies are no paths of their own', async () => {
    const index = await rawGet(`${service.baseUrl}/`, 'br');
    assert.equal(index.status, 200);
    assert.equal(index.headers['content-encoding'], 'br');
    assert.match(index.headers['content-type'] ?? '', /^text\/html/);
    assert.equal(index.headers['content-security-policy'], UI_CONTENT_SECURITY_POLICY);
    assert.equal(index.headers['cache-control'], 'no-cache');
    assert.deepEqual(brotliDecompressSync(index.body), html);
    for (const copy of ['/assets/app-0123.js.br', '/assets/app-0123.js.gz', '/index.html.br']) {
      assert.equal((await rawGet(service.baseUrl + copy, 'br')).status, 401, `${copy}: left to the API, which wants a token`);
    }
  });
});
