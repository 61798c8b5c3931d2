import { BlockList, isIP } from 'node:net';

/** Adds `10.0.0.0/8`, `::1/128` or a bare address to `list`; throws on anything else. */
export function addToList(list: BlockList, entry: string): void {
  const [address = '', bits, ...rest] = entry.trim().split('/');
  const version = isIP(address);
  const family = version === 6 ? 'ipv6' : 'ipv4';
  if (version === 0 || rest.length > 0) throw new Error(`not an address or CIDR: ${entry}`);
  if (bits === undefined) return list.addAddress(address, family);
  const prefix = Number(bits);
  if (!/^\d+$/.test(bits) || prefix > (version === 6 ? 128 : 32)) throw new Error(`not an address or CIDR: ${entry}`);
  list.addSubnet(address, prefix, family);
}

/** A list of addresses and CIDRs (see addToList). */
export function addressList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) addToList(list, entry);
  return list;
}
