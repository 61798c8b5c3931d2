/** How each state the status answers reads at a glance: fine, quiet (nothing wrong, nothing happening), poor, bad. */
const TONES: Readonly<Record<string, 'good' | 'quiet' | 'poor' | 'bad'>> = {
  connected: 'good',
  enabled: 'good',
  ok: 'good',
  unavailable: 'quiet',
  disabled: 'quiet',
  library: 'quiet',
  idle: 'quiet',
  degraded: 'poor',
  down: 'bad',
};

/** A trigger's, endpoint's or service's state as a chip; a state unknown to the UI reads as quiet. */
export function HealthState({ state }: { readonly state: string }) {
  return <span className={`hlt-state hlt-state-${TONES[state] ?? 'quiet'}`}>{state}</span>;
}
