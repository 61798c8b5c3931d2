import { createPublicKey, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { ConfigError, ENV_NAMES } from '../config.js';
import { VENDOR_PUBLIC_KEY } from './public-key.js';

/** DER prefix of an Ed25519 SubjectPublicKeyInfo: a bare 32-byte key after it makes the SPKI. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const PEM_BLOCK = /-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/g;

/**
 * The keys a licence may be signed with: the vendor's, built in, and those the operator adds with
 * `IOTBRIDGE_LICENCE_PUBLIC_KEYS` (whoever sets that licenses the installation themselves).
 */
export function trustedKeys(extra: readonly string[]): KeyObject[] {
  return [createPublicKey(VENDOR_PUBLIC_KEY), ...extra.flatMap((entry) => parseKeys(entry))];
}

/**
 * One entry of `IOTBRIDGE_LICENCE_PUBLIC_KEYS`: PEM text (one or more blocks), base64 of a DER SPKI or of a
 * bare 32-byte Ed25519 key, or the path of a file holding any of these.
 */
function parseKeys(entry: string): KeyObject[] {
  const text = entry.trim();
  if (text === '') return [];
  if (!text.includes('-----BEGIN')) {
    if (existsSync(text)) return parseKeys(readFileSync(text, 'utf8'));
    if (!/^[A-Za-z0-9+/=_\s-]+$/.test(text)) throw new ConfigError(`${ENV_NAMES.licencePublicKeys}: ${text} is neither a key nor a readable file`);
  }
  const pems = text.match(PEM_BLOCK);
  const keys = pems ? pems.map((pem) => key(() => createPublicKey(pem))) : text.split(/[\s,]+/).filter(Boolean).map((part) => key(() => fromBase64(part)));
  return keys;
}

function fromBase64(text: string): KeyObject {
  const der = Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64');
  return createPublicKey({ key: der.length === 32 ? Buffer.concat([ED25519_SPKI_PREFIX, der]) : der, format: 'der', type: 'spki' });
}

function key(make: () => KeyObject): KeyObject {
  let made: KeyObject;
  try {
    made = make();
  } catch (error) {
    throw new ConfigError(`${ENV_NAMES.licencePublicKeys}: not a public key (${(error as Error).message})`);
  }
  if (made.asymmetricKeyType !== 'ed25519') throw new ConfigError(`${ENV_NAMES.licencePublicKeys}: licence keys are Ed25519, got ${made.asymmetricKeyType ?? 'an unknown type'}`);
  return made;
}
