import type { Endpoint } from '../domain/endpoints.js';
import type { Configured } from './service-directory.js';

/** A key one service's rule read from a device's message. */
export interface KeyCandidate {
  readonly target: Configured<unknown>;
  readonly key: string;
}

export type DeviceMatch<C extends KeyCandidate> =
  | { readonly kind: 'one'; readonly endpoint: Endpoint; readonly candidate: C }
  | { readonly kind: 'many'; readonly serviceIds: string[] }
  | { readonly kind: 'none' };

/**
 * The device the candidates name on a port shared by every account: an endpoint counts only when the key
 * was read by its own service's rule (another account's rule reading the same bytes names nothing of
 * theirs). Several matches are `many`: the caller refuses rather than guesses.
 */
export async function matchDevice<C extends KeyCandidate>(candidates: readonly C[], findDevices: (key: string) => Promise<Endpoint[]>): Promise<DeviceMatch<C>> {
  const byKey = new Map<string, C[]>();
  for (const candidate of candidates) byKey.set(candidate.key, [...(byKey.get(candidate.key) ?? []), candidate]);
  const matches: { endpoint: Endpoint; candidate: C }[] = [];
  for (const [key, sharing] of byKey) {
    for (const endpoint of await findDevices(key)) {
      const candidate = sharing.find((c) => c.target.service.id === endpoint.serviceId);
      if (candidate) matches.push({ endpoint, candidate });
    }
  }
  if (matches.length === 1) return { kind: 'one', ...matches[0]! };
  if (matches.length > 1) return { kind: 'many', serviceIds: matches.map((m) => m.endpoint.serviceId) };
  return { kind: 'none' };
}

/** The one auto-provisioning candidate, `many` when several services would create the device, `none` when no service would. */
export function provisioningCandidate<C extends KeyCandidate & { readonly target: Configured<{ readonly autoProvision: boolean }> }>(
  candidates: readonly C[],
): { kind: 'one'; candidate: C } | { kind: 'many'; serviceIds: string[] } | { kind: 'none' } {
  const provisioning = candidates.filter((c) => c.target.options.autoProvision);
  if (provisioning.length === 1) return { kind: 'one', candidate: provisioning[0]! };
  if (provisioning.length > 1) return { kind: 'many', serviceIds: provisioning.map((c) => c.target.service.id) };
  return { kind: 'none' };
}
