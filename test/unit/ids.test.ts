import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId, newSortableId, randomText } from '../../src/domain/ids.js';

describe('ids', () => {
  it('newId: 16 URL-safe characters, never "." or ":", unique', () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => newId()));
    assert.equal(ids.size, 10_000);
    for (const id of ids) assert.match(id, /^[A-Za-z0-9_-]{16}$/);
  });

  it('newSortableId: later ids sort after earlier ones, same shape as newId', () => {
    const times = [0, 1, 63, 64, 1_700_000_000_000, 1_700_000_000_001, 4_398_046_511_103];
    const ids = times.map((t) => newSortableId(t));
    for (const id of ids) assert.match(id, /^[A-Za-z0-9_-]{16}$/);
    assert.deepEqual([...ids].sort(), ids, 'string order follows time order');
    const now = Array.from({ length: 1000 }, () => newSortableId());
    assert.equal(new Set(now).size, 1000);
  });

  it('newSortableId: ids of the same millisecond share its time part, whatever was made in between', () => {
    const [a, b, c, d] = [1_700_000_000_000, 1_700_000_000_000, 5, 1_700_000_000_000].map((t) => newSortableId(t));
    assert.equal(a!.slice(0, 7), b!.slice(0, 7));
    assert.notEqual(a, b);
    assert.equal(c!.slice(0, 7), '------4', 'the time part of 5 ms, not the last one made');
    assert.equal(d!.slice(0, 7), a!.slice(0, 7));
  });

  it('randomText: the asked number of bytes in hex or base64url, unique across the pool\'s refills', () => {
    // 4,096 bytes a pool: 3,000 texts of 6 bytes cross four refills, with odd sizes leaving a tail unused.
    const texts = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      texts.add(randomText(6, 'base64url'));
      assert.match(randomText(4, 'hex'), /^[0-9a-f]{8}$/);
      assert.equal(randomText(7, 'hex').length, 14);
    }
    assert.equal(texts.size, 3000);
    for (const text of texts) assert.match(text, /^[A-Za-z0-9_-]{8}$/);
  });
});
