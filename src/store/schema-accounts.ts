/**
 * Table shapes of accounts and who acts in them: accounts, users, tokens, account controls, OIDC, the licence.
 * Part of the schema; schema.ts (which re-exports them) holds `Schema` and the column conventions.
 */
import type { Json } from './schema-json.js';

export interface AccountsTable {
  id: string;
  name: string;
  parent_id: string | null;
  /** Materialised path `/<root>/<child>/.../<id>/`: "is a descendant" is a prefix test. */
  path: string;
  external_refs: Json;
  created_at: number;
  updated_at: number;
}

export interface UsersTable {
  id: string;
  account_id: string;
  email: string;
  name: string;
  password_hash: string;
  super_admin: number;
  created_at: number;
  updated_at: number;
}

export interface TokensTable {
  id: string;
  account_id: string;
  kind: string;
  name: string;
  secret_hash: string;
  super_admin: number;
  user_id: string | null;
  expires_at: number | null;
  created_at: number;
  /** Who a support token was issued by (`POST /super/impersonate`, migration 0041); null for every other token. */
  impersonated_by: string | null;
}

/** An account's suspension and limits set by a Super-Admin (src/admin/, migration 0041); no row: neither. */
export interface AccountControlsTable {
  account_id: string;
  suspended_at: number | null;
  suspended_reason: string | null;
  /** Who suspended it: a user id or token id of the root account. */
  suspended_by: string | null;
  max_endpoints: number | null;
  events_per_second: number | null;
  script_cpu_ms_per_minute: number | null;
  updated_at: number;
}

/** One row (id 1): the external sign-in mapping set with PUT /auth/oidc/mapping, as JSON (src/oidc/). */
export interface OidcMappingTable {
  id: number;
  mapping: string;
  updated_at: number;
  updated_by: string | null;
}

/** The user an identity of a provider (issuer, subject) signs in as, per account (src/oidc/). */
export interface OidcIdentitiesTable {
  issuer: string;
  subject: string;
  account_id: string;
  user_id: string;
  created_at: number;
  last_sign_in_at: number;
}

/** One row (id 1): the installed licence text and when the grace period began (src/licence/). */
export interface LicenceTable {
  id: number;
  licence: string | null;
  grace_started_at: number;
  updated_at: number;
}
