import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppError } from '../../src/errors.js';
import { checkTopicPattern, DEFAULT_TOPIC_PATTERN, mayPublish, maySubscribe, spaceFilter, topicSpace, type TopicSpace } from '../../src/mqtt/topic-space.js';

function space(pattern: string, key: string): TopicSpace {
  const found = topicSpace(pattern, key);
  assert.ok(found, `${pattern} with key ${key} is a space`);
  return found;
}

describe('checkTopicPattern', () => {
  it('accepts one whole {key} level among literal levels, optionally ending in #', () => {
    for (const pattern of [DEFAULT_TOPIC_PATTERN, '{key}/#', 'devices/{key}/#', 't/{key}/up', '{key}', 'a/b/{key}/c/d/#', 'site-1/{key}/data']) {
      assert.doesNotThrow(() => checkTopicPattern(pattern), pattern);
    }
  });

  it('refuses patterns that could not confine a device, naming the option', () => {
    const refused: [string, RegExp][] = [
      ['devices/#', /exactly one whole level \{key\}/],
      ['devices/+/#', /exactly one whole level \{key\}/],
      ['', /exactly one whole level \{key\}/],
      ['{key}/{key}/#', /exactly one whole level \{key\}/],
      ['a/{key}/b/{key}', /exactly one whole level \{key\}/],
      ['{key}x/#', /exactly one whole level \{key\}/],
      ['x{key}/#', /exactly one whole level \{key\}/],
      ['#/{key}', /# only as its last level/],
      ['{key}/#/x', /# only as its last level/],
      ['$SYS/{key}/#', /must not start with \$/],
      ['$share/{key}/#', /must not start with \$/],
      ['a/+/{key}/#', /no wildcard other than a final #/],
      ['{key}/+', /no wildcard other than a final #/],
      ['{key}/up#', /no wildcard other than a final #/],
      ['{key}/{id}', /no braces other than \{key\}/],
      ['a//{key}/#', /must not have empty levels/],
      ['/{key}/#', /must not have empty levels/],
    ];
    for (const [pattern, reason] of refused) {
      assert.throws(
        () => checkTopicPattern(pattern),
        (error: unknown) => {
          assert.ok(error instanceof AppError, `${pattern}: an AppError`);
          assert.equal(error.code, 'IOTB_REQUEST_VALIDATION', pattern);
          assert.match(error.message, /^options\.topicPattern /, pattern);
          assert.match(error.message, reason, pattern);
          assert.deepEqual(error.details, { option: 'topicPattern', value: pattern });
          return true;
        },
        pattern,
      );
    }
  });
});

describe('topicSpace', () => {
  it('puts the key in the {key} level; a final # makes it a subtree', () => {
    assert.deepEqual(topicSpace('{key}/#', 'dev-1'), { prefix: ['dev-1'], subtree: true, topic: 'dev-1' });
    assert.deepEqual(topicSpace('devices/{key}/#', 'dev-1'), { prefix: ['devices', 'dev-1'], subtree: true, topic: 'devices/dev-1' });
    assert.deepEqual(topicSpace('t/{key}/up', 'dev-1'), { prefix: ['t', 'dev-1', 'up'], subtree: false, topic: 't/dev-1/up' });
    assert.equal(spaceFilter(space('devices/{key}/#', 'dev-1')), 'devices/dev-1/#');
    assert.equal(spaceFilter(space('t/{key}/up', 'dev-1')), 't/dev-1/up');
  });

  it('refuses keys that would widen or break the space', () => {
    for (const key of ['', 'a/b', '/', 'dev/', 'plus+', '+', '#', 'dev#1', 'nul\0', '$SYS', '$dev']) {
      assert.equal(topicSpace('{key}/#', key), undefined, JSON.stringify(key));
    }
    for (const key of ['a/b', '+', '#', '']) {
      assert.equal(topicSpace('devices/{key}/#', key), undefined, `${JSON.stringify(key)} under devices/`);
    }
  });

  it('takes keys that are safe as a level, including a $ that is not the first level', () => {
    for (const key of ['dev-1', 'urn:imei:3534', 'a.b_c~d', 'ünï', 'with space', '{key}']) {
      assert.deepEqual(topicSpace('{key}/#', key), { prefix: [key], subtree: true, topic: key }, key);
    }
    assert.deepEqual(topicSpace('devices/{key}/#', '$dev'), { prefix: ['devices', '$dev'], subtree: true, topic: 'devices/$dev' });
  });
});

describe('mayPublish', () => {
  const own = space('{key}/#', 'dev-1');

  it('allows the exact prefix topic and every topic below it', () => {
    for (const topic of ['dev-1', 'dev-1/up', 'dev-1/a/b/c', 'dev-1/', 'dev-1//x']) assert.equal(mayPublish(own, topic), true, topic);
  });

  it("refuses other devices' topics, look-alike prefixes and the broker's $ topics", () => {
    for (const topic of ['dev-2', 'dev-2/up', 'dev-10/up', 'dev-1x/up', 'dev', '', '/dev-1', 'up/dev-1', '$SYS/dev-1', 'DEV-1/up']) {
      assert.equal(mayPublish(own, topic), false, JSON.stringify(topic));
    }
  });

  it('with a deeper pattern, every prefix level must match', () => {
    const nested = space('devices/{key}/#', 'dev-1');
    for (const topic of ['devices/dev-1', 'devices/dev-1/up']) assert.equal(mayPublish(nested, topic), true, topic);
    for (const topic of ['devices', 'devices/dev-2/up', 'dev-1/up', 'other/dev-1/up', 'devices/dev-1x']) assert.equal(mayPublish(nested, topic), false, topic);
  });

  it('a pattern without # is the one topic only', () => {
    const single = space('t/{key}/up', 'dev-1');
    assert.equal(mayPublish(single, 't/dev-1/up'), true);
    for (const topic of ['t/dev-1', 't/dev-1/up/more', 't/dev-1/down', 't/dev-2/up', 't/dev-1/up/']) assert.equal(mayPublish(single, topic), false, topic);
  });

  it('agrees with matching the topic level by level, for every pattern shape and many topics', () => {
    // A topic name without wildcards is a filter that matches itself: maySubscribe compares it level by level.
    const keys = ['dev-1', 'dev-10', 'd', 'ünï', 'with space', '{key}', 'a.b'];
    const patterns = ['{key}/#', 'devices/{key}/#', 't/{key}/up', '{key}', 'a/b/{key}/c/#', '{key}/'];
    const levels = ['', 'dev-1', 'dev-10', 'dev-1x', 'd', 'devices', 't', 'up', 'a', 'b', 'c', 'ünï', 'with space', '{key}', 'a.b', 'dev'];
    let checked = 0;
    for (const pattern of patterns) {
      for (const key of keys) {
        const owned = space(pattern, key);
        const topics = new Set<string>([owned.topic, `${owned.topic}/`, `${owned.topic}/x`, `${owned.topic}x`, owned.topic.slice(0, -1)]);
        for (const a of levels) for (const b of levels) for (const c of ['', '/up', '/up/more']) topics.add(`${a}/${b}${c}`).add(`${a}${c}`);
        for (const topic of topics) {
          assert.equal(mayPublish(owned, topic), maySubscribe(owned, topic), `${pattern} ${key} ${JSON.stringify(topic)}`);
          checked++;
        }
      }
    }
    assert.ok(checked > 10_000);
  });
});

describe('maySubscribe', () => {
  const own = space('{key}/#', 'dev-1');

  it('allows the space, the exact prefix topic and wildcards below the prefix', () => {
    for (const filter of ['dev-1/#', 'dev-1', 'dev-1/+', 'dev-1/+/status', 'dev-1/cmd/#', 'dev-1/+/+/#', 'dev-1/cmd']) {
      assert.equal(maySubscribe(own, filter), true, filter);
    }
  });

  it('refuses + or # at a prefix level: they would match other devices', () => {
    for (const filter of ['#', '+', '+/#', '+/cmd', '+/+', '#/dev-1']) assert.equal(maySubscribe(own, filter), false, filter);
    const nested = space('devices/{key}/#', 'dev-1');
    for (const filter of ['devices/#', 'devices/+', 'devices/+/cmd', '+/dev-1/#', '#', 'devices/+/#']) assert.equal(maySubscribe(nested, filter), false, filter);
    for (const filter of ['devices/dev-1', 'devices/dev-1/#', 'devices/dev-1/+/x']) assert.equal(maySubscribe(nested, filter), true, filter);
  });

  it("refuses other devices' filters, look-alikes, $ topics and a # that is not last", () => {
    for (const filter of ['dev-2/#', 'dev-1x/#', 'dev/#', '$SYS/#', '$share/g/dev-1/#', 'dev-1/#/x', 'dev-1/#/#', '']) {
      assert.equal(maySubscribe(own, filter), false, JSON.stringify(filter));
    }
  });

  it('a pattern without # allows the exact topic only, no wildcard at all', () => {
    const single = space('t/{key}/up', 'dev-1');
    assert.equal(maySubscribe(single, 't/dev-1/up'), true);
    for (const filter of ['t/dev-1/#', 't/dev-1/+', 't/+/up', 't/#', '#', 't/dev-1/up/#', 't/dev-1/up/+', 't/dev-1', 't/dev-2/up']) {
      assert.equal(maySubscribe(single, filter), false, filter);
    }
  });

  it('a key that reads like a pattern is literal', () => {
    const braces = space('{key}/#', '{key}');
    assert.equal(maySubscribe(braces, '{key}/#'), true);
    assert.equal(maySubscribe(braces, 'dev-1/#'), false);
  });
});
