import type { Logger } from 'pino';

export interface OrphanSweepDeps {
  /** Ends held requests that expired before `before` and observations of registrations that are gone. */
  readonly endOrphans: (before: number, limit: number) => Promise<{ requests: number; observations: number }>;
  /** True on the one node of the cluster that sweeps now (Lwm2mCluster.leads). */
  readonly leads: () => boolean;
  /** How often a node asks for the turn; also the grace past a request's expiry (its holder's own timer ends it). */
  readonly intervalMs: number;
  readonly logger: Logger;
}

/** Requests one sweep ends at most: a backlog is worked off over several periods. */
const BATCH = 500;

/**
 * Cluster mode: what no node holds any more is ended by one node, the one that leads (while leases change hands two
 * nodes may both sweep once: a request may then end with two `expired` events, at least once as the bus runs events). A device whose node died and that
 * never came back leaves its held requests in the store, past their expiry, with nobody's timer on them; a device
 * that registered anew on another node leaves its old registration's observations (docs/cluster.md, "LwM2M").
 */
export class Lwm2mOrphanSweep {
  readonly #deps: OrphanSweepDeps;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;

  constructor(deps: OrphanSweepDeps) {
    this.#deps = deps;
  }

  start(): void {
    this.#timer = setInterval(() => {
      this.#running ??= this.sweep()
        .catch((error: unknown) => this.#deps.logger.warn({ err: error }, 'LwM2M orphan sweep failed'))
        .finally(() => (this.#running = undefined));
    }, this.#deps.intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running;
  }

  /** One sweep when this node leads; what it ended (zeros on the other nodes). */
  async sweep(now = Date.now()): Promise<{ requests: number; observations: number }> {
    if (!this.#deps.leads()) return { requests: 0, observations: 0 };
    const ended = await this.#deps.endOrphans(now - this.#deps.intervalMs, BATCH);
    if (ended.observations > 0) this.#deps.logger.info({ observations: ended.observations }, 'stored LwM2M observations of gone registrations removed');
    return ended;
  }
}
