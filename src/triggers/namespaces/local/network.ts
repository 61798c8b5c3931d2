import { BlockList, isIP } from 'node:net';
import { ScriptArgumentError } from '../namespace.js';
import type { LocalNamespace } from './local.js';

/** A PLMN code "MCC MNC" as 5 or 6 digits (a 6-digit code has a 3-digit MNC, e.g. North America). */
export function decodeMccMnc(value: unknown): { mcc: string; mnc: string } {
  const digits = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.replace(/[\s-]/g, '') : '';
  if (!/^\d{5,6}$/.test(digits)) throw new ScriptArgumentError('an MCC/MNC is 5 or 6 digits, e.g. "26201" or "310410"');
  return { mcc: digits.slice(0, 3), mnc: digits.slice(3) };
}

/** `network.*`. */
export const network: LocalNamespace = {
  /** network.isIpInCidrs(ip, ["10.0.0.0/8", "2001:db8::/32", "192.0.2.7"]) → true when the address is in any. */
  isIpInCidrs: ([ip, cidrs]) => {
    const version = typeof ip === 'string' ? isIP(ip) : 0;
    if (version === 0) throw new ScriptArgumentError('ip must be an IPv4 or IPv6 address');
    if (!Array.isArray(cidrs)) throw new ScriptArgumentError('cidrs must be an array');
    const list = new BlockList();
    for (const cidr of cidrs) {
      const [address, prefix] = String(cidr).split('/');
      const type = isIP(address ?? '');
      if (type === 0) throw new ScriptArgumentError(`"${String(cidr)}" is not an address or CIDR`);
      if (prefix === undefined) list.addAddress(address!, type === 6 ? 'ipv6' : 'ipv4');
      else list.addSubnet(address!, Number(prefix), type === 6 ? 'ipv6' : 'ipv4');
    }
    return list.check(ip as string, version === 6 ? 'ipv6' : 'ipv4');
  },
  /** network.splitHostPort("host:5683" | "[2001:db8::1]:5683" | "host") → {host, port (number or null)}. */
  splitHostPort: ([value]) => {
    if (typeof value !== 'string' || value === '') throw new ScriptArgumentError('expected "host:port"');
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(value);
    if (bracketed) return { host: bracketed[1], port: bracketed[2] === undefined ? null : Number(bracketed[2]) };
    if (isIP(value) === 6) return { host: value, port: null };
    const colon = value.lastIndexOf(':');
    if (colon < 0) return { host: value, port: null };
    const port = Number(value.slice(colon + 1));
    if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new ScriptArgumentError(`bad port in "${value}"`);
    return { host: value.slice(0, colon), port };
  },
  /** network.decodeMccMnc("26201") → {mcc: "262", mnc: "01"}. */
  decodeMccMnc: ([value]) => decodeMccMnc(value),
};
