/**
 * Text and JSON as both databases can store them. PostgreSQL refuses NUL in text and `jsonb`, and an unpaired
 * surrogate's escape in `jsonb`; either one failed the whole insert, and the bus commits the events of many devices
 * and tenants in one (execution records too): data from a device (an LwM2M string with a zero byte), a script's
 * error or an API caller could make everyone's writes of that moment fail. Both become U+FFFD, as a UTF-8 decoder
 * does with bytes it cannot read; SQLite stores the same, so what is read back is the same on both.
 */

/**
 * Escapes in `JSON.stringify`'s output that `jsonb` refuses: `\u0000`, and a lone surrogate (`\ud800`…`\udfff`,
 * which `JSON.stringify` escapes only when unpaired). An escaped backslash is matched too, so that text such as
 * `C:\u0000` written in a string (JSON `"C:\\u0000"`) is left alone.
 */
const UNSTORABLE_ESCAPE = /\\(?:\\|u0000|ud[89a-f][0-9a-f]{2})/g;

/** NUL, a high surrogate without its low one, a low one without its high one (code units: no `u` flag). */
const UNSTORABLE_TEXT = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNSTORABLE_TEXT_ALL = new RegExp(UNSTORABLE_TEXT.source, 'g');

/** `JSON.stringify(value ?? null)` with NUL and unpaired surrogates in its strings (and keys) as U+FFFD. */
export function storableJson(value: unknown): string {
  const json = JSON.stringify(value ?? null);
  // Almost every JSON has no `\u` escape at all: one scan, no regular expression.
  return json.includes('\\u') ? json.replace(UNSTORABLE_ESCAPE, unstorableEscape) : json;
}

/** An escaped backslash stays; the rest becomes U+FFFD itself (no escape needed in JSON). */
function unstorableEscape(escape: string): string {
  return escape === '\\\\' ? escape : '\ufffd';
}

/** Text for a text column, with NUL and unpaired surrogates as U+FFFD. */
export function storableText<T extends string | null>(text: T): T {
  if (text === null || !UNSTORABLE_TEXT.test(text)) return text;
  return text.replace(UNSTORABLE_TEXT_ALL, '\ufffd') as T;
}
