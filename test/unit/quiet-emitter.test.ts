import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import mqemitter from 'mqemitter';
import type { EmitterMessage } from '../../src/mqtt/prefixed-emitter.js';
import { QuietEmitter } from '../../src/mqtt/quiet-emitter.js';

/** A broker's emitter as aedes makes it, behind QuietEmitter; what each listener heard, by name. */
function emitter() {
  const inner = mqemitter({ concurrency: 100, matchEmptyLevels: true });
  const quiet = new QuietEmitter(inner);
  const heard: string[] = [];
  const listener = (name: string) => (message: EmitterMessage, done: () => void) => {
    heard.push(`${name} ${message.topic}`);
    done();
  };
  const emit = (topic: string) =>
    new Promise<Error | undefined>((resolve) => {
      quiet.emit({ topic }, resolve);
    });
  return { inner, quiet, heard, listener, emit };
}

describe('QuietEmitter', () => {
  it('finishes a publication nobody can hear at once, and still delivers `$` topics to their listeners', async () => {
    const { quiet, heard, listener, emit } = emitter();
    quiet.on('$SYS/+/new/clients', listener('sys'));
    let finished = false;
    quiet.emit({ topic: 'device/temperature' }, () => (finished = true));
    assert.equal(finished, true, 'done at once, as mqemitter does with no match');
    assert.equal(await emit('$SYS/broker-1/new/clients'), undefined);
    assert.deepEqual(heard, ['sys $SYS/broker-1/new/clients']);
  });

  it('delivers as the matcher does once any filter not starting with `$` is listened to, wildcards included', async () => {
    const { quiet, heard, listener, emit } = emitter();
    quiet.on('$SYS/+/heartbeat', listener('sys'));
    quiet.on('#', listener('all'));
    await emit('device/temperature');
    await emit('$SYS/broker-1/heartbeat');
    // mqemitter's '#' matches `$` topics too (aedes keeps them from clients elsewhere): the matcher's answer, unchanged.
    assert.deepEqual(heard, ['all device/temperature', 'all $SYS/broker-1/heartbeat', 'sys $SYS/broker-1/heartbeat']);
  });

  it('counts a listener added twice under one filter twice, as the matcher keeps both', async () => {
    const { quiet, heard, listener, emit } = emitter();
    const one = listener('one');
    quiet.on('a/+', one);
    quiet.on('a/+', one);
    quiet.removeListener('a/+', one);
    await nextTurn();
    await emit('a/b');
    assert.deepEqual(heard, ['one a/b'], 'one of the two is left, and hears it');
    quiet.removeListener('a/+', one);
    // Removing what was never added changes nothing.
    quiet.removeListener('a/+', one);
    quiet.removeListener('b/#', listener('never'));
    await nextTurn();
    await emit('a/b');
    assert.deepEqual(heard, ['one a/b']);
    quiet.on('a/b', listener('again'));
    await emit('a/b');
    assert.deepEqual(heard, ['one a/b', 'again a/b']);
  });

  it('refuses publications once closed, as mqemitter does', async () => {
    const { quiet, emit } = emitter();
    await new Promise<void>((resolve) => quiet.close(resolve));
    assert.match(String(await emit('device/temperature')), /closed/);
  });
});
