import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * Closes, when the service stops, the HTTP connections that have no request in flight. Fastify's `'idle'`
 * close (Node's `closeIdleConnections`) ends keep-alive connections between requests, but not one that was
 * opened and never sent a request (a browser's or fetch's spare connection, a port scanner): once the server
 * closes, Node no longer times such a connection out, and the stop waited for it forever. Requests in
 * flight are left to finish, and their connections are closed once they are answered.
 */
export function closeSilentConnectionsOnStop(app: FastifyInstance): void {
  const requestsInFlight = new Map<Socket, number>();
  const server: Server = app.server;
  let stopping = false;
  server.on('connection', (socket: Socket) => {
    // Between the stop's start and the listener's close, a new connection could only be answered 503.
    if (stopping) return void socket.destroy();
    requestsInFlight.set(socket, 0);
    socket.once('close', () => requestsInFlight.delete(socket));
  });
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    requestsInFlight.set(socket, (requestsInFlight.get(socket) ?? 0) + 1);
    response.once('close', () => {
      const count = requestsInFlight.get(socket);
      if (count === undefined) return;
      requestsInFlight.set(socket, count - 1);
      // Node closes idle connections once, when the stop begins; one that falls idle later would stay open.
      if (stopping && count === 1) closeWhenWritten(socket);
    });
  });
  app.addHook('preClose', async () => {
    stopping = true;
    for (const [socket, count] of requestsInFlight) if (count === 0) socket.destroy();
  });
}

/** Ends the connection once what was written to it has gone out, whatever the client does with its side. */
function closeWhenWritten(socket: Socket): void {
  socket.end(() => socket.destroy());
}
