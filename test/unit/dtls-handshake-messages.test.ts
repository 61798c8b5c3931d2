import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import { describe, it } from 'node:test';
import {
  alert, AlertDescription, certificate, certificateRequest, certificateVerify, clientHello, clientHelloCookieInput, clientKeyExchangeEcdhe,
  clientKeyExchangeEcdhePsk, clientKeyExchangePsk, connectionIdExtension, ecdheParams, ExtensionType, finished, handshakeHashInput,
  HandshakeReassembler, HandshakeType, helloVerifyRequest, parseAlert, parseCertificate, parseCertificateRequest, parseCertificateVerify,
  parseClientHello, parseClientKeyExchangeEcdhe, parseClientKeyExchangeEcdhePsk, parseClientKeyExchangePsk, parseConnectionIdExtension,
  parseFinished, parseHandshakeFragments, parseHelloVerifyRequest, parseServerHello, parseServerKeyExchangeEcdhe, parseServerKeyExchangeEcdhePsk,
  parseServerKeyExchangePsk, serializeHandshake, serverHello, serverHelloDone, serverKeyExchangeEcdhe, serverKeyExchangeEcdhePsk,
  serverKeyExchangePsk, type ClientHello, type HandshakeFragment,
} from '../../src/dtls/handshake-messages.js';

/** A seeded PRNG (mulberry32), so a failing random case replays. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}
const bytes = (n: number, rand: () => number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)));
const hex = (s: string) => Buffer.from(s.replace(/\s/g, ''), 'hex');
const random = Buffer.alloc(32, 0xab);
const point = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 7)]);
const cid = hex('c1d2c3d4');

const fullHelloBody = clientHello({
  random, sessionId: Buffer.alloc(32, 1), cookie: Buffer.alloc(20, 2), cipherSuites: [0xc0a8, 0xc0ae, 0x00ff],
  extensions: [
    { type: ExtensionType.supportedGroups, data: hex('0004 0017 001d') }, { type: ExtensionType.ecPointFormats, data: hex('0100') },
    { type: ExtensionType.signatureAlgorithms, data: hex('0004 0403 0804') }, { type: ExtensionType.clientCertificateType, data: hex('02 02 00') },
    { type: ExtensionType.serverCertificateType, data: hex('01 02') }, { type: ExtensionType.extendedMasterSecret, data: Buffer.alloc(0) },
    { type: ExtensionType.sessionTicket, data: hex('abcdef') }, { type: ExtensionType.connectionId, data: connectionIdExtension(cid) },
    { type: ExtensionType.renegotiationInfo, data: hex('00') }, { type: ExtensionType.recordSizeLimit, data: hex('4000') },
  ],
});
const helloWith = (extensions: { type: number; data: Buffer }[], cipherSuites = [0xc0a8]) => parseClientHello(clientHello({ random, cipherSuites, extensions }));

describe('DTLS handshake messages: codecs', () => {
  it('parses a ClientHello with every extension a server acts on', () => {
    const hello = parseClientHello(fullHelloBody)!;
    assert.deepEqual([hello.version, hello.random, hello.sessionId, hello.cookie], [0xfefd, random, Buffer.alloc(32, 1), Buffer.alloc(20, 2)]);
    assert.deepEqual([hello.cipherSuites, hello.compressionMethods], [[0xc0a8, 0xc0ae, 0x00ff], [0]]);
    assert.deepEqual([...hello.extensions.keys()], [10, 11, 13, 19, 20, 23, 35, 54, 0xff01, 28], 'every extension, in order');
    assert.deepEqual([hello.supportedGroups, hello.ecPointFormats, hello.signatureAlgorithms], [[23, 29], [0], [0x0403, 0x0804]]);
    assert.deepEqual([hello.clientCertificateTypes, hello.serverCertificateTypes], [[2, 0], [2]]);
    assert.deepEqual([hello.extendedMasterSecret, hello.sessionTicket, hello.connectionId], [true, hex('abcdef'), { extension: 54, cid }]);
    assert.deepEqual([hello.secureRenegotiation, hello.renegotiationInfo], [true, Buffer.alloc(0)]);
  });

  it('reads a bare ClientHello, the SCSV, the draft Connection ID code point and the defaults', () => {
    const bare = parseClientHello(clientHello({ random, cipherSuites: [0xc0a8] }))!;
    assert.deepEqual([bare.extensions.size, bare.extendedMasterSecret, bare.secureRenegotiation, bare.connectionId], [0, false, false, undefined]);
    assert.equal(helloWith([], [0xc0a8, 0x00ff])!.secureRenegotiation, true, 'TLS_EMPTY_RENEGOTIATION_INFO_SCSV (RFC 5746 3.3)');
    assert.deepEqual(helloWith([{ type: 254, data: connectionIdExtension(cid) }])!.connectionId, { extension: 254, cid });
    const both = helloWith([{ type: 254, data: connectionIdExtension(hex('01')) }, { type: 54, data: connectionIdExtension(hex('')) }]);
    assert.deepEqual(both!.connectionId, { extension: 54, cid: Buffer.alloc(0) }, 'RFC 9146 wins; an empty cid is allowed');
    assert.deepEqual(helloWith([{ type: 0xff01, data: hex('0c') }]), undefined, 'renegotiation_info length beyond its data');
  });

  it('refuses malformed ClientHello fields and extensions', () => {
    const bad: [string, { type: number; data: Buffer }[]][] = [
      ['extended_master_secret with data', [{ type: 23, data: hex('00') }]],
      ['a duplicate extension', [{ type: 99, data: hex('') }, { type: 99, data: hex('') }]],
      ['supported_groups of odd length', [{ type: 10, data: hex('0003 001700') }]],
      ['empty supported_groups', [{ type: 10, data: hex('0000') }]],
      ['connection_id shorter than its length', [{ type: 54, data: hex('0401') }]],
      ['connection_id with trailing bytes', [{ type: 54, data: hex('0101ff') }]],
      ['ec_point_formats without a format', [{ type: 11, data: hex('00') }]],
      ['signature_algorithms with a stray byte', [{ type: 13, data: hex('0003 040300') }]],
    ];
    for (const [name, extensions] of bad) assert.equal(helloWith(extensions), undefined, name);
    const long = Buffer.from(fullHelloBody);
    long[34] = 33; // session_id<0..32>
    assert.equal(parseClientHello(long), undefined, 'a 33-byte session id');
    assert.equal(parseClientHello(Buffer.concat([fullHelloBody, hex('00')])), undefined, 'trailing byte');
    assert.throws(() => clientHello({ random, cipherSuites: [] }), RangeError);
    assert.throws(() => clientHello({ random: Buffer.alloc(31), cipherSuites: [1] }), RangeError);
    assert.throws(() => clientHello({ random, cookie: Buffer.alloc(256), cipherSuites: [1] }), RangeError);
  });

  it('computes the cookie input over the repeated parameters only (RFC 6347 4.2.1)', () => {
    const first = parseClientHello(clientHello({ random, sessionId: hex('01'), cipherSuites: [0xc0a8, 0x00ff] }))!;
    const second = parseClientHello(clientHello({ random, sessionId: hex('01'), cookie: hex('aabb'), cipherSuites: [0xc0a8, 0x00ff], extensions: [{ type: 23, data: Buffer.alloc(0) }] }))!;
    assert.deepEqual(clientHelloCookieInput(first), clientHelloCookieInput(second));
    assert.deepEqual(clientHelloCookieInput(first), Buffer.concat([hex('fefd'), random, hex('0101 0004 c0a8 00ff 0100')]));
    assert.notDeepEqual(clientHelloCookieInput(first), clientHelloCookieInput({ ...first, random: Buffer.alloc(32) }));
  });

  it('writes HelloVerifyRequest with server_version DTLS 1.0 and ServerHello with DTLS 1.2', () => {
    assert.deepEqual(helloVerifyRequest(Buffer.from('abc')), hex('feff 03 616263'));
    assert.deepEqual(parseHelloVerifyRequest(helloVerifyRequest(Buffer.alloc(32, 9))), { version: 0xfeff, cookie: Buffer.alloc(32, 9) });
    assert.throws(() => helloVerifyRequest(Buffer.alloc(256)), RangeError);
    const bare = serverHello({ random, sessionId: Buffer.alloc(0), cipherSuite: 0xc0a8, extensions: [] });
    assert.deepEqual(bare, Buffer.concat([hex('fefd'), random, hex('00 c0a8 00')]), 'no extensions: no extensions block');
    const extensions = [{ type: 0xff01, data: hex('00') }, { type: 23, data: Buffer.alloc(0) }, { type: 54, data: connectionIdExtension(cid) }];
    const body = serverHello({ random, sessionId: Buffer.alloc(32, 5), cipherSuite: 0xc0ae, extensions });
    assert.deepEqual(body.subarray(70), hex('0012 ff01 0001 00 0017 0000 0036 0005 04c1d2c3d4'));
    const parsed = parseServerHello(body)!;
    assert.deepEqual([parsed.version, parsed.random, parsed.sessionId, parsed.cipherSuite, parsed.compressionMethod], [0xfefd, random, Buffer.alloc(32, 5), 0xc0ae, 0]);
    assert.deepEqual([...parsed.extensions], extensions.map((e) => [e.type, e.data]));
    assert.deepEqual(parseConnectionIdExtension(parsed.extensions.get(54)!), cid);
  });

  it('round-trips the server and client flights', () => {
    const chain = [Buffer.alloc(300, 1), Buffer.alloc(5, 2)];
    assert.deepEqual(parseCertificate(certificate(chain)), chain);
    assert.deepEqual(parseCertificate(certificate([])), [], 'an empty client Certificate');
    assert.equal(parseCertificate(hex('000003 000000')), undefined, 'a zero-length ASN.1Cert');
    assert.deepEqual(parseServerKeyExchangePsk(serverKeyExchangePsk(Buffer.from('hint'))), { hint: Buffer.from('hint') });
    const params = ecdheParams(23, point);
    assert.deepEqual(params.subarray(0, 4), hex('03 0017 41'));
    const ske = parseServerKeyExchangeEcdhe(serverKeyExchangeEcdhe(params, 0x0403, Buffer.alloc(71, 3)))!;
    assert.deepEqual(ske, { namedCurve: 23, publicPoint: point, params, signatureAlgorithm: 0x0403, signature: Buffer.alloc(71, 3) });
    assert.equal(parseServerKeyExchangeEcdhe(Buffer.concat([hex('01'), params.subarray(1), hex('0403 0000')])), undefined, 'explicit curves are gone (RFC 8422 5.4)');
    assert.deepEqual(parseServerKeyExchangeEcdhePsk(serverKeyExchangeEcdhePsk(Buffer.alloc(0), params)), { hint: Buffer.alloc(0), namedCurve: 23, publicPoint: point });
    const request = { certificateTypes: [64], signatureAlgorithms: [0x0403], authorities: [Buffer.from('dn-1'), Buffer.from('dn-2')] };
    assert.deepEqual(parseCertificateRequest(certificateRequest(request)), request);
    assert.deepEqual(serverHelloDone(), Buffer.alloc(0));
    assert.deepEqual(parseFinished(finished(Buffer.alloc(12, 4))), Buffer.alloc(12, 4));
    assert.equal(parseFinished(Buffer.alloc(11)), undefined);
    assert.equal(parseFinished(Buffer.alloc(13)), undefined);
    assert.throws(() => finished(Buffer.alloc(11)), RangeError);
    assert.deepEqual(clientKeyExchangePsk(Buffer.from('dev1')), hex('0004 64657631'));
    assert.deepEqual(parseClientKeyExchangePsk(clientKeyExchangePsk(Buffer.from('dev1'))), { identity: Buffer.from('dev1') });
    assert.deepEqual(parseClientKeyExchangeEcdhe(clientKeyExchangeEcdhe(point)), { publicPoint: point });
    assert.equal(parseClientKeyExchangeEcdhe(hex('00')), undefined, 'an empty point');
    assert.deepEqual(parseClientKeyExchangeEcdhePsk(clientKeyExchangeEcdhePsk(Buffer.from('id'), point)), { identity: Buffer.from('id'), publicPoint: point });
    assert.deepEqual(parseCertificateVerify(certificateVerify(0x0403, Buffer.alloc(70, 8))), { signatureAlgorithm: 0x0403, signature: Buffer.alloc(70, 8) });
  });

  it('writes and reads alerts', () => {
    assert.deepEqual(alert(2, AlertDescription.handshake_failure), hex('0228'));
    assert.deepEqual(parseAlert(alert(1, AlertDescription.close_notify)), { level: 1, description: 0 });
    assert.deepEqual(parseAlert(hex('0273')), { level: 2, description: AlertDescription.unknown_psk_identity });
    for (const bad of ['', '02', '0300', '022800']) assert.equal(parseAlert(hex(bad)), undefined, bad);
  });
});

describe('DTLS handshake messages: fragments and reassembly (RFC 6347 4.2.2)', () => {
  const body = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
  const fragmentsOf = (seq: number, b: Buffer, max: number) => serializeHandshake(HandshakeType.certificate, seq, b, max).flatMap((f) => parseHandshakeFragments(f)!);
  const piece = (seq: number, from: number, to: number, b = body, msgType: number = HandshakeType.certificate): HandshakeFragment =>
    ({ msgType, length: b.length, messageSeq: seq, fragmentOffset: from, fragmentLength: to - from, body: b.subarray(from, to) });

  it('fragments with 12-byte headers and parses several fragments from one record', () => {
    const wire = serializeHandshake(HandshakeType.certificate, 5, body, 300);
    assert.deepEqual(wire.map((f) => f.length), [312, 312, 312, 112]);
    assert.deepEqual(wire[1]!.subarray(0, 12), hex('0b 0003e8 0005 00012c 00012c'));
    const parsed = parseHandshakeFragments(Buffer.concat(wire))!;
    assert.deepEqual(parsed.map((f) => [f.messageSeq, f.fragmentOffset, f.fragmentLength]), [[5, 0, 300], [5, 300, 300], [5, 600, 300], [5, 900, 100]]);
    assert.deepEqual(Buffer.concat(parsed.map((f) => f.body)), body);
    assert.deepEqual(serializeHandshake(HandshakeType.serverHelloDone, 3, Buffer.alloc(0)), [hex('0e 000000 0003 000000 000000')]);
    assert.deepEqual(handshakeHashInput(HandshakeType.certificate, 5, body), serializeHandshake(HandshakeType.certificate, 5, body)[0]);
    assert.deepEqual(handshakeHashInput(HandshakeType.finished, 4, Buffer.alloc(12)).subarray(0, 12), hex('14 00000c 0004 000000 00000c'));
    for (const bad of ['', '0b0003e8', '0b 000010 0000 00000c 000008 0000000000000000', Buffer.concat(wire).toString('hex') + '00']) {
      assert.equal(parseHandshakeFragments(hex(bad)), undefined, bad.slice(0, 40));
    }
  });

  it('reassembles shuffled fragments, delivering the message once', () => {
    const rand = prng(7);
    for (let round = 0; round < 20; round++) {
      const fragments = fragmentsOf(0, body, 1 + Math.floor(rand() * 400)).sort(() => rand() - 0.5);
      const r = new HandshakeReassembler();
      const delivered = fragments.flatMap((f) => r.add(f));
      assert.deepEqual(delivered, [{ msgType: HandshakeType.certificate, messageSeq: 0, body }]);
      assert.deepEqual([r.nextSeq, r.buffered], [1, 0]);
    }
  });

  it('handles overlaps and duplicates, and ignores delivered messages', () => {
    const r = new HandshakeReassembler();
    assert.deepEqual(r.add(piece(0, 0, 400)), []);
    assert.deepEqual(r.add(piece(0, 0, 400)), [], 'a duplicate does not count twice');
    assert.deepEqual(r.add(piece(0, 100, 200)), []);
    assert.deepEqual(r.add(piece(0, 300, 700)), []);
    assert.deepEqual(r.add(piece(0, 650, 1000)).map((m) => m.body), [body]);
    assert.deepEqual(r.add(piece(0, 0, 1000)), [], 'a retransmission of a delivered message');
    assert.equal(r.buffered, 0);
  });

  it('delivers in message_seq order and drops inconsistent fragments', () => {
    const r = new HandshakeReassembler();
    r.nextSeq = 1;
    const small = Buffer.from('0123456789');
    assert.deepEqual(r.add(piece(3, 0, 10, small, HandshakeType.finished)), []);
    assert.deepEqual(r.add(piece(2, 5, 10, small, HandshakeType.clientKeyExchange)), []);
    assert.deepEqual(r.add(piece(2, 0, 5, Buffer.from('XXXXXXXXXXXX'), HandshakeType.clientKeyExchange)), [], 'another length');
    assert.deepEqual(r.add(piece(2, 0, 5, small, HandshakeType.certificate)), [], 'another type');
    assert.deepEqual(r.add(piece(0, 0, 10, small)), [], 'before nextSeq');
    assert.deepEqual(r.add(piece(1, 0, 10, small, HandshakeType.certificate)).map((m) => m.messageSeq), [1]);
    assert.deepEqual(r.add(piece(2, 0, 5, small, HandshakeType.clientKeyExchange)).map((m) => [m.messageSeq, m.msgType, m.body.toString()]), [
      [2, HandshakeType.clientKeyExchange, '0123456789'], [3, HandshakeType.finished, '0123456789'],
    ]);
    assert.deepEqual(r.add({ ...piece(4, 0, 0, Buffer.alloc(0), HandshakeType.serverHelloDone) }).map((m) => m.body.length), [0], 'an empty message');
  });

  it('drops a fragment claiming a huge length, and bounds what it buffers', () => {
    const r = new HandshakeReassembler();
    assert.deepEqual(r.add({ msgType: 11, length: 0xffffff, messageSeq: 0, fragmentOffset: 0, fragmentLength: 4, body: hex('01020304') }), []);
    assert.equal(r.buffered, 0);
    assert.deepEqual(r.add(piece(8, 0, 10, Buffer.alloc(10))), [], 'too far ahead');
    assert.equal(r.buffered, 0);
    const big = Buffer.alloc(16 * 1024, 1);
    for (let seq = 1; seq < 8; seq++) {
      r.add(piece(seq, 0, 1, big));
      assert.ok(r.buffered <= 32 * 1024, `${r.buffered} bytes buffered`);
    }
    assert.equal(r.buffered, 32 * 1024);
    assert.deepEqual(r.add(piece(0, 0, 16, big)), [], 'the next message still fits: later ones make room');
    assert.ok(r.buffered <= 32 * 1024);
    const small = new HandshakeReassembler({ maxMessageLength: 100 });
    assert.deepEqual(small.add(piece(0, 0, 10, Buffer.alloc(101))), []);
    r.nextSeq = 5;
    assert.ok(r.buffered <= 16 * 1024, 'moving nextSeq drops older partial messages');
    assert.deepEqual(r.deliverable(), []);
  });

  it('never throws on random fragments, and stays within its bounds', () => {
    const rand = prng(11);
    const r = new HandshakeReassembler({ maxMessageLength: 4096 });
    for (let i = 0; i < 20_000; i++) {
      const length = Math.floor(rand() * 5000);
      const from = Math.floor(rand() * length);
      const to = Math.min(length, from + Math.floor(rand() * 600));
      const b = bytes(to - from, rand);
      r.add({ msgType: Math.floor(rand() * 3), length, messageSeq: Math.floor(rand() * 12), fragmentOffset: from, fragmentLength: b.length, body: b });
      assert.ok(r.buffered <= 8192);
    }
  });
});

describe('DTLS handshake messages: malformed input never throws', () => {
  const valid: [string, (b: Buffer) => unknown, Buffer, boolean][] = [
    // name, parser, a valid body, whether every proper prefix must be refused (hellos end with an optional block)
    ['ClientHello', parseClientHello, fullHelloBody, false],
    ['ServerHello', parseServerHello, serverHello({ random, sessionId: cid, cipherSuite: 0xc0a8, extensions: [{ type: 23, data: Buffer.alloc(0) }] }), false],
    ['handshake fragments', parseHandshakeFragments, Buffer.concat(serializeHandshake(1, 0, fullHelloBody, 100)), false],
    ['HelloVerifyRequest', parseHelloVerifyRequest, helloVerifyRequest(Buffer.alloc(20, 1)), true],
    ['Certificate', parseCertificate, certificate([Buffer.alloc(40, 1), Buffer.alloc(3, 2)]), true],
    ['ServerKeyExchange PSK', parseServerKeyExchangePsk, serverKeyExchangePsk(Buffer.from('hint')), true],
    ['ServerKeyExchange ECDHE', parseServerKeyExchangeEcdhe, serverKeyExchangeEcdhe(ecdheParams(23, point), 0x0403, Buffer.alloc(70)), true],
    ['ServerKeyExchange ECDHE_PSK', parseServerKeyExchangeEcdhePsk, serverKeyExchangeEcdhePsk(Buffer.from('h'), ecdheParams(23, point)), true],
    ['CertificateRequest', parseCertificateRequest, certificateRequest({ certificateTypes: [64], signatureAlgorithms: [0x0403], authorities: [hex('3000')] }), true],
    ['ClientKeyExchange PSK', parseClientKeyExchangePsk, clientKeyExchangePsk(Buffer.from('dev1')), true],
    ['ClientKeyExchange ECDHE', parseClientKeyExchangeEcdhe, clientKeyExchangeEcdhe(point), true],
    ['ClientKeyExchange ECDHE_PSK', parseClientKeyExchangeEcdhePsk, clientKeyExchangeEcdhePsk(Buffer.from('dev1'), point), true],
    ['CertificateVerify', parseCertificateVerify, certificateVerify(0x0403, Buffer.alloc(70)), true],
    ['Finished', parseFinished, finished(Buffer.alloc(12)), true],
    ['Alert', parseAlert, alert(2, 40), true],
    ['connection_id', parseConnectionIdExtension, connectionIdExtension(cid), true],
  ];

  it('refuses every truncation and any trailing byte of a valid message', () => {
    for (const [name, parse, body, strict] of valid) {
      assert.notEqual(parse(body), undefined, name);
      assert.equal(parse(Buffer.concat([body, hex('00')])), undefined, `${name} + 1 byte`);
      for (let cut = 0; cut < body.length; cut++) {
        const result = parse(body.subarray(0, cut));
        if (strict) assert.equal(result, undefined, `${name} cut at ${cut}`);
      }
    }
  });

  it('survives random bytes and random mutations of valid messages', () => {
    const rand = prng(0x5eed);
    for (const [, parse, body] of valid) {
      for (let i = 0; i < 1500; i++) parse(bytes(Math.floor(rand() * 300), rand));
      for (let i = 0; i < 1500; i++) {
        const mutated = Buffer.from(body);
        for (let k = 1 + Math.floor(rand() * 3); k > 0; k--) mutated[Math.floor(rand() * mutated.length)] = Math.floor(rand() * 256);
        parse(mutated);
      }
    }
  });
});

// ---- real clients: their first ClientHello, and their second after our HelloVerifyRequest

const onPath = (name: string) => spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
const CI = Boolean(process.env.CI) && process.env.CI !== 'false';
/** Skipped when the tool is missing, except in CI, where the test runs and fails. */
const needs = (name: string, pkg: string): string | false => (onPath(name) || CI ? false : `${name} not on PATH (apt-get install ${pkg})`);

interface Captured { recordSeq: Buffer; fragment: HandshakeFragment; hello: ClientHello }

/** Strips the 13-byte DTLS record header (RFC 6347 4.1) and reads the one ClientHello fragment. */
function readClientHello(datagram: Buffer): Captured {
  const length = datagram.readUInt16BE(11);
  assert.deepEqual([datagram[0], datagram.readUInt16BE(3), 13 + length <= datagram.length], [22, 0, true], 'a handshake record of epoch 0');
  const fragments = parseHandshakeFragments(datagram.subarray(13, 13 + length));
  assert.equal(fragments?.length, 1);
  const fragment = fragments[0]!;
  assert.deepEqual([fragment.msgType, fragment.fragmentOffset, fragment.fragmentLength], [HandshakeType.clientHello, 0, fragment.length]);
  const hello = parseClientHello(fragment.body);
  assert.ok(hello, 'the ClientHello parses');
  return { recordSeq: datagram.subarray(5, 11), fragment, hello };
}

/** A HelloVerifyRequest record echoing the ClientHello's record and message sequence numbers (RFC 6347 4.2.1). */
function verifyRecord(to: Captured, cookie: Buffer): Buffer {
  const [message] = serializeHandshake(HandshakeType.helloVerifyRequest, to.fragment.messageSeq, helloVerifyRequest(cookie)) as [Buffer];
  return Buffer.concat([hex('16 feff 0000'), to.recordSeq, Buffer.from([message.length >> 8, message.length & 0xff]), message]);
}

/**
 * Runs a client against a loopback socket until it has sent a ClientHello (and, with a cookie, a second one
 * carrying it); killed then, or after 3 s. Nothing is ever sent anywhere but 127.0.0.1.
 */
function captureHellos(command: string, args: (port: number) => string[], cookie?: Buffer): Promise<Captured[]> {
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket('udp4');
    const hellos: Captured[] = [];
    let child: ChildProcess | undefined;
    let stderr = '';
    let done = false;
    const finish = (error?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      child?.kill('SIGKILL');
      socket.close();
      if (error) reject(error);
      else resolve(hellos);
    };
    const timer = setTimeout(() => finish(new Error(`${command}: ${hellos.length} ClientHello(s) within 3 s; stderr: ${stderr}`)), 3000);
    socket.on('message', (datagram, from) => {
      if (done) return;
      try {
        const hello = readClientHello(datagram);
        hellos.push(hello);
        if (!cookie || hello.hello.cookie.length > 0) return finish();
        if (from.address === '127.0.0.1') socket.send(verifyRecord(hello, cookie), from.port, '127.0.0.1');
      } catch (error) {
        finish(error as Error);
      }
    });
    socket.bind(0, '127.0.0.1', () => {
      child = spawn(command, args(socket.address().port), { stdio: ['pipe', 'ignore', 'pipe'] });
      child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('error', (error) => finish(error));
    });
  });
}

const names = new Map<number, string>(Object.entries(ExtensionType).map(([k, v]) => [v, k]));
const describeHello = (hello: ClientHello) =>
  `suites ${hello.cipherSuites.map((s) => s.toString(16).padStart(4, '0')).join(' ')}; extensions ${[...hello.extensions.keys()].map((t) => names.get(t) ?? t).join(', ')}`;

/** What every client here offers: the suite asked for, DTLS 1.2, EMS, secure renegotiation, no Connection ID. */
function assertCommon(hello: ClientHello, suite: number): void {
  assert.deepEqual([hello.version, hello.compressionMethods, hello.random.length, hello.cookie.length], [0xfefd, [0], 32, 0], 'DTLS 1.2, null compression, no cookie yet');
  assert.ok(hello.cipherSuites.includes(suite), `offers ${suite.toString(16)}`);
  assert.ok(hello.signatureAlgorithms?.includes(0x0403), 'ecdsa_secp256r1_sha256');
  const flags = [hello.extendedMasterSecret, hello.secureRenegotiation, hello.connectionId];
  assert.deepEqual(flags, [true, true, undefined], 'extended_master_secret (RFC 7627), renegotiation_info or the SCSV (RFC 5746), no connection_id (54/254)');
}

/** The second ClientHello repeats the parameters the cookie covers and carries our cookie (RFC 6347 4.2.1). */
function assertRetried([first, second]: Captured[], cookie: Buffer): void {
  assert.ok(first && second);
  assert.deepEqual(second.hello.cookie, cookie);
  assert.equal(second.fragment.messageSeq, first.fragment.messageSeq + 1);
  assert.deepEqual(clientHelloCookieInput(second.hello), clientHelloCookieInput(first.hello));
}

const cookie = Buffer.from('0123456789abcdef0123456789abcdef', 'hex');
const opensslArgs = (cipher: string, psk: boolean) => (port: number) =>
  ['s_client', '-dtls1_2', '-connect', `127.0.0.1:${port}`, ...(psk ? ['-psk', '000102030405', '-psk_identity', 'dev1'] : []), '-cipher', cipher];
const coapArgs = (port: number) => ['-B', '3', '-k', '000102030405', '-u', 'dev1', `coaps://127.0.0.1:${port}/x`];

/** Each client, its arguments, the suite asked for (PSK-AES128-CCM8 0xc0a8 or ECDHE-ECDSA-AES128-CCM8 0xc0ae), and what else it must offer. */
const realClients: { name: string; command: string; pkg: string; args: (port: number) => string[]; suite: number; retry: boolean; check: (h: ClientHello) => void }[] = [
  {
    name: 'openssl s_client, PSK-AES128-CCM8', command: 'openssl', pkg: 'openssl', args: opensslArgs('PSK-AES128-CCM8', true), suite: 0xc0a8, retry: true,
    check: (h) => assert.deepEqual([h.cipherSuites.includes(0x00ff), h.sessionTicket], [true, Buffer.alloc(0)], 'the SCSV, an empty session_ticket'),
  },
  {
    name: 'openssl s_client, ECDHE-ECDSA-AES128-CCM8', command: 'openssl', pkg: 'openssl', args: opensslArgs('ECDHE-ECDSA-AES128-CCM8', false), suite: 0xc0ae, retry: false,
    check: (h) => assert.ok(h.supportedGroups?.includes(23) && h.ecPointFormats?.includes(0), 'secp256r1, uncompressed points'),
  },
  {
    name: 'libcoap coap-client-gnutls, PSK', command: 'coap-client-gnutls', pkg: 'libcoap3-bin', args: coapArgs, suite: 0xc0a8, retry: true,
    check: (h) => assert.deepEqual(h.renegotiationInfo, Buffer.alloc(0), 'renegotiation_info, empty in an initial handshake'),
  },
  { name: 'libcoap coap-client-openssl, PSK', command: 'coap-client-openssl', pkg: 'libcoap3-bin', args: coapArgs, suite: 0xc0a8, retry: true, check: () => {} },
];

describe('DTLS handshake messages: real ClientHellos', () => {
  for (const client of realClients) {
    it(client.name, { skip: needs(client.command, client.pkg) }, async (t) => {
      assert.ok(onPath(client.command), `${client.command} not on PATH (apt-get install ${client.pkg})`);
      const hellos = await captureHellos(client.command, client.args, client.retry ? cookie : undefined);
      const { hello } = hellos[0]!;
      t.diagnostic(describeHello(hello));
      assertCommon(hello, client.suite);
      client.check(hello);
      if (client.retry) assertRetried(hellos, cookie);
    });
  }
});
