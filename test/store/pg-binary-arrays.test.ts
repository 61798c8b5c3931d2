import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { float4Array, int2Array, int4Array, int8Array, textArray } from '../../src/store/pg-binary-arrays.js';
import { DIALECTS, TEST_POSTGRES_URL } from '../helpers/service.js';

/**
 * The binary array parameters of the PostgreSQL bulk inserts, read back by PostgreSQL itself: each element as the
 * server decodes it (`array_recv`), nulls, empty arrays, the edges of each integer width, and text that a text-format
 * array literal would have had to escape.
 */
const postgres = DIALECTS.find((dialect) => dialect.name === 'postgres')!;

describe('PostgreSQL binary array parameters', { skip: postgres.skip }, () => {
  let client: pg.Client;
  before(async () => {
    client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await client.connect();
  });
  after(async () => {
    await client?.end();
  });

  const elements = async (parameter: Buffer, type: string) =>
    (await client.query<{ v: unknown }>(`select v from unnest($1::${type}) with ordinality as t(v, n) order by n`, [parameter])).rows.map((row) => row.v);

  it('text[]: every element as given, nulls included, ASCII-only columns and others', async () => {
    const texts = ['say "hi", {ok}', 'back\\slash \\" end', 'NULL', '', null, 'line\nbreak\ttab', '\u{1F600} \u2028 é', undefined, '{"a":[1,2]}'];
    assert.deepEqual(await elements(textArray(texts), 'text[]'), texts.map((text) => text ?? null));
    assert.deepEqual(await elements(textArray([]), 'text[]'), []);
    // Node writes an unpaired surrogate as U+FFFD, as it would in a text parameter.
    assert.deepEqual(await elements(textArray(['a\ud800b']), 'text[]'), ['a\ufffdb']);
    // ASCII only (framed in one Latin-1 write): lengths across each byte of the length prefix, nulls, control characters.
    const ascii = ['', null, '\u0001\u007f', ...[1, 127, 128, 255, 256, 4095, 4096, 65_535, 65_536, 70_000].map((n) => 'a'.repeat(n - 1) + '}'), undefined, 'k.key'];
    assert.deepEqual(await elements(textArray(ascii), 'text[]'), ascii.map((text) => text ?? null));
    assert.deepEqual(await elements(textArray([null, undefined]), 'text[]'), [null, null]);
    const long = 'x'.repeat(100_000) + 'ü';
    assert.deepEqual(await elements(textArray([long, 'after']), 'text[]'), [long, 'after']);
  });

  it('smallint[], integer[], bigint[] and real[]: the edges of each width, nulls included', async () => {
    assert.deepEqual(await elements(int2Array([0, 1, -1, 32767, -32768, null, 63]), 'smallint[]'), [0, 1, -1, 32767, -32768, null, 63]);
    assert.deepEqual(await elements(int4Array([0, -1, 2147483647, -2147483648, null]), 'integer[]'), [0, -1, 2147483647, -2147483648, null]);
    const int8s = [0, 1, -1, 1_764_493_200_123, -62_135_596_800_000, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 2 ** 32, 2 ** 32 - 1, -(2 ** 32), null];
    // node-postgres reads bigint as text.
    assert.deepEqual(await elements(int8Array(int8s), 'bigint[]'), int8s.map((n) => (n === null ? null : String(n))));
    assert.deepEqual(await elements(float4Array([0, 0.25, -1.5, 1234.5, null]), 'real[]'), [0, 0.25, -1.5, 1234.5, null]);
  });

  it('refuses what the column cannot hold rather than storing something else', async () => {
    assert.throws(() => int8Array([1.5]), RangeError);
    assert.throws(() => int8Array([2 ** 60]), RangeError);
    assert.throws(() => int2Array([40_000]), RangeError);
    assert.throws(() => int4Array([2 ** 31]), RangeError);
    // The server checks the element type against the parameter's.
    await assert.rejects(client.query('select $1::integer[]', [textArray(['1'])]), /array element type 25 \(text\) instead of expected 23/);
  });
});
