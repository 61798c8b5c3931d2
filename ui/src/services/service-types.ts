import type { paths } from '../api/schema';

/** The body of POST /services. */
export type ServiceWrite = paths['/services']['post']['requestBody']['content']['application/json'];
export type ServiceType = ServiceWrite['type'];
export type ServiceOptions = NonNullable<ServiceWrite['options']>;

/** The service types the API takes, in the order the form offers them, with what each one is for. */
export const SERVICE_TYPES = [
  { type: 'lwm2m', label: 'LwM2M', hint: 'LwM2M devices over CoAP/CoAPS' },
  { type: 'mqtt', label: 'MQTT', hint: 'MQTT 5 and 3.1.1 clients' },
  { type: 'coap', label: 'CoAP', hint: 'plain CoAP devices' },
  { type: 'udp', label: 'UDP', hint: 'raw UDP datagrams' },
  { type: 'tcp', label: 'TCP', hint: 'raw TCP streams' },
  { type: 'lora', label: 'LoRa', hint: 'ChirpStack or The Things Stack webhooks' },
  { type: 'http', label: 'HTTP', hint: 'devices that call the API' },
] as const satisfies readonly { type: ServiceType; label: string; hint: string }[];

// A type the API adds and this list lacks fails the typecheck here.
type Listed = (typeof SERVICE_TYPES)[number]['type'];
const everyTypeListed: [Exclude<ServiceType, Listed>] extends [never] ? true : false = true;
void everyTypeListed;

export function serviceTypeLabel(type: string): string {
  return SERVICE_TYPES.find((entry) => entry.type === type)?.label ?? type;
}
