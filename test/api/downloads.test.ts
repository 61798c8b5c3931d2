import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { sleep } from '../helpers/coap.js';
import { assertError, createAccount, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** POST with a Host header of our choosing (fetch does not let a caller set Host). */
function postWithHost(service: TestService, urlPath: string, token: string, host: string, headers: Record<string, string> = {}): Promise<{ token: string; urls: Record<string, string> }> {
  return new Promise((resolve, reject) => {
    const request = http.request(`${service.baseUrl}${urlPath}`, { method: 'POST', headers: { host, authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers } }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => (response.statusCode === 201 ? resolve(JSON.parse(text) as { token: string; urls: Record<string, string> }) : reject(new Error(`${response.statusCode}: ${text}`))));
    });
    request.on('error', reject);
    request.end('{}');
  });
}

for (const dialect of DIALECTS) {
  describe(`download links over HTTP (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let a: TestAccount;
    let b: TestAccount;
    const image = randomBytes(100 * 1024);

    const put = (account: TestAccount, name: string, content: Buffer, contentType?: string) =>
      service.bridge.domain.files.replace(account.accountId, { name, contentType }, Readable.from([content]), { maxBytes: 1 << 26 });
    const link = async (account: TestAccount, name: string, body: Record<string, unknown> = {}) => {
      const created = await service.request('POST', `/file/${encodeURIComponent(name)}/links`, { token: account.token, body });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body as { token: string; name: string; expiresAt: string; sha256: string; size: number; urls: { http: string; coap: string; coaps?: string } };
    };
    /** A device's fetch: no Authorization header. */
    const fetchBytes = async (url: string, headers: Record<string, string> = {}) => {
      const response = await fetch(url, { headers });
      return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
    };
    const errorCode = (body: Buffer) => (JSON.parse(body.toString('utf8')) as { error: { code: string } }).error.code;

    before(async () => {
      service = await startService(dialect.name);
      a = await createAccount(service, 'downloads-a');
      b = await createAccount(service, 'downloads-b');
      await put(a, 'firmware/app 1.2.bin', image);
    });
    after(() => service?.stop());

    it('makes a link whose URLs a device fetches without a token, whole and resumed with Range', async () => {
      const created = await link(a, 'firmware/app 1.2.bin', { ttlSeconds: 600 });
      assert.match(created.token, /^[A-Za-z0-9_-]{32}$/);
      assert.equal(created.sha256, sha256(image));
      assert.equal(created.size, image.length);
      assert.ok(Math.abs(Date.parse(created.expiresAt) - Date.now() - 600_000) < 10_000);
      assert.equal(created.urls.http, `http://127.0.0.1:${service.ports.http}/download/${created.token}`);
      assert.equal(created.urls.coap, `coap://127.0.0.1:${service.ports.coap}/download/${created.token}`);
      assert.equal(created.urls.coaps, `coaps://127.0.0.1:${service.ports.coaps}/download/${created.token}`);

      const whole = await fetchBytes(created.urls.http);
      assert.equal(whole.status, 200);
      assert.ok(whole.body.equals(image));
      assert.equal(whole.headers.get('content-length'), String(image.length));
      assert.equal(whole.headers.get('etag'), `"${sha256(image)}"`);
      assert.equal(whole.headers.get('accept-ranges'), 'bytes');
      assert.equal(whole.headers.get('content-type'), 'application/octet-stream');
      assert.equal(whole.headers.get('x-content-type-options'), 'nosniff');
      assert.match(whole.headers.get('content-disposition') ?? '', /^attachment; filename="app 1\.2\.bin"/);

      // A device that lost the connection after 40 000 bytes resumes from there.
      const rest = await fetchBytes(created.urls.http, { range: 'bytes=40000-', 'if-range': `"${sha256(image)}"` });
      assert.equal(rest.status, 206);
      assert.equal(rest.headers.get('content-range'), `bytes 40000-${image.length - 1}/${image.length}`);
      assert.equal(rest.headers.get('content-length'), String(image.length - 40000));
      assert.ok(Buffer.concat([image.subarray(0, 40000), rest.body]).equals(image));
      const middle = await fetchBytes(created.urls.http, { range: 'bytes=100-199' });
      assert.equal(middle.status, 206);
      assert.ok(middle.body.equals(image.subarray(100, 200)));
      const suffix = await fetchBytes(created.urls.http, { range: 'bytes=-10' });
      assert.ok(suffix.body.equals(image.subarray(-10)));
      // If-Range with another content's tag: the whole (current) content, never a mix.
      const otherTag = await fetchBytes(created.urls.http, { range: 'bytes=40000-', 'if-range': '"0000"' });
      assert.equal(otherTag.status, 200);
      assert.equal(otherTag.body.length, image.length);
      const unchanged = await fetchBytes(created.urls.http, { 'if-none-match': `"${sha256(image)}"` });
      assert.equal(unchanged.status, 304);
      const head = await fetch(created.urls.http, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get('content-length'), String(image.length));
      assert.equal((await head.arrayBuffer()).byteLength, 0);
    });

    it('answers a range past the end 416 with Content-Range, and ignores malformed or multiple ranges', async () => {
      const { urls } = await link(a, 'firmware/app 1.2.bin');
      const past = await fetchBytes(urls.http, { range: `bytes=${image.length}-` });
      assert.equal(past.status, 416);
      assert.equal(past.headers.get('content-range'), `bytes */${image.length}`);
      assert.equal(errorCode(past.body), 'IOTB_FILE_RANGE_NOT_SATISFIABLE');
      assert.equal((await fetchBytes(urls.http, { range: 'bytes=-0' })).status, 416);
      for (const range of ['bytes=5-2', 'bytes=abc', 'items=0-10', 'bytes=0-1,5-6', 'bytes=99999999999999999999-', 'bytes=-']) {
        const ignored = await fetchBytes(urls.http, { range });
        assert.equal(ignored.status, 200, range);
        assert.equal(ignored.body.length, image.length, range);
      }
    });

    it('checks a trailing name against the file and shapes URLs with appendFileName and includePortInUrl', async () => {
      const created = await link(a, 'firmware/app 1.2.bin', { appendFileName: true, includePortInUrl: true });
      assert.equal(created.urls.http, `http://127.0.0.1:${service.ports.http}/download/${created.token}/firmware/app%201.2.bin`);
      assert.equal(created.urls.coap, `coap://127.0.0.1:${service.ports.coap}/download/${created.token}/firmware/app%201.2.bin`);
      assert.ok((await fetchBytes(created.urls.http)).body.equals(image));
      const base = `${service.baseUrl}/download/${created.token}`;
      assert.equal((await fetchBytes(`${base}/`)).status, 200, 'an empty trailing name is no name');
      for (const wrong of ['firmware/other.bin', 'app%201.2.bin', 'firmware/app%201.2.bin/x', '..%2F..%2Fetc%2Fpasswd', 'x'.repeat(1500)]) {
        const response = await fetchBytes(`${base}/${wrong}`);
        assert.equal(response.status, 404, wrong);
        assert.equal(errorCode(response.body), 'IOTB_FILE_LINK_INVALID');
      }
      // Without IOTBRIDGE_PUBLIC_HOST the request's Host names the URLs (its port is not the service's: ignored).
      const viaHost = await postWithHost(service, `/file/${encodeURIComponent('firmware/app 1.2.bin')}/links`, a.token, 'devices.example.com:8443');
      assert.equal(viaHost.urls.http, `http://devices.example.com:${service.ports.http}/download/${viaHost.token}`);
      assert.equal(viaHost.urls.coap, `coap://devices.example.com:${service.ports.coap}/download/${viaHost.token}`);
      const viaIpv6 = await postWithHost(service, `/file/${encodeURIComponent('firmware/app 1.2.bin')}/links`, a.token, '[::1]:80');
      assert.equal(viaIpv6.urls.coaps, `coaps://[::1]:${service.ports.coaps}/download/${viaIpv6.token}`);
    });

    it('links expire (ttl 1 s), are revoked, and answer 410 once their file is replaced or removed', async () => {
      const short = await link(a, 'firmware/app 1.2.bin', { ttlSeconds: 1 });
      assert.equal((await fetchBytes(short.urls.http)).status, 200);
      await sleep(1100);
      const expired = await fetchBytes(short.urls.http);
      assert.equal(expired.status, 404);
      assert.equal(errorCode(expired.body), 'IOTB_FILE_LINK_INVALID');

      await put(a, 'replaced.bin', Buffer.from('version 1'));
      const pinned = await link(a, 'replaced.bin');
      const revoked = await link(a, 'replaced.bin');
      assert.equal((await service.request('DELETE', `/file/replaced.bin/links/${revoked.token}`, { token: a.token })).status, 204);
      assertError(await service.request('DELETE', `/file/replaced.bin/links/${revoked.token}`, { token: a.token }), 404, 'IOTB_FILE_LINK_INVALID', 'revoked twice');
      assert.equal((await fetchBytes(revoked.urls.http)).status, 404);
      await put(a, 'replaced.bin', Buffer.from('version 2'));
      const stale = await fetchBytes(pinned.urls.http);
      assert.equal(stale.status, 410);
      assert.equal(errorCode(stale.body), 'IOTB_FILE_LINK_STALE');
      assert.equal((await fetchBytes(pinned.urls.http, { range: 'bytes=0-3' })).status, 410, 'a resumed download of the old image never gets the new one');
      // Back to the pinned content (same SHA-256): the link serves it again.
      await put(a, 'replaced.bin', Buffer.from('version 1'));
      assert.equal((await fetchBytes(pinned.urls.http)).body.toString(), 'version 1');
      await service.bridge.domain.files.remove(a.accountId, 'replaced.bin');
      assert.equal((await fetchBytes(pinned.urls.http)).status, 410);

      // revokeAllFor, as FOTA uses it.
      await put(a, 'withdrawn.bin', Buffer.from('w'));
      const one = await link(a, 'withdrawn.bin');
      const two = await link(a, 'withdrawn.bin');
      assert.equal(await service.bridge.domain.fileLinks.revokeAllFor(a.accountId, 'withdrawn.bin'), 2);
      for (const gone of [one, two]) assert.equal((await fetchBytes(gone.urls.http)).status, 404);
    });

    it('serves an empty file', async () => {
      await put(a, 'empty.bin', Buffer.alloc(0));
      const { urls } = await link(a, 'empty.bin');
      const whole = await fetchBytes(urls.http);
      assert.equal(whole.status, 200);
      assert.equal(whole.body.length, 0);
      assert.equal(whole.headers.get('content-length'), '0');
      assert.equal((await fetchBytes(urls.http, { range: 'bytes=0-' })).status, 416);
    });

    it('keeps accounts apart: links only read their own account\'s file, and only the account makes or revokes them', async () => {
      await put(b, 'firmware/app 1.2.bin', Buffer.from('B image'));
      const ofA = await link(a, 'firmware/app 1.2.bin');
      const ofB = await link(b, 'firmware/app 1.2.bin');
      assert.equal((await fetchBytes(ofB.urls.http)).body.toString(), 'B image');
      assert.ok((await fetchBytes(ofA.urls.http)).body.equals(image));
      // B's token with A's file name in the path (same name): still B's file, never A's.
      assert.equal((await fetchBytes(`${service.baseUrl}/download/${ofB.token}/firmware/app%201.2.bin`)).body.toString(), 'B image');
      // B cannot make links to A's files, nor revoke A's links (whatever name it gives).
      await put(a, 'only-a.bin', Buffer.from('A only'));
      assertError(await service.request('POST', '/file/only-a.bin/links', { token: b.token, body: {} }), 404, 'IOTB_FILE_NOT_FOUND', 'B links A\'s file');
      assertError(await service.request('DELETE', `/file/${encodeURIComponent('firmware/app 1.2.bin')}/links/${ofA.token}`, { token: b.token }), 404, 'IOTB_FILE_LINK_INVALID', 'B revokes A\'s link');
      assert.equal(await service.bridge.domain.fileLinks.revoke(b.accountId, ofA.token), false);
      assert.equal((await fetchBytes(ofA.urls.http)).status, 200, 'A\'s link still works');
      // A revoking with the wrong file name in the path is refused too.
      assertError(await service.request('DELETE', `/file/only-a.bin/links/${ofA.token}`, { token: a.token }), 404, 'IOTB_FILE_LINK_INVALID', 'wrong name');
    });

    it('refuses bad input: garbage tokens, unknown files, ttl out of range, no token on the API', async () => {
      const garbage: [string, number][] = [['x', 404], ['A'.repeat(32), 404], ['%00', 404], [`${'a'.repeat(31)}!`, 404], ['a'.repeat(2000), 404], ['%2F..%2F', 404], ['%ff%fe', 400], ['a'.repeat(3000), 414]];
      for (const [token, status] of garbage) {
        const response = await fetchBytes(`${service.baseUrl}/download/${token}`);
        assert.equal(response.status, status, token.slice(0, 40));
        if (status === 404) assert.equal(errorCode(response.body), 'IOTB_FILE_LINK_INVALID');
      }
      assertError(await service.request('POST', '/file/nope.bin/links', { token: a.token, body: {} }), 404, 'IOTB_FILE_NOT_FOUND', 'unknown file');
      for (const ttlSeconds of [0, -1, 30 * 24 * 3600 + 1, 1.5, 'soon']) {
        const response = await service.request('POST', `/file/${encodeURIComponent('firmware/app 1.2.bin')}/links`, { token: a.token, body: { ttlSeconds } });
        assertError(response, 400, 'IOTB_REQUEST_VALIDATION', `ttl ${String(ttlSeconds)}`);
      }
      assertError(await service.request('POST', `/file/${encodeURIComponent('firmware/app 1.2.bin')}/links`, { token: a.token, body: { other: 1 } }), 400, 'IOTB_REQUEST_VALIDATION', 'unknown field');
      assertError(await service.request('POST', `/file/${encodeURIComponent('firmware/app 1.2.bin')}/links`, { token: null, body: {} }), 401, 'IOTB_AUTH_TOKEN_MISSING', 'no token');
      // No body at all takes the defaults (1 hour).
      const bare = await fetch(`${service.baseUrl}/file/${encodeURIComponent('firmware/app 1.2.bin')}/links`, { method: 'POST', headers: { authorization: `Bearer ${a.token}` } });
      assert.equal(bare.status, 201);
      const body = (await bare.json()) as { expiresAt: string };
      assert.ok(Math.abs(Date.parse(body.expiresAt) - Date.now() - 3_600_000) < 10_000);
    });

    it('a link made before a restart works after it', async () => {
      const created = await link(a, 'firmware/app 1.2.bin');
      service = await service.restart();
      const again = await fetchBytes(`${service.baseUrl}/download/${created.token}`);
      assert.equal(again.status, 200);
      assert.ok(again.body.equals(image));
      const resolved = await service.bridge.domain.fileLinks.resolve(created.token);
      assert.equal(resolved?.token, '');
      assert.equal(resolved?.name, 'firmware/app 1.2.bin');
    });
  });
}

describe('download link URLs with IOTBRIDGE_PUBLIC_HOST, behind a TLS proxy', () => {
  let service: TestService;
  let account: TestAccount;

  before(async () => {
    service = await startService('sqlite', { publicHost: 'iot.example.com', trustProxy: true });
    account = await createAccount(service, 'downloads-public-host');
    await service.bridge.domain.files.put(account.accountId, { name: 'fw.bin' }, Readable.from([Buffer.from('fw')]), { maxBytes: 100 });
  });
  after(() => service?.stop());

  it('names the public host whatever the request\'s Host, and https with the proxy\'s port when X-Forwarded-Proto says so', async () => {
    const plain = await postWithHost(service, '/file/fw.bin/links', account.token, 'internal:1234');
    assert.equal(plain.urls.http, `http://iot.example.com:${service.ports.http}/download/${plain.token}`);
    assert.equal(plain.urls.coap, `coap://iot.example.com:${service.ports.coap}/download/${plain.token}`);
    const proxied = await postWithHost(service, '/file/fw.bin/links', account.token, 'iot.example.com', { 'x-forwarded-proto': 'https' });
    assert.equal(proxied.urls.http, `https://iot.example.com/download/${proxied.token}`);
    const proxiedPort = await postWithHost(service, '/file/fw.bin/links', account.token, 'iot.example.com:8443', { 'x-forwarded-proto': 'https' });
    assert.equal(proxiedPort.urls.http, `https://iot.example.com:8443/download/${proxiedPort.token}`);
    assert.equal((await fetch(`${service.baseUrl}/download/${plain.token}`)).status, 200);
  });
});
