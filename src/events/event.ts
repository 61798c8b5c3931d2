import { newSortableId } from '../domain/ids.js';
import { nowIso } from '../domain/time.js';

/**
 * One model for every source of activity: devices (through the protocol services), the platform
 * and applications (`POST /events`). Events drive triggers and are kept in the history.
 */
export interface Event {
  readonly id: string;
  /** SPEC "Events": `lwm2m-data`, `mqtt-publish`, `on-connect`, …, or any custom type. */
  readonly type: string;
  readonly accountId: string;
  readonly serviceId: string | null;
  readonly endpointId: string | null;
  readonly endpointKey: string | null;
  /** When it happened, ISO 8601 UTC. */
  readonly time: string;
  readonly data: unknown;
}

/** The event types the platform itself emits (a trigger may also listen to custom ones). */
export const PLATFORM_EVENT_TYPES = [
  'lwm2m-data',
  'lwm2m-result',
  'lwm2m-fota-complete',
  'coap-keepalive',
  'coap-request',
  'mqtt-publish',
  'mqtt-subscribe',
  'mqtt-unsubscribe',
  'udp-message',
  'tcp-message',
  'tcp-sent',
  'on-create',
  'on-connect',
  'on-disconnect',
  'once-event',
  'LORA Uplink',
  'LORA Join',
  'LORA Ack',
  'LORA TxAck',
  'LORA Status',
  'output',
  'geofence',
  'alert',
] as const;

export interface EventInput {
  readonly type: string;
  readonly accountId: string;
  readonly serviceId?: string | null | undefined;
  readonly endpointId?: string | null | undefined;
  readonly endpointKey?: string | null | undefined;
  readonly time?: string | undefined;
  readonly data?: unknown;
}

export function createEvent(input: EventInput): Event {
  return {
    id: newSortableId(),
    type: input.type,
    accountId: input.accountId,
    serviceId: input.serviceId ?? null,
    endpointId: input.endpointId ?? null,
    endpointKey: input.endpointKey ?? null,
    time: input.time ?? nowIso(),
    data: input.data ?? null,
  };
}

/**
 * Events with the same partition are handled one after another, in order; different partitions in
 * parallel. One endpoint is one partition; events without an endpoint are ordered per account.
 */
export function partitionOf(event: Event): string {
  return event.endpointId ?? `account:${event.accountId}`;
}
