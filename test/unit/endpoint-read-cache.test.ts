// The rule that keeps the endpoint read cache exact: what a read found is kept only when no write to that
// endpoint (or, for key look-ups, to any key) ended after the read began.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Endpoint } from '../../src/domain/endpoints.js';
import { deviceLookup, EndpointReadCache, keyLookup } from '../../src/store/endpoint-read-cache.js';

function endpoint(id: string, key = `key-${id}`, accountId = 'acc-1'): Endpoint {
  return { id, key, accountId, serviceId: 'svc-1', tags: [], statusDetails: {}, parameters: {}, trace: false, createdAt: '', updatedAt: '', state: 'unavailable', lastSeenAt: null };
}

describe('EndpointReadCache', () => {
  it('holds a row read with no write in between, for its own account only', () => {
    const cache = new EndpointReadCache(10);
    cache.keep(endpoint('e1'), cache.generation);
    assert.equal(cache.get('acc-1', 'e1')?.id, 'e1');
    assert.equal(cache.get('acc-2', 'e1'), undefined);
  });

  it('drops what a read found when a write to that endpoint ended while it was in flight', () => {
    const cache = new EndpointReadCache(10);
    const began = cache.generation;
    cache.forget(['e1']);
    cache.keep(endpoint('e1'), began);
    assert.equal(cache.get('acc-1', 'e1'), undefined);
    // A write to another endpoint does not stop it; a read begun after the write is kept.
    const next = cache.generation;
    cache.forget(['e2']);
    cache.keep(endpoint('e1'), next);
    assert.equal(cache.get('acc-1', 'e1')?.id, 'e1');
  });

  it('forgets a held row after a write, and key look-ups after a key may have changed', () => {
    const cache = new EndpointReadCache(10);
    cache.keepLookup(keyLookup('acc-1', 'k1', undefined, 2), [endpoint('e1', 'k1')], cache.generation);
    assert.deepEqual(cache.getByLookup(keyLookup('acc-1', 'k1', undefined, 2))?.map((e) => e.id), ['e1']);
    assert.equal(cache.getByLookup(keyLookup('acc-1', 'k1', 'svc-1', 2)), undefined, 'another look-up');
    cache.forget(['e1']);
    assert.equal(cache.getByLookup(keyLookup('acc-1', 'k1', undefined, 2)), undefined, 'the row is gone, so the look-up is unknown');

    cache.keepLookup(keyLookup('acc-1', 'k2', undefined, 2), [], cache.generation);
    assert.deepEqual(cache.getByLookup(keyLookup('acc-1', 'k2', undefined, 2)), [], 'none found, held');
    const began = cache.generation;
    cache.forgetWithKeys(['e9']);
    assert.equal(cache.getByLookup(keyLookup('acc-1', 'k2', undefined, 2)), undefined, 'an insert may have added the key');
    cache.keepLookup(keyLookup('acc-1', 'k2', undefined, 2), [], began);
    assert.equal(cache.getByLookup(keyLookup('acc-1', 'k2', undefined, 2)), undefined, 'a look-up that predates the insert is not kept');
  });

  it('replaces a held row after a presence write, and drops reads in flight then', () => {
    const cache = new EndpointReadCache(10);
    cache.keepLookup(deviceLookup('coap', 'k1', 10), [endpoint('e1', 'k1')], cache.generation);
    const began = cache.generation;
    cache.patch('e1', (held) => ({ ...held, state: 'connected', lastSeenAt: '2026-11-29T00:00:00.000Z' }));
    assert.deepEqual(
      cache.getByLookup(deviceLookup('coap', 'k1', 10))?.map((e) => [e.id, e.state, e.lastSeenAt]),
      [['e1', 'connected', '2026-11-29T00:00:00.000Z']],
    );
    cache.keep(endpoint('e1'), began);
    assert.equal(cache.get('acc-1', 'e1')?.state, 'connected', 'the read that began before the write is not kept');
    cache.patch('e2', (held) => ({ ...held, state: 'connected' }));
    assert.equal(cache.get('acc-1', 'e2'), undefined, 'nothing held, nothing made up');
  });

  it('counts changes it no longer remembers one by one as recent', () => {
    const cache = new EndpointReadCache(10);
    const began = cache.generation;
    cache.forget(['old']);
    for (let i = 0; i < 5000; i++) cache.forget([`other-${i}`]);
    cache.keep(endpoint('old'), began);
    assert.equal(cache.get('acc-1', 'old'), undefined);
    cache.forgetAll();
    const after = cache.generation;
    cache.keep(endpoint('old'), after);
    assert.equal(cache.get('acc-1', 'old')?.id, 'old');
  });

  it('hands out frozen rows', () => {
    const cache = new EndpointReadCache(10);
    cache.keep(endpoint('e1'), cache.generation);
    const held = cache.get('acc-1', 'e1')!;
    assert.throws(() => (held.tags).push('x'), TypeError);
  });
});
