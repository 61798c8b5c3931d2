import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestService } from './service.js';

/** Polls `probe` until it returns something other than undefined (or `timeoutMs` passes). */
export async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/**
 * `promise`, or what `fallback` gives (or throws) once `ms` pass. The timer is cleared either way: a pending one
 * keeps a test file's process alive until it fires.
 */
export async function within<T>(promise: Promise<T>, ms: number, fallback: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(fallback());
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    }, ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `check` until it holds (or `timeoutMs` passes). */
export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  await waitFor(async () => ((await check()) ? true : undefined), what, timeoutMs);
}

export interface HistoryEvent {
  readonly id: string;
  readonly type: string;
  readonly endpointId: string | null;
  readonly endpointKey: string | null;
  readonly serviceId: string | null;
  readonly data: any;
}

/** The account's events of these types (of one endpoint, if named), oldest first. */
export async function history(service: TestService, token: string, types: string[], endpoint?: string): Promise<HistoryEvent[]> {
  const query = new URLSearchParams(types.map((type): [string, string] => ['type', type]));
  if (endpoint) query.set('endpoint', endpoint);
  query.set('limit', '200');
  const found = await service.request('GET', `/history?${query.toString()}`, { token });
  // An endpoint a device is about to create is not there yet: no events so far.
  if (endpoint && found.status === 404 && found.body?.error?.code === 'IOTB_ENDPOINT_NOT_FOUND') return [];
  assert.equal(found.status, 200, JSON.stringify(found.body));
  return (found.body.items as HistoryEvent[]).reverse();
}

/** Waits until the account has at least `count` events of these types; returns them, oldest first. */
export function eventsArrive(service: TestService, token: string, types: string[], count = 1, endpoint?: string): Promise<HistoryEvent[]> {
  return waitFor(async () => {
    const events = await history(service, token, types, endpoint);
    return events.length >= count ? events : undefined;
  }, `${count} × ${types.join('|')}`);
}

/** A device's UDP socket: sends to the service and collects what comes back. */
export class UdpDevice {
  readonly socket: dgram.Socket;
  readonly received: Buffer[] = [];
  readonly #port: number;
  readonly #host: string;

  private constructor(socket: dgram.Socket, port: number, host: string) {
    this.socket = socket;
    this.#port = port;
    this.#host = host;
    socket.on('message', (message) => this.received.push(message));
  }

  static async open(port: number, host = '127.0.0.1'): Promise<UdpDevice> {
    const socket = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
    await new Promise<void>((resolve) => socket.bind(0, host, resolve));
    return new UdpDevice(socket, port, host);
  }

  get address(): string {
    const { address, port } = this.socket.address();
    return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
  }

  send(message: string | Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.socket.send(message, this.#port, this.#host, (error) => (error ? reject(error) : resolve())));
  }

  /** Waits for the `n`-th datagram received (1-based). */
  nth(n: number, timeoutMs = 5000): Promise<Buffer> {
    return waitFor(async () => this.received[n - 1], `datagram ${n} to ${this.address}`, timeoutMs);
  }

  close(): void {
    this.socket.close();
  }
}

/** A device's TCP connection: collects what it receives and notices when the service closes it. */
export class TcpDevice {
  readonly socket: net.Socket;
  #received = Buffer.alloc(0);
  readonly closed: Promise<void>;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => (this.#received = Buffer.concat([this.#received, chunk])));
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.on('close', () => resolve()));
  }

  static async connect(port: number, host = '127.0.0.1'): Promise<TcpDevice> {
    const socket = net.connect({ port, host });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new TcpDevice(socket);
  }

  get received(): Buffer {
    return this.#received;
  }

  write(data: string | Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.socket.write(data, (error) => (error ? reject(error) : resolve())));
  }

  /** Waits until at least `bytes` bytes have arrived. */
  receivedAtLeast(bytes: number): Promise<Buffer> {
    return waitFor(async () => (this.#received.length >= bytes ? this.#received : undefined), `${bytes} bytes over TCP`);
  }

  /** True when the service closed the connection within `timeoutMs`. */
  async closedWithin(timeoutMs: number): Promise<boolean> {
    return within(this.closed.then(() => true), timeoutMs, () => false);
  }

  end(): Promise<void> {
    this.socket.end();
    return this.closed;
  }
}

/** A trigger of the account on these event types. */
export async function createTrigger(service: TestService, token: string, name: string, events: string[], script: string): Promise<string> {
  const created = await service.request('POST', '/triggers', { token, body: { name, events, script } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body.id as string;
}

/** The executions of a trigger, once there are `count`. */
export function executionsOf(service: TestService, token: string, triggerId: string, count = 1): Promise<{ status: string; error: string | null; logs: string[] }[]> {
  return waitFor(async () => {
    const list = await service.request('GET', `/executions?triggerId=${triggerId}`, { token });
    return list.body.items.length >= count ? (list.body.items as { status: string; error: string | null; logs: string[] }[]).reverse() : undefined;
  }, `${count} executions of ${triggerId}`);
}
