/**
 * Table shapes of events and scripting: the event history and its bus (shards, nodes, cursor, by-endpoint index),
 * triggers, executions, script queues and once-events.
 * Part of the schema; schema.ts (which re-exports them) holds `Schema` and the column conventions.
 */
import type { Generated } from 'kysely';
import type { Json } from './schema-json.js';

export interface EventsTable {
  seq: Generated<number>;
  id: string;
  account_id: string;
  type: string;
  service_id: string | null;
  endpoint_id: string | null;
  endpoint_key: string | null;
  time: number;
  data: Json;
  /** The event's shard in cluster mode (src/events/shards.ts); written on PostgreSQL, 0 on SQLite's hot path. */
  bus_shard: Generated<number>;
}

/** A shard of cluster mode's event bus: how far it is handled and which node holds its lease until when (ms). */
export interface BusShardsTable {
  shard: number;
  handled_through: number;
  owner: string | null;
  lease_until: number;
}

/** A node of a cluster, alive while `seen_until` (ms, the database's clock) is ahead. */
export interface BusNodesTable {
  node: string;
  seen_until: number;
  started_at: number;
}

/**
 * Positions in the event sequence: `bus`, how far the bus has handled it; `endpoint-index`, how far
 * `event_endpoints` covers it.
 */
export interface EventCursorTable {
  name: string;
  handled_through: number;
}

/** The history's by-endpoint index, written in bulk behind the newest events (migration 0016). */
export interface EventEndpointsTable {
  endpoint_id: string;
  seq: number;
}

export interface TriggersTable {
  id: string;
  account_id: string;
  name: string;
  events: Json;
  filters: Json;
  script: string;
  enabled: number;
  library: number;
  globals: Json;
  form: Json;
  version: number;
  created_at: number;
  updated_at: number;
}

export interface ExecutionsTable {
  seq: Generated<number>;
  id: string;
  account_id: string;
  trigger_id: string;
  event_id: string;
  event_type: string;
  started_at: number;
  duration_ms: number;
  status: string;
  error: string | null;
  line: number | null;
  logs: Json;
  test: number;
  context: Json;
  groups: Json;
}

export interface ScriptQueuesTable {
  seq: Generated<number>;
  account_id: string;
  name: string;
  value: Json;
  expires_at: number;
}

/** A trigger's once-event, claimed (unique per trigger and key) before it is published; `emitted_at` once it was. */
export interface OnceEventsTable {
  trigger_id: string;
  claim_key: string;
  account_id: string;
  event_id: string;
  data: string;
  claimed_at: number;
  emitted_at: number | null;
}
