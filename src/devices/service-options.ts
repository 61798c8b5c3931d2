import { BlockList } from 'node:net';
import { parseNetwork } from '../domain/address-list.js';
import type { ServiceOptions } from '../domain/services.js';
import { AppError } from '../errors.js';

/**
 * Readers for protocol-specific service options (free-form JSON in `service.options`): each returns the
 * option or its default, and throws a 400 naming the option when it has the wrong shape, so
 * `POST /services` refuses what the device server could not use.
 */

function invalid(name: string, expected: string, value: unknown): AppError {
  return new AppError('IOTB_REQUEST_VALIDATION', `options.${name} must be ${expected}`, { option: name, value });
}

export function enumOption<T extends string | number>(options: ServiceOptions, name: string, values: readonly T[], fallback: T): T {
  const value = options[name];
  if (value === undefined || value === null) return fallback;
  if (!values.includes(value as T)) throw invalid(name, `one of ${values.map((v) => JSON.stringify(v)).join(', ')}`, value);
  return value as T;
}

export function intOption(options: ServiceOptions, name: string, min: number, max: number, fallback: number): number {
  const value = options[name];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) throw invalid(name, `an integer from ${min} to ${max}`, value);
  return value;
}

export function optionalIntOption(options: ServiceOptions, name: string, min: number, max: number): number | undefined {
  return options[name] === undefined || options[name] === null ? undefined : intOption(options, name, min, max, min);
}

export function boolOption(options: ServiceOptions, name: string, fallback: boolean): boolean {
  const value = options[name];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'boolean') throw invalid(name, 'true or false', value);
  return value;
}

export function stringOption(options: ServiceOptions, name: string, maxLength = 10_000): string | undefined {
  const value = options[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value === '' || value.length > maxLength) throw invalid(name, `a non-empty string of at most ${maxLength} characters`, value);
  return value;
}

/** Bytes given as text (`"\n"`) or, with the `Hex` variant of the option (`delimiterHex: "0d0a"`), as hex. */
export function bytesOption(options: ServiceOptions, name: string, fallback: Buffer | undefined): Buffer | undefined {
  const hex = options[`${name}Hex`];
  if (hex !== undefined && hex !== null) {
    if (typeof hex !== 'string' || !/^([0-9a-fA-F]{2}){1,16}$/.test(hex)) throw invalid(`${name}Hex`, 'hex of 1 to 16 bytes', hex);
    return Buffer.from(hex, 'hex');
  }
  const text = options[name];
  if (text === undefined || text === null) return fallback;
  if (typeof text !== 'string' || text === '' || Buffer.byteLength(text) > 16) throw invalid(name, 'a string of 1 to 16 bytes', text);
  return Buffer.from(text, 'utf8');
}

/** A list of IPv4/IPv6 addresses and CIDR blocks (`["10.0.0.0/8", "2001:db8::/32", "192.0.2.7"]`). */
export function networksOption(options: ServiceOptions, name: string, widest = { ipv4: 0, ipv6: 0 }): Networks | undefined {
  const value = options[name];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.length === 0) throw invalid(name, 'a non-empty array of addresses or CIDR blocks', value);
  const networks = new Networks();
  for (const entry of value as unknown[]) {
    const network = typeof entry === 'string' ? parseNetwork(entry) : undefined;
    if (!network) throw invalid(name, 'a list of addresses or CIDR blocks', entry);
    if (network.bits < widest[network.family]) throw invalid(name, `networks of at most /${widest.ipv4} (IPv4) and /${widest.ipv6} (IPv6)`, entry);
    networks.add(network.address, network.bits, network.family);
  }
  return networks;
}

/** Networks (addresses and CIDR blocks) a service claims, and how specifically they name an address. */
export class Networks {
  readonly #entries: { readonly list: BlockList; readonly bits: number }[] = [];

  add(address: string, bits: number, family: 'ipv4' | 'ipv6'): void {
    const list = new BlockList();
    list.addSubnet(address, bits, family);
    this.#entries.push({ list, bits });
  }

  check(host: string, family: 'ipv4' | 'ipv6'): boolean {
    return this.specificity(host, family) >= 0;
  }

  /** The prefix length of the narrowest of these networks holding `host` (32 or 128 for the address itself); -1 when none does. */
  specificity(host: string, family: 'ipv4' | 'ipv6'): number {
    let best = -1;
    for (const { list, bits } of this.#entries) if (bits > best && list.check(host, family)) best = bits;
    return best;
  }
}
