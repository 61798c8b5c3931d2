/**
 * What a value field means: JSON when it parses (`87`, `true`, `{"a":1}`, `"text"`), else the text itself, so
 * `1.4.2` stays a string and `3600` becomes a number.
 */
export function valueOfText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** A value for a field or a table cell: strings as they are, the rest as JSON. */
export function textOfValue(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** "a, b c" → ["a", "b", "c"]: names separated by commas or spaces. */
export function splitNames(text: string): string[] {
  return text.split(/[\s,]+/).filter((name) => name !== '');
}
