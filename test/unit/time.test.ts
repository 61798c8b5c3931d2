import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isoTime, nowIso, timeMs } from '../../src/domain/time.js';

describe('times', () => {
  it('formats ms as ISO 8601 text, the same text for the same ms, and the right one when the ms changes back', () => {
    assert.equal(isoTime(0), '1970-01-01T00:00:00.000Z');
    assert.equal(isoTime(1_700_000_000_123), '2023-11-14T22:13:20.123Z');
    assert.equal(isoTime(1_700_000_000_123), '2023-11-14T22:13:20.123Z');
    assert.equal(isoTime(0), '1970-01-01T00:00:00.000Z');
    assert.throws(() => isoTime(Number.NaN), RangeError);
    assert.equal(isoTime(1), '1970-01-01T00:00:00.001Z', 'a failed format is not remembered');
  });

  it('parses ISO text to ms, NaN for text that is not a date, like Date.parse', () => {
    assert.equal(timeMs('2023-11-14T22:13:20.123Z'), 1_700_000_000_123);
    assert.equal(timeMs('2023-11-14T22:13:20.123Z'), 1_700_000_000_123);
    assert.ok(Number.isNaN(timeMs('not a date')));
    assert.equal(timeMs('1970-01-01T00:00:00.000Z'), 0);
    assert.equal(timeMs('2023-11-14T23:13:20.123+01:00'), 1_700_000_000_123);
  });

  it('gives the current time', () => {
    const before = Date.now();
    const now = timeMs(nowIso());
    assert.ok(now >= before && now <= Date.now());
  });
});
