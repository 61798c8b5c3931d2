import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergePatch, parseTag, TAG_PATTERN } from '../../src/domain/endpoints.js';

describe('JSON Merge Patch of status details and parameters', () => {
  // RFC 7396 Appendix A, the examples whose target and patch are objects (statusDetails and parameters always are).
  const vectors: [unknown, unknown, unknown][] = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  for (const [target, patch, result] of vectors) {
    it(`${JSON.stringify(target)} + ${JSON.stringify(patch)} = ${JSON.stringify(result)}`, () => {
      const before = structuredClone(target);
      assert.deepEqual(mergePatch(target as Record<string, unknown>, patch as Record<string, unknown>), result);
      assert.deepEqual(target, before, 'the target is not changed in place');
    });
  }
});

describe('endpoint tags', () => {
  it('splits name and value at the first colon', () => {
    assert.deepEqual(parseTag('site'), { name: 'site', value: '' });
    assert.deepEqual(parseTag('site:berlin'), { name: 'site', value: 'berlin' });
    assert.deepEqual(parseTag('url:coap://h:5683'), { name: 'url', value: 'coap://h:5683' });
  });

  it('accepts `name` and `name:value` only', () => {
    for (const good of ['a', 'site:berlin', 'with space:yes', 'x:a:b']) assert.ok(TAG_PATTERN.test(good), good);
    for (const bad of ['', ':value', 'name:', ' lead', 'x'.repeat(129)]) assert.ok(!TAG_PATTERN.test(bad), bad);
  });
});
