import { readFileSync } from 'node:fs';
import { BlockList } from 'node:net';
import { addToList } from './domain/address-list.js';
import { DEFAULTS, ENV_NAMES, type Config } from './config-settings.js';

export class ConfigError extends Error {}

export type Source = Partial<Record<keyof Config, unknown>>;

type OidcFields = 'oidcIssuer' | 'oidcClientId' | 'oidcClientSecret' | 'oidcMode' | 'oidcScopes' | 'oidcRedirectUrl' | 'oidcMapping' | 'oidcName';

/** External sign-in: off without an issuer; with one, a client id, a known mode and the `openid` scope are needed. */
export function oidc(source: Source): Pick<Config, OidcFields> {
  const issuer = optionalString(source, 'oidcIssuer');
  const mode = optionalString(source, 'oidcMode');
  const scopes = (optionalString(source, 'oidcScopes') ?? DEFAULTS.oidcScopes).split(/[\s,]+/).filter((scope) => scope !== '');
  const fields = {
    oidcIssuer: issuer,
    oidcClientId: optionalString(source, 'oidcClientId'),
    oidcClientSecret: optionalString(source, 'oidcClientSecret'),
    oidcMode: mode as Config['oidcMode'],
    oidcScopes: scopes.join(' '),
    oidcRedirectUrl: optionalString(source, 'oidcRedirectUrl'),
    oidcMapping: optionalString(source, 'oidcMapping'),
    oidcName: optionalString(source, 'oidcName') ?? DEFAULTS.oidcName,
  };
  if (mode !== undefined && mode !== 'domain' && mode !== 'organization') throw new ConfigError(`${ENV_NAMES.oidcMode} must be domain or organization`);
  if (issuer === undefined) return fields;
  if (!isHttpUrl(issuer, true)) throw new ConfigError(`${ENV_NAMES.oidcIssuer} must be an https:// URL (http:// only for a provider on localhost / a loopback address)`);
  if (fields.oidcClientId === undefined) throw new ConfigError(`${ENV_NAMES.oidcIssuer} needs ${ENV_NAMES.oidcClientId}`);
  if (!scopes.includes('openid')) throw new ConfigError(`${ENV_NAMES.oidcScopes} must include openid`);
  if (fields.oidcRedirectUrl !== undefined && !isHttpUrl(fields.oidcRedirectUrl, false)) throw new ConfigError(`${ENV_NAMES.oidcRedirectUrl} must be an http(s):// URL`);
  return fields;
}

/** An http(s) URL; with `secureUnlessLoopback`, plain http only towards a loopback host (a provider in tests or on the same machine). */
function isHttpUrl(text: string, secureUnlessLoopback: boolean): boolean {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return false;
  }
  if (url.protocol === 'https:') return true;
  if (url.protocol !== 'http:') return false;
  return !secureUnlessLoopback || ['localhost', '[::1]'].includes(url.hostname) || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
}

/** Fastify's `trustProxy`: unset or false → none, true → any, a whole number → hops, else the address list. */
export function trustProxy(value: unknown): boolean | number | string {
  if (value === undefined || value === null || value === '' || value === false || value === 'false') return false;
  if (value === true || value === 'true') return true;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return value;
  if (typeof value === 'string') return /^\d+$/.test(value) ? Number(value) : value;
  throw new ConfigError(`${ENV_NAMES.trustProxy} must be true, false, a hop count or a list of proxy addresses`);
}

export function outboundAllow(value: unknown): string[] {
  if (value === undefined || value === null || value === '') return [];
  const entries = Array.isArray(value) ? value : typeof value === 'string' ? value.split(',') : undefined;
  if (!entries || entries.some((entry) => typeof entry !== 'string')) throw new ConfigError(`${ENV_NAMES.outboundAllow} must be a comma-separated list of addresses or CIDRs`);
  const list = (entries as string[]).map((entry) => entry.trim()).filter((entry) => entry !== '');
  for (const entry of list) {
    try {
      addToList(new BlockList(), entry);
    } catch {
      throw new ConfigError(`${ENV_NAMES.outboundAllow}: ${entry} is not an address or a CIDR (e.g. 10.0.0.0/8, fd00::/8)`);
    }
  }
  return list;
}

/** Comma-separated text (PEM blocks hold no commas) or a list, each a key or a file path (src/licence/keys.ts reads them). */
export function licencePublicKeys(value: unknown): string[] {
  if (value === undefined || value === null || value === '') return [];
  const entries = Array.isArray(value) ? value : typeof value === 'string' ? value.split(',') : undefined;
  if (!entries || entries.some((entry) => typeof entry !== 'string')) throw new ConfigError(`${ENV_NAMES.licencePublicKeys} must be comma-separated keys or key files`);
  return (entries as string[]).map((entry) => entry.trim()).filter((entry) => entry !== '');
}

export function readConfigFile(file: string): Source {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError(`cannot read IOTBRIDGE_CONFIG file ${file}: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`IOTBRIDGE_CONFIG file ${file} must hold a JSON object`);
  }
  const unknown = Object.keys(parsed).filter((key) => !(key in ENV_NAMES));
  if (unknown.length > 0) throw new ConfigError(`IOTBRIDGE_CONFIG file ${file} has unknown keys: ${unknown.join(', ')}`);
  return parsed;
}

export function optionalString(source: Source, field: keyof Config): string | undefined {
  const value = source[field];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' && typeof value !== 'number') throw new ConfigError(`${ENV_NAMES[field]} must be a string`);
  return String(value);
}

export function integer(source: Source, field: keyof Config, min: number, max: number): number {
  const raw = source[field];
  const value = typeof raw === 'number' ? raw : Number(String(raw).trim());
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${ENV_NAMES[field]} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

export function optionalPort(source: Source, field: keyof Config): number | undefined {
  return optionalString(source, field) === undefined ? undefined : port(source, field);
}

/** The TLS listener needs a port, a certificate and a key: all three or none. */
export function mqttTls(source: Source): Pick<Config, 'mqttTlsPort' | 'mqttTlsCert' | 'mqttTlsKey'> {
  const tls = { mqttTlsPort: optionalPort(source, 'mqttTlsPort'), mqttTlsCert: optionalString(source, 'mqttTlsCert'), mqttTlsKey: optionalString(source, 'mqttTlsKey') };
  if (tls.mqttTlsPort !== undefined && (tls.mqttTlsCert === undefined || tls.mqttTlsKey === undefined)) {
    throw new ConfigError(`${ENV_NAMES.mqttTlsPort} needs ${ENV_NAMES.mqttTlsCert} and ${ENV_NAMES.mqttTlsKey} (PEM files)`);
  }
  return tls;
}

/** A switch: true or false (also as text). */
export function flag(source: Source, field: keyof Config): boolean {
  const value = source[field];
  if (value === true || value === 'true') return true;
  if (value === undefined || value === null || value === false || value === 'false') return false;
  throw new ConfigError(`${ENV_NAMES[field]} must be true or false, got ${JSON.stringify(value)}`);
}

export const port = (source: Source, field: keyof Config) => integer(source, field, 0, 65_535);
export const positiveInt = (source: Source, field: keyof Config) => integer(source, field, 1, 2 ** 31 - 1);
export const nonNegativeInt = (source: Source, field: keyof Config) => integer(source, field, 0, 2 ** 31 - 1);
