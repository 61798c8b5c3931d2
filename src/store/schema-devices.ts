/**
 * Table shapes of devices: services, endpoints and their tags, credentials, storage and security.
 * Part of the schema; schema.ts (which re-exports them) holds `Schema` and the column conventions.
 */
import type { Generated } from 'kysely';
import type { Json } from './schema-json.js';

export interface ServicesTable {
  id: string;
  account_id: string;
  name: string;
  type: string;
  options: Json;
  created_at: number;
  updated_at: number;
}

export interface EndpointsTable {
  id: string;
  account_id: string;
  service_id: string;
  key: string;
  tags: Json;
  status_details: Json;
  parameters: Json;
  trace: number;
  created_at: number;
  updated_at: number;
  /** `connected` | `unavailable`; written only through `setPresence` (device protocols), never by edits. */
  state: Generated<string>;
  last_seen_at: number | null;
  missing_after: number | null;
  /** The protocol and `host:port` the device was last heard from; written only through `setPresence`, never by edits. */
  heard_protocol: string | null;
  heard_addr: string | null;
  /** Cluster mode: the node that heard it there (whose socket it talks to); null in one process. */
  heard_node: string | null;
}

/** One row per tag, so tag filters use an index instead of scanning JSON. */
export interface EndpointTagsTable {
  endpoint_id: string;
  account_id: string;
  name: string;
  /** `''` for a bare `key` tag. */
  value: string;
}

/** An endpoint's device password (MQTT log-in), scrypt `hashPassword` output; never leaves the domain. */
export interface EndpointCredentialsTable {
  endpoint_id: string;
  password_hash: string;
  updated_at: number;
}

export interface EndpointStorageTable {
  endpoint_id: string;
  name: string;
  value: Json;
  updated_at: number;
}

export interface EndpointSecurityTable {
  endpoint_id: string;
  account_id: string;
  /** `psk` or `x509`. */
  mode: string;
  /** Unique across accounts. */
  psk_identity: string | null;
  /** Hex. */
  psk_key: string | null;
  updated_at: number;
}
