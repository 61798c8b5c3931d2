// The API read's shortcuts (session 31): a frozen object's JSON made once (src/api/frozen-json.ts) and the request
// logger made only when something logs (src/api/lazy-request-logger.ts). Each must answer and log exactly what
// Fastify's own path would.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import pino from 'pino';
import { FrozenJson } from '../../src/api/frozen-json.js';
import { lazyRequestLogger } from '../../src/api/lazy-request-logger.js';

const THING = {
  type: 'object',
  properties: { id: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } }, at: { type: 'string', format: 'date-time' } },
} as const;

describe('FrozenJson', () => {
  it('answers what the route\'s schema serialiser answers, made once for a frozen object and every time for others', async () => {
    const app = Fastify();
    const json = new FrozenJson();
    const frozen = Object.freeze({ id: 'a', tags: Object.freeze(['x']), at: '2026-11-30T12:00:00.000Z', secret: 'not in the schema' });
    const open: { id: string; tags: string[]; at: string } = { id: 'b', tags: ['y'], at: '2026-11-30T12:00:00.000Z' };
    let serialised = 0;
    app.get('/plain/:which', { schema: { response: { 200: THING } } }, async (request) => ((request.params as { which: string }).which === 'frozen' ? frozen : open));
    app.get('/memo/:which', { schema: { response: { 200: THING } } }, async (request, reply) => {
      const original = reply.getSerializationFunction('200')!;
      // Count the schema serialiser's calls through the memo.
      reply.getSerializationFunction = (() => (payload: { [key: string]: unknown }) => (serialised++, original(payload)));
      return json.answer(reply, (request.params as { which: string }).which === 'frozen' ? frozen : open);
    });
    for (const which of ['frozen', 'open']) {
      const plain = await app.inject(`/plain/${which}`);
      const memo = await app.inject(`/memo/${which}`);
      assert.equal(memo.body, plain.body, which);
      assert.equal(memo.headers['content-type'], plain.headers['content-type'], which);
    }
    assert.doesNotMatch((await app.inject('/memo/frozen')).body, /secret/);
    const before = serialised;
    await app.inject('/memo/frozen');
    assert.equal(serialised, before, 'a frozen object is serialised once');
    open.tags.push('z');
    assert.deepEqual(JSON.parse((await app.inject('/memo/open')).body).tags, ['y', 'z'], 'an object that can change is serialised again');
    assert.equal(serialised, before + 1);
    await app.close();
  });

  it('sends an error thrown before the answer through the error path unchanged', async () => {
    const app = Fastify();
    const json = new FrozenJson();
    app.get('/fails/:found', { schema: { response: { 200: THING } } }, async (request, reply) => {
      if ((request.params as { found: string }).found !== 'yes') throw Object.assign(new Error('nope'), { statusCode: 404 });
      return json.answer(reply, Object.freeze({ id: 'c' }));
    });
    const answer = await app.inject('/fails/no');
    assert.equal(answer.statusCode, 404);
    assert.equal(answer.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(JSON.parse(answer.body).message, 'nope');
    assert.deepEqual(JSON.parse((await app.inject('/fails/yes')).body), { id: 'c' });
    await app.close();
  });
});

describe('lazyRequestLogger', () => {
  function capture(): { logger: pino.Logger; lines: Record<string, unknown>[]; children: () => number } {
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
          done();
        },
      }),
    );
    let made = 0;
    const child = logger.child.bind(logger);
    logger.child = ((...args: Parameters<typeof child>) => (made++, child(...args))) as typeof logger.child;
    return { logger, lines, children: () => made };
  }

  it('makes no child logger for a request that logs nothing, and logs with the request id when one does', async () => {
    const { logger, lines, children } = capture();
    const app = Fastify({ loggerInstance: logger, disableRequestLogging: true, childLoggerFactory: lazyRequestLogger });
    app.get('/quiet', async () => ({ ok: true }));
    app.get('/loud', async (request) => {
      request.log.warn({ detail: 7 }, 'something to say');
      request.log.debug('below the level');
      return { ok: true };
    });
    await app.ready();
    const made = children();
    for (let i = 0; i < 5; i++) assert.equal((await app.inject('/quiet')).statusCode, 200);
    assert.equal(children(), made, 'no child for quiet requests');
    assert.equal(lines.length, 0);
    assert.equal((await app.inject('/loud')).statusCode, 200);
    assert.equal(children(), made + 1);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.msg, 'something to say');
    assert.equal(lines[0]!.detail, 7);
    assert.equal(lines[0]!.level, 40);
    assert.equal(typeof lines[0]!.reqId, 'string');
    await app.close();
  });

  it('logs a failing request\'s error with the request id, and reports the level', async () => {
    const { logger, lines } = capture();
    const app = Fastify({ loggerInstance: logger, disableRequestLogging: true, childLoggerFactory: lazyRequestLogger });
    // As the service's error handler does (src/api/error-handler.ts).
    app.setErrorHandler((error, request, reply) => {
      request.log.error({ err: error }, 'request failed');
      void reply.status(500).send({ error: 'failed' });
    });
    let level: string | undefined;
    app.get('/boom', async (request) => {
      level = request.log.level;
      throw new Error('boom');
    });
    assert.equal((await app.inject('/boom')).statusCode, 500);
    assert.equal(level, 'info');
    const logged = lines.find((line) => line.level === 50);
    assert.ok(logged, 'the error is logged');
    assert.equal((logged.err as { message: string }).message, 'boom');
    assert.equal(typeof logged.reqId, 'string');
    await app.close();
  });
});
