// Issue 21, external sign-in (OIDC): a real OpenID Connect provider (oidc-provider) on 127.0.0.1, its dev
// login and consent pages driven with fetch and cookies, redirects followed by hand. GET /auth/oidc/login → 302
// with PKCE S256, state and nonce; the callback gives a UT: token in the mapped account (user created on first
// sign-in, found on the next); domain mode (verified e-mail only, unknown domain refused) and organization mode
// (a groups claim, first match or ?account=, Super-Admin only for root); replayed state, tampered code, provider
// error; mapping by API and by file; cross-tenant and non-Super-Admin refusals; 404 without configuration.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { IotBridge } from '../../src/app.js';
import { ConfigError, loadConfig, type Config } from '../../src/config.js';
import { assertError, createAccount, type TestAccount } from '../helpers/fixtures.js';
import { CLIENT_ID, oidcConfig, TestProvider, throughProvider } from '../helpers/oidc-provider.js';
import { DIALECTS, startService, type Response as ServiceResponse, type TestService } from '../helpers/service.js';

const TOKEN_TTL_SECONDS = 3600;

/** The people the provider knows, by login name (their `sub`). */
const PEOPLE: Record<string, Record<string, unknown>> = {
  ann: { email: 'Ann@Example.com', email_verified: true, name: 'Ann Example', groups: ['acme'] },
  bob: { email: 'bob@example.com', email_verified: false, groups: [] },
  carl: { email: 'carl@unknown.org', email_verified: true, groups: ['other'] },
  dora: { email: 'dora@example.com', email_verified: true, groups: ['beta', 'acme'] },
  eve: { email: 'eve@example.com', email_verified: false, groups: ['acme'] },
  nina: { email: 'nina@example.com', email_verified: true },
  olga: { email: 'olga@ops.example', email_verified: true, groups: ['ops'] },
};

/** A sign-in under way: where the browser is sent, and the cookie that binds the sign-in to it. */
interface Started {
  readonly url: URL;
  readonly cookie: string;
}

/** `GET /auth/oidc/login`: the 302 to the provider, and the binding cookie. */
async function startLogin(service: TestService, query = ''): Promise<Started> {
  const response = await fetch(`${service.baseUrl}/auth/oidc/login${query}`, { redirect: 'manual' });
  assert.equal(response.status, 302, await response.text());
  const cookie = response.headers.getSetCookie()[0] ?? '';
  assert.match(cookie, /^iotbridge_oidc=[A-Za-z0-9_-]{43}; Path=\/auth\/oidc; Max-Age=600; HttpOnly; SameSite=Lax$/);
  return { url: new URL(response.headers.get('location') ?? ''), cookie: cookie.split(';')[0] ?? '' };
}

/** The service's callback URL the provider sends `login` to, and the browser's binding cookie. */
async function callbackUrl(service: TestService, provider: TestProvider, login: string, query = ''): Promise<{ url: string; cookie: string }> {
  const started = await startLogin(service, query);
  const url = await throughProvider(provider, started.url.href, login);
  assert.ok(url.startsWith(`${service.baseUrl}/auth/oidc/callback?`), url);
  return { url, cookie: started.cookie };
}

/** The browser (`cookie`) or API client arriving at the callback; JSON unless `accept` says otherwise. */
async function callback(url: string, cookie: string | undefined, accept = 'application/json'): Promise<ServiceResponse & { location: string | null }> {
  const response = await fetch(url, { redirect: 'manual', headers: { accept, ...(cookie === undefined ? {} : { cookie }) } });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? undefined : JSON.parse(text), location: response.headers.get('location') };
}

/** The whole sign-in of `login`, answered as JSON. */
async function signIn(service: TestService, provider: TestProvider, login: string, query = ''): Promise<ServiceResponse> {
  const { url, cookie } = await callbackUrl(service, provider, login, query);
  return callback(url, cookie);
}

/** The service of these tests: external sign-in against `provider`, user tokens of a known lifetime. */
function config(provider: TestProvider, mode: 'domain' | 'organization'): Partial<Config> {
  return { ...oidcConfig(provider, mode), userTokenTtlSeconds: TOKEN_TTL_SECONDS };
}

describe('external sign-in configuration', () => {
  it('reads the IOTBRIDGE_OIDC_ variables with their defaults', () => {
    const config = loadConfig({ IOTBRIDGE_OIDC_ISSUER: 'https://id.example.com/realms/x', IOTBRIDGE_OIDC_CLIENT_ID: 'bridge', IOTBRIDGE_OIDC_MODE: 'organization' });
    assert.equal(config.oidcIssuer, 'https://id.example.com/realms/x');
    assert.equal(config.oidcScopes, 'openid email profile');
    assert.equal(config.oidcName, 'OpenID Connect');
    assert.equal(config.oidcClientSecret, undefined);
    assert.equal(config.oidcRedirectUrl, undefined);
    assert.equal(loadConfig({}).oidcIssuer, undefined);
  });

  it('refuses what cannot work, naming the variable', () => {
    const base = { IOTBRIDGE_OIDC_ISSUER: 'https://id.example.com', IOTBRIDGE_OIDC_CLIENT_ID: 'bridge' };
    const bad: Array<[NodeJS.ProcessEnv, RegExp]> = [
      [{ ...base, IOTBRIDGE_OIDC_ISSUER: 'http://id.example.com' }, /IOTBRIDGE_OIDC_ISSUER must be an https/],
      [{ ...base, IOTBRIDGE_OIDC_ISSUER: 'not a url' }, /IOTBRIDGE_OIDC_ISSUER/],
      [{ IOTBRIDGE_OIDC_ISSUER: 'https://id.example.com' }, /needs IOTBRIDGE_OIDC_CLIENT_ID/],
      [{ ...base, IOTBRIDGE_OIDC_MODE: 'email' }, /IOTBRIDGE_OIDC_MODE must be domain or organization/],
      [{ ...base, IOTBRIDGE_OIDC_SCOPES: 'email profile' }, /IOTBRIDGE_OIDC_SCOPES must include openid/],
      [{ ...base, IOTBRIDGE_OIDC_REDIRECT_URL: 'ftp://x' }, /IOTBRIDGE_OIDC_REDIRECT_URL/],
    ];
    for (const [env, message] of bad) assert.throws(() => loadConfig(env), (error: Error) => error instanceof ConfigError && message.test(error.message));
    assert.equal(loadConfig({ ...base, IOTBRIDGE_OIDC_ISSUER: 'http://127.0.0.1:9000' }).oidcIssuer, 'http://127.0.0.1:9000', 'http on loopback');
  });

  it('a mapping file that does not parse or check stops the start', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'iotbridge-oidc-'));
    try {
      const file = path.join(dir, 'mapping.json');
      for (const content of ['{not json', JSON.stringify({ mode: 'domain', organizations: {} }), JSON.stringify({ domains: { 'x.example': { accountId: 'a', superAdmin: true } } })]) {
        await writeFile(file, content);
        const settings = loadConfig({}, { httpPort: 0, httpHost: '127.0.0.1', udpPort: 0, tcpPort: 0, coapPort: 0, coapsPort: -1, mqttPort: 0, dataDir: dir, oidcIssuer: 'http://127.0.0.1:9', oidcClientId: 'bridge', oidcMode: 'domain', oidcMapping: file });
        await assert.rejects(
          new IotBridge(settings, pino({ level: 'silent' })).start(),
          (error: Error) => error instanceof ConfigError && error.message.includes('IOTBRIDGE_OIDC_MAPPING'),
        );
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

for (const dialect of DIALECTS) {
  describe(`external sign-in, off (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    before(async () => {
      service = await startService(dialect.name);
    });
    after(() => service?.stop());

    it('says it is off, and its routes answer 404 IOTB_AUTH_OIDC_OFF', async () => {
      const state = await service.request('GET', '/auth/oidc', { token: null });
      assert.equal(state.status, 200);
      assert.deepEqual(state.body, { enabled: false, name: null });
      assertError(await service.request('GET', '/auth/oidc/login', { token: null }), 404, 'IOTB_AUTH_OIDC_OFF', 'login');
      assertError(await service.request('GET', '/auth/oidc/callback?code=x&state=y', { token: null, headers: { accept: 'text/html' } }), 404, 'IOTB_AUTH_OIDC_OFF', 'callback');
      assertError(await service.request('GET', '/auth/oidc/mapping'), 404, 'IOTB_AUTH_OIDC_OFF', 'mapping');
      assertError(await service.request('PUT', '/auth/oidc/mapping', { body: { mode: 'domain', domains: {} } }), 404, 'IOTB_AUTH_OIDC_OFF', 'put mapping');
    });
  });

  describe(`external sign-in, domain mode (${dialect.name})`, { skip: dialect.skip }, () => {
    const provider = new TestProvider(PEOPLE);
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let annToken: string;
    let annId: string;
    let dir: string;

    before(async () => {
      await provider.listen();
      service = await startService(dialect.name, config(provider, 'domain'));
      provider.serve(service);
      tenant = await createAccount(service, 'example');
      other = await createAccount(service, 'other');
      const mapped = await service.request('PUT', '/auth/oidc/mapping', {
        body: { mode: 'domain', domains: { 'Example.com': { accountId: tenant.accountId }, 'other.example': { accountId: other.accountId } } },
      });
      assert.equal(mapped.status, 200, JSON.stringify(mapped.body));
      assert.equal(mapped.body.source, 'api');
      assert.deepEqual(mapped.body.mapping, { mode: 'domain', domains: { 'example.com': { accountId: tenant.accountId }, 'other.example': { accountId: other.accountId } } });
      dir = await mkdtemp(path.join(tmpdir(), 'iotbridge-oidc-'));
    });

    after(async () => {
      await service?.stop();
      await provider.close();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it('GET /auth/oidc names the provider for the sign-in button', async () => {
      const state = await service.request('GET', '/auth/oidc', { token: null });
      assert.deepEqual(state.body, { enabled: true, name: 'Test IdP' });
    });

    it("GET /auth/oidc/login answers 302 to the provider's authorization endpoint with PKCE S256, state and nonce", async () => {
      const { url: location } = await startLogin(service);
      assert.equal(location.origin, provider.issuer);
      assert.equal(location.pathname, '/auth');
      const query = location.searchParams;
      assert.equal(query.get('response_type'), 'code');
      assert.equal(query.get('client_id'), CLIENT_ID);
      assert.equal(query.get('redirect_uri'), `${service.baseUrl}/auth/oidc/callback`);
      assert.equal(query.get('scope'), 'openid email profile');
      assert.equal(query.get('code_challenge_method'), 'S256');
      assert.match(query.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
      assert.match(query.get('state') ?? '', /^[A-Za-z0-9_-]{20,}$/);
      assert.match(query.get('nonce') ?? '', /^[A-Za-z0-9_-]{20,}$/);
      const { url: again } = await startLogin(service);
      assert.notEqual(again.searchParams.get('state'), query.get('state'));
      assert.notEqual(again.searchParams.get('code_challenge'), query.get('code_challenge'));
    });

    it('the first sign-in creates the user in the mapped account and gives a UT: token of the configured lifetime', async () => {
      const first = await signIn(service, provider, 'ann');
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.match(first.body.token, /^UT:/);
      assert.equal(first.body.accountId, tenant.accountId);
      assert.equal(first.body.created, true);
      assert.equal(first.body.superAdmin, false);
      assert.equal(first.body.user.email, 'ann@example.com');
      assert.equal(first.body.user.name, 'Ann Example');
      annToken = first.body.token;
      annId = first.body.user.id;

      const whoami = await service.request('GET', '/auth/whoami', { token: annToken });
      assert.equal(whoami.status, 200, JSON.stringify(whoami.body));
      assert.deepEqual({ ...whoami.body, tokenId: undefined }, { accountId: tenant.accountId, tokenAccountId: tenant.accountId, tokenId: undefined, type: 'user', superAdmin: false, userId: annId });
      const tokens = await service.request('GET', '/tokens?type=user', { token: tenant.token });
      const issued = (tokens.body.items as Array<{ id: string; createdAt: string; expiresAt: string }>).find((token) => token.id === whoami.body.tokenId);
      assert.ok(issued, JSON.stringify(tokens.body));
      // createdAt and expiresAt are taken a moment apart: the lifetime to the second.
      assert.equal(Math.round((Date.parse(issued.expiresAt) - Date.parse(issued.createdAt)) / 1000), TOKEN_TTL_SECONDS);

      const users = await service.request('GET', '/users', { token: tenant.token });
      assert.deepEqual(users.body.items.map((user: { email: string }) => user.email), ['ann@example.com']);
    });

    it('the second sign-in finds the same user; password sign-in stays impossible for it', async () => {
      const second = await signIn(service, provider, 'ann');
      assert.equal(second.status, 200, JSON.stringify(second.body));
      assert.equal(second.body.created, false);
      assert.equal(second.body.user.id, annId);
      assert.notEqual(second.body.token, annToken);
      const users = await service.request('GET', '/users', { token: tenant.token });
      assert.equal(users.body.items.length, 1);
      assertError(await service.request('POST', '/auth/login', { token: null, body: { email: 'ann@example.com', password: 'any password at all' } }), 401, 'IOTB_AUTH_LOGIN_FAILED', 'no password');
    });

    it('a browser is sent to the UI with the token in the fragment and its returnTo', async () => {
      const { url, cookie } = await callbackUrl(service, provider, 'ann', '?returnTo=%2Fendpoints%3Ftag%3Da');
      const done = await callback(url, cookie, 'text/html,application/xhtml+xml,*/*;q=0.8');
      assert.equal(done.status, 302);
      const location = new URL(done.location ?? '', service.baseUrl);
      assert.equal(location.pathname, '/');
      const fragment = new URLSearchParams(location.hash.slice('#/signed-in?'.length));
      assert.ok(location.hash.startsWith('#/signed-in?'), location.hash);
      assert.equal(fragment.get('returnTo'), '/endpoints?tag=a');
      const whoami = await service.request('GET', '/auth/whoami', { token: fragment.get('token') ?? '' });
      assert.equal(whoami.body.userId, annId);
    });

    it('refuses an e-mail the provider does not say is verified, and an unknown domain, with IOTB_AUTH_OIDC_NO_ACCOUNT', async () => {
      const unverified = await signIn(service, provider, 'bob');
      assertError(unverified, 403, 'IOTB_AUTH_OIDC_NO_ACCOUNT', 'unverified');
      assert.equal(unverified.body.error.details.reason, 'email_unverified');
      const unknown = await signIn(service, provider, 'carl');
      assertError(unknown, 403, 'IOTB_AUTH_OIDC_NO_ACCOUNT', 'unknown domain');
      assert.equal(unknown.body.error.details.reason, 'no_match');
      assert.match(unknown.body.error.message, /unknown\.org/);
      const { url, cookie } = await callbackUrl(service, provider, 'carl');
      const browser = await callback(url, cookie, 'text/html');
      assert.equal(browser.status, 302);
      assert.equal(browser.location, '/#/sign-in?error=IOTB_AUTH_OIDC_NO_ACCOUNT');
      const users = await service.request('GET', '/users', { token: tenant.token });
      assert.equal(users.body.items.length, 1, 'nobody else was created');
    });

    it('a replayed, unknown or missing state answers 400 IOTB_AUTH_OIDC_STATE', async () => {
      const { url, cookie } = await callbackUrl(service, provider, 'ann');
      assert.equal((await callback(url, cookie)).status, 200);
      assertError(await callback(url, cookie), 400, 'IOTB_AUTH_OIDC_STATE', 'replayed');
      const unknown = new URL(url);
      unknown.searchParams.set('state', 'not-a-state-we-issued');
      assertError(await callback(unknown.href, cookie), 400, 'IOTB_AUTH_OIDC_STATE', 'unknown');
      unknown.searchParams.delete('state');
      assertError(await callback(unknown.href, cookie), 400, 'IOTB_AUTH_OIDC_STATE', 'missing');
      const browser = await callback(url, cookie, 'text/html');
      assert.equal(browser.location, '/#/sign-in?error=IOTB_AUTH_OIDC_STATE');
    });

    it("a callback in another browser than the one that started the sign-in is refused, and the code stays unused", async () => {
      // A forged link (login CSRF: the victim would be signed in as the attacker) or a leaked callback URL.
      const { url, cookie } = await callbackUrl(service, provider, 'ann');
      const elsewhere = (await startLogin(service)).cookie;
      const refused = await callback(url, elsewhere);
      assertError(refused, 400, 'IOTB_AUTH_OIDC_STATE', 'another browser');
      assert.match(refused.body.error.message, /another browser/);
      assertError(await callback(url, cookie), 400, 'IOTB_AUTH_OIDC_STATE', 'the state is spent');
      const bare = await callbackUrl(service, provider, 'ann');
      assertError(await callback(bare.url, undefined), 400, 'IOTB_AUTH_OIDC_STATE', 'no cookie');
    });

    it('a tampered code and an error from the provider answer 502 IOTB_AUTH_OIDC_PROVIDER', async () => {
      const started = await callbackUrl(service, provider, 'ann');
      const tampered = new URL(started.url);
      tampered.searchParams.set('code', `${tampered.searchParams.get('code')}x`);
      const refused = await callback(tampered.href, started.cookie);
      assertError(refused, 502, 'IOTB_AUTH_OIDC_PROVIDER', 'tampered code');
      assert.equal(refused.body.error.details.error, 'invalid_grant');

      const login = await startLogin(service);
      const state = login.url.searchParams.get('state') ?? '';
      const denied = await callback(`${service.baseUrl}/auth/oidc/callback?error=access_denied&error_description=no&state=${state}&iss=${encodeURIComponent(provider.issuer)}`, login.cookie);
      assertError(denied, 502, 'IOTB_AUTH_OIDC_PROVIDER', 'provider error');
      assert.equal(denied.body.error.details.error, 'access_denied');
    });

    it('bad input: a returnTo that is not a UI path, an account that is not an id', async () => {
      for (const returnTo of ['//evil.example/x', 'https://evil.example', '/\\evil.example', 'endpoints']) {
        assertError(await service.request('GET', `/auth/oidc/login?returnTo=${encodeURIComponent(returnTo)}`, { token: null, headers: { accept: 'application/json' } }), 400, 'IOTB_REQUEST_VALIDATION', returnTo);
      }
      assertError(await service.request('GET', '/auth/oidc/login?account=no%20such!', { token: null }), 400, 'IOTB_REQUEST_VALIDATION', 'account');
    });

    it('the token acts only in its account; the mapping is the Super-Admin\'s', async () => {
      assertError(await service.request('GET', '/auth/whoami', { token: annToken, account: other.accountId }), 403, 'IOTB_AUTH_ACCOUNT_FORBIDDEN', 'other account');
      assertError(await service.request('GET', '/endpoints', { token: annToken, account: service.rootAccountId }), 403, 'IOTB_AUTH_ACCOUNT_FORBIDDEN', 'root account');
      assertError(await service.request('GET', '/users', { token: other.token, account: tenant.accountId }), 403, 'IOTB_AUTH_ACCOUNT_FORBIDDEN', 'other tenant');
      assertError(await service.request('GET', '/auth/oidc/mapping', { token: annToken }), 403, 'IOTB_AUTH_FORBIDDEN', 'user reads mapping');
      assertError(await service.request('PUT', '/auth/oidc/mapping', { token: tenant.token, body: { mode: 'domain', domains: { 'evil.example': { accountId: tenant.accountId } } } }), 403, 'IOTB_AUTH_FORBIDDEN', 'tenant sets mapping');
      assert.equal((await service.request('GET', '/auth/oidc/mapping')).body.mapping.domains['evil.example'], undefined);
    });

    it('PUT /auth/oidc/mapping refuses a bad mapping', async () => {
      const bad: Array<[unknown, string]> = [
        [{ mode: 'organization', organizations: {} }, 'mode against IOTBRIDGE_OIDC_MODE'],
        [{ domains: { 'example.com': { accountId: tenant.accountId, superAdmin: true } } }, 'Super-Admin outside root'],
        [{ domains: { 'example.com': { accountId: 'noSuchAccount0000' } } }, 'unknown account'],
        [{ domains: { 'not a domain': { accountId: tenant.accountId } } }, 'domain name'],
        [{ domains: { 'example.com': { accountId: tenant.accountId }, 'EXAMPLE.com': { accountId: other.accountId } } }, 'twice'],
        [{ domains: { 'example.com': { account: tenant.accountId } } }, 'target shape'],
        [{ domains: [] }, 'not an object'],
        ['text', 'not JSON object'],
      ];
      for (const [body, what] of bad) assertError(await service.request('PUT', '/auth/oidc/mapping', { body }), 400, 'IOTB_REQUEST_VALIDATION', what);
      assert.equal((await service.request('GET', '/auth/oidc/mapping')).body.mapping.domains['example.com'].accountId, tenant.accountId);
    });

    it('sign-out is POST /auth/logout: the token stops working', async () => {
      const done = await signIn(service, provider, 'ann');
      assert.equal((await service.request('POST', '/auth/logout', { token: done.body.token })).status, 204);
      assertError(await service.request('GET', '/auth/whoami', { token: done.body.token }), 401, 'IOTB_AUTH_TOKEN_INVALID', 'after logout');
      assert.equal((await service.request('GET', '/auth/whoami', { token: annToken })).status, 200, 'other sessions stay');
    });

    it('a mapping file (IOTBRIDGE_OIDC_MAPPING) wins over the API and is read-only there', async () => {
      const file = path.join(dir, 'mapping.json');
      await writeFile(file, JSON.stringify({ mode: 'domain', domains: { 'example.com': { accountId: other.accountId } } }));
      // restart() starts the same configuration on the same storage: the file is added to it.
      Object.assign(service.bridge.config, { oidcMapping: file });
      service = await service.restart();
      provider.serve(service);
      const view = await service.request('GET', '/auth/oidc/mapping');
      assert.equal(view.status, 200, JSON.stringify(view.body));
      assert.deepEqual(view.body, { source: 'file', mapping: { mode: 'domain', domains: { 'example.com': { accountId: other.accountId } } }, updatedAt: null });
      assertError(await service.request('PUT', '/auth/oidc/mapping', { body: { domains: {} } }), 409, 'IOTB_AUTH_OIDC_MAPPING_FILE', 'put');
      const done = await signIn(service, provider, 'dora');
      assert.equal(done.status, 200, JSON.stringify(done.body));
      assert.equal(done.body.accountId, other.accountId);
    });
  });

  describe(`external sign-in, organization mode (${dialect.name})`, { skip: dialect.skip }, () => {
    const provider = new TestProvider(PEOPLE);
    let service: TestService;
    let acme: TestAccount;
    let beta: TestAccount;

    before(async () => {
      await provider.listen();
      service = await startService(dialect.name, config(provider, 'organization'));
      provider.serve(service);
      acme = await createAccount(service, 'acme');
      beta = await createAccount(service, 'beta');
    });

    after(async () => {
      await service?.stop();
      await provider.close();
    });

    it('without a mapping nobody is let in', async () => {
      const refused = await signIn(service, provider, 'ann');
      assertError(refused, 403, 'IOTB_AUTH_OIDC_NO_ACCOUNT', 'no mapping');
      assert.equal(refused.body.error.details.reason, 'no_mapping');
      assert.deepEqual((await service.request('GET', '/auth/oidc/mapping')).body, { source: 'none', mapping: null, updatedAt: null });
    });

    it('refuses Super-Admin outside the root account and a domain mapping', async () => {
      assertError(await service.request('PUT', '/auth/oidc/mapping', { body: { organizations: { acme: { accountId: acme.accountId, superAdmin: true } } } }), 400, 'IOTB_REQUEST_VALIDATION', 'superAdmin');
      assertError(await service.request('PUT', '/auth/oidc/mapping', { body: { mode: 'organization', domains: { 'example.com': { accountId: acme.accountId } } } }), 400, 'IOTB_REQUEST_VALIDATION', 'domains');
    });

    it('maps the groups claim to accounts: the first organization listed, or ?account= when it is one of them', async () => {
      const mapped = await service.request('PUT', '/auth/oidc/mapping', {
        body: {
          mode: 'organization',
          claim: 'groups',
          organizations: { beta: { accountId: beta.accountId }, acme: { accountId: acme.accountId }, ops: { accountId: service.rootAccountId, superAdmin: true } },
        },
      });
      assert.equal(mapped.status, 200, JSON.stringify(mapped.body));

      const ann = await signIn(service, provider, 'ann');
      assert.equal(ann.status, 200, JSON.stringify(ann.body));
      assert.equal(ann.body.accountId, acme.accountId);
      assert.equal(ann.body.created, true);
      assert.equal((await service.request('GET', '/auth/whoami', { token: ann.body.token })).body.accountId, acme.accountId);

      const dora = await signIn(service, provider, 'dora');
      assert.equal(dora.body.accountId, beta.accountId, 'beta comes first in the mapping');
      const doraInAcme = await signIn(service, provider, 'dora', `?account=${acme.accountId}`);
      assert.equal(doraInAcme.status, 200, JSON.stringify(doraInAcme.body));
      assert.equal(doraInAcme.body.accountId, acme.accountId);
      assert.equal(doraInAcme.body.created, true, 'a user of its own in each account');
      const doraElsewhere = await signIn(service, provider, 'dora', `?account=${service.rootAccountId}`);
      assert.equal(doraElsewhere.body.accountId, beta.accountId, 'an account not among hers is not honoured');
      assert.equal(doraElsewhere.body.user.id, dora.body.user.id);

      assertError(await service.request('GET', '/users', { token: dora.body.token, account: acme.accountId }), 403, 'IOTB_AUTH_ACCOUNT_FORBIDDEN', 'beta token in acme');
    });

    it('no matching organization, or no claim at all, is refused', async () => {
      const none = await signIn(service, provider, 'carl');
      assertError(none, 403, 'IOTB_AUTH_OIDC_NO_ACCOUNT', 'other group');
      assert.equal(none.body.error.details.reason, 'no_match');
      const empty = await signIn(service, provider, 'bob');
      assertError(empty, 403, 'IOTB_AUTH_OIDC_NO_ACCOUNT', 'no groups');
      const noClaim = await signIn(service, provider, 'nina');
      assertError(noClaim, 403, 'IOTB_AUTH_OIDC_NO_ACCOUNT', 'no claim');
      assert.equal(noClaim.body.error.details.reason, 'no_claim');
    });

    it('Super-Admin only in the root account and only where the mapping says so', async () => {
      const olga = await signIn(service, provider, 'olga');
      assert.equal(olga.status, 200, JSON.stringify(olga.body));
      assert.equal(olga.body.accountId, service.rootAccountId);
      assert.equal(olga.body.superAdmin, true);
      assert.equal((await service.request('GET', '/auth/whoami', { token: olga.body.token })).body.superAdmin, true);
      assert.equal((await service.request('GET', '/super/accounts', { token: olga.body.token })).status, 200);
      const ann = await signIn(service, provider, 'ann');
      assertError(await service.request('GET', '/super/accounts', { token: ann.body.token }), 403, 'IOTB_AUTH_FORBIDDEN', 'acme user');
    });

    it("an unverified e-mail cannot claim an existing user; a verified one links to it", async () => {
      const created = await service.request('POST', '/users', { token: acme.token, body: { email: 'eve@example.com', password: 'eves password' } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const eve = await signIn(service, provider, 'eve');
      assertError(eve, 403, 'IOTB_AUTH_OIDC_NO_ACCOUNT', 'unverified takeover');
      assert.equal(eve.body.error.details.reason, 'user_exists_unverified');

      const existing = await service.request('POST', '/users', { token: beta.token, body: { email: 'dora2@example.com', password: 'doras password' } });
      assert.equal(existing.status, 201);
      PEOPLE.dora2 = { email: 'dora2@example.com', email_verified: true, groups: ['beta'] };
      const linked = await signIn(service, provider, 'dora2');
      assert.equal(linked.status, 200, JSON.stringify(linked.body));
      assert.equal(linked.body.user.id, existing.body.id);
      assert.equal(linked.body.created, false);
      const password = await service.request('POST', '/auth/login', { token: null, body: { email: 'dora2@example.com', password: 'doras password', accountId: beta.accountId } });
      assert.equal(password.status, 200, 'the password still works for a linked user');
    });
  });
}
