import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, createPrivateKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generateSelfSigned, loadCertificate } from '../../src/dtls/self-signed.js';

let dir: string;
before(() => { dir = mkdtempSync(join(tmpdir(), 'iotbridge-self-signed-')); });
after(() => rmSync(dir, { recursive: true, force: true }));

/** openssl, bounded; stdout and stderr together, and the exit status. */
function openssl(...args: string[]): { status: number | null; output: string } {
  const run = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8', timeout: 15_000 });
  if (run.error) throw run.error;
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

const now = new Date('2026-03-01T12:00:00.500Z');
const options = { commonName: 'iotbridge.local', lifetimeDays: 365, dnsNames: ['iotbridge.local', 'localhost'], ipAddresses: ['127.0.0.1', '::1', '2001:db8::42'], now };

describe('generateSelfSigned', () => {
  const generated = generateSelfSigned(options);
  const cert = new X509Certificate(generated.certificatePem);

  it('makes a certificate that node parses with the asked subject, issuer, validity and names', () => {
    assert.equal(cert.subject, 'CN=iotbridge.local');
    assert.equal(cert.issuer, 'CN=iotbridge.local');
    assert.equal(new Date(cert.validFrom).toISOString(), '2026-03-01T11:00:00.000Z', 'an hour back, whole seconds');
    assert.equal(new Date(cert.validTo).toISOString(), '2027-03-01T12:00:00.000Z');
    assert.equal(generated.notAfter.toISOString(), '2027-03-01T12:00:00.000Z');
    assert.equal(cert.subjectAltName, 'DNS:iotbridge.local, DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:2001:DB8:0:0:0:0:0:42');
    assert.equal(cert.checkHost('localhost'), 'localhost');
    assert.equal(cert.checkIP('::1'), '::1');
    assert.equal(cert.checkIP('127.0.0.2'), undefined);
    assert.equal(cert.ca, true);
    assert.deepEqual(cert.keyUsage, ['1.3.6.1.5.5.7.3.1'], 'extendedKeyUsage serverAuth');
    assert.match(cert.serialNumber, /^[4-7][0-9A-F]{31}$/, 'positive, 16 bytes');
  });

  it('signs it with the returned key and reports the DER, PEM and fingerprint of what it made', () => {
    assert.ok(cert.verify(cert.publicKey));
    assert.ok(cert.checkPrivateKey(generated.privateKey));
    assert.equal(generated.fingerprintSha256, cert.fingerprint256);
    assert.deepEqual(cert.raw, generated.certificateDer);
    assert.equal(cert.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
    assert.match(generated.privateKeyPem, /^-----BEGIN PRIVATE KEY-----\n/, 'PKCS#8');
    const reread = createPrivateKey(generated.privateKeyPem);
    assert.ok(reread.equals(generated.privateKey));
    assert.notEqual(generateSelfSigned(options).fingerprintSha256, generated.fingerprintSha256, 'fresh key and serial each time');
  });

  it('shows the X.509 v3 fields and extensions to openssl x509 -text', () => {
    writeFileSync(join(dir, 'cert.pem'), generated.certificatePem);
    const { status, output } = openssl('x509', '-in', 'cert.pem', '-noout', '-text');
    assert.equal(status, 0, output);
    for (const expected of [
      'Version: 3 (0x2)', 'Signature Algorithm: ecdsa-with-SHA256', 'ASN1 OID: prime256v1',
      'Not Before: Mar  1 11:00:00 2026 GMT', 'Not After : Mar  1 12:00:00 2027 GMT',
      'X509v3 Basic Constraints: critical\n                CA:TRUE, pathlen:0',
      'X509v3 Key Usage: critical\n                Digital Signature, Certificate Sign',
      'X509v3 Extended Key Usage: \n                TLS Web Server Authentication',
      'DNS:iotbridge.local, DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:2001:DB8:0:0:0:0:0:42',
    ]) assert.ok(output.includes(expected), `${expected}\n--- in ---\n${output}`);
    const point = cert.publicKey.export({ type: 'spki', format: 'der' }).subarray(-65);
    const ski = createHash('sha1').update(point).digest('hex').toUpperCase().replace(/(..)(?!$)/g, '$1:');
    assert.ok(output.includes(`X509v3 Subject Key Identifier: \n                ${ski}`), output);
  });

  it('is its own trust anchor for openssl verify -CAfile, strict and for the TLS server purpose', () => {
    writeFileSync(join(dir, 'anchor.pem'), generated.certificatePem);
    assert.deepEqual(openssl('verify', '-CAfile', 'anchor.pem', 'anchor.pem'), { status: 0, output: 'anchor.pem: OK\n' });
    assert.equal(openssl('verify', '-x509_strict', '-purpose', 'sslserver', '-CAfile', 'anchor.pem', 'anchor.pem').status, 0);
    writeFileSync(join(dir, 'other.pem'), generateSelfSigned(options).certificatePem);
    assert.notEqual(openssl('verify', '-CAfile', 'other.pem', 'anchor.pem').status, 0, 'another certificate of the same name is no anchor');
  });

  it('encodes times through 2049 as UTCTime and from 2050 as GeneralizedTime (RFC 5280 4.1.2.5)', () => {
    const crossing = generateSelfSigned({ commonName: 'late', lifetimeDays: 2, now: new Date('2049-12-31T10:20:30Z') });
    const der = crossing.certificateDer;
    assert.ok(der.includes(Buffer.concat([Buffer.from([0x17, 13]), Buffer.from('491231092030Z')])), 'notBefore UTCTime');
    assert.ok(der.includes(Buffer.concat([Buffer.from([0x18, 15]), Buffer.from('20500102102030Z')])), 'notAfter GeneralizedTime');
    assert.equal(new Date(new X509Certificate(der).validTo).toISOString(), '2050-01-02T10:20:30.000Z');
    assert.equal(crossing.notAfter.toISOString(), '2050-01-02T10:20:30.000Z');
    writeFileSync(join(dir, 'late.pem'), crossing.certificatePem);
    assert.match(openssl('x509', '-in', 'late.pem', '-noout', '-enddate').output, /notAfter=Jan {2}2 10:20:30 2050 GMT/);
    const before2050 = generateSelfSigned({ commonName: 'early', lifetimeDays: 1, now: new Date('2049-06-01T00:00:00Z') }).certificateDer;
    assert.ok(before2050.includes(Buffer.concat([Buffer.from([0x17, 13]), Buffer.from('490602000000Z')])));
  });

  it('leaves out subjectAltName without names, takes a non-printable CN as UTF8String, and refuses bad options', () => {
    const bareDer = generateSelfSigned({ commonName: 'Gerät 7', lifetimeDays: 1 }).certificateDer;
    const bare = new X509Certificate(bareDer);
    assert.ok(bareDer.includes(Buffer.concat([Buffer.from([0x0c, 8]), Buffer.from('Gerät 7')])), 'UTF8String');
    assert.ok(generateSelfSigned(options).certificateDer.includes(Buffer.concat([Buffer.from([0x13, 15]), Buffer.from('iotbridge.local')])), 'PrintableString');
    assert.equal(bare.subjectAltName, undefined);
    assert.equal(bare.subject, 'CN=Gerät 7');
    assert.throws(() => generateSelfSigned({ commonName: '', lifetimeDays: 1 }), /commonName/);
    assert.throws(() => generateSelfSigned({ commonName: 'x'.repeat(65), lifetimeDays: 1 }), /commonName/);
    assert.throws(() => generateSelfSigned({ commonName: 'x', lifetimeDays: 0 }), /lifetimeDays/);
    assert.throws(() => generateSelfSigned({ commonName: 'x', lifetimeDays: 1, ipAddresses: ['300.1.1.1'] }), /not an IPv4 or IPv6/);
    assert.throws(() => generateSelfSigned({ commonName: 'x', lifetimeDays: 1, ipAddresses: ['fe80::1%eth0'] }), /without zone/);
    assert.throws(() => generateSelfSigned({ commonName: 'x', lifetimeDays: 1, dnsNames: ['bad name'] }), /not a DNS name/);
    assert.throws(() => generateSelfSigned({ commonName: 'x', lifetimeDays: 1, now: new Date('nope') }), /not a valid date/);
  });
});

describe('loadCertificate', () => {
  /** A CA and a P-256 server certificate it issued, made by the openssl command line. */
  function opensslChain(): { ca: string; leaf: string; leafKey: string } {
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
    const run = (...args: string[]): void => { execFileSync('openssl', args, { cwd: dir, stdio: 'pipe', timeout: 15_000 }); };
    run('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '30', '-subj', '/CN=Test CA');
    run('req', ...ec, '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', '/CN=dtls.example');
    run('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '10', '-out', 'leaf.pem');
    const read = (name: string): string => readFileSync(join(dir, name), 'utf8');
    return { ca: read('ca.pem'), leaf: read('leaf.pem'), leafKey: read('leaf.key') };
  }

  it('takes a PEM chain, leaf first, with its key', () => {
    const { ca, leaf, leafKey } = opensslChain();
    const loaded = loadCertificate(`${leaf}\n${ca}`, leafKey);
    assert.equal(loaded.chain.length, 2);
    assert.deepEqual(loaded.chain[0], new X509Certificate(leaf).raw);
    assert.deepEqual(loaded.chain[1], new X509Certificate(ca).raw);
    assert.equal(loaded.fingerprintSha256, new X509Certificate(leaf).fingerprint256);
    assert.equal(loaded.notAfter.getTime(), new Date(new X509Certificate(leaf).validTo).getTime());
    assert.ok(loaded.privateKey.equals(createPrivateKey(leafKey)));
    assert.throws(() => loadCertificate(`${ca}${leaf}`, leafKey), /certificate 2 in the PEM did not issue certificate 1; list the server certificate first/, 'reversed order');
    assert.throws(() => loadCertificate(ca, leafKey), /does not match the public key of the first certificate in the PEM \(CN=Test CA\)/);
    const other = generateSelfSigned({ commonName: 'other', lifetimeDays: 1 });
    assert.throws(() => loadCertificate(`${leaf}${other.certificatePem}`, leafKey), /certificate 2 in the PEM did not issue certificate 1/);
  });

  it('takes back a generated certificate', () => {
    const generated = generateSelfSigned(options);
    const loaded = loadCertificate(generated.certificatePem, generated.privateKeyPem);
    assert.deepEqual(loaded.chain, [generated.certificateDer]);
    assert.equal(loaded.fingerprintSha256, generated.fingerprintSha256);
    assert.equal(loaded.notAfter.getTime(), generated.notAfter.getTime());
  });

  it('refuses a key that does not match, a key that is not EC P-256, and PEM that holds no certificate', () => {
    const generated = generateSelfSigned(options);
    const stranger = generateSelfSigned(options).privateKeyPem;
    assert.throws(() => loadCertificate(generated.certificatePem, stranger), /private key: does not match the public key of the first certificate in the PEM \(CN=iotbridge\.local\)/);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    assert.throws(() => loadCertificate(generated.certificatePem, rsa), /must be an EC P-256 \(prime256v1\) key .*found RSA/);
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    assert.throws(() => loadCertificate(generated.certificatePem, p384), /found EC secp384r1/);
    assert.throws(() => loadCertificate(generated.certificatePem, 'not a key'), /private key: not a readable, unencrypted PEM private key/);
    assert.throws(() => loadCertificate(generated.privateKeyPem, generated.privateKeyPem), /no PEM "-----BEGIN CERTIFICATE-----" block/);
    assert.throws(() => loadCertificate('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n', generated.privateKeyPem), /certificate 1 of 1 in the PEM is not a valid X.509 certificate/);
  });
});
