import dgram from 'node:dgram';

/**
 * A UDP load balancer with source-address affinity on loopback, as a cluster of nodes runs behind (nginx's
 * `hash $remote_addr`): devices send to its port; each device gets an upstream socket of its own, which forwards to
 * the current backend and sends the answers back from the balancer's port. `use(port)` moves every device to
 * another backend (its node died), keeping their upstream sockets, so the nodes see the same address for a device.
 */
export class UdpBalancer {
  readonly #front: dgram.Socket;
  readonly #upstreams = new Map<string, dgram.Socket>();
  #backend: number;

  private constructor(front: dgram.Socket, backend: number) {
    this.#front = front;
    this.#backend = backend;
    front.on('message', (message, from) => this.#forward(message, from));
  }

  static async start(backend: number): Promise<UdpBalancer> {
    const front = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => front.bind(0, '127.0.0.1', resolve));
    return new UdpBalancer(front, backend);
  }

  get port(): number {
    return this.#front.address().port;
  }

  /** From now on every datagram goes to this backend port. */
  use(backend: number): void {
    this.#backend = backend;
  }

  close(): void {
    for (const upstream of this.#upstreams.values()) upstream.close();
    this.#upstreams.clear();
    this.#front.close();
  }

  #forward(message: Buffer, from: dgram.RemoteInfo): void {
    const key = `${from.address}:${from.port}`;
    let upstream = this.#upstreams.get(key);
    if (!upstream) {
      upstream = dgram.createSocket('udp4');
      upstream.bind(0, '127.0.0.1');
      upstream.on('message', (answer) => this.#front.send(answer, from.port, from.address));
      upstream.on('error', () => undefined);
      this.#upstreams.set(key, upstream);
    }
    upstream.send(message, this.#backend, '127.0.0.1');
  }
}
