const TIME = new Intl.DateTimeFormat('en-GB', { timeStyle: 'medium' });
const DAY_TIME = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });
const DAY = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium' });
const FULL = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'medium' });

/**
 * A moment as short as a table column wants it, in the browser's time zone: "14:05:09" today, "2 Mar, 14:05" this
 * year, "2 Mar 2025" before; the full date and time in its tooltip. `now` (epoch ms) is when the list was loaded.
 */
export function ShortTime({ value, now }: { readonly value: string; readonly now: number }) {
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return <span>{value}</span>;
  const today = new Date(now);
  const text = date.toDateString() === today.toDateString() ? TIME.format(date) : date.getFullYear() === today.getFullYear() ? DAY_TIME.format(date) : DAY.format(date);
  return (
    <time dateTime={value} title={FULL.format(date)}>
      {text}
    </time>
  );
}
