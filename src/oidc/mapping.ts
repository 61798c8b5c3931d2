// Which account a person signed in by the identity provider lands in (SPEC Authentication 6): by the domain of
// a verified e-mail, or by the organizations a claim lists. Pure functions over the mapping document and claims.

export type OidcMode = 'domain' | 'organization';

export const OIDC_MODES: readonly OidcMode[] = ['domain', 'organization'];

/** Where one domain or organization leads: an account, and whether its users are Super-Admins (root only). */
export interface MappingTarget {
  readonly accountId: string;
  readonly superAdmin?: boolean | undefined;
}

/** The mapping as written (file or `PUT /auth/oidc/mapping`), checked and normalised (domains lower-case). */
export interface MappingDocument {
  readonly mode: OidcMode;
  /** Domain mode: e-mail domain → account. */
  readonly domains?: Readonly<Record<string, MappingTarget>> | undefined;
  /** Organization mode: the claim listing the person's organizations; default `groups`. */
  readonly claim?: string | undefined;
  /** Organization mode: organization → account, the first listed winning when several match. */
  readonly organizations?: Readonly<Record<string, MappingTarget>> | undefined;
}

export const DEFAULT_ORGANIZATION_CLAIM = 'groups';

/** More would only make a mistake slow to find; an installation with more accounts maps by organization. */
export const MAPPING_ENTRIES_MAX = 10_000;

/** Why a mapping is refused: the message names the place in the document. */
export class MappingError extends Error {}

/**
 * Checks a mapping document. `mode` (from `IOTBRIDGE_OIDC_MODE`) wins when the document has none and must agree
 * when it has one. Super-Admin is allowed only for the root account.
 */
export function parseMapping(value: unknown, options: { mode: OidcMode | undefined; rootAccountId: string }): MappingDocument {
  if (!isObject(value)) throw new MappingError('the mapping must be a JSON object');
  const unknown = Object.keys(value).filter((key) => !['mode', 'domains', 'claim', 'organizations'].includes(key));
  if (unknown.length > 0) throw new MappingError(`unknown keys: ${unknown.join(', ')} (expected mode, domains, claim, organizations)`);
  const written = value.mode;
  if (written !== undefined && !OIDC_MODES.includes(written as OidcMode)) throw new MappingError('mode must be "domain" or "organization"');
  if (written !== undefined && options.mode !== undefined && written !== options.mode) {
    throw new MappingError(`mode is "${written as OidcMode}" but IOTBRIDGE_OIDC_MODE is "${options.mode}"`);
  }
  const mode = (written as OidcMode | undefined) ?? options.mode;
  if (mode === undefined) throw new MappingError('mode is missing (set it in the mapping or with IOTBRIDGE_OIDC_MODE)');
  if (mode === 'domain') {
    if (value.claim !== undefined || value.organizations !== undefined) throw new MappingError('a domain mapping has "domains", not "claim" or "organizations"');
    const domains = targets(value.domains, 'domains', options.rootAccountId, (name) => {
      const domain = name.trim().toLowerCase();
      if (!/^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/.test(domain) || domain.length > 253) {
        throw new MappingError(`domains: "${name}" is not a domain name (e.g. example.com)`);
      }
      return domain;
    });
    return { mode, domains };
  }
  if (value.domains !== undefined) throw new MappingError('an organization mapping has "claim" and "organizations", not "domains"');
  const claim = value.claim ?? DEFAULT_ORGANIZATION_CLAIM;
  if (typeof claim !== 'string' || claim === '' || claim.length > 200) throw new MappingError('claim must be a claim name of 1 to 200 characters');
  const organizations = targets(value.organizations, 'organizations', options.rootAccountId, (name) => {
    if (name === '' || name.length > 256) throw new MappingError(`organizations: "${name.slice(0, 40)}" must have 1 to 256 characters`);
    return name;
  });
  return { mode, claim, organizations };
}

function targets(value: unknown, field: string, rootAccountId: string, key: (name: string) => string): Record<string, MappingTarget> {
  if (!isObject(value)) throw new MappingError(`${field} must be an object (name → {"accountId"})`);
  const entries = Object.entries(value);
  if (entries.length > MAPPING_ENTRIES_MAX) throw new MappingError(`${field} may have at most ${MAPPING_ENTRIES_MAX} entries`);
  const result: Record<string, MappingTarget> = {};
  for (const [name, target] of entries) {
    const normalised = key(name);
    if (Object.hasOwn(result, normalised)) throw new MappingError(`${field}: "${name}" is listed twice`);
    if (!isObject(target) || Object.keys(target).some((k) => k !== 'accountId' && k !== 'superAdmin')) {
      throw new MappingError(`${field}.${name} must be {"accountId": "…", "superAdmin"?: true|false}`);
    }
    const { accountId, superAdmin } = target;
    if (typeof accountId !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(accountId)) throw new MappingError(`${field}.${name}.accountId must be an account id`);
    if (superAdmin !== undefined && typeof superAdmin !== 'boolean') throw new MappingError(`${field}.${name}.superAdmin must be true or false`);
    if (superAdmin === true && accountId !== rootAccountId) throw new MappingError(`${field}.${name}: superAdmin is only possible for the root account`);
    result[normalised] = superAdmin === undefined ? { accountId } : { accountId, superAdmin };
  }
  return result;
}

/** The claims of the ID token (and UserInfo) the mapping reads. */
export type Claims = Readonly<Record<string, unknown>>;

export type Refusal = 'no_mapping' | 'no_email' | 'email_unverified' | 'no_claim' | 'no_match' | 'account_gone' | 'user_exists_unverified';

/** What the mapping makes of the claims: the matching targets in the mapping's order, or why none. */
export type Resolution = { readonly targets: readonly MappingTarget[] } | { readonly refused: Refusal; readonly message: string };

/** The signed-in person's e-mail, lower-case, when the claims carry one. */
export function emailOf(claims: Claims): string | undefined {
  const email = claims.email;
  return typeof email === 'string' && /^[^@\s]+@[^@\s]+$/.test(email.trim()) ? email.trim().toLowerCase() : undefined;
}

/** `email_verified` is a boolean in the spec; some providers send the text "true". */
export function emailVerified(claims: Claims): boolean {
  return claims.email_verified === true || claims.email_verified === 'true';
}

export function resolve(mapping: MappingDocument | undefined, claims: Claims): Resolution {
  if (mapping === undefined) return { refused: 'no_mapping', message: 'External sign-in has no mapping yet: the operator maps e-mail domains or organizations to accounts' };
  const email = emailOf(claims);
  if (email === undefined) return { refused: 'no_email', message: 'The identity provider sent no e-mail address: allow the "email" scope for this client' };
  if (mapping.mode === 'domain') {
    if (!emailVerified(claims)) return { refused: 'email_unverified', message: `The identity provider does not say that ${email} is verified (email_verified): domain mapping needs a verified e-mail` };
    const domain = email.slice(email.lastIndexOf('@') + 1);
    const target = mapping.domains && Object.hasOwn(mapping.domains, domain) ? mapping.domains[domain] : undefined;
    return target ? { targets: [target] } : { refused: 'no_match', message: `The e-mail domain ${domain} maps to no account of this service` };
  }
  const claim = mapping.claim ?? DEFAULT_ORGANIZATION_CLAIM;
  const listed = organizationsIn(claimValue(claims, claim));
  if (listed === undefined) return { refused: 'no_claim', message: `The identity provider sent no "${claim}" claim: it lists the organizations that map to accounts` };
  const targets = Object.entries(mapping.organizations ?? {})
    .filter(([name]) => listed.has(name))
    .map(([, target]) => target);
  return targets.length > 0 ? { targets } : { refused: 'no_match', message: `None of your organizations (claim "${claim}") maps to an account of this service` };
}

/** A claim by its name, or else by a dotted path into nested objects (`realm_access.roles`). */
function claimValue(claims: Claims, name: string): unknown {
  if (Object.hasOwn(claims, name)) return claims[name];
  let value: unknown = claims;
  for (const part of name.split('.')) {
    if (!isObject(value) || !Object.hasOwn(value, part)) return undefined;
    value = value[part];
  }
  return value;
}

/** A list of names, or one name. */
function organizationsIn(value: unknown): Set<string> | undefined {
  if (typeof value === 'string') return new Set([value]);
  if (Array.isArray(value)) return new Set(value.filter((item): item is string => typeof item === 'string'));
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
