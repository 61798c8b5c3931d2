import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import pino from 'pino';
import { ThrottledLog } from '../../src/devices/throttled-log.js';

/** A pino logger whose lines land in `lines`, parsed. */
function capturing(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}

describe('ThrottledLog: refusals anyone can cause are logged sparingly', () => {
  it('writes one line per reason per window, then one that counts what was left out', async () => {
    const { logger, lines } = capturing();
    const log = new ThrottledLog(logger, 100);
    for (let i = 0; i < 1000; i++) log.info('login 134', { remoteAddr: `127.0.0.1:${i}` }, 'MQTT log-in refused: wrong password');
    log.info('closed too-large', {}, 'MQTT connection closed: too large');
    await sleep(10);
    assert.equal(lines.length, 2);
    assert.equal(lines[0]!.remoteAddr, '127.0.0.1:0');
    assert.equal(lines[0]!.refusedSinceLastLine, 0);

    await sleep(120);
    log.info('login 134', { remoteAddr: '127.0.0.1:5000' }, 'MQTT log-in refused: wrong password');
    await sleep(10);
    assert.equal(lines.length, 3);
    assert.equal(lines[2]!.refusedSinceLastLine, 999, 'the next line says how many were left out');
  });
});
