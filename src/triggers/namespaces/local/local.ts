import { ScriptArgumentError } from '../namespace.js';

/**
 * A pure namespace function: runs in the script worker itself (no trip to the service), from JSON
 * arguments to a JSON value. A throw becomes an Error in the script.
 */
export type LocalFunction = (args: unknown[], context: LocalContext) => unknown;

/** What a worker-local function knows of the run that called it. */
export interface LocalContext {
  readonly accountId: string;
}

export type LocalNamespace = Readonly<Record<string, LocalFunction>>;

/** Bytes from what scripts hold: a hex string (`"0a1B"`, spaces allowed), an array of byte values, or (with `text`) a string. */
export function bytesArg(value: unknown, name: string, options: { text?: boolean } = {}): Buffer {
  if (Array.isArray(value)) {
    if (!value.every((b) => Number.isInteger(b) && (b as number) >= 0 && (b as number) <= 255)) throw new ScriptArgumentError(`${name}: bytes are integers 0..255`);
    return Buffer.from(value as number[]);
  }
  if (typeof value === 'string') {
    if (options.text) return Buffer.from(value, 'utf8');
    const hex = value.replace(/\s+/g, '');
    if (!/^(?:[0-9a-fA-F]{2})*$/.test(hex)) throw new ScriptArgumentError(`${name} must be a hex string of whole bytes`);
    return Buffer.from(hex, 'hex');
  }
  throw new ScriptArgumentError(`${name} must be a hex string or an array of bytes`);
}
