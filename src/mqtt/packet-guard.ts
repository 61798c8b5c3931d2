import { Duplex } from 'node:stream';

/** MQTT control packet types (fixed header, high nibble). */
const CONNECT = 1;
const SUBSCRIBE = 8;
const UNSUBSCRIBE = 10;

/** Why a connection is closed before the broker reads a byte of the offending packet. */
export class PacketViolation extends Error {
  constructor(
    readonly kind: 'not-connect-first' | 'second-connect' | 'malformed-length' | 'too-large' | 'no-topic-filters',
    message: string,
  ) {
    super(message);
  }
}

type ScanState = 'header' | 'length' | 'body';

/**
 * Stands between a device's byte stream (TCP, TLS or WebSocket) and the broker. It reads only fixed
 * headers, so it can close the connection *before buffering* a packet over the size limit, when the
 * first packet is not CONNECT, or when a second CONNECT comes. The first packet is held back until
 * `release()` so the server can check the device's credentials and pick its service's broker; then
 * everything flows through unchanged.
 */
export class PacketGuard extends Duplex {
  readonly inner: Duplex;
  readonly #maxPacketBytes: number;
  #state: ScanState = 'header';
  #length = 0;
  #lengthBytes = 0;
  #remaining = 0;
  #type = 0;
  #packets = 0;
  /** Bytes received before `release()`; the first packet is its head. */
  #held: Buffer[] = [];
  #heldBytes = 0;
  #released = false;
  /** The device ended its side before release(): end ours after the held bytes. */
  #ended = false;
  #first: { resolve: (packet: Buffer | undefined) => void; promise: Promise<Buffer | undefined> };
  /** Offset in the held bytes where the first packet ends, once it has. */
  #firstEnd: number | undefined;
  /** Writes to the device are being gathered until the end of this tick. */
  #corked = false;
  /** A violation was found: nothing more is read. */
  #dead = false;
  /** What to send the device before closing for a violation (set once its protocol version is known). */
  farewell: ((violation: PacketViolation) => Buffer | undefined) | undefined;

  constructor(inner: Duplex, maxPacketBytes: number) {
    super({ allowHalfOpen: false });
    this.inner = inner;
    this.#maxPacketBytes = maxPacketBytes;
    let resolve!: (packet: Buffer | undefined) => void;
    const promise = new Promise<Buffer | undefined>((r) => (resolve = r));
    this.#first = { resolve, promise };
    inner.on('data', (chunk: Buffer) => this.#receive(chunk));
    inner.on('end', () => {
      // Held packets go to the broker first: a device may send CONNECT, PUBLISH, DISCONNECT and half-close at once.
      if (this.#released) this.push(null);
      else this.#ended = true;
    });
    inner.on('close', () => {
      this.#resolveFirst(undefined);
      this.destroy();
    });
    inner.on('error', (error) => this.destroy(error));
    inner.on('drain', () => this.emit('drain-inner'));
  }

  /** The bytes of the first packet (a CONNECT) once complete; undefined when the connection ends or breaks first. */
  firstPacket(): Promise<Buffer | undefined> {
    return this.#first.promise;
  }

  /** Lets everything held and everything after it through to the reader (the broker). */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    const held = this.#held;
    this.#held = [];
    for (const chunk of held) this.push(chunk);
    if (this.#ended) this.push(null);
    else this.inner.resume();
  }

  override _read(): void {
    if (this.#released) this.inner.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.#forward(chunk, callback);
  }

  // mqtt-packet writes a packet in several pieces under cork(): one write to the socket per packet.
  override _writev(chunks: { chunk: Buffer }[], callback: (error?: Error | null) => void): void {
    this.#forward(chunks.length === 1 ? chunks[0]!.chunk : Buffer.concat(chunks.map((c) => c.chunk)), callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.inner.end(callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#resolveFirst(undefined);
    this.inner.destroy();
    callback(error);
  }

  #forward(chunk: Buffer, callback: (error?: Error | null) => void): void {
    if (this.inner.destroyed) return callback(new Error('connection closed'));
    // Packets written in the same tick (the PUBACKs of one read, a burst of deliveries) leave in one write.
    if (!this.#corked) {
      this.#corked = true;
      this.inner.cork();
      process.nextTick(() => {
        this.#corked = false;
        this.inner.uncork();
      });
    }
    if (this.inner.write(chunk)) return callback();
    const done = () => {
      this.inner.off('close', done);
      this.off('drain-inner', done);
      callback();
    };
    this.inner.once('close', done);
    this.once('drain-inner', done);
  }

  #receive(chunk: Buffer): void {
    if (this.#dead) return;
    try {
      this.#scan(chunk);
    } catch (error) {
      if (!(error instanceof PacketViolation)) throw error;
      this.#violated(error);
      return;
    }
    if (this.#released) {
      if (!this.push(chunk)) this.inner.pause();
      return;
    }
    this.#held.push(chunk);
    this.#heldBytes += chunk.length;
    if (this.#firstEnd !== undefined) this.#resolveFirst(Buffer.concat(this.#held).subarray(0, this.#firstEnd));
  }

  /** Walks the fixed headers in `chunk`, skipping bodies; throws on a violation before the body is kept. */
  #scan(chunk: Buffer): void {
    let index = 0;
    while (index < chunk.length) {
      if (this.#state === 'header') {
        const type = chunk[index++]! >> 4;
        if (this.#packets === 0 && type !== CONNECT) throw new PacketViolation('not-connect-first', 'the first packet is not CONNECT');
        if (this.#packets > 0 && type === CONNECT) throw new PacketViolation('second-connect', 'a second CONNECT');
        this.#packets++;
        this.#type = type;
        this.#state = 'length';
        this.#length = 0;
        this.#lengthBytes = 0;
      } else if (this.#state === 'length') {
        const byte = chunk[index++]!;
        this.#length += (byte & 0x7f) * 128 ** this.#lengthBytes++;
        if (byte & 0x80) {
          if (this.#lengthBytes === 4) throw new PacketViolation('malformed-length', 'malformed remaining length');
          continue;
        }
        if (this.#length > this.#maxPacketBytes) throw new PacketViolation('too-large', `a packet of ${this.#length} bytes, over the ${this.#maxPacketBytes}-byte limit`);
        // [MQTT-3.8.3-3] / [MQTT-3.10.3-2]: a packet identifier alone carries no topic filter (MQTT 5 adds a
        // property length byte, so its empty lists are caught after parsing, in Mqtt5Adapter).
        if ((this.#type === SUBSCRIBE || this.#type === UNSUBSCRIBE) && this.#length <= 2) {
          throw new PacketViolation('no-topic-filters', `${this.#type === SUBSCRIBE ? 'SUBSCRIBE' : 'UNSUBSCRIBE'} without topic filters`);
        }
        this.#remaining = this.#length;
        this.#state = this.#remaining === 0 ? 'header' : 'body';
        if (this.#remaining === 0) this.#packetEnds(index);
      } else {
        const take = Math.min(this.#remaining, chunk.length - index);
        index += take;
        this.#remaining -= take;
        if (this.#remaining === 0) {
          this.#state = 'header';
          this.#packetEnds(index);
        }
      }
    }
  }

  /** At the end of the first packet: notes where it ends and stops reading until release. */
  #packetEnds(indexInChunk: number): void {
    if (this.#packets !== 1 || this.#firstEnd !== undefined) return;
    this.#firstEnd = this.#heldBytes + indexInChunk;
    if (!this.#released) this.inner.pause();
  }

  /** Closes for a violation, after the farewell packet when there is one (an MQTT 5 DISCONNECT). */
  #violated(violation: PacketViolation): void {
    const bye = this.farewell?.(violation);
    if (!bye || this.inner.destroyed) return void this.destroy(violation);
    this.#dead = true;
    this.inner.pause();
    const close = () => this.destroy(violation);
    this.inner.end(bye, close);
    setTimeout(close, 1000).unref();
  }

  #resolveFirst(packet: Buffer | undefined): void {
    this.#first.resolve(packet);
  }
}
