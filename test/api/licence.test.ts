// Issue 21, licence: off by default; with IOTBRIDGE_LICENSING a 7-day grace period from the first start (kept over
// restarts); past it, events are stored but triggers do not run, every response says so in a header and
// GET /licence says why; a licence signed with the test key (by the CLI as a child process, and by its module)
// makes it valid again and triggers run; bad, tampered and expired licences are refused; only a Super-Admin
// installs; maxEndpoints is enforced; the licence survives a restart; IOTBRIDGE_LICENCE_FILE installs one at start.
// The clock is moved, never waited for.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { signLicence } from '../../scripts/licence-sign.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { trustedKeys } from '../../src/licence/keys.js';
import { verifyLicence, type LicencePayload } from '../../src/licence/licence-text.js';
import { history, waitFor } from '../helpers/devices.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type Response, type TestService } from '../helpers/service.js';

const FIXTURES = 'test/fixtures/licence';
const TEST_PRIVATE_KEY = readFileSync(path.join(FIXTURES, 'private.pem'), 'utf8');
const TEST_PUBLIC_KEY_FILE = path.join(FIXTURES, 'public.pem');
const DAY = 24 * 60 * 60 * 1000;
const HEADER = 'x-iotbridge-licence';

const iso = (ms: number) => new Date(ms).toISOString();

function payload(changes: Partial<LicencePayload> = {}): LicencePayload {
  return { id: 'lic-test-1', licensee: 'ACME Test', issuedAt: iso(Date.now()), expiresAt: iso(Date.now() + 400 * DAY), limits: {}, ...changes };
}

/** The CLI, as the vendor runs it: a child process printing the licence text. */
async function signWithCli(args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/licence-sign.ts', '--key', path.join(FIXTURES, 'private.pem'), ...args]);
  return stdout;
}

function metric(metrics: string, name: string): number | undefined {
  const line = metrics.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}
const licenceState = (metrics: string) => metric(metrics, 'iotbridge_licence_state');

/** Until every accepted event has been handled by every consumer (the trigger engine among them). */
async function allHandled(service: TestService): Promise<void> {
  await waitFor(async () => {
    const text = String((await service.request('GET', '/metrics')).body);
    return metric(text, 'iotbridge_events_handled_total')! >= metric(text, 'iotbridge_events_accepted_total')! ? true : undefined;
  }, 'every event handled');
}

for (const dialect of DIALECTS) {
  describe(`licence (${dialect.name})`, { skip: dialect.skip }, () => {
    it('is off unless the operator switches it on: state off, no header, nothing to install', async () => {
      const service = await startService(dialect.name);
      try {
        const got = await service.request('GET', '/licence');
        assert.equal(got.status, 200);
        assert.deepEqual(got.body, { required: false, state: 'off' });
        assert.equal(got.headers.get(HEADER), null);
        assertError(await service.request('PUT', '/licence', { body: { licence: signLicence(payload(), TEST_PRIVATE_KEY) } }), 409, 'IOTB_LICENCE_OFF', 'PUT while off');
        const metrics = await service.request('GET', '/metrics');
        assert.equal(licenceState(String(metrics.body)), 0);
        assertError(await service.request('GET', '/licence', { token: null }), 401, 'IOTB_AUTH_TOKEN_MISSING', 'unauthenticated');
      } finally {
        await service.stop();
      }
    });

    describe('switched on', () => {
      let now = Date.now();
      const clock = () => now;
      const firstStart = now;
      let service: TestService;
      let tenant: TestAccount;
      let triggerId: string;
      let expiredEventId: string;

      const reading = async (n: string): Promise<string> => {
        const posted = await service.request('POST', '/events', { token: tenant.token, body: { type: 'reading', endpoint: 'k.meter-1', data: { n } } });
        assert.equal(posted.status, 202, JSON.stringify(posted.body));
        return posted.body.id as string;
      };
      const executions = async () => (await service.request('GET', `/executions?triggerId=${triggerId}&limit=100`, { token: tenant.token })).body.items as Array<{ eventId: string; status: string }>;
      const header = (response: Response) => response.headers.get(HEADER);

      before(async () => {
        service = await startService(dialect.name, { licensing: true, licencePublicKeys: [TEST_PUBLIC_KEY_FILE] }, { clock });
        tenant = await createAccount(service, 'licensed-tenant');
        const serviceId = await createService(service, tenant.token, { name: 'meters', type: 'http' });
        await createEndpoint(service, tenant.token, { key: 'meter-1', serviceId });
        const trigger = await service.request('POST', '/triggers', { token: tenant.token, body: { name: 'on reading', events: ['reading'], script: 'console.log(event.data.n);' } });
        assert.equal(trigger.status, 201, JSON.stringify(trigger.body));
        triggerId = trigger.body.id;
      });
      after(() => service?.stop());

      it('starts the 7-day grace period at the first start; a restart does not move it; triggers run', async () => {
        const graceEndsAt = iso(firstStart + 7 * DAY);
        const got = await service.request('GET', '/licence');
        assert.equal(got.status, 200);
        assert.equal(got.body.required, true);
        assert.equal(got.body.state, 'grace');
        assert.equal(got.body.graceEndsAt, graceEndsAt);
        assert.match(got.body.reason, /no licence is installed/);
        assert.equal(header(got), `grace; ends=${graceEndsAt}`);
        assert.equal(header(await service.request('GET', '/endpoints', { token: tenant.token })), `grace; ends=${graceEndsAt}`);

        now += DAY;
        service = await service.restart({ clock });
        assert.equal((await service.request('GET', '/licence')).body.graceEndsAt, graceEndsAt, 'a later start does not move the grace period');

        const id = await reading('in grace');
        await waitFor(async () => ((await executions()).some((e) => e.eventId === id) ? true : undefined), 'the run in grace');
        assert.equal(licenceState(String((await service.request('GET', '/metrics')).body)), 2);
      });

      it('past the grace period: events are stored, triggers do not run, every response and GET /licence say why', async () => {
        now = firstStart + 8 * DAY;
        const got = await service.request('GET', '/licence', { token: tenant.token });
        assert.equal(got.body.state, 'expired');
        assert.equal(got.body.graceEndsAt, iso(firstStart + 7 * DAY));
        assert.match(got.body.reason, /grace period ended/);
        assert.match(got.body.reason, /triggers do not run/);
        assert.equal(header(got), 'expired');
        assert.equal(header(await service.request('GET', '/no/such/route')), 'expired', 'on errors too');
        assert.equal(header(await service.request('GET', '/endpoints', { token: null })), 'expired', 'on refusals too');

        expiredEventId = await reading('while expired');
        const stored = await waitFor(async () => (await history(service, tenant.token, ['reading'])).find((event) => event.id === expiredEventId), 'the event in the history');
        assert.equal(stored.data.n, 'while expired');
        // Handled while expired: it is not run later, whatever is installed next.
        await allHandled(service);
        assert.equal(licenceState(String((await service.request('GET', '/metrics')).body)), 3);
      });

      it('refuses malformed, wrongly signed, tampered and expired licences (400) and non-Super-Admins (403)', async () => {
        const reasonOf = async (body: unknown, headers?: Record<string, string>): Promise<string> => {
          const refused = await service.request('PUT', '/licence', { body, headers });
          assertError(refused, 400, 'IOTB_LICENCE_INVALID', JSON.stringify(body).slice(0, 40));
          return refused.body.error.details.reason as string;
        };
        assert.match(await reasonOf({ licence: 'not-a-licence' }), /malformed/);
        const other = generateKeyPairSync('ed25519').privateKey;
        assert.match(await reasonOf({ licence: signLicence(payload(), other) }), /signature/);
        const good = signLicence(payload({ limits: { maxEndpoints: 5 } }), TEST_PRIVATE_KEY);
        const [, signature] = good.split('.');
        const tampered = `${Buffer.from(JSON.stringify(payload({ limits: { maxEndpoints: 1_000_000 } }))).toString('base64url')}.${signature}`;
        assert.match(await reasonOf(tampered, { 'content-type': 'text/plain' }), /signature/);
        const lapsed = signLicence(payload({ issuedAt: iso(now - 40 * DAY), expiresAt: iso(now - DAY) }), TEST_PRIVATE_KEY);
        assert.match(await reasonOf({ licence: lapsed }), /expired/);
        assertError(await service.request('PUT', '/licence', { body: { licence: { text: 'x' } } }), 400, 'IOTB_REQUEST_VALIDATION', 'an object');
        assertError(await service.request('PUT', '/licence', { body: { text: good } }), 400, 'IOTB_REQUEST_VALIDATION', 'another field');
        assertError(await service.request('PUT', '/licence', { token: tenant.token, body: { licence: good } }), 403, 'IOTB_AUTH_FORBIDDEN', 'a tenant');
        assertError(await service.request('PUT', '/licence', { account: tenant.accountId, token: tenant.token, body: { licence: good } }), 403, 'IOTB_AUTH_FORBIDDEN', 'a tenant in its account');
        assert.equal((await service.request('GET', '/licence')).body.state, 'expired', 'nothing was installed');
      });

      it('installs a licence the CLI signed: valid, triggers run again; what arrived while expired never runs', async () => {
        const text = await signWithCli(['--licensee', 'ACME', '--expires', iso(now + 365 * DAY).slice(0, 10), '--max-endpoints', '1000', '--feature', 'imex']);
        const installed = await service.request('PUT', '/licence', { body: text, headers: { 'content-type': 'text/plain' } });
        assert.equal(installed.status, 200, JSON.stringify(installed.body));
        assert.equal(installed.body.state, 'valid');
        assert.equal(installed.body.licensee, 'ACME');
        assert.deepEqual(installed.body.limits, { maxEndpoints: 1000, features: ['imex'] });
        assert.equal(header(installed), null);
        assert.equal(licenceState(String((await service.request('GET', '/metrics')).body)), 1);

        const seen = await service.request('GET', '/licence', { token: tenant.token });
        assert.deepEqual(Object.keys(seen.body).sort(), ['required', 'state'], 'a tenant sees the state, not the licensee or limits');
        assert.equal(seen.body.state, 'valid');

        const id = await reading('licensed');
        await waitFor(async () => ((await executions()).some((e) => e.eventId === id) ? true : undefined), 'the run after installing');
        const ran = (await executions()).map((e) => e.eventId);
        assert.ok(!ran.includes(expiredEventId), 'the event accepted while expired did not run');
        assert.equal(ran.length, 2, 'the run in grace and the run now');
      });

      it('enforces maxEndpoints of a valid licence (409) on single and bulk creation', async () => {
        // The installation has one endpoint (meter-1): the limit counts every account's.
        const other = await createAccount(service, 'licensed-other');
        const otherServiceId = await createService(service, other.token, { name: 'other meters', type: 'http' });
        await createEndpoint(service, other.token, { key: 'other-1', serviceId: otherServiceId });
        const count = 2;
        const signed = signLicence(payload({ id: 'lic-test-2', limits: { maxEndpoints: count + 1 } }), TEST_PRIVATE_KEY);
        const installed = await service.request('PUT', '/licence', { body: { licence: signed } });
        assert.equal(installed.status, 200, JSON.stringify(installed.body));
        assert.equal(installed.body.limits.maxEndpoints, count + 1);
        const serviceId = await createService(service, tenant.token, { name: 'more meters', type: 'http' });
        await createEndpoint(service, tenant.token, { key: 'meter-2', serviceId });
        const refused = await service.request('POST', '/endpoints', { token: tenant.token, body: { key: 'meter-3', serviceId } });
        assertError(refused, 409, 'IOTB_LICENCE_LIMIT', 'one more than allowed');
        assert.equal(refused.body.error.details.maxEndpoints, count + 1);
        const bulk = await service.request('POST', '/endpoints/bulk', { token: tenant.token, body: { items: [{ key: 'meter-4', serviceId }] } });
        assert.equal(bulk.body.items[0].status, 409, JSON.stringify(bulk.body));
        assert.equal(bulk.body.items[0].error.code, 'IOTB_LICENCE_LIMIT');
        assert.equal((await service.request('GET', '/endpoints?keyPrefix=meter-', { token: tenant.token })).body.total, 2, 'meter-1 and meter-2 only');
      });

      it('keeps the installed licence over a restart, and reports it once it expires after the grace period', async () => {
        service = await service.restart({ clock });
        const got = await service.request('GET', '/licence');
        assert.equal(got.body.state, 'valid');
        assert.equal(got.body.id, 'lic-test-2');
        assert.equal(got.body.licensee, 'ACME Test');

        now += 500 * DAY;
        const lapsed = await service.request('GET', '/licence');
        assert.equal(lapsed.body.state, 'expired');
        assert.match(lapsed.body.reason, /installed licence expired/);
        assert.equal(header(lapsed), 'expired');
        assert.equal(lapsed.body.licensee, 'ACME Test', 'the Super-Admin still sees which licence lapsed');
      });
    });

    it('installs the licence of IOTBRIDGE_LICENCE_FILE at start, trusting a base64 key from IOTBRIDGE_LICENCE_PUBLIC_KEYS', async () => {
      const dir = await mkdtemp(path.join(tmpdir(), 'iotbridge-licence-'));
      const file = path.join(dir, 'licence.txt');
      await writeFile(file, `${signLicence(payload({ id: 'from-file' }), TEST_PRIVATE_KEY)}\n`);
      const base64Key = readFileSync(TEST_PUBLIC_KEY_FILE, 'utf8').replace(/-----[A-Z ]+-----|\s/g, '');
      const service = await startService(dialect.name, { licensing: true, licencePublicKeys: [base64Key], licenceFile: file });
      try {
        const got = await service.request('GET', '/licence');
        assert.equal(got.body.state, 'valid', JSON.stringify(got.body));
        assert.equal(got.body.id, 'from-file');
        assert.equal(got.headers.get(HEADER), null);
      } finally {
        await service.stop();
        await rm(dir, { recursive: true, force: true });
      }
    });
  });
}

describe('licence text and trusted keys', () => {
  it('trusts the vendor key and the operator\'s in PEM, base64 SPKI, bare-key and file forms; refuses other keys', () => {
    const text = signLicence(payload(), TEST_PRIVATE_KEY);
    assert.equal(verifyLicence(text, trustedKeys([]), Date.now()).ok, false, 'the vendor key alone does not trust the test key');
    const pem = readFileSync(TEST_PUBLIC_KEY_FILE, 'utf8');
    const spki = createPublicKey(pem).export({ format: 'der', type: 'spki' });
    for (const form of [pem, spki.toString('base64'), spki.subarray(12).toString('base64url'), TEST_PUBLIC_KEY_FILE]) {
      const keys = trustedKeys([form]);
      assert.equal(keys.length, 2, form);
      assert.equal(verifyLicence(text, keys, Date.now()).ok, true, form);
    }
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
    assert.throws(() => trustedKeys([rsa]), ConfigError);
    assert.throws(() => trustedKeys(['/no/such/key.pem']), ConfigError);
    assert.deepEqual(loadConfig({ IOTBRIDGE_LICENCE_PUBLIC_KEYS: 'a.pem, b.pem' }).licencePublicKeys, ['a.pem', 'b.pem']);
    assert.equal(loadConfig({}).licensing, false);
  });

  it('reads payloads with fields it does not know, and refuses signed payloads missing what it needs', () => {
    const keys = trustedKeys([TEST_PUBLIC_KEY_FILE]);
    const newer = signLicence({ ...payload(), edition: 'enterprise' } as LicencePayload, TEST_PRIVATE_KEY);
    assert.equal(verifyLicence(newer, keys, Date.now()).ok, true);
    const missing = signLicence({ ...payload(), licensee: '' }, TEST_PRIVATE_KEY);
    assert.deepEqual(verifyLicence(missing, keys, Date.now()), { ok: false, reason: 'malformed licence: licensee is missing' });
    const badLimit = signLicence(payload({ limits: { maxEndpoints: -1 } }), TEST_PRIVATE_KEY);
    assert.match((verifyLicence(badLimit, keys, Date.now()) as { reason: string }).reason, /maxEndpoints/);
  });
});
