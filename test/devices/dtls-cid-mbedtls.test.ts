/**
 * Connection ID interop with a real CID-capable peer: mbedTLS 2.28's ssl_client2, built with
 * MBEDTLS_SSL_DTLS_CONNECTION_ID from Debian's source package by scripts/build-mbedtls-cid-client.sh.
 * mbedTLS 2.x implements draft-ietf-tls-dtls-connection-id-05: extension 254, tls12_cid records (type 25) with
 * the draft's MAC input (seq_num, type 25, version, cid, cid_length, length of the inner plaintext) and
 * zero padding of the inner plaintext.
 *
 * The client talks through a UDP relay on 127.0.0.1 that, after the first exchange, sends on from a new local
 * port: to the server the same DTLS session arrives from another address (NAT rebinding). ssl_client2 can only
 * send its HTTP GET line; as CoAP those bytes ("GE" = CON, code 2.05) are a response nobody waits for, which the
 * server's CoAP layer rejects with an empty RST (0x70 0x00 + the message ID). So every answer the client
 * decrypts is the CoAP layer's reaction to the plaintext the server decrypted and authenticated, sent back
 * through the DTLS connection to the client's current address. A valid CoAP request (and so a coap-request
 * event) cannot be made from ssl_client2's fixed "GET " prefix.
 *
 * Loopback only; the build, every run and every wait are bounded; children are killed.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { REPO_ROOT } from '../helpers/repo.js';
import { startService, type TestService } from '../helpers/service.js';

const BUILD_SCRIPT = path.join(REPO_ROOT, 'scripts/build-mbedtls-cid-client.sh');
const KEY_HEX = Buffer.from('sixteen-byte-key').toString('hex');
/** The CID the client asks the server to put on the records it sends to the client. */
const CLIENT_CID = 'c1d2c3d4';
const CID_EXTENSION = 254;

interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** stdout and stderr as they came. */
  readonly output: string;
  readonly stdout: string;
}

/** Runs a program in its own process group, collecting stdout and stderr; the group gets SIGKILL after `timeoutMs`. */
function run(file: string, args: readonly string[], timeoutMs: number): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const chunks: Buffer[] = [];
    const stdout: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    const timer = setTimeout(() => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL'); // the build's make and compilers too
      } catch {
        child.kill('SIGKILL');
      }
    }, timeoutMs);
    const output = () => Buffer.concat(chunks).toString('utf8');
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ code: null, signal: null, output: `${output()}\n${error.message}`, stdout: '' });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output: output(), stdout: Buffer.concat(stdout).toString('utf8') });
    });
  });
}

interface RecordHeader {
  readonly type: number;
  readonly epoch: number;
  readonly cid?: Buffer;
}

/** The record headers of a datagram; tls12_cid records (type 25) carry `cidLength` CID bytes. Stops at anything odd. */
function recordHeaders(datagram: Buffer, cidLength: number): RecordHeader[] {
  const headers: RecordHeader[] = [];
  let offset = 0;
  while (datagram.length - offset >= 13) {
    const type = datagram[offset]!;
    const epoch = datagram.readUInt16BE(offset + 3);
    let cursor = offset + 11;
    let cid: Buffer | undefined;
    if (type === 25) {
      cid = datagram.subarray(cursor, cursor + cidLength);
      cursor += cidLength;
    }
    if (datagram.length - cursor < 2) break;
    const length = datagram.readUInt16BE(cursor);
    headers.push({ type, epoch, ...(cid && { cid }) });
    offset = cursor + 2 + length;
  }
  return headers;
}

interface Relayed {
  readonly from: 'client' | 'server';
  /** Which upstream socket carried it: 0 the first, 1 the one after the switch. */
  readonly upstream: number;
  /** undefined: during the handshake; 'handshake': after it, before the rebinding; 'switch': after the rebinding. */
  readonly after: 'handshake' | 'switch' | undefined;
  readonly datagram: Buffer;
}

/**
 * A UDP relay on 127.0.0.1: client -> relay port -> upstream socket -> server, and back. Once the handshake is
 * over (the server sent an epoch-1 record) the client's first protected datagram goes out of the first upstream
 * socket, and from the second one on everything goes out of a new socket on a new port: a NAT rebinding.
 * Both upstream sockets stay open, so what the server sends to the old address is seen (but, as behind a NAT
 * whose old mapping expired, no longer delivered to the client).
 */
class RebindingRelay {
  readonly log: Relayed[] = [];
  #downstream = dgram.createSocket('udp4');
  #upstream: dgram.Socket[] = [];
  #active = 0;
  #client: { address: string; port: number } | undefined;
  #handshakeDone = false;
  #clientProtected = 0;

  constructor(
    private readonly server: number,
    /** CID lengths on the wire: of the server's CID (client -> server records) and of the client's (server -> client). */
    private readonly cidLengths: { toServer: number; toClient: number },
  ) {}

  async start(): Promise<number> {
    await new Promise<void>((resolve) => this.#downstream.bind(0, '127.0.0.1', resolve));
    this.#downstream.on('message', (datagram, from) => this.#fromClient(datagram, from));
    await this.#addUpstream();
    return this.#downstream.address().port;
  }

  /** Local ports of the upstream sockets, in order of use. */
  get upstreamPorts(): number[] {
    return this.#upstream.map((socket) => socket.address().port);
  }

  async #addUpstream(): Promise<void> {
    const socket = dgram.createSocket('udp4');
    const index = this.#upstream.length;
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    socket.on('message', (datagram, from) => {
      if (from.address !== '127.0.0.1' || from.port !== this.server) return;
      // The server's last flight (ChangeCipherSpec, Finished in epoch 1) still belongs to the handshake.
      this.log.push({ from: 'server', upstream: index, after: this.#phase(), datagram });
      if (recordHeaders(datagram, this.cidLengths.toClient).some((record) => record.epoch >= 1)) this.#handshakeDone = true;
      // The old mapping is gone after the rebinding: what still arrives there is logged, not delivered.
      if (this.#client && index === this.#active) this.#downstream.send(datagram, this.#client.port, this.#client.address);
    });
    this.#upstream.push(socket);
  }

  #phase(): Relayed['after'] {
    return this.#active > 0 ? 'switch' : this.#handshakeDone ? 'handshake' : undefined;
  }

  #fromClient(datagram: Buffer, from: dgram.RemoteInfo): void {
    this.#client = { address: from.address, port: from.port };
    const first = recordHeaders(datagram, this.cidLengths.toServer)[0];
    const send = () => {
      this.log.push({ from: 'client', upstream: this.#active, after: this.#phase(), datagram });
      this.#upstream[this.#active]!.send(datagram, this.server, '127.0.0.1');
    };
    if (this.#handshakeDone && first && first.epoch >= 1 && ++this.#clientProtected === 2 && this.#active === 0) {
      // The second protected datagram after the handshake: the NAT rebinds.
      void this.#addUpstream().then(() => {
        this.#active = 1;
        send();
      });
      return;
    }
    send();
  }

  async stop(): Promise<void> {
    for (const socket of [this.#downstream, ...this.#upstream]) await new Promise<void>((resolve) => socket.close(() => resolve()));
  }
}

/** ssl_client2's own lines, without the library's debug lines ("ssl_msg.c:3688: |4| ...") spliced into them. */
const withoutDebug = (output: string) => output.replace(/\w+\.c:\d+: \|\d\| [^\n]*\n/g, '');

/** The decrypted payloads ssl_client2 dumped at debug level 4 (4 bytes at most: one dump line), as hex. */
const decryptedPayloads = (debug: string) =>
  [...debug.matchAll(/dumping 'input payload after decrypt' \((\d+) bytes\)\n\w+\.c:\d+: \|4\| 0000: {2}((?:[0-9a-f]{2} )*)/g)].map((m) => m[2]!.trim().replace(/ /g, ''));

/** The AEAD additional data ssl_client2 dumped (records it sent and received), as hex. */
const additionalData = (debug: string) =>
  [...debug.matchAll(/dumping 'additional data used for AEAD' \((\d+) bytes\)\n((?:\w+\.c:\d+: \|4\| [0-9a-f]{4}: {2}(?:[0-9a-f]{2} )+[^\n]*\n)+)/g)].map((m) =>
    [...m[2]!.matchAll(/\|4\| [0-9a-f]{4}: {2}((?:[0-9a-f]{2} )+)/g)].map((line) => line[1]!.replace(/ /g, '')).join(''),
  );

/** What the relay saw, for assertion messages: direction, socket, phase, record types and epochs, size. */
const describeLog = (log: readonly Relayed[]) =>
  log.map((r) => `${r.from}@${r.upstream}/${r.after ?? 'hs'}:${recordHeaders(r.datagram, 255 /* types only */).map((h) => `${h.type}e${h.epoch}`)[0] ?? '?'}+${r.datagram.length}B`).join(' ');

/** The datagrams one side sent before the handshake was over. */
const handshakeFrom = (relay: RebindingRelay, from: Relayed['from']) => relay.log.filter((r) => r.from === from && r.after === undefined).map((r) => r.datagram);

/** The server's CID as ssl_client2 prints it: "Peer CID (length 6 Bytes): 8b e1 a5 49 cd c2". */
function peerCid(output: string): Buffer | undefined {
  const found = /\(initial handshake\) Peer CID \(length (\d+) Bytes\): ((?:[0-9a-f]{2} ?)*)/.exec(output);
  if (!found) return undefined;
  const cid = Buffer.from(found[2]!.replace(/ /g, ''), 'hex');
  assert.equal(cid.length, Number(found[1]));
  return cid;
}

/**
 * The extensions of the ClientHellos (msgType 1) or ServerHellos (2) in plaintext (epoch 0) handshake records of
 * these datagrams, each hello's as a map type -> body. Only unfragmented hellos; anything malformed is skipped.
 */
function helloExtensions(datagrams: readonly Buffer[], msgType: 1 | 2): Map<number, Buffer>[] {
  const found: Map<number, Buffer>[] = [];
  for (const datagram of datagrams) {
    // Plaintext records (no tls12_cid among them): type(1) version(2) epoch(2) seq(6) length(2) fragment.
    for (let offset = 0; datagram.length - offset >= 13 && datagram[offset] !== 25; ) {
      const type = datagram[offset]!;
      const epoch = datagram.readUInt16BE(offset + 3);
      const length = datagram.readUInt16BE(offset + 11);
      const fragment = datagram.subarray(offset + 13, offset + 13 + length);
      offset += 13 + length;
      if (type !== 22 || epoch !== 0) continue;
      // msg_type(1) length(3) message_seq(2) fragment_offset(3) fragment_length(3)
      if (fragment.length < 12 || fragment[0] !== msgType || fragment.readUIntBE(6, 3) !== 0 || fragment.readUIntBE(9, 3) !== fragment.readUIntBE(1, 3)) continue;
      const body = fragment.subarray(12, 12 + fragment.readUIntBE(1, 3));
      try {
        let p = 2 + 32; // version, random
        p += 1 + body[p]!; // session_id
        if (msgType === 1) {
          p += 1 + body[p]!; // cookie
          p += 2 + body.readUInt16BE(p); // cipher_suites
          p += 1 + body[p]!; // compression_methods
        } else {
          p += 2 + 1; // cipher_suite, compression_method
        }
        const extensions = new Map<number, Buffer>();
        const end = p + 2 + body.readUInt16BE(p);
        for (p += 2; p + 4 <= end; p += 4 + body.readUInt16BE(p + 2)) extensions.set(body.readUInt16BE(p), body.subarray(p + 4, p + 4 + body.readUInt16BE(p + 2)));
        found.push(extensions);
      } catch {
        // a truncated hello: not counted
      }
    }
  }
  return found;
}

/** The body of a connection_id extension: cid<0..255>. */
const cidBody = (cid: Buffer) => Buffer.concat([Buffer.from([cid.length]), cid]);

describe('DTLS Connection ID interop: mbedTLS ssl_client2 (draft-05, extension 254) across a NAT rebinding', () => {
  let client: string | undefined;
  let skipReason: string | undefined;
  let info = '';
  let service: TestService;
  let tenant: TestAccount;
  let coapServiceId: string;
  const relays: RebindingRelay[] = [];

  before(
    async () => {
      const built = await run('bash', [BUILD_SCRIPT], 300_000);
      const binary = built.stdout.trim();
      if (built.code === 0 && binary.startsWith('/')) {
        client = binary;
        info = await readFile(path.join(path.dirname(binary), 'ssl_client2.info'), 'utf8').catch(() => '');
      } else {
        const reason = `mbedTLS ssl_client2 with CID could not be built (scripts/build-mbedtls-cid-client.sh exited ${built.code ?? built.signal}): ${built.output.trim().split('\n').slice(-5).join(' | ')}`;
        if (process.env.CI) throw new Error(reason);
        skipReason = reason;
        return;
      }
      service = await startService('sqlite');
      tenant = await createAccount(service, 'dtls-cid-mbedtls');
      coapServiceId = await createService(service, tenant.token, { name: 'coap', type: 'coap' });
    },
    { timeout: 330_000 },
  );
  after(async () => {
    for (const relay of relays) await relay.stop();
    await service?.stop();
  });

  /** A PSK endpoint, ssl_client2 through a new relay with two exchanges, and what the relay saw. */
  const exchangeTwice = async (identity: string, cid: boolean) => {
    const endpoint = await createEndpoint(service, tenant.token, { key: identity, serviceId: coapServiceId });
    const put = await service.request('PUT', `/endpoints/${endpoint.id}/security`, { token: tenant.token, body: { mode: 'psk', identity, key: KEY_HEX } });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    // The server's CID length (its default, 6) only matters for records after a tls12_cid one in a datagram.
    const relay = new RebindingRelay(service.ports.coaps!, { toServer: 6, toClient: CLIENT_CID.length / 2 });
    relays.push(relay);
    const port = await relay.start();
    const args = [
      'dtls=1',
      `psk=${KEY_HEX}`,
      `psk_identity=${identity}`,
      'force_ciphersuite=TLS-PSK-WITH-AES-128-CCM-8',
      ...(cid ? ['cid=1', `cid_val=${CLIENT_CID}`] : ['cid=0']),
      'server_addr=127.0.0.1',
      `server_port=${port}`,
      'exchanges=2',
      'read_timeout=2000',
      'hs_timeout=1000-8000',
      'max_resend=0',
      // Level 4 dumps each record's MAC input and decrypted payload: what the client authenticated.
      'debug_level=4',
    ];
    const result = await run(client!, args, 30_000);
    await sleep(300); // what the server still sends after the client's close_notify reaches the relay's log
    return { result, relay, debug: result.output, output: withoutDebug(result.output) };
  };
  const skipped = (t: TestContext) => {
    if (skipReason) t.skip(skipReason);
    return skipReason !== undefined;
  };

  it('with CID the server keeps the session: the exchange after the rebinding is decrypted and answered at the new address', async (t) => {
    if (skipped(t)) return;
    assert.match(info, new RegExp(`cid_extension=${CID_EXTENSION}`), 'the client was built with the draft-05 extension number');
    const { result, relay, output, debug } = await exchangeTwice('mbedtls-cid', true);
    assert.equal(result.code, 0, output);
    assert.match(output, /Ciphersuite is TLS-PSK-WITH-AES-128-CCM-8/);
    assert.match(output, /\(initial handshake\) Use of Connection ID has been negotiated/, output);
    const serverCid = peerCid(output);
    assert.ok(serverCid && serverCid.length > 0, `the server issued a CID: ${output}`);

    // The negotiation on the wire is draft-05's: extension 254 in the ClientHello and the ServerHello.
    const clientHellos = helloExtensions(handshakeFrom(relay, 'client'), 1);
    const serverHellos = helloExtensions(handshakeFrom(relay, 'server'), 2);
    assert.equal(clientHellos.length, 2, 'ClientHello, and again with the cookie');
    for (const hello of clientHellos) {
      assert.deepEqual(hello.get(CID_EXTENSION), cidBody(Buffer.from(CLIENT_CID, 'hex')), 'ClientHello: connection_id (254) with our CID');
      assert.equal(hello.has(54), false, 'not the RFC 9146 extension');
    }
    assert.equal(serverHellos.length, 1);
    assert.deepEqual(serverHellos[0]!.get(CID_EXTENSION), cidBody(serverCid), 'ServerHello: connection_id (254) with the CID the client reports');

    // Two exchanges, each answered with the server CoAP layer's RST for the request's message ID: "GET " is
    // CON, 2.05, message ID 0x5420, a response nobody waits for; RST = 0x70 0x00 + the message ID.
    assert.equal(output.match(/< Read from server: 4 bytes read\n\np/g)?.length, 2, output);
    assert.deepEqual(
      decryptedPayloads(debug).filter((hex) => hex.length === 8),
      ['70005420', '70005420'],
      'both answers decrypted and authenticated by mbedTLS: a CoAP RST with the message ID of the request',
    );
    assert.match(output, /Closing the connection\.\.\. done/);
    // The MAC input is draft-05's on both directions: seq_num(8) tls12_cid(0x19) version(fefd) cid cid_length length(2).
    const aad = additionalData(debug);
    assert.ok(aad.some((hex) => new RegExp(`^[0-9a-f]{16}19fefd${CLIENT_CID}04[0-9a-f]{4}$`).test(hex)), `records to the client: ${aad.join(' ')}`);
    assert.ok(aad.some((hex) => new RegExp(`^[0-9a-f]{16}19fefd${serverCid.toString('hex')}0${serverCid.length.toString(16)}[0-9a-f]{4}$`).test(hex)), `records to the server: ${aad.join(' ')}`);

    const [oldPort, newPort] = relay.upstreamPorts;
    assert.ok(newPort !== undefined && newPort !== oldPort, 'the relay rebound to a new port');
    const before = relay.log.filter((r) => r.after === 'handshake');
    const moved = relay.log.filter((r) => r.after === 'switch');
    // Before the rebinding: request and answer on the old port.
    assert.deepEqual(
      before.map((r) => [r.from, r.upstream]),
      [
        ['client', 0],
        ['server', 0],
      ],
    );
    // After: the request and the close_notify leave from the new port; the answer arrives there, and the
    // server's own close_notify if it sends one (RFC 5246 7.2.1; ssl_client2 may have exited by then).
    // Nothing goes to the old address.
    const movedClient = moved.filter((r) => r.from === 'client');
    const movedServer = moved.filter((r) => r.from === 'server');
    const seen = `${describeLog(relay.log)}\n${output}`;
    assert.deepEqual(
      movedClient.map((r) => r.upstream),
      [1, 1],
      `the request and the close_notify left from the new port: ${seen}`,
    );
    assert.ok(movedServer.length === 1 || movedServer.length === 2, `the answer (and a close_notify) after the rebinding: ${seen}`);
    assert.ok(
      movedServer.every((r) => r.upstream === 1),
      `the server answered at the new address, nothing went to the old one: ${seen}`,
    );

    // Every protected record is a tls12_cid record carrying the other side's CID.
    for (const r of [...before, ...moved]) {
      const headers = recordHeaders(r.datagram, r.from === 'client' ? serverCid.length : CLIENT_CID.length / 2);
      assert.ok(headers.length > 0);
      for (const header of headers) {
        assert.equal(header.type, 25, `${r.from}: tls12_cid record`);
        assert.equal(header.epoch, 1);
        assert.equal(header.cid?.toString('hex'), r.from === 'client' ? serverCid.toString('hex') : CLIENT_CID);
      }
    }
  });

  it('without CID the server does not follow: the exchange after the same rebinding goes unanswered', async (t) => {
    if (skipped(t)) return;
    const { result, relay, output, debug } = await exchangeTwice('mbedtls-no-cid', false);
    assert.doesNotMatch(output, /Use of Connection ID has been negotiated/);
    const clientHellos = helloExtensions(handshakeFrom(relay, 'client'), 1);
    assert.equal(clientHellos.length, 2);
    assert.ok(clientHellos.every((hello) => !hello.has(CID_EXTENSION) && !hello.has(54)), 'no connection_id extension offered');
    assert.ok(helloExtensions(handshakeFrom(relay, 'server'), 2).every((hello) => !hello.has(CID_EXTENSION) && !hello.has(54)));
    // The first exchange is answered; the second times out and ssl_client2 fails.
    assert.equal(output.match(/< Read from server: 4 bytes read\n\np/g)?.length, 1, output);
    assert.deepEqual(decryptedPayloads(debug).filter((hex) => hex.length === 8), ['70005420']);
    assert.match(output, /< Read from server: timeout/, output);
    assert.equal(result.code, 1, output);

    const before = relay.log.filter((r) => r.after === 'handshake');
    assert.deepEqual(
      before.map((r) => [r.from, r.upstream, r.datagram[0]]),
      [
        ['client', 0, 23],
        ['server', 0, 23],
      ],
      'plain application_data records before the rebinding',
    );
    const moved = relay.log.filter((r) => r.after === 'switch');
    assert.ok(moved.some((r) => r.from === 'client' && r.upstream === 1), 'the second request left from the new port');
    assert.deepEqual(
      moved.filter((r) => r.from === 'server'),
      [],
      'the server sent nothing, to the new address nor the old',
    );
  });
});
