import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { storableJson, storableText } from '../../src/domain/storable-text.js';

describe('storable text and JSON', () => {
  it('is JSON.stringify where nothing is unstorable, awkward text included', () => {
    for (const value of [null, undefined, 0, 'plain', { a: [1, 'two', { three: null }] }, 'say "hi" \\ back\\slash', 'C:\\u0000 and \\ud800 as text', '\u0001\u001f\n\t', '\u{1F600} é \u2028', { 'ke\u0001y': 'v' }]) {
      assert.equal(storableJson(value), JSON.stringify(value ?? null), JSON.stringify(value));
    }
  });

  it('replaces NUL and unpaired surrogates, in values and keys, with U+FFFD', () => {
    assert.equal(storableJson('a\u0000b'), JSON.stringify('a\ufffdb'));
    assert.equal(storableJson({ 'k\u0000': ['\ud800', 'x\udfffy', '\udbff\u0000'] }), JSON.stringify({ 'k\ufffd': ['\ufffd', 'x\ufffdy', '\ufffd\ufffd'] }));
    // A pair stays a pair; a backslash written before it stays a backslash.
    assert.equal(storableJson('\\\ud83d\ude00\\\u0000'), JSON.stringify('\\\ud83d\ude00\\\ufffd'));
    assert.deepEqual(JSON.parse(storableJson({ n: '\\u0000\u0000' })), { n: '\\u0000\ufffd' });
  });

  it('storableText: the same for a text column, pairs and other text left alone', () => {
    for (const text of [null, '', 'plain', 'tab\there', '\u{1F600} é', 'back\\slash \\u0000']) assert.equal(storableText(text), text);
    assert.equal(storableText('a\u0000b\u0000'), 'a\ufffdb\ufffd');
    assert.equal(storableText('\ud800x\udc00\ud83d\ude00\udbff'), '\ufffdx\ufffd\ud83d\ude00\ufffd');
  });
});
