// When scheduled reports are mailed and which period each mail covers: the boundaries of every period kind in UTC,
// across a month's end, a year's end and a leap day.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkSchedule, latestBoundary, nextBoundary, periodBefore } from '../../src/reports/report-schedule.js';

const t = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();
const schedule = (every: string, extra: { at?: string; weekday?: number } = {}) => checkSchedule({ every, recipients: ['a@example.com'], ...extra });

describe('report schedule boundaries', () => {
  it('hour: ends at the minute of `at` every hour', () => {
    const hourly = schedule('hour', { at: '00:15' });
    assert.equal(iso(latestBoundary(hourly, t('2026-03-01T10:14:59Z'))), '2026-03-01T09:15:00.000Z');
    assert.equal(iso(latestBoundary(hourly, t('2026-03-01T10:15:00Z'))), '2026-03-01T10:15:00.000Z');
    assert.equal(iso(nextBoundary(hourly, t('2026-12-31T23:20:00Z'))), '2027-01-01T00:15:00.000Z');
    assert.deepEqual(periodBefore(hourly, t('2026-03-01T10:15:00Z')), { from: t('2026-03-01T09:15:00Z'), to: t('2026-03-01T10:15:00Z') });
  });

  it('day: ends at `at` UTC; the next mailing is strictly after now', () => {
    const daily = schedule('day', { at: '06:00' });
    assert.equal(iso(latestBoundary(daily, t('2028-03-01T05:00:00Z'))), '2028-02-29T06:00:00.000Z');
    assert.equal(iso(nextBoundary(daily, t('2028-02-29T06:00:00Z'))), '2028-03-01T06:00:00.000Z');
    assert.equal(iso(nextBoundary(daily, t('2028-02-29T05:59:59Z'))), '2028-02-29T06:00:00.000Z');
    assert.equal(iso(periodBefore(daily, t('2028-03-01T06:00:00Z')).from), '2028-02-29T06:00:00.000Z');
  });

  it('week: ends on the ISO weekday at `at`', () => {
    const sunday = schedule('week', { weekday: 7, at: '23:30' });
    // 2026-11-28 is a Saturday.
    assert.equal(iso(nextBoundary(sunday, t('2026-11-28T12:00:00Z'))), '2026-11-29T23:30:00.000Z');
    assert.equal(iso(latestBoundary(sunday, t('2026-11-28T12:00:00Z'))), '2026-11-22T23:30:00.000Z');
    assert.equal(iso(latestBoundary(sunday, t('2026-11-29T23:30:00Z'))), '2026-11-29T23:30:00.000Z');
    const monday = schedule('week');
    assert.equal(iso(nextBoundary(monday, t('2026-11-30T00:00:00Z'))), '2026-12-07T00:00:00.000Z');
    assert.equal(iso(periodBefore(monday, t('2026-11-30T00:00:00Z')).from), '2026-11-23T00:00:00.000Z');
  });

  it('month: ends on the first at `at`, months of any length', () => {
    const monthly = schedule('month', { at: '02:00' });
    assert.equal(iso(latestBoundary(monthly, t('2026-03-01T01:00:00Z'))), '2026-02-01T02:00:00.000Z');
    assert.equal(iso(nextBoundary(monthly, t('2026-12-15T00:00:00Z'))), '2027-01-01T02:00:00.000Z');
    assert.deepEqual(periodBefore(monthly, t('2026-03-01T02:00:00Z')), { from: t('2026-02-01T02:00:00Z'), to: t('2026-03-01T02:00:00Z') });
  });

  it('refuses what is not a schedule', () => {
    for (const bad of [{ every: 'year' }, { every: 'day', at: '6:00' }, { every: 'day', at: '24:00' }, { every: 'week', weekday: 0 }]) {
      assert.throws(() => checkSchedule({ recipients: ['a@example.com'], ...bad }), /schedule\./, JSON.stringify(bad));
    }
    assert.throws(() => checkSchedule({ every: 'day', recipients: Array.from({ length: 21 }, (_, i) => `u${i}@example.com`) }), /recipients/);
  });
});
