import type net from 'node:net';
import { ConfigError } from '../config.js';

/** What a stream listener is called in messages: `TCP` and `IOTBRIDGE_TCP_PORT`, `MQTT` and `IOTBRIDGE_MQTT_PORT`, … */
export interface ListenerName {
  readonly label: string;
  readonly envName: string;
}

/**
 * Connections the kernel holds for the service before it accepts them (capped by net.core.somaxconn). Node's
 * default, 511, is too few when a fleet reconnects at once after an outage: the kernel drops the SYNs beyond
 * it and those devices wait for their TCP retransmission (1 s, 3 s, 7 s, …) while the service sits idle.
 */
const DEVICE_LISTEN_BACKLOG = 4096;

/**
 * Listens on `host`, or when none is configured dual-stack on `::` (IPv4 only where the host has no IPv6).
 * A taken port stops the service with a message naming the variable that moves it.
 */
export async function listenStream(server: net.Server, port: number, host: string | undefined, name: ListenerName): Promise<number> {
  try {
    await listenOn(server, host ?? '::', port);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (host !== undefined || (code !== 'EAFNOSUPPORT' && code !== 'EADDRNOTAVAIL')) throw portError(error, port, name);
    try {
      await listenOn(server, '0.0.0.0', port);
    } catch (fallbackError) {
      throw portError(fallbackError, port, name);
    }
  }
  return (server.address() as net.AddressInfo).port;
}

function listenOn(server: net.Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, ipv6Only: false, exclusive: true, backlog: DEVICE_LISTEN_BACKLOG }, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
}

function portError(error: unknown, port: number, name: ListenerName): unknown {
  if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
    return new ConfigError(`${name.label} port ${port} is already in use: set ${name.envName} to a free port (0 picks one)`);
  }
  return error;
}
