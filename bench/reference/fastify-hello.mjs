/**
 * The reference of bench/api.ts: Fastify's hello-world (https://fastify.dev/docs/latest/Guides/Getting-Started/),
 * logger off, alone in its process. Listens on 127.0.0.1 at a port of the system's choice and writes
 * `{"port":N}` on stdout; stops on SIGTERM/SIGINT and when its stdin ends (the bench went away).
 *
 *   node bench/reference/fastify-hello.mjs
 */
import Fastify from 'fastify';

const fastify = Fastify({ logger: false });
fastify.get('/', async () => ({ hello: 'world' }));
await fastify.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${JSON.stringify({ port: fastify.server.address().port })}\n`);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  fastify.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();
