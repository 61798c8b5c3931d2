// The vendor's licence tool: makes Ed25519 key pairs and signs licences (docs/admin.md "Licence").
// Kept out of the product: nothing under src/ imports it, and the service never holds a private key.
//   node --import tsx scripts/licence-sign.ts --key private.pem --licensee "ACME" --expires 2027-12-31 \
//     --max-endpoints 1000 [--feature x]... [--id <id>] > licence.txt
//   node --import tsx scripts/licence-sign.ts --generate-keys <dir>   (writes private.pem and public.pem)
import { createPrivateKey, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { LicencePayload } from '../src/licence/licence-text.js';

const USAGE = `Usage:
  licence-sign --key <private.pem> --licensee <name> --expires <YYYY-MM-DD|ISO time>
               [--max-endpoints <n>] [--feature <name>]... [--id <id>] [--issued <ISO time>]
      prints the signed licence text (payload.signature) on stdout
  licence-sign --generate-keys <dir>
      writes a new Ed25519 pair: <dir>/private.pem (keep it secret) and <dir>/public.pem`;

/** The licence text the service reads: `base64url(payload JSON).base64url(Ed25519 signature of those bytes)`. */
export function signLicence(payload: LicencePayload, privateKey: KeyObject | string): string {
  const key = typeof privateKey === 'string' ? createPrivateKey(privateKey) : privateKey;
  const bytes = Buffer.from(JSON.stringify(payload), 'utf8');
  return `${bytes.toString('base64url')}.${sign(null, bytes, key).toString('base64url')}`;
}

/** A date alone means the end of that day (UTC): the licence is good through it. */
export function expiryOf(text: string, option = '--expires'): string {
  const ms = /^\d{4}-\d{2}-\d{2}$/.test(text) ? Date.parse(`${text}T23:59:59.999Z`) : Date.parse(text);
  if (Number.isNaN(ms)) throw new Error(`${option} ${text} is not a date (YYYY-MM-DD or an ISO time)`);
  return new Date(ms).toISOString();
}

export function generateKeys(dir: string): { privateFile: string; publicFile: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  mkdirSync(dir, { recursive: true });
  const privateFile = path.join(dir, 'private.pem');
  const publicFile = path.join(dir, 'public.pem');
  if (existsSync(privateFile)) throw new Error(`${privateFile} exists: not overwriting a key`);
  writeFileSync(privateFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  writeFileSync(publicFile, publicKey.export({ type: 'spki', format: 'pem' }));
  return { privateFile, publicFile };
}

function main(argv: string[]): void {
  const { values } = parseArgs({
    args: argv,
    options: {
      key: { type: 'string' },
      licensee: { type: 'string' },
      expires: { type: 'string' },
      issued: { type: 'string' },
      id: { type: 'string' },
      'max-endpoints': { type: 'string' },
      feature: { type: 'string', multiple: true },
      'generate-keys': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return void process.stdout.write(`${USAGE}\n`);
  if (values['generate-keys'] !== undefined) {
    const { privateFile, publicFile } = generateKeys(values['generate-keys']);
    process.stderr.write(`wrote ${privateFile} (secret: it signs licences) and ${publicFile}\n`);
    return;
  }
  if (!values.key || !values.licensee || !values.expires) throw new Error(`--key, --licensee and --expires are required\n\n${USAGE}`);
  const maxEndpoints = values['max-endpoints'] === undefined ? undefined : Number(values['max-endpoints']);
  if (maxEndpoints !== undefined && !(Number.isInteger(maxEndpoints) && maxEndpoints >= 0)) throw new Error('--max-endpoints must be a whole number');
  const issuedAt = values.issued === undefined ? new Date().toISOString() : expiryOf(values.issued, '--issued');
  const payload: LicencePayload = {
    id: values.id ?? randomUUID(),
    licensee: values.licensee,
    issuedAt,
    expiresAt: expiryOf(values.expires),
    limits: { ...(maxEndpoints === undefined ? {} : { maxEndpoints }), ...(values.feature ? { features: values.feature } : {}) },
  };
  process.stdout.write(`${signLicence(payload, readFileSync(values.key, 'utf8'))}\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`licence-sign: ${(error as Error).message}\n`);
    process.exit(1);
  }
}
