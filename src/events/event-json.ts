import { storableJson } from '../domain/storable-text.js';
import type { Event } from './event.js';

/**
 * An event's data is turned into JSON twice on its way: for its history row and for the script worker that runs
 * its triggers. The data's JSON, most of the event's, is made once per event object and kept on it under a
 * symbol, not enumerable: spreads, `JSON.stringify`, structured clones and deep-equality checks do not see it.
 * (A WeakMap beside the events cost ~1.3 µs an event, most of it in the young-generation collector's
 * ephemeron work: docs/performance.md, session 28.)
 */
const DATA_JSON = Symbol('dataJson');

type WithDataJson = Event & { readonly [DATA_JSON]?: string };

/** `JSON.stringify(event.data ?? null)` as the databases store it (storable-text.ts), made once per event object. */
export function dataJsonOf(event: Event): string {
  const json = (event as WithDataJson)[DATA_JSON];
  if (json !== undefined) return json;
  const made = storableJson(event.data);
  rememberDataJson(event, made);
  return made;
}

/** One descriptor reused: defining the property allocates nothing else. */
const descriptor: PropertyDescriptor = { value: undefined, enumerable: false, writable: false, configurable: false };

/** An event read back from storage: its data is that JSON text already (so it is not made again). */
export function rememberDataJson(event: Event, json: string): void {
  // A frozen event (or one already holding its JSON) keeps what it has; its JSON is then made again when needed.
  if (!Object.isExtensible(event) || DATA_JSON in event) return;
  descriptor.value = json;
  Object.defineProperty(event, DATA_JSON, descriptor);
  descriptor.value = undefined;
}

/**
 * The event's JSON as the sandbox gets it: its model's fields, in their order, with the data's JSON made once
 * (a `JSON.stringify(event)` would make it again).
 */
export function eventJsonOf(event: Event): string {
  const head = JSON.stringify({
    id: event.id,
    type: event.type,
    accountId: event.accountId,
    serviceId: event.serviceId,
    endpointId: event.endpointId,
    endpointKey: event.endpointKey,
    time: event.time,
  });
  return `${head.slice(0, -1)},"data":${dataJsonOf(event)}}`;
}
