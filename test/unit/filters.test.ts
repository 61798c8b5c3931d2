import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Endpoint } from '../../src/domain/endpoints.js';
import { createEvent } from '../../src/events/event.js';
import { matches, type TriggerFilter } from '../../src/triggers/filters.js';

const endpoint = { id: 'e1', key: 'dev-1', tags: ['site:berlin', 'meter'], statusDetails: { lifetime: 300, gone: null } } as unknown as Endpoint;
const event = createEvent({ type: 'reading', accountId: 'a', endpointId: 'e1', endpointKey: 'dev-1', data: { t: 21.5, label: 'kitchen sensor', list: [1, 2], time: '2026-11-22T10:00:00Z' } });

describe('trigger filters', () => {
  const cases: [TriggerFilter, boolean][] = [
    [{ type: 'has-tag', value: 'meter' }, true],
    [{ type: 'has-tag', value: 'site' }, true],
    [{ type: 'has-tag', value: 'site:berlin' }, true],
    [{ type: 'has-tag', value: 'site:paris' }, false],
    [{ type: 'missing-tag', value: 'site:paris' }, true],
    [{ type: 'missing-tag', value: 'meter' }, false],
    [{ type: 'has-status-detail', value: 'lifetime' }, true],
    [{ type: 'has-status-detail', value: 'gone' }, false],
    [{ type: 'missing-status-detail', value: 'remoteAddr' }, true],
    [{ type: 'has-endpoint' }, true],
    [{ type: 'has-endpoint', value: 'dev-1' }, true],
    [{ type: 'has-endpoint', value: 'dev-2' }, false],
    [{ type: 'one-of', field: 'type', values: ['reading', 'alarm'] }, true],
    [{ type: 'one-of', field: 'type', values: ['alarm'] }, false],
    [{ type: 'contains', field: 'data.label', value: 'kitchen' }, true],
    [{ type: 'contains', field: 'data.list', value: 2 }, true],
    [{ type: 'contains', field: 'data.list', value: 3 }, false],
    [{ type: '==', field: 'data.t', value: 21.5 }, true],
    [{ type: '!=', field: 'data.t', value: 21.5 }, false],
    [{ type: '>', field: 'data.t', value: 21 }, true],
    [{ type: '>=', field: 'data.t', value: 21.5 }, true],
    [{ type: '<', field: 'data.t', value: 21.5 }, false],
    [{ type: '<=', field: 'data.t', value: 21.5 }, true],
    [{ type: '>', field: 'data.time', value: '2026-11-22T09:00:00Z' }, true],
    [{ type: '>', field: 'data.t', value: '20' }, false],
    [{ type: '>', field: 'data.missing', value: 1 }, false],
    [{ type: '==', field: 'data.__proto__', value: undefined }, true],
  ];
  for (const [filter, expected] of cases) {
    it(`${JSON.stringify(filter)} → ${expected}`, () => assert.equal(matches([filter], event, endpoint), expected));
  }

  it('needs every filter to hold, and sees no endpoint as having no tags', () => {
    assert.equal(matches([{ type: 'has-tag', value: 'meter' }, { type: '>', field: 'data.t', value: 30 }], event, endpoint), false);
    assert.equal(matches([], event, undefined), true);
    assert.equal(matches([{ type: 'has-tag', value: 'meter' }], event, undefined), false);
    assert.equal(matches([{ type: 'missing-tag', value: 'meter' }], event, undefined), true);
  });
});
