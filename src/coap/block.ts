/**
 * The Block1/Block2 option value (RFC 7959 2.2): NUM (block number, up to 20 bits), M (more blocks follow)
 * and SZX (block size 2^(SZX+4), 16 to 1024 bytes; 7 is reserved).
 */
import type { CoapMessage } from './message.js';
import { OptionNumber, optionValue } from './options.js';

export interface BlockOption {
  readonly num: number;
  readonly more: boolean;
  readonly szx: number;
}

export const MAX_SZX = 6;
const MAX_NUM = 0xfffff;

/** Block size in bytes for a SZX: 16 << szx. */
export const blockSize = (szx: number): number => 16 << szx;

/** The largest SZX whose block fits in `bytes` (at least 0: 16 bytes is the smallest block). */
export function szxFor(bytes: number): number {
  let szx = MAX_SZX;
  while (szx > 0 && blockSize(szx) > bytes) szx--;
  return szx;
}

/** Thrown for a Block option value RFC 7959 2.2 forbids: longer than 3 bytes, or SZX 7. A request carrying one gets 4.00. */
export class BlockOptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BlockOptionError';
  }
}

/** Encodes NUM/M/SZX in the fewest bytes (0/0/16 is the empty value). */
export function encodeBlock(block: BlockOption): Buffer {
  const { num, more, szx } = block;
  if (!Number.isInteger(num) || num < 0 || num > MAX_NUM) throw new RangeError(`block number out of range: ${num}`);
  if (!Number.isInteger(szx) || szx < 0 || szx > MAX_SZX) throw new RangeError(`SZX out of range: ${szx}`);
  const value = num * 16 + (more ? 8 : 0) + szx;
  if (value === 0) return Buffer.alloc(0);
  const bytes = value < 0x100 ? 1 : value < 0x10000 ? 2 : 3;
  const out = Buffer.allocUnsafe(bytes);
  out.writeUIntBE(value, 0, bytes);
  return out;
}

/** Decodes a Block option value; throws BlockOptionError for a value over 3 bytes or SZX 7. */
export function decodeBlock(value: Buffer): BlockOption {
  if (value.length > 3) throw new BlockOptionError('block option longer than 3 bytes');
  let n = 0;
  for (const byte of value) n = n * 256 + byte;
  const szx = n & 0x07;
  if (szx === 7) throw new BlockOptionError('reserved SZX 7');
  return { num: n >>> 4, more: (n & 0x08) !== 0, szx };
}

/** `NUM/M/SIZE` as RFC 7959 writes block options in its examples, e.g. `2/0/128`. */
export const formatBlock = (block: BlockOption): string => `${block.num}/${block.more ? 1 : 0}/${blockSize(block.szx)}`;

export function block1(message: Pick<CoapMessage, 'options'>): BlockOption | undefined {
  const value = optionValue(message, OptionNumber.Block1);
  return value === undefined ? undefined : decodeBlock(value);
}

export function block2(message: Pick<CoapMessage, 'options'>): BlockOption | undefined {
  const value = optionValue(message, OptionNumber.Block2);
  return value === undefined ? undefined : decodeBlock(value);
}
