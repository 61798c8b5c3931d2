import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Packet } from 'mqtt-packet';
import { matches, SubscriptionOptions } from '../../src/mqtt/subscription-options.js';

describe('MQTT topic filters (MQTT 5.0, 4.7)', () => {
  it('matches as the specification\'s examples say', () => {
    // 4.7.1.2: "sport/tennis/player1/#" matches these; "sport/#" also matches "sport".
    for (const topic of ['sport/tennis/player1', 'sport/tennis/player1/ranking', 'sport/tennis/player1/score/wimbledon']) assert.ok(matches('sport/tennis/player1/#', topic), topic);
    assert.ok(matches('sport/#', 'sport'));
    assert.ok(matches('#', 'a/b/c'));
    // 4.7.1.3: "sport/tennis/+" matches "sport/tennis/player1" but not "sport/tennis/player1/ranking"; "sport/+" not "sport".
    assert.ok(matches('sport/tennis/+', 'sport/tennis/player1'));
    assert.ok(!matches('sport/tennis/+', 'sport/tennis/player1/ranking'));
    assert.ok(!matches('sport/+', 'sport'));
    assert.ok(matches('sport/+', 'sport/'));
    assert.ok(matches('+/+', '/finance'));
    assert.ok(matches('/+', '/finance'));
    assert.ok(!matches('+', '/finance'));
    assert.ok(!matches('a/b', 'a/b/c'));
    assert.ok(!matches('a/b/c', 'a/b'));
  });
});

describe('SubscriptionOptions', () => {
  const subscribe = (messageId: number, topics: string[]): Packet => ({ cmd: 'subscribe', messageId, subscriptions: topics.map((topic) => ({ topic, qos: 1 })) });

  it('puts No Local and Retain Handling back on the broker\'s SUBSCRIBE of the same packet id; defaults stay as 3.1.1 gives them', () => {
    const options = new SubscriptionOptions();
    options.requested(7, [{ topic: 'd/a', qos: 1, nl: true, rh: 2 }, { topic: 'd/b', qos: 1 }]);
    const packet = subscribe(7, ['d/a', 'd/b']);
    options.annotate(packet, {});
    assert.deepEqual(packet.cmd === 'subscribe' && packet.subscriptions, [{ topic: 'd/a', qos: 1, nl: true, rh: 2 }, { topic: 'd/b', qos: 1 }]);
    // A packet id it was not told of (a 3.1.1-only path) is left alone.
    const other = subscribe(8, ['d/c']);
    options.annotate(other, {});
    assert.deepEqual(other.cmd === 'subscribe' && other.subscriptions, [{ topic: 'd/c', qos: 1 }]);
  });

  it('wants retained messages by the Retain Handling of the latest SUBSCRIBE\'s filters they match', () => {
    const options = new SubscriptionOptions();
    options.requested(1, [{ topic: 'd/#', qos: 1, rh: 2 }]);
    options.annotate(subscribe(1, ['d/#']), {});
    assert.equal(options.wantsRetained('d/x'), false, '2: never');
    assert.equal(options.wantsRetained('e/x'), true, 'no filter of the SUBSCRIBE matches: as the broker decided');
    options.requested(2, [{ topic: 'd/x', qos: 1, rh: 1 }]);
    options.annotate(subscribe(2, ['d/x']), {});
    assert.equal(options.wantsRetained('d/x'), true, '1 and a new subscription: one matching filter wants it');
    options.requested(3, [{ topic: 'd/x', qos: 1, rh: 1 }]);
    options.annotate(subscribe(3, ['d/x']), { 'd/x': {} });
    assert.equal(options.wantsRetained('d/x'), false, '1 and an existing subscription');
    options.requested(4, [{ topic: 'd/x', qos: 1, rh: 0 }]);
    options.annotate(subscribe(4, ['d/x']), { 'd/x': {} });
    assert.equal(options.wantsRetained('d/x'), true, '0: always');
    // An earlier SUBSCRIBE's filter that asked for them does not outvote the latest one's Retain Handling 2.
    options.requested(5, [{ topic: 'd/#', qos: 1, rh: 2 }]);
    options.annotate(subscribe(5, ['d/#']), { 'd/#': {}, 'd/x': {} });
    assert.equal(options.wantsRetained('d/x'), false, 'the latest SUBSCRIBE says never');
    // A filter named like an Object.prototype key is new until the broker has it.
    options.requested(6, [{ topic: 'constructor', qos: 1, rh: 1 }]);
    options.annotate(subscribe(6, ['constructor']), {});
    assert.equal(options.wantsRetained('constructor'), true);
  });
});
