/** An endpoint's state as the device protocols set it. */
export function StateBadge({ state }: { readonly state: string }) {
  return <span className={`state state-${state === 'connected' ? 'connected' : 'unavailable'}`}>{state}</span>;
}
