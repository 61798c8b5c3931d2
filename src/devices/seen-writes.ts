import type { Logger } from 'pino';
import type { PresenceChange } from '../domain/endpoints.js';
import { lruCache } from '../lru.js';

/**
 * A connected device heard from again within this long of its last presence write waits for the next write instead
 * of making its own: a device sending many messages a second rewrote its endpoint row (and three of its indexes)
 * with every one, 15 % of the service's main thread in bench:coap (docs/performance.md, session 32).
 */
export const SEEN_WRITE_INTERVAL_MS = 1000;

/** Devices whose last write is remembered; past it the least recent ones are forgotten and simply write again. */
const REMEMBERED_DEVICES = 20_000;

/** What a device's last presence write said, and when it was made. */
interface Written {
  readonly at: number;
  /** Seconds of silence allowed from then on (undefined: never missing). */
  readonly silence: number | undefined;
  readonly protocol: string | undefined;
  readonly remoteAddr: string | undefined;
}

/**
 * Presence writes of connected devices, at most one per device per {@link SEEN_WRITE_INTERVAL_MS}. "Heard from
 * again" (a newer `lastSeenAt`, the deadline moved on) waits when the device's last write is that recent and said
 * the same otherwise: same state, same silence allowed, same protocol and address. What waits is written, newest
 * per device, within the interval, before every sweep for silent devices (so none is found missing by a stale
 * deadline), and at stop. Anything else about the device (it connected, went away, changed address or
 * lifetime, status details) is written at once and replaces what waits. After a crash a device's `lastSeenAt` may
 * be up to the interval older than the last message it sent.
 */
export class SeenWrites {
  readonly #write: (endpointId: string, change: PresenceChange) => Promise<unknown>;
  readonly #logger: Logger;
  readonly #written = lruCache<string, Written>(REMEMBERED_DEVICES);
  readonly #waiting = new Map<string, { readonly change: PresenceChange; readonly silence: number | undefined }>();
  #timer: NodeJS.Timeout | undefined;

  constructor(write: (endpointId: string, change: PresenceChange) => Promise<unknown>, logger: Logger) {
    this.#write = write;
    this.#logger = logger;
  }

  /**
   * Keeps `change` (a connected device heard from, nothing else changed) to be written later, when the device's
   * last write is recent and said the same: true. Otherwise false, and the caller writes it now.
   */
  defer(endpointId: string, change: PresenceChange, silence: number | undefined, now: number): boolean {
    const last = this.#written.get(endpointId);
    if (!last || now - last.at >= SEEN_WRITE_INTERVAL_MS || last.silence !== silence || change.state !== 'connected' || change.details) return false;
    const heard = change.heardFrom;
    if (heard && (heard.protocol !== last.protocol || heard.remoteAddr !== last.remoteAddr)) return false;
    this.#waiting.set(endpointId, { change, silence });
    this.#timer ??= setTimeout(() => void this.flush(), SEEN_WRITE_INTERVAL_MS).unref();
    return true;
  }

  /** The device's presence is being written now (`change`): what waited for it is superseded. */
  writing(endpointId: string, change: PresenceChange, silence: number | undefined, now: number): void {
    this.#waiting.delete(endpointId);
    // A connected device's write is the one later messages may wait for; one without an address keeps the last known.
    const last = this.#written.get(endpointId);
    const heard = change.heardFrom;
    if (change.state !== 'connected') this.#written.delete(endpointId);
    else this.#written.set(endpointId, { at: now, silence, protocol: heard ? heard.protocol : last?.protocol, remoteAddr: heard ? heard.remoteAddr : last?.remoteAddr });
  }

  /** The device's recorded address was forgotten (another device uses it now): nothing waiting may write it back. */
  forget(endpointId: string): void {
    this.#waiting.delete(endpointId);
    this.#written.delete(endpointId);
  }

  /** Writes everything waiting; resolves once it is stored. */
  async flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#waiting.size === 0) return;
    const now = Date.now();
    const waiting = [...this.#waiting];
    this.#waiting.clear();
    const writes = waiting.map(([endpointId, { change, silence }]) => {
      this.writing(endpointId, change, silence, now);
      return this.#write(endpointId, change).catch((error: unknown) => this.#logger.error({ err: error, endpointId }, 'could not record when a device was last heard from'));
    });
    await Promise.all(writes);
  }
}
