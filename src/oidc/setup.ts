import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { ConfigError, ENV_NAMES, type Config } from '../config.js';
import type { Domain } from '../domain/domain.js';
import { IdentityProvider } from './identity-provider.js';
import { MappingError, parseMapping, type MappingDocument } from './mapping.js';
import type { OidcStore } from './model.js';
import { OidcSignIn } from './oidc-sign-in.js';
import { MemoryPendingLogins } from './pending-logins.js';

/**
 * External sign-in from configuration, or undefined when `IOTBRIDGE_OIDC_ISSUER` is unset. The provider is not
 * asked anything here: discovery happens at the first sign-in, so a provider that is down does not stop the start.
 */
export async function createOidcSignIn(config: Config, deps: { domain: Domain; store: OidcStore; rootAccountId: string; logger: Logger }): Promise<OidcSignIn | undefined> {
  const { oidcIssuer: issuer, oidcClientId: clientId } = config;
  if (issuer === undefined || clientId === undefined) return undefined;
  const fileMapping = config.oidcMapping === undefined ? undefined : readMappingFile(config.oidcMapping, config, deps.rootAccountId);
  if (fileMapping) await warnAboutMissingAccounts(fileMapping, deps);
  return new OidcSignIn({
    provider: new IdentityProvider({ issuer, clientId, clientSecret: config.oidcClientSecret, scopes: config.oidcScopes }),
    store: deps.store,
    pending: new MemoryPendingLogins(),
    users: deps.domain.users,
    accounts: deps.domain.accounts,
    rootAccountId: deps.rootAccountId,
    mode: config.oidcMode,
    fileMapping,
    redirectUrl: config.oidcRedirectUrl,
    name: config.oidcName,
  });
}

function readMappingFile(file: string, config: Config, rootAccountId: string): MappingDocument {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError(`cannot read ${ENV_NAMES.oidcMapping} file ${file}: ${(error as Error).message}`);
  }
  try {
    return parseMapping(parsed, { mode: config.oidcMode, rootAccountId });
  } catch (error) {
    if (error instanceof MappingError) throw new ConfigError(`${ENV_NAMES.oidcMapping} file ${file}: ${error.message}`);
    throw error;
  }
}

/** Accounts may be created after the mapping is written: a missing one is told, not fatal (it maps nobody meanwhile). */
async function warnAboutMissingAccounts(mapping: MappingDocument, deps: { domain: Domain; logger: Logger }): Promise<void> {
  for (const [name, target] of Object.entries(mapping.domains ?? mapping.organizations ?? {})) {
    try {
      await deps.domain.accounts.platformScope(target.accountId, 'oidc');
    } catch {
      deps.logger.warn({ entry: name, accountId: target.accountId }, `${ENV_NAMES.oidcMapping}: the account of "${name}" does not exist; it maps nobody until it does`);
    }
  }
}
