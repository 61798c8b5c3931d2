// Stopping the service while HTTP clients hold connections open: a connection that never sent a request, one
// kept alive after its request, and a request in flight. The stop must finish (the request in flight first),
// not wait for clients that may never speak again.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { ADMIN_TOKEN, startService } from '../helpers/service.js';

const sockets: net.Socket[] = [];

/** Connects to the service's HTTP port and sends nothing. */
async function silentConnection(port: number): Promise<net.Socket> {
  const socket = net.connect(port, '127.0.0.1');
  sockets.push(socket);
  await once(socket, 'connect');
  return socket;
}

/** Resolves with the stop's outcome, or 'still running' after `ms` (the test fails then, and does not hang). */
async function stopWithin(stop: () => Promise<void>, ms: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve('still running'), ms);
  });
  try {
    return await Promise.race([stop().then(() => 'stopped'), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

describe('HTTP shutdown with clients holding connections', () => {
  // A failed stop would leave the sockets holding the test process open.
  after(() => sockets.forEach((socket) => socket.destroy()));

  it('stops while a client holds a connection that never sent a request', async () => {
    const service = await startService('sqlite');
    const silent = await silentConnection(service.ports.http!);
    const closed = once(silent, 'close');
    assert.equal(await stopWithin(() => service.stop(), 10_000), 'stopped');
    await closed;
  });

  it('stops while a keep-alive connection idles after its request; a request in flight is answered first', async () => {
    const service = await startService('sqlite');
    const idle = await silentConnection(service.ports.http!);
    const idleClosed = once(idle, 'close');
    idle.write('GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await once(idle, 'data');
    // A request in flight when the stop begins: it waits up to 1 s for a reply nobody sends, then is answered.
    const inFlight = fetch(`${service.baseUrl}/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'nobody-listens', awaitReply: true, replyTimeoutMs: 1000 }),
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const stopping = stopWithin(() => service.stop(), 10_000);
    const answered = await inFlight;
    assert.equal(answered.status, 202, 'the request in flight was answered');
    assert.equal(((await answered.json()) as { reply: unknown }).reply, null);
    assert.equal(await stopping, 'stopped');
    await idleClosed;
  });
});
