import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FromWorker, ToWorker } from '../../src/triggers/sandbox/protocol.js';
import { LineReader, decodeFromWorker, decodeToWorker, encodeFromWorker, encodeToWorker } from '../../src/triggers/sandbox/wire.js';

/** Text a script or a device can put anywhere: framing characters, quotes, escapes, astral and line-separator characters. */
const AWKWARD = 'tab\there\nnew line\r\n"quoted" \\back\\slash \u2028\u2029 \u{1F600} \u0000 end';

const toWorker: ToWorker[] = [
  { kind: 'run', runId: 7, script: 3, eventJson: JSON.stringify({ data: { text: AWKWARD, n: 1.5 } }), globalsJson: JSON.stringify({ limit: AWKWARD }) },
  { kind: 'run', runId: 8, script: 3, eventJson: 'null', globalsJson: '{}' },
  { kind: 'run', runId: 9, after: 8, script: 3, eventJson: JSON.stringify({ text: AWKWARD }), globalsJson: JSON.stringify({ limit: AWKWARD }) },
  { kind: 'reply', callId: 12, json: JSON.stringify({ value: AWKWARD }) },
  { kind: 'reply', callId: 13 },
  { kind: 'reply', callId: 14, error: AWKWARD },
  { kind: 'script', ref: 3, namespaces: 2, accountId: 'acc-1', scriptId: 'trigger-1@4', scriptName: 'trigger:t.js', script: `var a = 1;\n\tlog(${JSON.stringify(AWKWARD)}); // ${AWKWARD}` },
  { kind: 'namespaces', id: 2, json: JSON.stringify({ endpoint: ['storageGet'], trigger: [] }) },
  { kind: 'forget' },
];

const fromWorker: FromWorker[] = [
  { kind: 'done', runId: 7, result: { status: 'failed', error: AWKWARD, line: 2, logs: [AWKWARD, ''], durationMs: 0.25 } },
  { kind: 'done', runId: 8, result: { status: 'success', error: null, line: null, logs: [], durationMs: 0 } },
  { kind: 'done', runId: 9, result: { status: 'success', error: null, line: null, logs: [], durationMs: 0.0125 } },
  { kind: 'done', runId: 10, result: { status: 'success', error: null, line: null, logs: ['one line'], durationMs: 3 } },
  { kind: 'call', runId: 7, callId: 12, namespace: 'endpoint', fn: 'storageGet', argsJson: JSON.stringify(['k', AWKWARD]) },
];

describe('script worker wire format', () => {
  it('gives back every message it encodes, one line each, whatever text the JSON carries', () => {
    for (const message of toWorker) {
      const line = encodeToWorker(message);
      assert.equal(line.indexOf('\n'), line.length - 1, `${message.kind}: one line`);
      assert.deepEqual(decodeToWorker(line.slice(0, -1)), message);
    }
    for (const message of fromWorker) {
      const line = encodeFromWorker(message);
      assert.equal(line.indexOf('\n'), line.length - 1, `${message.kind}: one line`);
      assert.deepEqual(decodeFromWorker(line.slice(0, -1)), message);
    }
  });

  it('refuses lines from a worker that are not well formed', () => {
    const badDone = ['D\t1\t', 'D\t1\tNaN', 'D\t1\t1e999', 'D\t1\tsuccess', 'D\t1\t[1]'];
    for (const line of ['', 'X\t1', 'D\t1', 'D\t1\t{not json', ...badDone, 'C\t1\t2\tendpoint\tstorageGet', 'done {"runId":1}']) {
      assert.equal(decodeFromWorker(line), undefined, JSON.stringify(line));
    }
  });

  it('cuts a stream into the lines written, however the chunks fall', () => {
    const text = toWorker.map(encodeToWorker).join('');
    for (const size of [1, 2, 7, 64, text.length]) {
      const lines: string[] = [];
      const reader = new LineReader((line) => lines.push(line), () => assert.fail('no line is too long'));
      for (let i = 0; i < text.length; i += size) reader.push(text.slice(i, i + size));
      assert.deepEqual(lines.map(decodeToWorker), toWorker, `chunks of ${size}`);
    }
  });

  it('stops reading a peer that writes a line past the limit, whether it ends or not', () => {
    for (const chunks of [['a'.repeat(40), 'b'.repeat(40)], ['ok\n', 'x'.repeat(101), '\nafter\n'], ['ok\n' + 'y'.repeat(101) + '\nafter\n']]) {
      const lines: string[] = [];
      let overflows = 0;
      const reader = new LineReader((line) => lines.push(line), () => overflows++, 64);
      for (const chunk of chunks) reader.push(chunk);
      assert.equal(overflows, 1, JSON.stringify(chunks.map((c) => c.length)));
      assert.ok(!lines.includes('after'), 'nothing after the overflow is read');
      assert.ok(lines.every((line) => line.length <= 64));
    }
  });
});
