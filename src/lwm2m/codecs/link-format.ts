/**
 * CoRE Link Format (application/link-format, Content-Format 40, RFC 6690): the payload of Register / Update
 * (which objects and instances a client has, Core spec 6.2.1) and of Discover / Bootstrap-Discover responses
 * (which attributes are attached where, Core spec 6.3.2 / 6.1.7.3).
 *
 * The parser follows the RFC 6690 section 2 ABNF, with one tolerance the LwM2M specifications need: optional
 * whitespace around "," and ";" (the Core spec's own examples write "</1/0>, </3/0>"). It scans forward
 * only, so malformed input ends in a CodecError, never a loop.
 */
import { CodecError } from './errors.js';
import { decodeUtf8 } from './values.js';

const FORMAT = 'link';

export interface LinkAttribute {
  /** Parameter name, e.g. `ver`, `rt`, `ct`, `pmin`. */
  readonly name: string;
  /** Undefined for a parameter without value (`;obs`). */
  readonly value?: string | undefined;
  /** The value was (or is to be) written as a quoted-string, e.g. `rt="oma.lwm2m"`. */
  readonly quoted?: boolean | undefined;
}

export interface CoreLink {
  /** The URI-reference between `<` and `>`, e.g. `/3/0`. */
  readonly target: string;
  readonly attributes: readonly LinkAttribute[];
}

/**
 * Parses a link-format payload; an empty payload is no links.
 * @example parseLinks('</1>;ver=1.1,</1/0>') → [{ target: '/1', attributes: [{ name: 'ver', value: '1.1' }] }, { target: '/1/0', attributes: [] }]
 * @throws CodecError for anything RFC 6690 does not allow (missing `<`/`>`, an unterminated quoted-string, a stray character)
 */
export function parseLinks(payload: string | Uint8Array): CoreLink[] {
  const text = typeof payload === 'string' ? payload : decodeUtf8(FORMAT, payload, 'payload');
  const scanner = new Scanner(text);
  const links: CoreLink[] = [];
  scanner.space();
  if (scanner.done()) return links;
  for (;;) {
    links.push(scanner.link());
    scanner.space();
    if (scanner.done()) return links;
    scanner.expect(',', 'expected "," between links');
    scanner.space();
    if (scanner.done()) scanner.fail('trailing ","');
  }
}

/**
 * Writes links as RFC 6690 link-format; values that are not a ptoken (or marked `quoted`) are quoted.
 * @example formatLinks([{ target: '/', attributes: [{ name: 'rt', value: 'oma.lwm2m', quoted: true }] }]) → '</>;rt="oma.lwm2m"'
 */
export function formatLinks(links: readonly CoreLink[]): string {
  return links
    .map((link) => {
      if (!isUriReference(link.target)) throw new CodecError(FORMAT, `"${link.target}" cannot be written as <URI-reference>`);
      const attributes = link.attributes.map(({ name, value, quoted }) => {
        if (!PARMNAME.test(name)) throw new CodecError(FORMAT, `"${name}" is not a link parameter name`);
        if (value === undefined) return `;${name}`;
        return quoted === true || !PTOKEN.test(value) ? `;${name}="${value.replace(/["\\]/g, '\\$&')}"` : `;${name}=${value}`;
      });
      return `<${link.target}>${attributes.join('')}`;
    })
    .join(',');
}

/** The value of the first attribute `name` of a link: its text, `true` when it has no value, undefined when absent. */
export function linkAttribute(link: CoreLink, name: string): string | true | undefined {
  const attribute = link.attributes.find((candidate) => candidate.name === name);
  return attribute === undefined ? undefined : (attribute.value ?? true);
}

// RFC 6690 section 2 / RFC 5987: parmname is a token; ptoken excludes ",", ";", quotes, "\" and whitespace.
const PARMNAME = /^[A-Za-z0-9!#$&+\-.^_`|~*]+$/;
const PTOKEN = /^[A-Za-z0-9!#$%&'()*+\-./:<=>?@[\]^_`{|}~]+$/;

function isUriReference(target: string): boolean {
  return !/[<>"\s\\^`{|}]/.test(target) && ![...target].some((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f);
}

class Scanner {
  #pos = 0;

  constructor(readonly text: string) {}

  done(): boolean {
    return this.#pos >= this.text.length;
  }

  fail(message: string, at = this.#pos): never {
    throw new CodecError(FORMAT, message, at);
  }

  space(): void {
    while (/[ \t\r\n]/.test(this.text[this.#pos] ?? '')) this.#pos++;
  }

  expect(char: string, message: string): void {
    if (this.text[this.#pos] !== char) this.fail(`${message}, found ${this.done() ? 'the end' : JSON.stringify(this.text[this.#pos])}`);
    this.#pos++;
  }

  link(): CoreLink {
    const start = this.#pos;
    this.expect('<', 'a link starts with "<"');
    const end = this.text.indexOf('>', this.#pos);
    if (end < 0) this.fail('"<" without a closing ">"', start);
    const target = this.text.slice(this.#pos, end);
    if (!isUriReference(target)) this.fail(`"${target}" is not a URI-reference`, start + 1);
    this.#pos = end + 1;
    const attributes: LinkAttribute[] = [];
    for (;;) {
      this.space();
      if (this.text[this.#pos] !== ';') return { target, attributes };
      this.#pos++;
      this.space();
      attributes.push(this.#attribute());
    }
  }

  #attribute(): LinkAttribute {
    const name = this.#take(/[A-Za-z0-9!#$&+\-.^_`|~*]/);
    if (name === '') this.fail('expected a parameter name after ";"');
    this.space();
    if (this.text[this.#pos] !== '=') return { name };
    this.#pos++;
    this.space();
    if (this.text[this.#pos] === '"') return { name, value: this.#quoted(), quoted: true };
    const value = this.#take(/[A-Za-z0-9!#$%&'()*+\-./:<=>?@[\]^_`{|}~]/);
    if (value === '') this.fail(`parameter "${name}" has "=" but no value`);
    return { name, value };
  }

  #take(allowed: RegExp): string {
    const start = this.#pos;
    while (!this.done() && allowed.test(this.text[this.#pos] ?? '')) this.#pos++;
    return this.text.slice(start, this.#pos);
  }

  /** RFC 7230 quoted-string: `"…"` with `\` escaping the next character. */
  #quoted(): string {
    const start = this.#pos++;
    let value = '';
    for (;;) {
      const c = this.text[this.#pos++];
      if (c === undefined) this.fail('unterminated quoted-string', start);
      if (c === '"') return value;
      if (c === '\\') {
        const escaped = this.text[this.#pos++];
        if (escaped === undefined) this.fail('unterminated quoted-string', start);
        value += escaped;
      } else value += c;
    }
  }
}
