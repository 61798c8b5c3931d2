import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { X509Certificate, type KeyObject } from 'node:crypto';
import path from 'node:path';
import { generateSelfSigned, loadCertificate } from './self-signed.js';

/** The certificate the DTLS server presents, as handshakes and the API need it. */
export interface CurrentCertificate {
  /** DER, leaf first. */
  readonly chain: readonly Buffer[];
  readonly privateKey: KeyObject;
  readonly pem: string;
  readonly notAfter: Date;
  readonly fingerprintSha256: string;
  /** `generated` (self-signed, kept in the data directory) or `supplied` (IOTBRIDGE_COAPS_CERT / _KEY). */
  readonly source: 'generated' | 'supplied';
}

export interface ServerCertificateOptions {
  readonly dataDir: string;
  /** Operator-supplied PEM files; both or neither. */
  readonly certFile?: string | undefined;
  readonly keyFile?: string | undefined;
  readonly commonName?: string;
  readonly lifetimeDays?: number;
}

/**
 * The DTLS server certificate (SPEC Authentication 7: self-signed; devices download it to verify the server).
 * Generated at first start (ECDSA P-256) and kept in `<dataDir>/coaps/`, or read from the operator's files.
 * `rotate()` (or `reload()` after the operator replaced the files) takes effect at the next handshake: no
 * restart, and established connections keep going.
 */
export class ServerCertificate {
  readonly #options: ServerCertificateOptions;
  #current: CurrentCertificate | undefined;

  constructor(options: ServerCertificateOptions) {
    this.#options = options;
  }

  get current(): CurrentCertificate {
    if (!this.#current) throw new Error('the server certificate is not loaded');
    return this.#current;
  }

  /** Reads the certificate (supplied files, else the stored generated one, else a new one). */
  async load(): Promise<CurrentCertificate> {
    const { certFile, keyFile } = this.#options;
    if (certFile !== undefined || keyFile !== undefined) {
      if (certFile === undefined || keyFile === undefined) throw new Error('IOTBRIDGE_COAPS_CERT and IOTBRIDGE_COAPS_KEY go together');
      const pem = await readFile(certFile, 'utf8');
      const loaded = loadCertificate(pem, await readFile(keyFile, 'utf8'));
      this.#current = { ...loaded, pem, source: 'supplied' };
      return this.#current;
    }
    try {
      const pem = await readFile(this.#certPath(), 'utf8');
      const loaded = loadCertificate(pem, await readFile(this.#keyPath(), 'utf8'));
      this.#current = { ...loaded, pem, source: 'generated' };
      return this.#current;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    return this.rotate();
  }

  /** A new self-signed certificate, stored (key 0600) and used from the next handshake on. */
  async rotate(): Promise<CurrentCertificate> {
    if (this.#options.certFile !== undefined) return this.load();
    const made = generateSelfSigned({ commonName: this.#options.commonName ?? 'iotbridge', lifetimeDays: this.#options.lifetimeDays ?? 3650, dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', '::1'] });
    await mkdir(path.dirname(this.#certPath()), { recursive: true, mode: 0o700 });
    // Written aside and renamed: a crash never leaves a certificate without its key.
    await writeFile(`${this.#keyPath()}.new`, made.privateKeyPem, { mode: 0o600 });
    await writeFile(`${this.#certPath()}.new`, made.certificatePem);
    await rename(`${this.#keyPath()}.new`, this.#keyPath());
    await rename(`${this.#certPath()}.new`, this.#certPath());
    this.#current = { chain: [made.certificateDer], privateKey: made.privateKey, pem: made.certificatePem, notAfter: made.notAfter, fingerprintSha256: made.fingerprintSha256, source: 'generated' };
    return this.#current;
  }

  /** The leaf certificate, PEM or DER, for devices to pin: never the key. */
  download(format: 'pem' | 'der'): Buffer | string {
    const current = this.current;
    if (format === 'der') return current.chain[0]!;
    return new X509Certificate(current.chain[0]!).toString();
  }

  #certPath(): string {
    return path.join(this.#options.dataDir, 'coaps', 'server-cert.pem');
  }

  #keyPath(): string {
    return path.join(this.#options.dataDir, 'coaps', 'server-key.pem');
  }
}
