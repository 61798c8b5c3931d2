import { BlockList, isIP } from 'node:net';

/** An address or CIDR block: `10.0.0.0/8`, `::1/128`, or a bare address (its full prefix length). */
export interface Network {
  readonly address: string;
  readonly bits: number;
  readonly family: 'ipv4' | 'ipv6';
}

/** Parses `10.0.0.0/8`, `::1/128` or a bare address; undefined for anything else. */
export function parseNetwork(entry: string): Network | undefined {
  const [address = '', prefix, ...rest] = entry.trim().split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return undefined;
  const family = version === 6 ? 'ipv6' : 'ipv4';
  const longest = version === 6 ? 128 : 32;
  if (prefix === undefined) return { address, bits: longest, family };
  const bits = Number(prefix);
  return /^\d+$/.test(prefix) && bits <= longest ? { address, bits, family } : undefined;
}

/** Adds a network (see parseNetwork) to `list`; throws on anything else. */
export function addToList(list: BlockList, entry: string): void {
  const network = parseNetwork(entry);
  if (!network) throw new Error(`not an address or CIDR: ${entry}`);
  list.addSubnet(network.address, network.bits, network.family);
}

/** A list of addresses and CIDRs (see parseNetwork). */
export function addressList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) addToList(list, entry);
  return list;
}
