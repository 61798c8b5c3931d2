// What a signed-in browser tab keeps: the token and the sub-account it acts in, in sessionStorage (gone when
// the tab closes, never shared with other tabs, never in a cookie the browser would send on its own).

export interface Credentials {
  /** `UT:…` from POST /auth/login, or a pasted `AT:…` / `UT:…` token. */
  readonly token: string;
  /** The sub-account the UI acts in (the `:<accountId>` suffix); undefined: the token's own account. */
  readonly accountId: string | undefined;
}

const STORAGE_KEY = 'iotbridge.credentials';

/** `<AT:|UT:><secret>[:<accountId>]`, as the service's Authorization header takes it. */
const TOKEN = /^((?:AT|UT):[A-Za-z0-9_-]+)(?::([A-Za-z0-9_-]+))?$/;

/** Splits a pasted token into the token and its sub-account suffix; undefined when it is not a token. */
export function parseToken(text: string): Credentials | undefined {
  const match = TOKEN.exec(text.trim());
  if (!match?.[1]) return undefined;
  return { token: match[1], accountId: match[2] };
}

export function loadCredentials(): Credentials | undefined {
  const stored = window.sessionStorage.getItem(STORAGE_KEY);
  if (stored === null) return undefined;
  try {
    const parsed = JSON.parse(stored) as Partial<Credentials>;
    if (typeof parsed.token !== 'string' || !TOKEN.test(parsed.token)) return undefined;
    return { token: parsed.token, accountId: typeof parsed.accountId === 'string' ? parsed.accountId : undefined };
  } catch {
    return undefined;
  }
}

export function saveCredentials(credentials: Credentials | undefined): void {
  if (credentials === undefined) window.sessionStorage.removeItem(STORAGE_KEY);
  else window.sessionStorage.setItem(STORAGE_KEY, JSON.stringify(credentials));
}
