import { partitionOf, type Event } from './event.js';

/**
 * How many shards the events of a cluster are spread over (docs/cluster.md, "Event bus"). Each shard is handled by
 * one node at a time; more shards than nodes lets the work move in small steps when a node joins or leaves.
 */
export const BUS_SHARDS = 64;

/** The shard of an event: its partition (endpoint, else account) hashed (FNV-1a), so one endpoint keeps one shard. */
export function shardOf(event: Event): number {
  const partition = partitionOf(event);
  let hash = 0x811c9dc5;
  for (let i = 0; i < partition.length; i++) {
    hash ^= partition.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % BUS_SHARDS;
}
