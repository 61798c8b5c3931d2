/**
 * The simulator's DTLS client transport (PSK), over node-dtls-client: an independent DTLS 1.2 implementation
 * in TypeScript, so the project's own LwM2M client talks CoAPS to the service without sharing its DTLS code.
 * It connects to one server; the CoAP layer above sends and receives as over plain UDP.
 */
import { dtls } from 'node-dtls-client';
import type { BoundAddress, DatagramListener, Peer, Transport } from '../src/coap/transport.js';

export interface DtlsClientOptions {
  readonly server: Peer;
  readonly identity: string;
  /** The PSK, raw bytes. */
  readonly key: Buffer;
  /** Cipher suites to offer (node-dtls-client names); default: TLS_PSK_WITH_AES_128_CCM_8 (LwM2M's mandatory one). */
  readonly ciphers?: string[];
  /** Local UDP port; 0 (default) any. */
  readonly localPort?: number;
  /** Handshake timeout, ms (default 5000). */
  readonly timeoutMs?: number;
}

export class DtlsClientTransport implements Transport {
  readonly verifiesPeers = true;
  readonly #options: DtlsClientOptions;
  #socket: dtls.Socket | undefined;
  #local: BoundAddress = { address: '127.0.0.1', port: 0, family: 'IPv4' };

  constructor(options: DtlsClientOptions) {
    this.#options = options;
  }

  /** Shakes hands with the server; resolves when the connection is up, rejects on an alert or a timeout. */
  start(listener: DatagramListener): Promise<void> {
    const { server } = this.#options;
    return new Promise((resolve, reject) => {
      const socket = dtls.createSocket({
        type: server.address.includes(':') ? 'udp6' : 'udp4',
        address: server.address,
        port: server.port,
        psk: { [this.#options.identity]: this.#options.key },
        timeout: this.#options.timeoutMs ?? 5000,
        ciphers: (this.#options.ciphers ?? ['TLS_PSK_WITH_AES_128_CCM_8']) as never,
        ...(this.#options.localPort !== undefined && { listenPort: this.#options.localPort }),
      });
      this.#socket = socket;
      socket.on('connected', () => {
        // node-dtls-client keeps its dgram socket private; the local port is what the server sees.
        const udp = (socket as unknown as { udp?: { address(): { address: string; port: number; family: string } } }).udp;
        const bound = udp?.address();
        if (bound) this.#local = { address: bound.address, port: bound.port, family: bound.family === 'IPv6' ? 'IPv6' : 'IPv4' };
        resolve();
      });
      socket.on('message', (message: Buffer) => listener(message, server));
      socket.on('error', (error: Error) => reject(error));
      socket.on('close', () => reject(new Error('the DTLS connection closed')));
    });
  }

  send(datagram: Buffer): void {
    this.#socket?.send(datagram);
  }

  address(): BoundAddress {
    return this.#local;
  }

  async stop(): Promise<void> {
    const socket = this.#socket;
    this.#socket = undefined;
    if (!socket) return;
    await new Promise<void>((resolve) => {
      try {
        socket.close(() => resolve());
      } catch {
        resolve();
      }
      setTimeout(resolve, 500).unref();
    });
  }
}
