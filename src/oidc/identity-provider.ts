import * as client from 'openid-client';
import { AppError } from '../errors.js';
import type { Claims } from './mapping.js';

export interface ProviderSettings {
  /** The operator's `IOTBRIDGE_OIDC_ISSUER`: only the operator chooses where the service connects for sign-in. */
  readonly issuer: string;
  readonly clientId: string;
  /** Unset: a public client (no secret; PKCE protects the code). */
  readonly clientSecret: string | undefined;
  /** Space-separated, `openid` among them. */
  readonly scopes: string;
  /** How long one request to the provider may take. */
  readonly timeoutSeconds?: number | undefined;
}

/** One sign-in's values the provider's answer is checked against. */
export interface SignInChecks {
  readonly state: string;
  readonly nonce: string;
  readonly codeVerifier: string;
}

/** Claim names the mapping reads: when the ID token lacks one of them, UserInfo is asked too. */
export interface ClaimsWanted {
  readonly names: readonly string[];
}

/**
 * The operator's OpenID Connect provider, through openid-client: discovery (once; a failure is retried by the next
 * sign-in), the authorization URL, and the code exchange whose ID token openid-client checks (issuer, audience,
 * nonce, expiry). Every failure of the provider becomes 502 `IOTB_AUTH_OIDC_PROVIDER`.
 */
export class IdentityProvider {
  readonly #settings: ProviderSettings;
  #configuration: Promise<client.Configuration> | undefined;

  constructor(settings: ProviderSettings) {
    this.#settings = settings;
  }

  get issuer(): string {
    return this.#settings.issuer;
  }

  /** The provider's authorization endpoint with this sign-in's parameters (PKCE S256, state, nonce). */
  async authorizationUrl(redirectUri: string, checks: SignInChecks): Promise<URL> {
    const configuration = await this.#discovered();
    return client.buildAuthorizationUrl(configuration, {
      redirect_uri: redirectUri,
      scope: this.#settings.scopes,
      response_type: 'code',
      code_challenge: await client.calculatePKCECodeChallenge(checks.codeVerifier),
      code_challenge_method: 'S256',
      state: checks.state,
      nonce: checks.nonce,
    });
  }

  /**
   * Exchanges the code of `callback` (the redirect URI with the provider's query) and returns the ID token's
   * claims, completed from UserInfo when they lack a name in `wanted`.
   */
  async signIn(callback: URL, checks: SignInChecks, wanted: ClaimsWanted): Promise<Claims> {
    const configuration = await this.#discovered();
    try {
      const tokens = await client.authorizationCodeGrant(configuration, callback, {
        pkceCodeVerifier: checks.codeVerifier,
        expectedState: checks.state,
        expectedNonce: checks.nonce,
        idTokenExpected: true,
      });
      const claims = tokens.claims();
      if (!claims) throw new AppError('IOTB_AUTH_OIDC_PROVIDER', 'The identity provider returned no ID token');
      const missing = wanted.names.some((name) => claims[name] === undefined);
      if (!missing || configuration.serverMetadata().userinfo_endpoint === undefined) return claims;
      const userInfo = await client.fetchUserInfo(configuration, tokens.access_token, claims.sub);
      // The ID token's claims win; UserInfo only adds what it lacks.
      return { ...userInfo, ...claims };
    } catch (error) {
      throw providerError(error);
    }
  }

  #discovered(): Promise<client.Configuration> {
    this.#configuration ??= this.#discover().catch((error: unknown) => {
      this.#configuration = undefined;
      throw providerError(error, 'The identity provider could not be reached (discovery)');
    });
    return this.#configuration;
  }

  async #discover(): Promise<client.Configuration> {
    const { issuer, clientId, clientSecret, timeoutSeconds } = this.#settings;
    const url = new URL(issuer);
    return client.discovery(url, clientId, clientSecret, clientSecret === undefined ? client.None() : client.ClientSecretBasic(clientSecret), {
      // Configuration allows http only towards a loopback host (src/config.ts): a provider on this machine.
      execute: url.protocol === 'http:' ? [client.allowInsecureRequests] : [],
      timeout: timeoutSeconds ?? 10,
    });
  }
}

/** The provider's own error code and description travel in `details`; nothing of the exchange (code, tokens) does. */
function providerError(error: unknown, message?: string): AppError {
  if (error instanceof AppError) return error;
  const { error: code, error_description: description, code: clientCode } = error as { error?: unknown; error_description?: unknown; code?: unknown };
  const details = {
    ...(typeof code === 'string' ? { error: code } : typeof clientCode === 'string' ? { error: clientCode } : {}),
    ...(typeof description === 'string' ? { description: description.slice(0, 300) } : {}),
  };
  const reason = error instanceof Error ? error.message : String(error);
  return new AppError('IOTB_AUTH_OIDC_PROVIDER', message ?? `The identity provider did not complete the sign-in: ${reason.slice(0, 300)}`, Object.keys(details).length > 0 ? details : undefined);
}
