const NUMBER = new Intl.NumberFormat('en');

export interface PagerProps {
  readonly total: number;
  readonly offset: number;
  readonly limit: number;
  /** The link to the page starting at `offset`. */
  readonly hrefAt: (offset: number) => string;
  /** What is counted, plural ("endpoints"). */
  readonly noun: string;
}

/** "1–25 of 1,000 endpoints" with links to the previous and next page. */
export function Pager({ total, offset, limit, hrefAt, noun }: PagerProps) {
  const first = total === 0 ? 0 : Math.min(offset + 1, total);
  const last = Math.min(offset + limit, total);
  const previous = offset > 0 ? Math.max(0, offset - limit) : undefined;
  const next = offset + limit < total ? offset + limit : undefined;
  return (
    <nav className="pager" aria-label={`Pages of ${noun}`}>
      <span className="pager-range" aria-live="polite">
        {first === last && first === 0 ? `No ${noun}` : `${NUMBER.format(first)}–${NUMBER.format(last)} of ${NUMBER.format(total)} ${noun}`}
      </span>
      <span className="pager-links">
        {previous === undefined ? (
          <span className="button button-quiet" aria-disabled="true">
            Previous
          </span>
        ) : (
          <a className="button button-quiet" href={hrefAt(previous)} rel="prev">
            Previous
          </a>
        )}
        {next === undefined ? (
          <span className="button button-quiet" aria-disabled="true">
            Next
          </span>
        ) : (
          <a className="button button-quiet" href={hrefAt(next)} rel="next">
            Next
          </a>
        )}
      </span>
    </nav>
  );
}
