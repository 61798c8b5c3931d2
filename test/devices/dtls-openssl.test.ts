/**
 * Interop with OpenSSL's DTLS 1.2 client (`openssl s_client -dtls1_2`, OpenSSL 3) on the CoAPS port: PSK
 * handshakes in every PSK suite both sides have, a hand-built CoAP request written on s_client's stdin (it sends
 * stdin as application data and prints what comes back), session resumption with -sess_out/-sess_in,
 * ECDHE_ECDSA handshakes verifying the server against GET /coaps/certificate, and a handshake failure for a
 * client offering only suites the server lacks. Every s_client runs on 127.0.0.1, is killed after a few seconds,
 * and ends when its stdin is closed.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { startService, type TestService } from '../helpers/service.js';

const help = spawnSync('openssl', ['s_client', '-help'], { encoding: 'utf8' });
const hasDtls = help.error === undefined && `${help.stdout}${help.stderr}`.includes('-dtls1_2');
const skip = hasDtls ? false : process.env.CI ? false : 'openssl with DTLS 1.2 (s_client -dtls1_2) not installed';

const KEY = Buffer.from('openssl-dtls-psk-key');
const IDENTITY = 'ossl-device';

/** The PSK suites of src/dtls/cipher-suites.ts that OpenSSL has, by OpenSSL name. */
const PSK_SUITES = ['PSK-AES128-CCM8', 'PSK-AES128-GCM-SHA256', 'PSK-AES128-CBC-SHA256', 'PSK-AES128-CCM'] as const;
const ECDHE_SUITES = ['ECDHE-ECDSA-AES128-CCM8', 'ECDHE-ECDSA-AES128-GCM-SHA256'] as const;
/** Suites OpenSSL has and the server does not (AES-256, ChaCha20). */
const FOREIGN_PSK = 'PSK-AES256-GCM-SHA384:PSK-AES256-CCM8:PSK-CHACHA20-POLY1305';
const FOREIGN_ECDHE = 'ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305';

interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** stdout and stderr as latin1 text (the CoAP answer is binary, in stdout). */
  readonly output: string;
  readonly stdout: Buffer;
}

/**
 * One `openssl s_client -dtls1_2` run against 127.0.0.1:`port`. `send`: written on stdin once the handshake is
 * done (s_client sends it as one record); stdin is closed when `until` shows up in stdout (or at once without
 * `send`), which makes s_client send close_notify and exit. Killed after `timeoutMs`.
 */
function sClient(port: number, args: readonly string[], options: { send?: Buffer; until?: Buffer; timeoutMs?: number } = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn('openssl', ['s_client', '-dtls1_2', '-connect', `127.0.0.1:${port}`, '-noservername', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = Buffer.alloc(0);
    let stderr = '';
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      child.stdin.end();
    };
    child.stdin.on('error', () => undefined);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout = Buffer.concat([stdout, chunk]);
      const text = stdout.toString('latin1');
      // The handshake is done once s_client printed its session summary.
      if (!options.send && /Cipher is|Verify return code/.test(text)) close();
      if (options.until && stdout.includes(options.until)) close();
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('latin1')));
    if (options.send) child.stdin.write(options.send);
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 5000);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output: `${stdout.toString('latin1')}\n${stderr}`, stdout });
    });
  });
}

/** CoAP option bytes (RFC 7252 3.1) for deltas and lengths below 269. */
function option(delta: number, value: Buffer): Buffer {
  const nibble = (n: number) => (n < 13 ? [n, []] : [13, [n - 13]]) as [number, number[]];
  const [d, dx] = nibble(delta);
  const [l, lx] = nibble(value.length);
  return Buffer.concat([Buffer.from([(d << 4) | l, ...dx, ...lx]), value]);
}

/** A CON POST to /d/<key>/x with a two-byte token and `payload`. */
function coapPost(messageId: number, key: string, payload: string): Buffer {
  const path = [Buffer.from('d'), Buffer.from(key), Buffer.from('x')];
  const options = path.map((segment, i) => option(i === 0 ? 11 : 0, segment));
  return Buffer.concat([Buffer.from([0x42, 0x02, messageId >> 8, messageId & 0xff, 0x7a, 0x7b]), ...options, Buffer.from([0xff]), Buffer.from(payload)]);
}

/** The piggybacked ACK 2.04 Changed of that POST: type ACK, TKL 2, code 2.04, its message ID. */
const changed = (messageId: number) => Buffer.from([0x62, 0x44, messageId >> 8, messageId & 0xff, 0x7a, 0x7b]);

/** A CoAP ping (empty CON) and its RST (RFC 7252 4.3). */
const ping = (messageId: number) => Buffer.from([0x40, 0x00, messageId >> 8, messageId & 0xff]);
const reset = (messageId: number) => Buffer.from([0x70, 0x00, messageId >> 8, messageId & 0xff]);

describe('DTLS 1.2 interop with openssl s_client', { skip }, () => {
  let service: TestService;
  let tenant: TestAccount;
  let endpointId: string;
  let dir: string;
  let port: number;
  let messageId = 0x2100;
  const psk = ['-psk_identity', IDENTITY, '-psk', KEY.toString('hex')];

  const requests = async () => {
    const found = await service.request('GET', `/history?endpoint=${endpointId}&type=coap-request&limit=100`, { token: tenant.token });
    assert.equal(found.status, 200, JSON.stringify(found.body));
    return (found.body.items as { data: Record<string, unknown> }[]).map((e) => e.data);
  };
  /** A POST through s_client in `cipher`: its 2.04 comes back, and it arrives as a coap-request event. */
  const postThrough = async (cipher: string, extra: readonly string[] = []) => {
    const mid = messageId++;
    const payload = `${cipher} ${mid}`;
    const run = await sClient(port, ['-cipher', cipher, ...psk, ...extra], { send: coapPost(mid, IDENTITY, payload), until: changed(mid) });
    assert.match(run.output, new RegExp(`Cipher is ${cipher}\\b`), run.output);
    assert.ok(run.stdout.includes(changed(mid)), `no ACK 2.04 for the POST on stdout:\n${run.output}`);
    const event = await waitFor(async () => (await requests()).find((e) => e.text === payload), `the coap-request event of "${payload}"`);
    assert.equal(event.method, 'POST');
    assert.equal(event.path, '/x');
    return run;
  };

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'iotbridge-dtls-openssl-'));
    service = await startService('sqlite');
    port = service.ports.coaps!;
    assert.ok(port, `no CoAPS port: ${JSON.stringify(service.ports)}`);
    tenant = await createAccount(service, 'dtls-openssl');
    const coapService = await createService(service, tenant.token, { name: 'coap', type: 'coap' });
    endpointId = (await createEndpoint(service, tenant.token, { key: IDENTITY, serviceId: coapService })).id as string;
    const secured = await service.request('PUT', `/endpoints/${endpointId}/security`, { token: tenant.token, body: { mode: 'psk', identity: IDENTITY, key: KEY.toString('hex') } });
    assert.equal(secured.status, 200, JSON.stringify(secured.body));
  });
  after(async () => {
    await service?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  for (const cipher of PSK_SUITES) {
    it(`PSK handshake in ${cipher}; a CoAP POST written on stdin is answered 2.04 and arrives as a coap-request event`, async () => {
      const run = await postThrough(cipher);
      assert.match(run.output, /Protocol\s*: DTLSv1\.2/);
      assert.match(run.output, /Extended master secret: yes/);
      assert.equal(run.signal, null, `s_client did not end on its own:\n${run.output}`);
    });
  }

  it('session resumption: -sess_out on a first connection, -sess_in on the next: "Reused", the same session ID, and the resumed session carries the PSK identity', async () => {
    const file = path.join(dir, 'session.pem');
    const first = await sClient(port, ['-cipher', 'PSK-AES128-CCM8', ...psk, '-sess_out', file]);
    assert.match(first.output, /New, TLSv1\.2, Cipher is PSK-AES128-CCM8/, first.output);
    assert.ok((await stat(file)).size > 0, 'no session written');
    assert.match(await readFile(file, 'utf8'), /BEGIN SSL SESSION PARAMETERS/);
    const firstId = /Session-ID: ([0-9A-F]+)/.exec(first.output)?.[1];
    assert.ok(firstId, first.output);
    // The PSK options stay: s_client needs no key to resume, but the server must not ask for one either.
    const resumed = await postThrough('PSK-AES128-CCM8', ['-sess_in', file]);
    assert.match(resumed.output, /Reused, TLSv1\.2, Cipher is PSK-AES128-CCM8/, resumed.output);
    assert.equal(/Session-ID: ([0-9A-F]+)/.exec(resumed.output)?.[1], firstId, 'the resumed session has the first one’s ID');
  });

  for (const cipher of ECDHE_SUITES) {
    it(`ECDHE_ECDSA handshake in ${cipher} verifies the server against GET /coaps/certificate (-CAfile, -verify_return_error); a CoAP ping is answered`, async () => {
      const pem = await (await fetch(`${service.baseUrl}/coaps/certificate`)).text();
      const file = path.join(dir, 'server.pem');
      await writeFile(file, pem);
      const mid = messageId++;
      const run = await sClient(port, ['-cipher', cipher, '-CAfile', file, '-verify_return_error'], { send: ping(mid), until: reset(mid) });
      assert.match(run.output, /Verification: OK/, run.output);
      assert.match(run.output, /Verify return code: 0 \(ok\)/, run.output);
      assert.match(run.output, new RegExp(`New, TLSv1\\.2, Cipher is ${cipher}\\b`), run.output);
      assert.ok(run.stdout.includes(reset(mid)), `no RST for the ping on stdout:\n${run.output}`);
    });
  }

  it('a client offering only suites the server lacks gets a handshake_failure alert; the service keeps serving', async () => {
    const pskRun = await sClient(port, ['-cipher', FOREIGN_PSK, ...psk]);
    assert.match(pskRun.output, /alert handshake failure|alert number 40/, pskRun.output);
    assert.match(pskRun.output, /Cipher is \(NONE\)/, pskRun.output);
    assert.notEqual(pskRun.code, 0);
    const ecdheRun = await sClient(port, ['-cipher', FOREIGN_ECDHE]);
    assert.match(ecdheRun.output, /alert handshake failure|alert number 40/, ecdheRun.output);
    assert.notEqual(ecdheRun.code, 0);
    const health = await service.request('GET', '/health', { token: null });
    assert.equal(health.status, 200);
    await postThrough('PSK-AES128-CCM8');
  });
});
