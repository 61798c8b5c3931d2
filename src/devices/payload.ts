import { isUtf8 } from 'node:buffer';

/** How device bytes appear in event data: the same three fields for UDP, TCP and LoRa. */
export interface PayloadFields {
  /** Lower-case hex: what `convert.binReader` and `convert.hexToInt` read, and what `udp.send` takes by default. */
  readonly payload: string;
  readonly payloadBase64: string;
  /** The bytes as text, only when they are UTF-8 without control characters other than tab, CR and LF. */
  readonly text?: string;
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

export function payloadFields(bytes: Buffer): PayloadFields {
  const text = textOf(bytes);
  const payload = bytes.toString('hex');
  const payloadBase64 = bytes.toString('base64');
  // One object of its final shape: spreading a second one in cost a copy per message.
  return text === undefined ? { payload, payloadBase64 } : { payload, payloadBase64, text };
}

/**
 * The bytes as text, as a fatal UTF-8 TextDecoder reads them (invalid sequences: none; a leading byte order mark
 * dropped), but checked by `isUtf8` first: the decoder's exception path and its call cost ~1.5 µs a message.
 */
function textOf(bytes: Buffer): string | undefined {
  if (!isUtf8(bytes)) return undefined;
  const decoded = bytes.toString('utf8');
  const text = decoded.charCodeAt(0) === 0xfeff ? decoded.slice(1) : decoded;
  return CONTROL.test(text) ? undefined : text;
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
