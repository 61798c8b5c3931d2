// Secrets in an import/export document (docs/imex.md "Secrets"): exported only when asked, each one sealed with
// a key derived from the caller's passphrase, so the document can be stored and sent like any file.
import { createCipheriv, createDecipheriv, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { Type, type Static } from 'typebox';
import { AppError } from '../errors.js';

/** The shortest passphrase that seals an export. */
export const PASSPHRASE_MIN_LENGTH = 12;
/** scrypt cost of the key: ~100 ms once per export or import. Imports accept up to MAX_COST (a document cannot make the service spin). */
const COST = 2 ** 15;
const MAX_COST = 2 ** 17;
const BLOCK_SIZE = 8;
const KEY_BYTES = 32;
/** What `check` seals: an import knows a wrong passphrase before it reads any item. */
const CHECK_TEXT = 'iotbridge-export-secrets';

export const SecretsHeader = Type.Object(
  {
    kdf: Type.Literal('scrypt'),
    cost: Type.Integer({ minimum: 1024, maximum: MAX_COST }),
    blockSize: Type.Literal(BLOCK_SIZE),
    salt: Type.String({ maxLength: 100 }),
    check: Type.String({ maxLength: 200 }),
  },
  { description: 'Present when the export holds secrets: how their key is derived from the passphrase (AES-256-GCM, values `{"$sealed": "…"}`)' },
);
export type SecretsHeader = Static<typeof SecretsHeader>;

/** A sealed value in the document. */
export interface Sealed {
  readonly $sealed: string;
}

/** Seals and opens the secrets of one document with the key of one passphrase and salt. */
export class Sealer {
  readonly #key: Buffer;
  readonly header: SecretsHeader;

  private constructor(key: Buffer, header: Omit<SecretsHeader, 'check'> & { check?: string }) {
    this.#key = key;
    this.header = { kdf: header.kdf, cost: header.cost, blockSize: header.blockSize, salt: header.salt, check: header.check ?? this.#sealText(CHECK_TEXT) };
  }

  /** A sealer for a new export; `IOTB_IMEX_PASSPHRASE` when the passphrase is too short. */
  static async forExport(passphrase: string | undefined): Promise<Sealer> {
    if (passphrase === undefined || [...passphrase].length < PASSPHRASE_MIN_LENGTH) {
      throw new AppError('IOTB_IMEX_PASSPHRASE', `Secrets are exported only sealed with a passphrase of at least ${PASSPHRASE_MIN_LENGTH} characters (header x-iotbridge-passphrase)`);
    }
    const salt = randomBytes(16).toString('base64url');
    return new Sealer(await deriveKey(passphrase, salt, COST), { kdf: 'scrypt', cost: COST, blockSize: BLOCK_SIZE, salt });
  }

  /** The sealer of a document's header; `IOTB_IMEX_PASSPHRASE` when no passphrase or the wrong one is given. */
  static async forImport(header: SecretsHeader, passphrase: string | undefined): Promise<Sealer> {
    if (passphrase === undefined) throw new AppError('IOTB_IMEX_PASSPHRASE', 'The document holds sealed secrets: send its passphrase in the header x-iotbridge-passphrase');
    const sealer = new Sealer(await deriveKey(passphrase, header.salt, header.cost), header);
    let text: string | undefined;
    try {
      text = sealer.#openText(header.check);
    } catch {
      text = undefined;
    }
    const expected = Buffer.from(CHECK_TEXT);
    if (text === undefined || text.length !== CHECK_TEXT.length || !timingSafeEqual(Buffer.from(text), expected)) {
      throw new AppError('IOTB_IMEX_PASSPHRASE', 'The passphrase does not open the secrets of this document');
    }
    return sealer;
  }

  seal(value: unknown): Sealed {
    return { $sealed: this.#sealText(JSON.stringify(value)) };
  }

  /** The value of a `$sealed` string; throws when it was not sealed with this key (tampered or another document's). */
  open(sealed: string): unknown {
    return JSON.parse(this.#openText(sealed)) as unknown;
  }

  #sealText(text: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), body.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
  }

  #openText(sealed: string): string {
    const [version, iv, body, tag] = sealed.split('.');
    if (version !== 'v1' || iv === undefined || body === undefined || tag === undefined) throw new Error('not a sealed value');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/**
 * The item with every `{"$sealed": "…"}` inside it opened. Without a sealer (an import without the passphrase of a
 * document that has none) a sealed value is an error; so is one that does not open.
 */
export function openSealedValues(value: unknown, sealer: Sealer | undefined): unknown {
  if (Array.isArray(value)) return value.map((entry) => openSealedValues(entry, sealer));
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value);
  if (entries.length === 1 && entries[0]![0] === '$sealed' && typeof entries[0]![1] === 'string') {
    if (!sealer) throw new AppError('IOTB_IMEX_PASSPHRASE', 'a sealed secret, but the document has no "secrets" header');
    try {
      return sealer.open(entries[0]![1]);
    } catch {
      throw new AppError('IOTB_IMEX_PASSPHRASE', 'a sealed secret that this passphrase does not open');
    }
  }
  return Object.fromEntries(entries.map(([name, entry]) => [name, openSealedValues(entry, sealer)]));
}

function deriveKey(passphrase: string, salt: string, cost: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(passphrase.normalize('NFC'), salt, KEY_BYTES, { N: cost, r: BLOCK_SIZE, p: 1, maxmem: 256 * cost * BLOCK_SIZE }, (error, key) => (error ? reject(error) : resolve(key))),
  );
}
