/**
 * The DTLS server's certificate: a self-signed X.509 v3 certificate made here (ECDSA P-256 with
 * SHA-256, RFC 5280), or an operator-supplied PEM chain and key checked before use. No dependencies:
 * a minimal DER writer (X.690) and node:crypto.
 *
 * The generated certificate is both the server's certificate and the trust anchor that clients
 * download and pin (`coap-client -C cert.pem`, `openssl verify -CAfile cert.pem cert.pem`). It is a
 * CA (basicConstraints cA TRUE, pathLen 0; keyUsage digitalSignature + keyCertSign): OpenSSL 1.1.x
 * and LibreSSL only take a certificate as self-signed, hence as its own issuer, when its keyUsage
 * allows keyCertSign, and RFC 5280 4.2.1.3 allows keyCertSign only with cA TRUE. OpenSSL 3, GnuTLS,
 * mbed TLS and wolfSSL accept it as a pinned server certificate as they would a CA FALSE one.
 */
import { createHash, createPrivateKey, generateKeyPairSync, randomBytes, sign, X509Certificate, type KeyObject } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';

export interface SelfSignedOptions {
  /** Subject and issuer CN, 1 to 64 characters. */
  commonName: string;
  /** Validity from `now` (notBefore is an hour earlier, for clients whose clocks lag). */
  lifetimeDays: number;
  /** subjectAltName dNSName entries, ASCII (IDNs as A-labels); `*.` wildcard allowed. */
  dnsNames?: string[];
  /** subjectAltName iPAddress entries, IPv4 or IPv6 (no zone). */
  ipAddresses?: string[];
  now?: Date;
}

export interface GeneratedCertificate {
  certificatePem: string;
  certificateDer: Buffer;
  /** PKCS#8 PEM. */
  privateKeyPem: string;
  privateKey: KeyObject;
  notAfter: Date;
  /** SHA-256 of the DER, upper-case hex with colons, as X509Certificate.fingerprint256. */
  fingerprintSha256: string;
}

export interface LoadedCertificate {
  /** DER, leaf first, each followed by its issuer. */
  chain: Buffer[];
  privateKey: KeyObject;
  notAfter: Date;
  fingerprintSha256: string;
}

const DAY_MS = 86_400_000;
const CLOCK_SKEW_MS = 3_600_000;

// --- DER writer (X.690 8 and 10) ---

function der(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const length: number[] = [];
  for (let n = body.length; n > 0; n = Math.floor(n / 256)) length.unshift(n % 256);
  const head = body.length < 0x80 ? [tag, body.length] : [tag, 0x80 | length.length, ...length];
  return Buffer.concat([Buffer.from(head), body]);
}

const sequence = (...items: Buffer[]): Buffer => der(0x30, ...items);
const set = (...items: Buffer[]): Buffer => der(0x31, ...items);
/** Context-specific constructed tag [n], EXPLICIT. */
const explicit = (n: number, inner: Buffer): Buffer => der(0xa0 | n, inner);
const octetString = (bytes: Buffer): Buffer => der(0x04, bytes);
const bitString = (bytes: Buffer, unusedBits = 0): Buffer => der(0x03, Buffer.from([unusedBits]), bytes);
const boolean = (value: boolean): Buffer => der(0x01, Buffer.from([value ? 0xff : 0x00]));

/** INTEGER from an unsigned big-endian magnitude: minimal, with a 0 byte when the top bit is set. */
function integer(magnitude: Buffer): Buffer {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++;
  const bytes = magnitude.length === 0 ? Buffer.from([0]) : magnitude.subarray(start);
  return der(0x02, (bytes[0]! & 0x80) !== 0 ? Buffer.from([0]) : Buffer.alloc(0), bytes);
}

function oid(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const out: number[] = [];
  for (const arc of [first * 40 + second, ...rest]) {
    const chunk = [arc % 128];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift(0x80 | (v % 128));
    out.push(...chunk);
  }
  return der(0x06, Buffer.from(out));
}

/** DirectoryString: PrintableString when the text allows, else UTF8String (RFC 5280 4.1.2.4). */
function directoryString(text: string): Buffer {
  return /^[A-Za-z0-9 '()+,\-./:=?]*$/.test(text) ? der(0x13, Buffer.from(text, 'ascii')) : der(0x0c, Buffer.from(text, 'utf8'));
}

/** RFC 5280 4.1.2.5: UTCTime for 1950 through 2049, GeneralizedTime otherwise; seconds, Zulu. */
function time(date: Date): Buffer {
  const digits = date.toISOString().slice(0, 19).replace(/\D/g, ''); // YYYYMMDDHHMMSS
  const year = date.getUTCFullYear();
  return year >= 1950 && year <= 2049 ? der(0x17, Buffer.from(`${digits.slice(2)}Z`, 'ascii')) : der(0x18, Buffer.from(`${digits}Z`, 'ascii'));
}

/** Named BIT STRING (keyUsage) in DER: trailing zero bits dropped. */
function namedBits(bits: number[]): Buffer {
  const last = Math.max(...bits);
  const bytes = Buffer.alloc((last >> 3) + 1);
  for (const bit of bits) bytes[bit >> 3] = bytes[bit >> 3]! | (0x80 >> (bit & 7));
  return bitString(bytes, 7 - (last & 7));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(oid(id), ...(critical ? [boolean(true)] : []), octetString(value));
}

// --- certificate ---

const ECDSA_WITH_SHA256 = sequence(oid('1.2.840.10045.4.3.2')); // RFC 5758 3.2: parameters absent
const OID = {
  commonName: '2.5.4.3', basicConstraints: '2.5.29.19', keyUsage: '2.5.29.15', extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17', subjectKeyIdentifier: '2.5.29.14', serverAuth: '1.3.6.1.5.5.7.3.1',
} as const;
const KEY_USAGE = { digitalSignature: 0, keyCertSign: 5 } as const;

function ipBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  if (!isIPv6(ip) || ip.includes('%')) throw new Error(`self-signed certificate: "${ip}" is not an IPv4 or IPv6 address (without zone)`);
  let text = ip;
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip); // ::ffff:192.0.2.1
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${ip.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const groups = (part: string | undefined): string[] => (part ? part.split(':') : []);
  const left = groups(head);
  const right = groups(tail);
  const all = tail === undefined ? left : [...left, ...new Array<string>(8 - left.length - right.length).fill('0'), ...right];
  const out = Buffer.alloc(16);
  all.forEach((group, i) => out.writeUInt16BE(parseInt(group, 16), i * 2));
  return out;
}

function checkOptions(options: SelfSignedOptions, now: Date): void {
  const cn = [...options.commonName];
  if (cn.length < 1 || cn.length > 64) throw new Error('self-signed certificate: commonName must have 1 to 64 characters (RFC 5280 ub-common-name)');
  if (!Number.isFinite(options.lifetimeDays) || options.lifetimeDays <= 0) throw new Error('self-signed certificate: lifetimeDays must be a positive number');
  if (Number.isNaN(now.getTime())) throw new Error('self-signed certificate: now is not a valid date');
  for (const name of options.dnsNames ?? []) {
    if (name.length > 253 || !/^(\*\.)?[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(name)) {
      throw new Error(`self-signed certificate: "${name}" is not a DNS name (ASCII labels; internationalized names as xn-- A-labels)`);
    }
  }
}

const fingerprint = (certificateDer: Buffer): string =>
  createHash('sha256').update(certificateDer).digest('hex').toUpperCase().replace(/(..)(?!$)/g, '$1:');

const toPem = (label: string, bytes: Buffer): string =>
  `-----BEGIN ${label}-----\n${(bytes.toString('base64').match(/.{1,64}/g) ?? []).join('\n')}\n-----END ${label}-----\n`;

/** A fresh P-256 key and a self-signed certificate for it, usable as server certificate and as the clients' CA file. */
export function generateSelfSigned(options: SelfSignedOptions): GeneratedCertificate {
  const now = options.now ?? new Date();
  checkOptions(options, now);
  const start = Math.floor(now.getTime() / 1000) * 1000;
  const notBefore = new Date(start - CLOCK_SKEW_MS);
  const notAfter = new Date(Math.floor((start + options.lifetimeDays * DAY_MS) / 1000) * 1000);
  if (!(notAfter.getUTCFullYear() <= 9999)) throw new Error('self-signed certificate: notAfter must be before the year 10000');

  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });
  const point = Buffer.concat([Buffer.from([0x04]), Buffer.from(jwk.x ?? '', 'base64url'), Buffer.from(jwk.y ?? '', 'base64url')]);
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x3f) | 0x40; // positive, always 16 bytes, 126 random bits
  const name = sequence(set(sequence(oid(OID.commonName), directoryString(options.commonName))));
  const altNames = [
    ...(options.dnsNames ?? []).map((dns) => der(0x82, Buffer.from(dns, 'ascii'))), // [2] IMPLICIT IA5String
    ...(options.ipAddresses ?? []).map((ip) => der(0x87, ipBytes(ip))), // [7] IMPLICIT OCTET STRING
  ];
  const extensions = [
    extension(OID.basicConstraints, true, sequence(boolean(true), integer(Buffer.from([0])))),
    extension(OID.keyUsage, true, namedBits([KEY_USAGE.digitalSignature, KEY_USAGE.keyCertSign])),
    extension(OID.extKeyUsage, false, sequence(oid(OID.serverAuth))),
    ...(altNames.length > 0 ? [extension(OID.subjectAltName, false, sequence(...altNames))] : []),
    // RFC 5280 4.2.1.2 method (1): SHA-1 of the subjectPublicKey BIT STRING's value
    extension(OID.subjectKeyIdentifier, false, octetString(createHash('sha1').update(point).digest())),
  ];
  const tbs = sequence(
    explicit(0, integer(Buffer.from([2]))), // v3
    integer(serial),
    ECDSA_WITH_SHA256,
    name,
    sequence(time(notBefore), time(notAfter)),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(...extensions)),
  );
  const certificateDer = sequence(tbs, ECDSA_WITH_SHA256, bitString(sign('sha256', tbs, privateKey))); // DER ECDSA-Sig-Value
  return {
    certificatePem: toPem('CERTIFICATE', certificateDer),
    certificateDer,
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    privateKey,
    notAfter,
    fingerprintSha256: fingerprint(certificateDer),
  };
}

const reason = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** An operator's PEM chain (server certificate first) and its EC P-256 private key, checked to belong together. */
export function loadCertificate(certificatePem: string, privateKeyPem: string): LoadedCertificate {
  const blocks = [...certificatePem.matchAll(/-----BEGIN CERTIFICATE-----([^-]*)-----END CERTIFICATE-----/g)];
  if (blocks.length === 0) throw new Error('certificate: no PEM "-----BEGIN CERTIFICATE-----" block found');
  const certificates = blocks.map((block, i) => {
    const base64 = (block[1] ?? '').replace(/\s+/g, '');
    try {
      if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) throw new Error('not base64');
      return new X509Certificate(Buffer.from(base64, 'base64'));
    } catch (error) {
      throw new Error(`certificate ${i + 1} of ${blocks.length} in the PEM is not a valid X.509 certificate: ${reason(error)}`);
    }
  });
  for (let i = 1; i < certificates.length; i++) {
    const [child, issuer] = [certificates[i - 1]!, certificates[i]!];
    if (!child.checkIssued(issuer) || !child.verify(issuer.publicKey)) {
      throw new Error(`certificate: certificate ${i + 1} in the PEM did not issue certificate ${i}; list the server certificate first, then each issuer in order`);
    }
  }

  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(privateKeyPem);
  } catch (error) {
    throw new Error(`private key: not a readable, unencrypted PEM private key (${reason(error)})`);
  }
  const curve = privateKey.asymmetricKeyDetails?.namedCurve;
  if (privateKey.asymmetricKeyType !== 'ec' || curve !== 'prime256v1') {
    const found = privateKey.asymmetricKeyType === 'ec' ? `EC ${curve ?? 'unknown curve'}` : (privateKey.asymmetricKeyType ?? 'unknown').toUpperCase();
    throw new Error(`private key: must be an EC P-256 (prime256v1) key for the ECDHE_ECDSA suites, found ${found}`);
  }
  const leaf = certificates[0]!;
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new Error(`private key: does not match the public key of the first certificate in the PEM (${leaf.subject.replace(/\n/g, ', ')})`);
  }
  const notAfter = new Date(leaf.validTo);
  if (Number.isNaN(notAfter.getTime())) throw new Error(`certificate: unreadable notAfter "${leaf.validTo}"`);
  return { chain: certificates.map((certificate) => certificate.raw), privateKey, notAfter, fingerprintSha256: leaf.fingerprint256 };
}
