import { execFile } from 'node:child_process';
import net from 'node:net';
import { promisify } from 'node:util';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { generate } from 'mqtt-packet';
import { within } from './devices.js';
import type { TestService } from './service.js';

export const run = promisify(execFile);

/** Sets an endpoint's MQTT password through the API. */
export async function setPassword(service: TestService, token: string, endpointId: string, password: string): Promise<void> {
  const set = await service.request('PUT', `/endpoints/${endpointId}/credentials`, { token, body: { password } });
  if (set.status !== 204) throw new Error(`credentials: ${set.status} ${JSON.stringify(set.body)}`);
}

/** An mqtt.js client logged in as `key`; closed by `closeAll`. */
export class MqttDevices {
  readonly #clients: MqttClient[] = [];
  readonly #port: () => number;

  constructor(port: () => number) {
    this.#port = port;
  }

  async connect(key: string, password: string, options: IClientOptions = {}): Promise<MqttClient & { received: { topic: string; payload: string; retain: boolean; qos: number }[] }> {
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${this.#port()}`, { username: key, password, reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: 4, ...options });
    this.#clients.push(client);
    const received: { topic: string; payload: string; retain: boolean; qos: number }[] = [];
    client.on('message', (topic, payload, packet) => received.push({ topic, payload: payload.toString(), retain: packet.retain, qos: packet.qos }));
    return Object.assign(client, { received });
  }

  /** The CONNACK return code a log-in gets (0 when accepted; the client is then closed). */
  async refusal(key: string | undefined, password: string | undefined, options: IClientOptions = {}): Promise<number> {
    try {
      const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${this.#port()}`, { username: key, password, reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: 4, ...options });
      await client.endAsync();
      return 0;
    } catch (error) {
      return (error as { code: number }).code;
    }
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.#clients.map((client) => client.endAsync(true).catch(() => undefined)));
  }
}

/** A raw TCP connection: writes bytes, collects what comes back, tells when the service closed it. */
export class RawConnection {
  readonly socket: net.Socket;
  readonly received: Buffer[] = [];
  readonly closed: Promise<void>;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => this.received.push(chunk));
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.on('close', () => resolve()));
  }

  static async open(port: number): Promise<RawConnection> {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    return new RawConnection(socket);
  }

  write(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  /** Whether the service closed the connection within `ms`. */
  async closedWithin(ms: number): Promise<boolean> {
    return within(this.closed.then(() => true), ms, () => false);
  }
}

/**
 * One MQTT CONNECT written by hand from `localAddress` (any of 127.0.0.0/8) → the CONNACK's return code
 * (3.1.1) or reason code (MQTT 5); the connection is closed either way. For storms of log-ins from several
 * addresses, which mqtt.js cannot choose.
 */
export async function connackCode(port: number, login: { key: string; password: string; version?: 4 | 5; localAddress?: string; clientId?: string }): Promise<number> {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress: login.localAddress ?? '127.0.0.1' });
  try {
    const answer = new Promise<number>((resolve, reject) => {
      let received = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        received = Buffer.concat([received, chunk]);
        if (received.length >= 4) resolve(received[0] === 0x20 ? received[3]! : -1);
      });
      socket.once('error', reject);
      socket.once('close', () => reject(new Error('closed without a CONNACK')));
    });
    socket.write(generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: login.version ?? 4, clean: true, clientId: login.clientId ?? '', keepalive: 0, username: login.key, password: Buffer.from(login.password) }));
    return await within(answer, 15_000, () => {
      throw new Error('no CONNACK within 15 s');
    });
  } finally {
    socket.destroy();
  }
}
