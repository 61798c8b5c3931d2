import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createAccount, type TestAccount } from '../helpers/fixtures.js';
import { waitFor } from '../helpers/devices.js';
import { startService, type TestService } from '../helpers/service.js';

/** Uploads one node runs at once plus those that may wait (src/api/routes/files.ts). */
const UPLOAD_SLOTS = 4 + 100;

/**
 * Uploads past what one node takes at once get 503 `IOTB_FILE_UPLOADS_BUSY` saying when to come back (Retry-After),
 * and the uploads under way are not disturbed by it. Slow uploads hold the slots: each sends one byte of the
 * thousand it announces.
 */
describe('file uploads past the node\'s limit', () => {
  let service: TestService;
  let tenant: TestAccount;
  const held: http.ClientRequest[] = [];

  before(async () => {
    service = await startService('sqlite');
    tenant = await createAccount(service, 'files-busy');
  });
  after(async () => {
    for (const request of held) request.destroy();
    await service?.stop();
  });

  const put = (name: string, length: number) => {
    const url = new URL(`${service.baseUrl}/file/${name}/content`);
    const request = http.request(url, { method: 'PUT', agent: false, headers: { authorization: `Bearer ${tenant.token}`, 'content-type': 'application/octet-stream', 'content-length': String(length) } });
    const answer = new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
      request.on('response', (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
      });
      request.on('error', reject);
    });
    return { request, answer };
  };

  /** Uploads `content` as `name` again and again until one is answered with `status`; that answer. */
  const uploadUntil = (name: string, content: string, status: number, what: string) =>
    waitFor(async () => {
      const upload = put(name, Buffer.byteLength(content));
      upload.request.end(content);
      const answer = await upload.answer;
      return answer.status === status ? answer : undefined;
    }, what, 15_000);

  it('answers 503 IOTB_FILE_UPLOADS_BUSY with Retry-After while every slot is taken, and uploads again once they free', async () => {
    const slow = Array.from({ length: UPLOAD_SLOTS }, (_, i) => put(`slow-${i}.bin`, 1000));
    for (const { request, answer } of slow) {
      held.push(request);
      answer.catch(() => undefined);
      request.write(Buffer.from([7]));
    }
    const refused = await uploadUntil('one-too-many.bin', 'abc', 503, 'a 503 once every slot is held');
    assert.equal(refused.headers['retry-after'], '5');
    assert.equal(JSON.parse(refused.body).error.code, 'IOTB_FILE_UPLOADS_BUSY');

    // The held uploads finish as sent, and the node takes uploads again.
    const [first] = slow;
    first!.request.end(Buffer.alloc(999, 1));
    assert.equal((await first!.answer).status, 201);
    for (const { request } of slow.slice(1)) request.destroy();
    const again = await uploadUntil('after-the-rush.bin', 'xyz', 201, 'an upload accepted once the slots are free');
    assert.equal(JSON.parse(again.body).size, 3);
  });
});
