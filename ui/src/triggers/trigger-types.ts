import type { ApiData } from '../api/client';
import type { paths } from '../api/schema';

export type Trigger = ApiData<'/triggers/{id}'>;
/** The body of POST /triggers and PUT /triggers/{id}. */
export type TriggerWrite = paths['/triggers']['post']['requestBody']['content']['application/json'];
export type TriggerFilter = NonNullable<TriggerWrite['filters']>[number];
export type FilterType = TriggerFilter['type'];
export type GlobalVariable = NonNullable<TriggerWrite['globals']>[string];
export type Execution = ApiData<'/executions'>['items'][number];
export type ScriptNamespace = ApiData<'/triggers/namespaces'>['items'][number];
/** The body of POST /triggers/run and what it answers. */
export type DraftRunBody = paths['/triggers/run']['post']['requestBody']['content']['application/json'];
export type DraftEvent = DraftRunBody['event'];
export type DraftRun = paths['/triggers/run']['post']['responses'][200]['content']['application/json'];
export type HistoryEvent = ApiData<'/history'>['items'][number];

/** The filter types the API takes, each with what its value is (docs/scripting.md). */
export const FILTER_TYPES = [
  { type: 'has-tag', field: false, value: 'tag', hint: 'the endpoint has this tag (name or name:value)' },
  { type: 'missing-tag', field: false, value: 'tag', hint: 'the endpoint lacks this tag' },
  { type: 'has-status-detail', field: false, value: 'status detail', hint: 'the endpoint has this status detail' },
  { type: 'missing-status-detail', field: false, value: 'status detail', hint: 'the endpoint lacks this status detail' },
  { type: 'has-endpoint', field: false, value: 'endpoint key or id (optional)', hint: 'the event has an endpoint (this one)' },
  { type: 'one-of', field: true, value: 'values (JSON array)', hint: 'the field equals one of the values' },
  { type: 'contains', field: true, value: 'value (JSON or text)', hint: 'the text or list at the field contains the value' },
  { type: '==', field: true, value: 'value (JSON or text)', hint: 'the field equals the value' },
  { type: '!=', field: true, value: 'value (JSON or text)', hint: 'the field differs from the value' },
  { type: '>', field: true, value: 'value (JSON or text)', hint: 'the field is greater' },
  { type: '>=', field: true, value: 'value (JSON or text)', hint: 'the field is greater or equal' },
  { type: '<=', field: true, value: 'value (JSON or text)', hint: 'the field is less or equal' },
  { type: '<', field: true, value: 'value (JSON or text)', hint: 'the field is less' },
] as const satisfies readonly { type: FilterType; field: boolean; value: string; hint: string }[];

// A filter type the API adds and this list lacks fails the typecheck here.
type Listed = (typeof FILTER_TYPES)[number]['type'];
const everyFilterListed: [Exclude<FilterType, Listed>] extends [never] ? true : false = true;
void everyFilterListed;

/**
 * The platform's own event types (PLATFORM_EVENT_TYPES of src/events/event.ts, named in the API's
 * description of an event's type); the browser test checks the editor offers exactly these.
 */
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

/** The fields every event has, for `event.` completions. */
export const EVENT_FIELDS = [
  { name: 'id', info: 'the event id' },
  { name: 'type', info: 'the event type' },
  { name: 'accountId', info: 'the account it belongs to' },
  { name: 'serviceId', info: "the endpoint's service, or null" },
  { name: 'endpointId', info: 'the endpoint, or null' },
  { name: 'endpointKey', info: "the endpoint's key, or null" },
  { name: 'time', info: 'when it happened (ISO 8601)' },
  { name: 'data', info: 'its payload (any JSON)' },
] as const;

/** A sample `data` for a test-run of an event type (editable in the form; docs/lwm2m.md shows an lwm2m-data's). */
export function sampleData(type: string): unknown {
  if (type === 'lwm2m-data') return { operation: 'read', values: [{ path: '/3303/0/5700', type: 'float', value: 21.5 }] };
  return {};
}
