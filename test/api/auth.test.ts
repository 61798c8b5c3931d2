import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createAccount, createService, type TestAccount } from '../helpers/fixtures.js';
import { ADMIN_TOKEN, DIALECTS, startService, type TestService } from '../helpers/service.js';

for (const dialect of DIALECTS) {
  describe(`authentication and tokens (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let account: TestAccount;

    before(async () => {
      // Short user sessions so expiry can be observed.
      service = await startService(dialect.name, { userTokenTtlSeconds: 5 });
      account = await createAccount(service, 'auth');
    });
    after(() => service?.stop());

    it('answers 401 without a token and for malformed or unknown tokens', async () => {
      const missing = await service.request('GET', '/services', { token: null });
      assert.equal(missing.status, 401);
      assert.equal(missing.body.error.code, 'IOTB_AUTH_TOKEN_MISSING');
      for (const authorization of ['Bearer', 'Basic abc', 'Bearer XT:abc', 'Bearer AT:', 'Bearer AT:abc:def:ghi', 'Bearer AT:unknown-token-000000']) {
        const response = await service.request('GET', '/services', { token: null, headers: { authorization } });
        assert.equal(response.status, 401, authorization);
        assert.equal(response.body.error.code, 'IOTB_AUTH_TOKEN_INVALID', authorization);
      }
    });

    it('keeps health, login and the API documents open without a token', async () => {
      assert.equal((await service.request('GET', '/health', { token: null })).status, 200);
      assert.equal((await service.request('GET', '/openapi.json', { token: null })).status, 200);
      assert.equal((await service.request('GET', '/docs', { token: null })).status, 200);
    });

    it('issues API tokens, lists them without secrets, and revokes them at once', async () => {
      const issued = await service.request('POST', '/tokens', { token: account.token, body: { name: 'ci' } });
      assert.equal(issued.status, 201);
      assert.match(issued.body.token, /^AT:[A-Za-z0-9_-]{32}$/);
      assert.deepEqual([issued.body.type, issued.body.accountId, issued.body.superAdmin, issued.body.expiresAt], ['api', account.accountId, false, null]);

      const listed = await service.request('GET', '/tokens', { token: account.token });
      assert.equal(listed.status, 200);
      assert.ok(listed.body.items.some((t: { id: string }) => t.id === issued.body.id));
      assert.ok(!JSON.stringify(listed.body).includes(issued.body.token.slice(3)), 'a listing never shows a secret');
      assert.ok(listed.body.items.every((t: Record<string, unknown>) => !('token' in t) && !('secretHash' in t)));

      assert.equal((await service.request('GET', '/services', { token: issued.body.token })).status, 200);
      assert.equal((await service.request('DELETE', `/tokens/${issued.body.id}`, { token: account.token })).status, 204);
      const revoked = await service.request('GET', '/services', { token: issued.body.token });
      assert.equal(revoked.status, 401);
      assert.equal((await service.request('DELETE', `/tokens/${issued.body.id}`, { token: account.token })).status, 404);
    });

    it('logs users in with a UT: token that expires, and logs them out', async () => {
      const created = await service.request('POST', '/users', { token: account.token, body: { email: 'Alice@Example.com', password: 'correct horse' } });
      assert.equal(created.status, 201);
      assert.deepEqual([created.body.email, created.body.accountId, created.body.superAdmin], ['alice@example.com', account.accountId, false]);
      assert.ok(!('passwordHash' in created.body));

      const wrong = await service.request('POST', '/auth/login', { token: null, body: { email: 'alice@example.com', password: 'wrong horse' } });
      assert.equal(wrong.status, 401);
      assert.equal(wrong.body.error.code, 'IOTB_AUTH_LOGIN_FAILED');
      const unknown = await service.request('POST', '/auth/login', { token: null, body: { email: 'nobody@example.com', password: 'wrong horse' } });
      assert.deepEqual(unknown.body, wrong.body, 'an unknown email and a wrong password look the same');

      const login = await service.request('POST', '/auth/login', { token: null, body: { email: 'ALICE@example.com', password: 'correct horse' } });
      assert.equal(login.status, 200);
      assert.match(login.body.token, /^UT:/);
      assert.equal(login.body.type, 'user');
      const expiresIn = Date.parse(login.body.expiresAt) - Date.now();
      assert.ok(expiresIn > 0 && expiresIn <= 5000, `expires in ${expiresIn} ms`);
      const whoami = await service.request('GET', '/auth/whoami', { token: login.body.token });
      assert.deepEqual([whoami.body.accountId, whoami.body.type, whoami.body.userId], [account.accountId, 'user', created.body.id]);

      const logout = await service.request('POST', '/auth/logout', { token: login.body.token });
      assert.equal(logout.status, 204);
      assert.equal((await service.request('GET', '/services', { token: login.body.token })).status, 401);

      const second = await service.request('POST', '/auth/login', { token: null, body: { email: 'alice@example.com', password: 'correct horse' } });
      assert.equal((await service.request('GET', '/services', { token: second.body.token })).status, 200);
      // Generous margins: scrypt log-ins are slow on a loaded CI machine.
      await sleep(5100);
      const expired = await service.request('GET', '/services', { token: second.body.token });
      assert.equal(expired.status, 401);
      assert.equal(expired.body.error.code, 'IOTB_AUTH_TOKEN_INVALID');
    });

    it('after 5 failed sign-ins for an email from one address, answers 429 with Retry-After without checking the password', async () => {
      await service.request('POST', '/users', { token: account.token, body: { email: 'guessed@example.com', password: 'the real one' } });
      await service.request('POST', '/users', { token: account.token, body: { email: 'bystander@example.com', password: 'the real one' } });
      const signIn = (email: string, password: string) => service.request('POST', '/auth/login', { token: null, body: { email, password } });
      for (let attempt = 1; attempt <= 5; attempt++) assert.equal((await signIn('guessed@example.com', `guess ${attempt}`)).status, 401, `attempt ${attempt}`);
      const throttled = await signIn('GUESSED@example.com', 'the real one');
      assert.equal(throttled.status, 429, 'the same email in other case is the same email');
      assert.equal(throttled.body.error.code, 'IOTB_AUTH_LOGIN_THROTTLED');
      const retryAfter = Number(throttled.headers.get('retry-after'));
      assert.ok(retryAfter >= 1 && retryAfter <= 12, `Retry-After ${retryAfter}`);
      assert.equal(throttled.body.error.details.retryAfterSeconds, retryAfter);
      assert.equal((await signIn('bystander@example.com', 'the real one')).status, 200, 'another email from the same address signs in');
    });

    it('refuses to log out an API token and rejects weak passwords and duplicate emails', async () => {
      const logout = await service.request('POST', '/auth/logout', { token: account.token });
      assert.equal(logout.status, 400);
      const weak = await service.request('POST', '/users', { token: account.token, body: { email: 'bob@example.com', password: 'short' } });
      assert.equal(weak.status, 400);
      await service.request('POST', '/users', { token: account.token, body: { email: 'carol@example.com', password: 'long enough' } });
      const dup = await service.request('POST', '/users', { token: account.token, body: { email: 'CAROL@example.com', password: 'long enough' } });
      assert.equal(dup.status, 409);
      assert.equal(dup.body.error.code, 'IOTB_USER_EMAIL_TAKEN');
    });

    it('changes a password and deleting a user ends their sessions', async () => {
      const user = await service.request('POST', '/users', { token: account.token, body: { email: 'dave@example.com', password: 'first password' } });
      await service.request('PUT', `/users/${user.body.id}`, { token: account.token, body: { password: 'second password' } });
      const old = await service.request('POST', '/auth/login', { token: null, body: { email: 'dave@example.com', password: 'first password' } });
      assert.equal(old.status, 401);
      const login = await service.request('POST', '/auth/login', { token: null, body: { email: 'dave@example.com', password: 'second password' } });
      assert.equal(login.status, 200);
      assert.equal((await service.request('DELETE', `/users/${user.body.id}`, { token: account.token })).status, 204);
      assert.equal((await service.request('GET', '/services', { token: login.body.token })).status, 401);
    });

    it('limits app tokens to their own account and to non-administrative calls', async () => {
      const serviceId = await createService(service, account.token);
      const app = await service.request('POST', '/tokens', { token: account.token, body: { name: 'partner', type: 'app' } });
      assert.equal(app.status, 201);
      assert.equal(app.body.type, 'app');
      const appToken: string = app.body.token;
      assert.equal((await service.request('GET', `/services/${serviceId}`, { token: appToken })).status, 200);
      const child = await createAccount(service, 'app-child', { token: account.token });
      const down = await service.request('GET', '/services', { token: appToken, account: child.accountId });
      assert.equal(down.status, 403);
      const mint = await service.request('POST', '/tokens', { token: appToken, body: { name: 'escalate' } });
      assert.equal(mint.status, 403);
      const user = await service.request('POST', '/users', { token: appToken, body: { email: 'app@example.com', password: 'long enough' } });
      assert.equal(user.status, 403);
    });

    it('keeps the Super-Admin flag to the root account', async () => {
      const whoami = await service.request('GET', '/auth/whoami');
      assert.equal(whoami.body.superAdmin, true, 'IOTBRIDGE_ADMIN_TOKEN is a Super-Admin token');
      assert.equal((await service.request('GET', '/super/accounts')).status, 200);
      assert.ok((await service.request('GET', '/super/accounts')).body.items.some((a: { accountId: string }) => a.accountId === account.accountId));

      const plainRoot = await service.request('POST', '/tokens', { body: { name: 'root, not admin' } });
      assert.equal(plainRoot.body.superAdmin, false);
      assert.equal((await service.request('GET', '/super/accounts', { token: plainRoot.body.token })).status, 403);
      const rootAdmin = await service.request('POST', '/tokens', { body: { name: 'second admin', superAdmin: true } });
      assert.equal(rootAdmin.body.superAdmin, true);

      // Not for a sub-account, not from a non-admin token, and not for a sub-account's users.
      const inSub = await service.request('POST', '/tokens', { account: account.accountId, body: { name: 'x', superAdmin: true } });
      assert.equal(inSub.status, 403);
      const byPlain = await service.request('POST', '/tokens', { token: plainRoot.body.token, body: { name: 'x', superAdmin: true } });
      assert.equal(byPlain.status, 403);
      const subUser = await service.request('POST', '/users', { token: account.token, body: { email: 'sub@example.com', password: 'long enough', superAdmin: true } });
      assert.equal(subUser.status, 403);
      assert.equal((await service.request('GET', '/super/accounts', { token: account.token })).status, 403);
    });

    it('expires API tokens issued with expiresIn and shows when', async () => {
      const issued = await service.request('POST', '/tokens', { token: account.token, body: { name: 'temp', expiresIn: 3600 } });
      const expiresIn = Date.parse(issued.body.expiresAt) - Date.now();
      assert.ok(expiresIn > 3590_000 && expiresIn <= 3600_000);
      assert.equal((await service.request('POST', '/tokens', { token: account.token, body: { name: 'too short', expiresIn: 1 } })).status, 400);
    });

    it('behind a trusted proxy (IOTBRIDGE_TRUST_PROXY) counts failed sign-ins per forwarded client address', async () => {
      const proxied = await startService(dialect.name, { trustProxy: true });
      try {
        const tenant = await createAccount(proxied, 'proxied');
        await proxied.request('POST', '/users', { token: tenant.token, body: { email: 'dave@example.com', password: 'the real one' } });
        const signIn = (client: string, password: string) =>
          proxied.request('POST', '/auth/login', { token: null, headers: { 'x-forwarded-for': client }, body: { email: 'dave@example.com', password } });
        for (let attempt = 1; attempt <= 5; attempt++) assert.equal((await signIn('203.0.113.7', `guess ${attempt}`)).status, 401);
        assert.equal((await signIn('203.0.113.7', 'the real one')).status, 429, 'the guessing client is held back');
        assert.equal((await signIn('198.51.100.20', 'the real one')).status, 200, 'another client behind the same proxy is not');
      } finally {
        await proxied.stop();
      }
    });

    it('accepts the admin token configured with IOTBRIDGE_ADMIN_TOKEN', async () => {
      const whoami = await service.request('GET', '/auth/whoami', { token: ADMIN_TOKEN });
      assert.equal(whoami.body.accountId, service.rootAccountId);
    });
  });
}
