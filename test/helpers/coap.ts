/** Test helpers for the CoAP transport: a raw UDP peer that speaks bytes, and libcoap's coap-client. */
import { execFile, execFileSync } from 'node:child_process';
import dgram from 'node:dgram';
import { decodeMessage, encodeMessage, type CoapMessage, type Peer } from '../../src/coap/index.js';

export interface Received {
  readonly message: CoapMessage;
  readonly datagram: Buffer;
  readonly at: number;
  readonly from: Peer;
}

/** A bare UDP socket: sends exactly what a test builds, and hands over what arrives, in order. */
export class RawPeer {
  readonly #socket: dgram.Socket;
  readonly #inbox: Received[] = [];
  readonly #waiters: ((r: Received) => void)[] = [];
  /** When set, answers each received datagram (return undefined for silence). */
  autoReply: ((r: Received) => CoapMessage | Buffer | undefined) | undefined;

  private constructor(socket: dgram.Socket) {
    this.#socket = socket;
    socket.on('message', (datagram, rinfo) => {
      let message: CoapMessage;
      try {
        message = decodeMessage(datagram);
      } catch {
        return;
      }
      const received = { message, datagram, at: Date.now(), from: { address: rinfo.address, port: rinfo.port } };
      const reply = this.autoReply?.(received);
      if (reply !== undefined) this.#socket.send(Buffer.isBuffer(reply) ? reply : encodeMessage(reply), rinfo.port, rinfo.address);
      const waiter = this.#waiters.shift();
      if (waiter) waiter(received);
      else this.#inbox.push(received);
    });
  }

  static async open(type: 'udp4' | 'udp6' = 'udp4'): Promise<RawPeer> {
    const socket = dgram.createSocket(type);
    await new Promise<void>((resolve) => socket.bind(0, type === 'udp4' ? '127.0.0.1' : '::1', resolve));
    return new RawPeer(socket);
  }

  /** This socket as the endpoint sees it. */
  get peer(): Peer {
    const a = this.#socket.address();
    return { address: a.address, port: a.port };
  }

  send(what: CoapMessage | Buffer, to: Peer): void {
    this.#socket.send(Buffer.isBuffer(what) ? what : encodeMessage(what), to.port, to.address);
  }

  /** The next datagram received; rejects after `timeout` ms. */
  next(timeout = 3000): Promise<Received> {
    const queued = this.#inbox.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        reject(new Error(`nothing received within ${timeout} ms`));
      }, timeout);
      const waiter = (r: Received) => {
        clearTimeout(timer);
        resolve(r);
      };
      this.#waiters.push(waiter);
    });
  }

  /** Resolves with what arrived during `ms` (and clears it). */
  async drain(ms: number): Promise<Received[]> {
    await new Promise((r) => setTimeout(r, ms));
    return this.#inbox.splice(0);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#socket.close(() => resolve()));
  }
}

/** A request message with defaults, for raw peers. */
export function rawRequest(fields: Partial<CoapMessage> & Pick<CoapMessage, 'messageId'>): CoapMessage {
  return { type: 'CON', code: '0.01', token: Buffer.from([0xca, 0xfe]), options: [], payload: Buffer.alloc(0), ...fields };
}

/** libcoap's command-line client, as installed (Debian's libcoap3-bin: coap-client-notls), or undefined. */
export const COAP_CLIENT: string | undefined = ['coap-client-notls', 'coap-client'].find((name) => {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
});

/** Why the libcoap tests are skipped, or false. */
export const LIBCOAP_SKIP: string | false = COAP_CLIENT ? false : 'libcoap coap-client not on PATH (apt-get install libcoap3-bin)';

/** Runs coap-client (asynchronously: the endpoint under test shares this event loop) and returns its stdout. */
export function coapClient(args: readonly string[], timeout = 15_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(COAP_CLIENT!, ['-B', '10', ...args], { timeout, encoding: 'buffer', maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${COAP_CLIENT} ${args.join(' ')}: ${error.message} ${stderr.toString()}`));
      else resolve(stdout.toString('latin1'));
    });
  });
}

/** Whether this machine can bind ::1. */
export async function ipv6Available(): Promise<boolean> {
  const socket = dgram.createSocket('udp6');
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, '::1', resolve);
    });
    return true;
  } catch {
    return false;
  } finally {
    socket.close();
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
