import type { Event } from './event.js';

/**
 * An event's data is turned into JSON twice on its way: for its history row and for the script worker that runs
 * its triggers. The data's JSON, most of the event's, is made once per event object and kept beside it.
 */
const dataJsonByEvent = new WeakMap<Event, string>();

/** `JSON.stringify(event.data ?? null)`, made once per event object. */
export function dataJsonOf(event: Event): string {
  let json = dataJsonByEvent.get(event);
  if (json === undefined) {
    json = JSON.stringify(event.data ?? null);
    dataJsonByEvent.set(event, json);
  }
  return json;
}

/** An event read back from storage: its data is that JSON text already (so it is not made again). */
export function rememberDataJson(event: Event, json: string): void {
  dataJsonByEvent.set(event, json);
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
