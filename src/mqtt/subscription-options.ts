import type { EventEmitter } from 'node:events';
import type { Client } from 'aedes';
import type { ISubscription, Packet } from 'mqtt-packet';

/** One filter's MQTT 5 options as the broker keeps them (aedes' names). */
interface BrokerSubscriptionOptions {
  nl?: boolean;
  rh?: number;
}

/**
 * The MQTT 5 subscription options of one connection's SUBSCRIBEs (MQTT 5.0, 3.8.3.1) that the 3.1.1 broker is
 * handed: No Local and Retain Handling. The adapter passes the broker 3.1.1 bytes, which have no room for them, so
 * they are put back on the broker's parsed SUBSCRIBE before it handles it (`carryTo`): aedes then keeps No Local
 * (it skips the subscriber's own publications, and the options are stored with a persistent session's
 * subscriptions). aedes sends retained messages on every SUBSCRIBE whatever Retain Handling says; which of them the
 * device asked for is decided here (`wantsRetained`), at the broker's authorizeForward.
 *
 * Retain As Published is not carried: aedes tells a message sent for a new subscription (not tracked in the
 * session) from a forwarded one (tracked until acknowledged) by its RETAIN flag, so forwarding a message with RETAIN
 * 1 would leave a persistent session's copy unacknowledged and send it again at the next connection.
 */
export class SubscriptionOptions {
  /** The options of each SUBSCRIBE on its way to the broker, by packet id. */
  readonly #requested = new Map<number, BrokerSubscriptionOptions[]>();
  /**
   * The filters of the latest SUBSCRIBE, each with whether its retained messages are wanted (Retain Handling). aedes
   * sends a SUBSCRIBE's retained messages right after handling it and does not say which SUBSCRIBE one is for, so
   * they are judged by the latest one's filters.
   */
  #retained = new Map<string, boolean>();

  /** A SUBSCRIBE from the device, before it goes to the broker as 3.1.1. */
  requested(messageId: number, subscriptions: readonly ISubscription[]): void {
    this.#requested.set(
      messageId,
      subscriptions.map((subscription) => (subscription.nl || subscription.rh ? { nl: subscription.nl === true, rh: subscription.rh ?? 0 } : {})),
    );
  }

  /**
   * Puts the options back on the broker's parsed SUBSCRIBE of the same packet id, and decides, per filter, whether
   * its retained messages are wanted: Retain Handling 0 always, 1 only when the broker has no such subscription of
   * this client yet, 2 never.
   */
  annotate(packet: Packet, existing: Readonly<Record<string, unknown>>): void {
    if (packet.cmd !== 'subscribe') return;
    const options = this.#requested.get(packet.messageId ?? 0);
    this.#requested.delete(packet.messageId ?? 0);
    this.#retained = new Map();
    packet.subscriptions.forEach((subscription, index) => {
      const chosen = options?.[index] ?? {};
      Object.assign(subscription, chosen);
      const handling = chosen.rh ?? 0;
      this.#retained.set(subscription.topic, handling === 0 || (handling === 1 && !Object.hasOwn(existing, subscription.topic)));
    });
  }

  /**
   * Whether a retained message the broker sends because of a SUBSCRIBE goes to the device: yes when a filter of the
   * latest SUBSCRIBE that it matches asks for retained messages, or when it matches none of them.
   */
  wantsRetained(topic: string): boolean {
    let matched = false;
    for (const [filter, wanted] of this.#retained) {
      if (!matches(filter, topic)) continue;
      if (wanted) return true;
      matched = true;
    }
    return !matched;
  }
}

/**
 * Makes the broker's client of an MQTT 5 connection see its SUBSCRIBEs with their options: aedes reads the adapter's
 * 3.1.1 bytes with a parser of its own (`_parser`, an aedes internal), whose packets are annotated before aedes'
 * own listener handles them. test/devices/mqtt5-subscription-options.test.ts fails if aedes stops working this way.
 */
export function carryTo(client: Client, options: SubscriptionOptions): void {
  const internals = client as unknown as { _parser: EventEmitter; subscriptions: Record<string, unknown> };
  internals._parser.prependListener('packet', (packet: Packet) => options.annotate(packet, internals.subscriptions));
}

/** Whether MQTT topic `filter` (with `+` and `#`) matches topic name `topic`. */
export function matches(filter: string, topic: string): boolean {
  const filterLevels = filter.split('/');
  const topicLevels = topic.split('/');
  for (let i = 0; i < filterLevels.length; i++) {
    const level = filterLevels[i];
    // `a/#` matches `a` itself too (MQTT-4.7.1-2).
    if (level === '#') return true;
    if (i >= topicLevels.length) return false;
    if (level !== '+' && level !== topicLevels[i]) return false;
  }
  return filterLevels.length === topicLevels.length;
}
