/**
 * What the CoAP message layer sends datagrams through. The plain one is UDP; a DTLS transport (RFC 7252 9)
 * implements the same interface later, handing up decrypted datagrams and encrypting what is sent.
 */
import dgram from 'node:dgram';
import { isIPv4, isIPv6 } from 'node:net';
import type { Logger } from 'pino';

/** The other end of an exchange: an IP address (IPv4 dotted or IPv6, never IPv4-mapped) and a UDP port. */
export interface Peer {
  readonly address: string;
  readonly port: number;
}

export interface BoundAddress {
  readonly address: string;
  readonly port: number;
  readonly family: 'IPv4' | 'IPv6';
}

export type DatagramListener = (datagram: Buffer, peer: Peer) => void;

export interface Transport {
  /** Opens the transport; from then on every received datagram reaches `listener`, which never throws. */
  start(listener: DatagramListener): Promise<void>;
  /** Sends one datagram; failures are the transport's to log, never thrown (UDP gives no delivery promise anyway). */
  send(datagram: Buffer, peer: Peer): void;
  /** Where the transport is bound; valid after start(). */
  address(): BoundAddress;
  stop(): Promise<void>;
  /**
   * True when the transport has itself proven every peer's address (DTLS: the handshake's cookie exchange),
   * so the message layer need not limit responses to unverified peers (RFC 7252 11.3).
   */
  readonly verifiesPeers: boolean;
  /**
   * Whether datagrams from `from` and `to` belong to one security association (DTLS: a connection that moved
   * with its Connection ID), so that responses and notifications from `to` match what was sent to `from`.
   */
  sameAssociation?(from: Peer, to: Peer): boolean;
}

export interface UdpTransportOptions {
  /**
   * Address to bind. Default `::`, dual-stack (IPv4 peers arrive as IPv4-mapped addresses and are reported
   * as plain IPv4); where IPv6 is unavailable, `0.0.0.0`. An IPv4 address binds IPv4 only, an IPv6 one IPv6 only.
   */
  readonly host?: string;
  /** UDP port; 0 (the default) picks a free one, see address(). */
  readonly port?: number;
  /** SO_RCVBUF / SO_SNDBUF in bytes; the system default when absent. A busy server may want a few MB of receive buffer. */
  readonly receiveBufferSize?: number;
  readonly sendBufferSize?: number;
  readonly logger?: Logger;
}

const MAPPED = '::ffff:';

/** CoAP over plain UDP (RFC 7252 3): one socket, IPv4 and IPv6. */
export class UdpTransport implements Transport {
  readonly verifiesPeers = false;
  readonly #options: UdpTransportOptions;
  #socket: dgram.Socket | undefined;
  #ipv6 = false;

  constructor(options: UdpTransportOptions = {}) {
    this.#options = options;
  }

  async start(listener: DatagramListener): Promise<void> {
    const host = this.#options.host;
    const port = this.#options.port ?? 0;
    if (host === undefined) {
      try {
        await this.#bind('udp6', '::', port, listener, false);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'EAFNOSUPPORT' && code !== 'EADDRNOTAVAIL' && code !== 'EINVAL') throw error;
        this.#options.logger?.info({ err: error }, 'IPv6 unavailable, CoAP listens on IPv4 only');
        await this.#bind('udp4', '0.0.0.0', port, listener, false);
      }
    } else {
      await this.#bind(isIPv6(host) ? 'udp6' : 'udp4', host, port, listener, host !== '::');
    }
  }

  #bind(type: 'udp4' | 'udp6', host: string, port: number, listener: DatagramListener, ipv6Only: boolean): Promise<void> {
    const socket = dgram.createSocket({
      type,
      ipv6Only: type === 'udp6' ? ipv6Only : undefined,
      recvBufferSize: this.#options.receiveBufferSize,
      sendBufferSize: this.#options.sendBufferSize,
    });
    return new Promise((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(port, host, () => {
        socket.off('error', reject);
        // After binding, socket errors (mostly ICMP-reported send failures) are logged, never fatal.
        socket.on('error', (error) => this.#options.logger?.debug({ err: error }, 'CoAP socket error'));
        this.#socket = socket;
        this.#ipv6 = type === 'udp6';
        socket.on(
          'message',
          this.#ipv6
            ? (datagram, rinfo) => {
                const a = rinfo.address;
                listener(datagram, { address: a.startsWith(MAPPED) && isIPv4(a.slice(7)) ? a.slice(7) : a, port: rinfo.port });
              }
            : (datagram, rinfo) => listener(datagram, { address: rinfo.address, port: rinfo.port }),
        );
        resolve();
      });
    });
  }

  send(datagram: Buffer, peer: Peer): void {
    const socket = this.#socket;
    if (!socket) return;
    let address = peer.address;
    if (this.#ipv6) {
      if (address.indexOf(':') === -1) address = MAPPED + address;
    } else if (address.indexOf(':') !== -1) {
      this.#options.logger?.debug({ peer }, 'IPv6 peer on an IPv4-only CoAP socket');
      return;
    }
    socket.send(datagram, peer.port, address);
  }

  address(): BoundAddress {
    if (!this.#socket) throw new Error('transport not started');
    const info = this.#socket.address();
    return { address: info.address, port: info.port, family: info.family === 'IPv6' ? 'IPv6' : 'IPv4' };
  }

  async stop(): Promise<void> {
    const socket = this.#socket;
    this.#socket = undefined;
    if (socket) await new Promise<void>((resolve) => socket.close(() => resolve()));
  }
}

/** `127.0.0.1:5683` or `[::1]:5683`. */
export const formatPeer = (peer: Peer): string => (peer.address.includes(':') ? `[${peer.address}]:${peer.port}` : `${peer.address}:${peer.port}`);

/** A string identifying a peer in maps. */
export const peerKey = (peer: Peer): string => peer.address + ' ' + peer.port;
