// A real OpenID Connect provider for the external sign-in tests (oidc-provider from npm, not a mock) on
// 127.0.0.1, with its development login and consent pages, and a browser's way through them with fetch.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import type { Config } from '../../src/config.js';
import type { TestService } from './service.js';

export const CLIENT_ID = 'iotbridge';
export const CLIENT_SECRET = 'client-secret-0123456789';

const SIGNING_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });

/** One provider on a fixed port; a new Provider (with the service's callback as redirect URI) per service started. */
export class TestProvider {
  readonly server: Server;
  /** The people the provider knows, by login name (their `sub`): their claims. */
  readonly people: Record<string, Record<string, unknown>>;
  #handler: ((request: IncomingMessage, response: ServerResponse) => void) | undefined;

  constructor(people: Record<string, Record<string, unknown>>) {
    this.people = people;
    this.server = createServer((request, response) => (this.#handler ? this.#handler(request, response) : response.writeHead(503).end()));
  }

  get issuer(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }

  /** From now on the provider has the client of `service` (its callback URL as the one redirect URI). */
  serve(service: TestService): void {
    const provider = new Provider(this.issuer, {
      clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [`${service.baseUrl}/auth/oidc/callback`], token_endpoint_auth_method: 'client_secret_basic' }],
      findAccount: async (_context: unknown, sub: string) => (this.people[sub] ? { accountId: sub, claims: async () => ({ sub, ...this.people[sub] }) } : undefined),
      // groups with the profile scope: the service asks for `openid email profile` by default. The ID token
      // carries only sub (oidc-provider's default): the service reads the rest from UserInfo.
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
      cookies: { keys: ['provider-cookie-key-0123456789'] },
      jwks: { keys: [SIGNING_KEY] },
      ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 600, IdToken: 600, Interaction: 600, Session: 600 },
    });
    this.#handler = provider.callback();
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** The service configuration of external sign-in against `provider`. */
export function oidcConfig(provider: TestProvider, mode: 'domain' | 'organization'): Partial<Config> {
  return { oidcIssuer: provider.issuer, oidcClientId: CLIENT_ID, oidcClientSecret: CLIENT_SECRET, oidcMode: mode, oidcName: 'Test IdP' };
}

/**
 * A browser at the provider: from the authorization URL through the login and consent pages (filled in as
 * `login`), cookies kept, redirects followed by hand; returns the URL the provider sends the browser back to.
 */
export async function throughProvider(provider: TestProvider, authorizationUrl: string, login: string): Promise<string> {
  const jar = new Map<string, string>();
  const keep = (response: Response) => {
    for (const cookie of response.headers.getSetCookie()) {
      const pair = cookie.split(';')[0] ?? '';
      jar.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1));
    }
  };
  const cookie = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
  let location = authorizationUrl;
  for (let step = 0; location.startsWith(provider.issuer); step++) {
    assert.ok(step < 20, 'the provider keeps redirecting');
    let response = await fetch(location, { redirect: 'manual', headers: { cookie: cookie() } });
    keep(response);
    if (response.status === 200) {
      const page = await response.text();
      const action = /action="([^"]+)"/.exec(page)?.[1];
      const prompt = /name="prompt" value="([^"]+)"/.exec(page)?.[1];
      assert.ok(action && prompt, `a login or consent form: ${page.slice(0, 200)}`);
      response = await fetch(new URL(action, location), {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ prompt, login, password: 'any' }),
      });
      keep(response);
    }
    assert.ok([302, 303].includes(response.status), `provider step ${step}: ${response.status} ${await response.text()}`);
    location = new URL(response.headers.get('location') ?? '', location).href;
  }
  return location;
}
