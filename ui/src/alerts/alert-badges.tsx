import type { AlertState, Severity } from './alert-types';

/** A severity as a coloured chip: critical, major, minor, warning, info. */
export function SeverityBadge({ severity }: { readonly severity: Severity }) {
  return <span className={`alt-severity alt-severity-${severity}`}>{severity}</span>;
}

/** An alert's state: open, acknowledged, closed. */
export function AlertStateBadge({ state }: { readonly state: AlertState }) {
  return <span className={`alt-state alt-state-${state}`}>{state}</span>;
}
