/** How device bytes appear in event data: the same three fields for UDP, TCP and LoRa. */
export interface PayloadFields {
  /** Lower-case hex: what `convert.binReader` and `convert.hexToInt` read, and what `udp.send` takes by default. */
  readonly payload: string;
  readonly payloadBase64: string;
  /** The bytes as text, only when they are UTF-8 without control characters other than tab, CR and LF. */
  readonly text?: string;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function payloadFields(bytes: Buffer): PayloadFields {
  const fields = { payload: bytes.toString('hex'), payloadBase64: bytes.toString('base64') };
  const text = textOf(bytes);
  return text === undefined ? fields : { ...fields, text };
}

function textOf(bytes: Buffer): string | undefined {
  if (bytes.length === 0) return '';
  try {
    const text = utf8.decode(bytes);
    // eslint-disable-next-line no-control-regex
    return /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(text) ? undefined : text;
  } catch {
    return undefined;
  }
}

/** `host:port`, IPv6 hosts in brackets, IPv4-mapped IPv6 addresses (from a dual-stack socket) as plain IPv4. */
export function remoteAddress(host: string, port: number): { host: string; remoteAddr: string } {
  const plain = unmapped(host);
  return { host: plain, remoteAddr: plain.includes(':') ? `[${plain}]:${port}` : `${plain}:${port}` };
}

export function unmapped(host: string): string {
  return host.startsWith('::ffff:') && host.includes('.') ? host.slice(7) : host;
}

/** Splits a `remoteAddr` back into host and port; undefined when it is not one. */
export function parseRemoteAddr(remoteAddr: unknown): { host: string; port: number } | undefined {
  if (typeof remoteAddr !== 'string') return undefined;
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(remoteAddr);
  const port = Number(match?.[3]);
  const host = match?.[1] ?? match?.[2];
  return host !== undefined && port > 0 && port < 65_536 ? { host, port } : undefined;
}
