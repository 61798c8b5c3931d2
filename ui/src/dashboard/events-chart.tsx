import { useId } from 'react';
import type { ApiData } from '../api/client';

export type EventCounts = ApiData<'/history/counts'>;

const NUMBER = new Intl.NumberFormat('en');
const CLOCK = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit' });

const WIDTH = 600;
const HEIGHT = 160;
const TOP = 10;
const BOTTOM = 20;
const LEFT = 36;

/** A bar per interval as an inline SVG (a tooltip on each bar), with the numbers as a table for screen readers and keyboards. */
export function EventsChart({ counts }: { readonly counts: EventCounts }) {
  const id = useId();
  const { buckets } = counts;
  const peak = Math.max(1, ...buckets.map((bucket) => bucket.count));
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const step = (WIDTH - LEFT) / Math.max(1, buckets.length);
  const perMinute = counts.interval === 60 ? 'per minute' : `per ${counts.interval} s`;
  const summary = `${NUMBER.format(counts.total)} events from ${CLOCK.format(new Date(counts.from))} to ${CLOCK.format(new Date(counts.to))}, at most ${NUMBER.format(peak === 1 && counts.total === 0 ? 0 : peak)} ${perMinute}`;
  const first = buckets[0];
  const last = buckets.at(-1);
  return (
    <figure className="events-chart">
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-labelledby={`${id}-title ${id}-desc`}>
        <title id={`${id}-title`}>Events {perMinute}</title>
        <desc id={`${id}-desc`}>{summary}</desc>
        <line className="chart-axis" x1={LEFT} y1={HEIGHT - BOTTOM} x2={WIDTH} y2={HEIGHT - BOTTOM} />
        <line className="chart-grid" x1={LEFT} y1={TOP} x2={WIDTH} y2={TOP} />
        <text className="chart-label" x={LEFT - 4} y={TOP + 4} textAnchor="end">
          {NUMBER.format(peak)}
        </text>
        <text className="chart-label" x={LEFT - 4} y={HEIGHT - BOTTOM} textAnchor="end">
          0
        </text>
        {buckets.map((bucket, n) => {
          const height = (bucket.count / peak) * plotHeight;
          return (
            <rect
              key={bucket.time}
              className="chart-bar"
              data-count={bucket.count}
              x={LEFT + n * step + step * 0.1}
              y={HEIGHT - BOTTOM - height}
              width={step * 0.8}
              height={height}
            >
              <title>{`${CLOCK.format(new Date(bucket.time))}: ${NUMBER.format(bucket.count)} events`}</title>
            </rect>
          );
        })}
        {first === undefined || last === undefined ? null : (
          <>
            <text className="chart-label" x={LEFT} y={HEIGHT - 4}>
              {CLOCK.format(new Date(first.time))}
            </text>
            <text className="chart-label" x={WIDTH} y={HEIGHT - 4} textAnchor="end">
              {CLOCK.format(new Date(last.time))}
            </text>
          </>
        )}
      </svg>
      <figcaption className="muted">{summary}.</figcaption>
      <details className="chart-table">
        <summary>Show as a table</summary>
        <div className="table-scroll">
          <table className="table table-compact">
            <caption className="visually-hidden">Events {perMinute}</caption>
            <thead>
              <tr>
                <th scope="col">From</th>
                <th scope="col">Events</th>
              </tr>
            </thead>
            <tbody>
              {buckets.map((bucket) => (
                <tr key={bucket.time}>
                  <td>
                    <time dateTime={bucket.time}>{CLOCK.format(new Date(bucket.time))}</time>
                  </td>
                  <td>{NUMBER.format(bucket.count)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
