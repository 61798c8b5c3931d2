import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createEvent } from '../../src/events/event.js';
import { dataJsonOf, eventJsonOf } from '../../src/events/event-json.js';
import { toStored } from '../../src/store/event-store.js';

/** Text a device can send: framing characters, quotes, escapes, astral and line-separator characters. */
const AWKWARD = 'tab\there\nnew line\r\n"quoted" \\back\\slash \u2028\u2029 \u{1F600} \u0000 end';

describe('event JSON made once', () => {
  const events = [
    createEvent({ type: 'mqtt-publish', accountId: 'acc-1', serviceId: 'svc-1', endpointId: 'ep-1', endpointKey: AWKWARD, data: { topic: 'a/b', text: AWKWARD, n: 1.5, list: [1, null, { deep: true }] } }),
    createEvent({ type: AWKWARD, accountId: 'acc-1' }),
    createEvent({ type: 'custom', accountId: 'acc-1', data: AWKWARD }),
    createEvent({ type: 'custom', accountId: 'acc-1', data: 0 }),
  ];

  it('gives what JSON.stringify gives for the event and its data, awkward text included (a NUL in the data as U+FFFD, as stored)', () => {
    // The data as the databases store it (storable-json.ts); the event's own fields are not JSON columns.
    const stored = (data: unknown): unknown => JSON.parse(JSON.stringify(data ?? null).replaceAll('\\u0000', '\ufffd'));
    for (const event of events) {
      assert.equal(eventJsonOf(event), JSON.stringify({ ...event, data: stored(event.data) }));
      assert.equal(dataJsonOf(event), JSON.stringify(stored(event.data)));
      assert.deepEqual(JSON.parse(eventJsonOf(event)), { ...event, data: stored(event.data) });
    }
  });

  it('makes the data JSON once per event object', () => {
    const event = events[0]!;
    const first = dataJsonOf(event);
    assert.equal(dataJsonOf(event), first);
    // The same string object: nothing was made again.
    assert.ok(Object.is(dataJsonOf(event), first));
  });

  it('takes an event read back from storage with its stored data text', () => {
    const stored = toStored({ seq: 4, id: 'ev-1', account_id: 'acc-1', type: 'udp-message', service_id: null, endpoint_id: 'ep-1', endpoint_key: 'k', time: 1_700_000_000_000, data: '{"payload":"0a0b","text":"x\\ty"}', bus_shard: 0 });
    assert.equal(dataJsonOf(stored.event), '{"payload":"0a0b","text":"x\\ty"}');
    assert.equal(eventJsonOf(stored.event), JSON.stringify(stored.event));
  });

  it('keeps the JSON out of sight: keys, spreads, clones and deep equality see the event alone', () => {
    const event = createEvent({ type: 'custom', accountId: 'acc-1', data: { n: 1 } });
    const before = { ...event };
    dataJsonOf(event);
    assert.deepEqual(Object.keys(event), Object.keys(before));
    assert.deepStrictEqual(event, before);
    assert.deepStrictEqual({ ...event }, before);
    assert.deepStrictEqual(structuredClone(event), before);
    // A copy with other data is not handed the first one's JSON.
    assert.equal(dataJsonOf({ ...event, data: { n: 2 } }), '{"n":2}');
  });

  it('gives a frozen event its JSON too (made again when asked again)', () => {
    const event = Object.freeze(createEvent({ type: 'custom', accountId: 'acc-1', data: [1, 2] }));
    assert.equal(dataJsonOf(event), '[1,2]');
    assert.equal(eventJsonOf(event), JSON.stringify(event));
  });
});
