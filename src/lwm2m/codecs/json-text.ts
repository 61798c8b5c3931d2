/**
 * A strict JSON reader (RFC 8259) for SenML JSON and LwM2M JSON. JSON.parse would do, except that it rounds
 * integers beyond 2^53 (LwM2M has 64-bit integer and unsigned resources), takes the last of duplicate keys
 * silently, and reports no position. Here integer literals become `bigint`, other numbers `number`, objects
 * keep their keys in order and refuse duplicates, and every error says where it is.
 */
import { CodecError, type FormatName } from './errors.js';
import { decodeUtf8 } from './values.js';

export type JsonValue = string | number | bigint | boolean | null | readonly JsonValue[] | JsonObject;
export type JsonObject = { readonly [key: string]: JsonValue };

/** Nesting beyond this is refused: the LwM2M JSON formats need three levels. */
const MAX_DEPTH = 32;

export function parseJson(format: FormatName, payload: Uint8Array): JsonValue {
  const text = decodeUtf8(format, payload, 'payload');
  const parser = new Parser(format, text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  parser.space();
  const value = parser.value(0);
  parser.space();
  if (parser.pos < parser.text.length) parser.fail('unexpected text after the JSON value');
  return value;
}

class Parser {
  pos = 0;

  constructor(
    readonly format: FormatName,
    readonly text: string,
  ) {}

  fail(message: string, at = this.pos): never {
    throw new CodecError(this.format, `invalid JSON: ${message}`, at);
  }

  space(): void {
    while (this.pos < this.text.length) {
      const c = this.text.charCodeAt(this.pos);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
      this.pos++;
    }
  }

  value(depth: number): JsonValue {
    if (depth > MAX_DEPTH) this.fail(`nesting deeper than ${MAX_DEPTH} levels`);
    const c = this.text[this.pos];
    if (c === '{') return this.#object(depth);
    if (c === '[') return this.#array(depth);
    if (c === '"') return this.#string();
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.#number();
    for (const [word, value] of [['true', true], ['false', false], ['null', null]] as const) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return value;
      }
    }
    return this.fail(c === undefined ? 'unexpected end of input' : `unexpected character ${JSON.stringify(c)}`);
  }

  #object(depth: number): JsonObject {
    const object: Record<string, JsonValue> = Object.create(null) as Record<string, JsonValue>;
    this.pos++;
    this.space();
    if (this.text[this.pos] === '}') {
      this.pos++;
      return object;
    }
    for (;;) {
      const keyAt = this.pos;
      if (this.text[this.pos] !== '"') this.fail('expected a "key"');
      const key = this.#string();
      if (Object.hasOwn(object, key)) this.fail(`duplicate key "${key}"`, keyAt);
      this.space();
      if (this.text[this.pos] !== ':') this.fail('expected ":"');
      this.pos++;
      this.space();
      object[key] = this.value(depth + 1);
      this.space();
      const next = this.text[this.pos++];
      if (next === '}') return object;
      if (next !== ',') this.fail('expected "," or "}"', this.pos - 1);
      this.space();
    }
  }

  #array(depth: number): JsonValue[] {
    const array: JsonValue[] = [];
    this.pos++;
    this.space();
    if (this.text[this.pos] === ']') {
      this.pos++;
      return array;
    }
    for (;;) {
      array.push(this.value(depth + 1));
      this.space();
      const next = this.text[this.pos++];
      if (next === ']') return array;
      if (next !== ',') this.fail('expected "," or "]"', this.pos - 1);
      this.space();
    }
  }

  #string(): string {
    const start = this.pos++;
    let out = '';
    let run = this.pos;
    for (;;) {
      if (this.pos >= this.text.length) this.fail('unterminated string', start);
      const c = this.text.charCodeAt(this.pos);
      if (c === 0x22) break;
      if (c < 0x20) this.fail('control character in a string');
      if (c !== 0x5c) {
        this.pos++;
        continue;
      }
      out += this.text.slice(run, this.pos);
      const escape = this.text[this.pos + 1];
      const simple: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
      if (escape !== undefined && simple[escape] !== undefined) {
        out += simple[escape];
        this.pos += 2;
      } else if (escape === 'u' && /^[0-9a-fA-F]{4}$/.test(this.text.slice(this.pos + 2, this.pos + 6))) {
        out += String.fromCharCode(parseInt(this.text.slice(this.pos + 2, this.pos + 6), 16));
        this.pos += 6;
      } else {
        this.fail('invalid escape sequence');
      }
      run = this.pos;
    }
    out += this.text.slice(run, this.pos);
    this.pos++;
    return out;
  }

  #number(): number | bigint {
    const match = /^-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(this.text.slice(this.pos, this.pos + 400));
    if (!match) return this.fail('invalid number');
    const literal = match[0];
    const at = this.pos;
    this.pos += literal.length;
    if (match[1] === undefined && match[2] === undefined) return BigInt(literal);
    const number = Number(literal);
    if (!Number.isFinite(number)) this.fail(`number ${literal} is out of range`, at);
    return number;
  }
}

export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A JSON number literal; bigint is written as an integer, number as JSON.stringify does (finite only). */
export function jsonNumber(format: FormatName, value: number | bigint): string {
  if (typeof value === 'bigint') return value.toString();
  if (!Number.isFinite(value)) throw new CodecError(format, `${value} has no JSON representation`);
  return JSON.stringify(value);
}
