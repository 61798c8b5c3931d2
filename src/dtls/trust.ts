import { X509Certificate } from 'node:crypto';

/** The trust anchors of a service (its option `trustedCertificates`, PEM), parsed once per distinct value. */
const parsed = new Map<string, X509Certificate[]>();

export function trustAnchors(pems: readonly string[]): X509Certificate[] {
  const key = pems.join('\n');
  let anchors = parsed.get(key);
  if (!anchors) {
    anchors = pems.flatMap((pem) => splitPem(pem).map((block) => new X509Certificate(block)));
    if (parsed.size > 1000) parsed.clear();
    parsed.set(key, anchors);
  }
  return anchors;
}

/** Checks a service's `trustedCertificates` option when the service is written; throws naming the bad entry. */
export function checkTrustedCertificates(value: unknown): void {
  if (value === undefined || value === null) return;
  if (!Array.isArray(value) || value.some((pem) => typeof pem !== 'string')) throw new Error('trustedCertificates is a list of PEM certificates');
  value.forEach((pem: string, index) => {
    const blocks = splitPem(pem);
    if (blocks.length === 0) throw new Error(`trustedCertificates[${index}] holds no PEM certificate`);
    for (const block of blocks) {
      try {
        new X509Certificate(block);
      } catch {
        throw new Error(`trustedCertificates[${index}] is not an X.509 certificate`);
      }
    }
  });
}

/**
 * Why a device's certificate chain does not let it speak for endpoint `name`, or undefined when it does
 * (docs/dtls.md "X.509"): every certificate is within its validity, each is signed by the next, the last is
 * a trust anchor of the service or signed by one, and the leaf's CN or a DNS subjectAltName is the name.
 */
export function certificateRefusal(chainDer: readonly Buffer[], anchors: readonly X509Certificate[], name: string, now = new Date()): string | undefined {
  if (chainDer.length === 0) return 'no device certificate';
  if (anchors.length === 0) return "the service has no trusted certificates (option trustedCertificates)";
  let chain: X509Certificate[];
  try {
    chain = chainDer.map((der) => new X509Certificate(der));
  } catch {
    return 'the device certificate does not parse';
  }
  for (const certificate of chain) {
    if (now < new Date(certificate.validFrom) || now > new Date(certificate.validTo)) return `a certificate of the chain is not valid now (${certificate.subject})`;
  }
  for (let i = 0; i + 1 < chain.length; i++) {
    if (!chain[i]!.checkIssued(chain[i + 1]!) || !chain[i]!.verify(chain[i + 1]!.publicKey)) return 'the device certificate chain is out of order or broken';
  }
  const last = chain[chain.length - 1]!;
  const anchored = anchors.some((anchor) => anchor.raw.equals(last.raw) || (last.checkIssued(anchor) && last.verify(anchor.publicKey) && now >= new Date(anchor.validFrom) && now <= new Date(anchor.validTo)));
  if (!anchored) return 'the device certificate is not issued by a trusted certificate of the service';
  const leaf = chain[0]!;
  const commonName = /(?:^|\n)CN=([^\n]*)/.exec(leaf.subject)?.[1];
  const dnsNames = (leaf.subjectAltName ?? '').split(', ').filter((entry) => entry.startsWith('DNS:')).map((entry) => entry.slice(4));
  if (commonName !== name && !dnsNames.includes(name)) return 'the device certificate names another endpoint (CN or DNS subjectAltName)';
  return undefined;
}

function splitPem(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
}
