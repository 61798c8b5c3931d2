import net from 'node:net';
import mqttPacket from 'mqtt-packet';

/** A raw MQTT 3.1.1 log-in: where to, as whom, and how long to wait for the CONNACK. */
export interface RawConnect {
  readonly port: number;
  /** The loopback source address (127.0.0.x), to stay under one address's ephemeral ports. */
  readonly source: string;
  readonly clientId: string;
  readonly username: string;
  readonly password: string;
  readonly timeoutMs: number;
}

/**
 * One CONNECT (clean session, no keep-alive) written by hand, without a client library, so a device costs the
 * load generator a socket and a few bytes → the CONNACK return code (0: in, with the open socket, its CONNACK
 * read and an error listener left on it), or what went wrong (the socket destroyed).
 */
export function rawConnect(login: RawConnect): Promise<{ readonly code: number | 'error' | 'timeout'; readonly socket?: net.Socket }> {
  return new Promise((resolve) => {
    const socket = net.connect({ port: login.port, host: '127.0.0.1', localAddress: login.source });
    let received = Buffer.alloc(0);
    let settled = false;
    const settle = (code: number | 'error' | 'timeout') => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.removeListener('data', onData);
      if (code !== 0) {
        socket.destroy();
        resolve({ code });
        return;
      }
      resolve({ code, socket });
    };
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 4) return;
      settle(received[0] === 0x20 ? received[3]! : 'error');
    };
    const timer = setTimeout(() => settle('timeout'), login.timeoutMs);
    socket.setNoDelay(true);
    socket.once('connect', () => {
      socket.write(mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId: login.clientId, keepalive: 0, username: login.username, password: Buffer.from(login.password) }));
    });
    socket.on('data', onData);
    // Also after the log-in: a send failing later (the service gone) is not the generator's end.
    socket.on('error', () => settle('error'));
    socket.once('close', () => settle('error'));
  });
}
