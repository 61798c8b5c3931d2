const ABSOLUTE = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'medium' });

/** A moment as "2 Mar 2026, 14:05:09" in the browser's time zone, the ISO form in its tooltip; "never" for null. */
export function DateTime({ value }: { readonly value: string | null | undefined }) {
  if (value === null || value === undefined) return <span className="muted">never</span>;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return <span>{value}</span>;
  return (
    <time dateTime={value} title={value}>
      {ABSOLUTE.format(date)}
    </time>
  );
}
