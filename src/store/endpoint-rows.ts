import type { Selectable } from 'kysely';
import type { Endpoint, EndpointState, JsonObject } from '../domain/endpoints.js';
import { fromJson, toJson, type EndpointsTable } from './schema.js';
import { toIso, toMs } from './sql.js';

/** An endpoint as the `endpoints` row holds it, and back: shared by the stores that read or write that table. */

export function toRow(endpoint: Endpoint) {
  return {
    id: endpoint.id,
    account_id: endpoint.accountId,
    service_id: endpoint.serviceId,
    key: endpoint.key,
    tags: toJson(endpoint.tags),
    status_details: toJson(endpoint.statusDetails),
    parameters: toJson(endpoint.parameters),
    trace: endpoint.trace ? 1 : 0,
    created_at: toMs(endpoint.createdAt),
    updated_at: toMs(endpoint.updatedAt),
  };
}

export function toEndpoint(row: Selectable<EndpointsTable>): Endpoint {
  return {
    id: row.id,
    key: row.key,
    serviceId: row.service_id,
    accountId: row.account_id,
    tags: fromJson<string[]>(row.tags),
    statusDetails: fromJson<JsonObject>(row.status_details),
    parameters: fromJson<JsonObject>(row.parameters),
    trace: row.trace === 1,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    state: row.state as EndpointState,
    lastSeenAt: row.last_seen_at === null ? null : toIso(row.last_seen_at),
  };
}
