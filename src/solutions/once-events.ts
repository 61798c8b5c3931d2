import { createHash } from 'node:crypto';
import { newSortableId } from '../domain/ids.js';
import { isoTime } from '../domain/time.js';
import { createEvent, type Event } from '../events/event.js';
import type { OnceClaim, SolutionStore } from './model.js';

/** How long a claim may stay unpublished before another process (or the next start) publishes it. */
export const CLAIM_LEASE_MS = 30_000;
const RESUMED_PER_SWEEP = 100;

export interface OnceTrigger {
  readonly id: string;
  readonly name: string;
  readonly script: string;
}

export interface OnceEventsDeps {
  readonly store: SolutionStore;
  /** Resolves once the bus accepted the event (durable). */
  readonly publish: (event: Event) => Promise<void>;
  /** Whether the history holds an event of the account with this id. */
  readonly published: (accountId: string, eventId: string) => Promise<boolean>;
  readonly onFailure: (error: unknown) => void;
}

/**
 * The `once-event` of template triggers (docs/templates.md "once-event"): one event per trigger, installation and
 * trigger script, with the trigger as its only target (`data.triggerId`, which the engine honours). Exactly once:
 * the claim row (unique per trigger and key) is written before the event is published and names the event's id;
 * a claim whose process died before publishing is published by the next start or by another process after a
 * lease, unless the history shows the event went out — so a restart, a retried upgrade or a second node never
 * emits it twice.
 */
export class OnceEvents {
  readonly #deps: OnceEventsDeps;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<void> | undefined;

  constructor(deps: OnceEventsDeps) {
    this.#deps = deps;
  }

  /** Claims and publishes the event of each trigger not claimed yet for this installation and script; returns those emitted. */
  async emit(accountId: string, installation: { id: string; template: string; version: string }, triggers: readonly OnceTrigger[]): Promise<string[]> {
    const emitted: string[] = [];
    for (const trigger of triggers) {
      const claim: OnceClaim = {
        triggerId: trigger.id,
        claimKey: `${installation.id}:${scriptHash(trigger.script)}`,
        accountId,
        eventId: newSortableId(),
        data: { triggerId: trigger.id, trigger: trigger.name, installationId: installation.id, template: installation.template, version: installation.version },
        claimedAt: isoTime(Date.now()),
        emittedAt: null,
      };
      if (!(await this.#deps.store.claimOnce(claim))) continue;
      await this.#publish(claim);
      emitted.push(trigger.name);
    }
    return emitted;
  }

  /** Publishes claims left unpublished by a process that died, now and every lease. */
  start(): void {
    this.#sweep();
    this.#timer = setInterval(() => this.#sweep(), CLAIM_LEASE_MS);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#sweeping;
  }

  #sweep(): void {
    if (this.#sweeping) return;
    this.#sweeping = this.resume()
      .then(() => undefined)
      .catch((error: unknown) => this.#deps.onFailure(error))
      .finally(() => (this.#sweeping = undefined));
  }

  /**
   * Publishes claims never marked emitted that are older than a lease (younger ones may be under way in another
   * process), unless the history shows their event went out; returns how many it took over.
   */
  async resume(): Promise<number> {
    const before = isoTime(Date.now() - CLAIM_LEASE_MS);
    let resumed = 0;
    for (const claim of await this.#deps.store.unemitted(before, RESUMED_PER_SWEEP)) {
      if (!(await this.#deps.store.retakeClaim(claim.triggerId, claim.claimKey, claim.claimedAt, isoTime(Date.now())))) continue;
      if (await this.#deps.published(claim.accountId, claim.eventId)) await this.#deps.store.markEmitted(claim.triggerId, claim.claimKey, isoTime(Date.now()));
      else await this.#publish(claim);
      resumed++;
    }
    return resumed;
  }

  async #publish(claim: OnceClaim): Promise<void> {
    const event: Event = { ...createEvent({ type: 'once-event', accountId: claim.accountId, data: claim.data }), id: claim.eventId };
    await this.#deps.publish(event);
    await this.#deps.store.markEmitted(claim.triggerId, claim.claimKey, isoTime(Date.now()));
  }
}

function scriptHash(script: string): string {
  return createHash('sha256').update(script).digest('base64url').slice(0, 16);
}
