/**
 * The CoAPS port with the project's own DTLS test client (tools/dtls-test-client.ts), for what node-dtls-client
 * cannot do: session resumption (abbreviated handshake), Connection ID (RFC 9146 and draft-05) across a NAT
 * rebinding, and records from a new address without CID, replayed or forged. Loopback only, every wait bounded.
 */
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { CoapEndpoint, decodeMessage, emptyMessage, encodeMessage, locationPath, observe, option, OptionNumber, uriPath, uriPathOptions, uriQueryOptions, type CoapMessage, type Peer } from '../../src/coap/index.js';
import { AlertDescription, AlertLevel } from '../../src/dtls/handshake-messages.js';
import { DtlsAlertError, DtlsTestClient, DtlsTimeoutError, type DtlsTestClientOptions } from '../../tools/dtls-test-client.js';
import { until, waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { startService, type TestService } from '../helpers/service.js';

const KEY = Buffer.from('sixteen-byte-key');

describe('DTLS: session resumption, Connection ID and NAT rebinding (own DTLS client)', () => {
  let service: TestService;
  let tenant: TestAccount;
  let coapServiceId: string;
  let lwm2mServiceId: string;
  let server: Peer;
  const stops: (() => Promise<void>)[] = [];

  const secured = async (key: string, serviceId: string) => {
    const endpoint = await createEndpoint(service, tenant.token, { key, serviceId });
    const put = await service.request('PUT', `/endpoints/${endpoint.id}/security`, { token: tenant.token, body: { mode: 'psk', identity: key, key: KEY.toString('hex') } });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    return endpoint;
  };
  const events = async (endpointId: string, type: string) => {
    const found = await service.request('GET', `/history?endpoint=${endpointId}&type=${type}&limit=50`, { token: tenant.token });
    return (found.body.items as { type: string; data: Record<string, unknown> }[]).filter((e) => e.type === type).map((e) => e.data);
  };
  const remoteAddr = async (endpointId: string) => (await service.request('GET', `/endpoints/${endpointId}`, { token: tenant.token })).body.statusDetails?.remoteAddr;
  const client = (identity: string, options: Partial<DtlsTestClientOptions> = {}) => new DtlsTestClient({ server, identity, key: KEY, ...options });
  /** A CoAP endpoint over the DTLS client; start() shakes hands. Answers GET /3/0/9 with "95" (text), and may be observed. */
  const coapOver = async (transport: DtlsTestClient) => {
    const coap = new CoapEndpoint({ transport, rateLimit: false, transmission: { ackTimeout: 1000, maxRetransmit: 1 } });
    coap.onRequest((request) =>
      request.code === '0.01' && uriPath(request) === '/3/0/9'
        ? { code: '2.05', options: [option(OptionNumber.ContentFormat, 0)], payload: '95', ...(observe(request) === 0 && { observe: true }) }
        : { code: '4.04' },
    );
    await coap.start();
    stops.push(() => coap.stop());
    return coap;
  };
  const post = (coap: CoapEndpoint, path: string, payload: string, timeout = 3000) => coap.request(server, { code: '0.02', options: uriPathOptions(path), payload }, { timeout });
  const register = async (coap: CoapEndpoint, ep: string) => {
    const query = [`ep=${ep}`, 'lt=300', 'lwm2m=1.1', 'b=U'];
    const response = await coap.request(server, { code: '0.02', options: [option(OptionNumber.UriPath, 'rd'), ...uriQueryOptions(query), option(OptionNumber.ContentFormat, 40)], payload: '</3/0>' }, { timeout: 3000 });
    assert.equal(response.code, '2.01');
    return locationPath(response);
  };
  const read = (endpointId: string) => service.request('POST', `/endpoints/${endpointId}/lwm2m/read`, { token: tenant.token, body: { path: '/3/0/9', timeout: 3000 } });

  before(async () => {
    service = await startService('sqlite');
    tenant = await createAccount(service, 'dtls-cid');
    coapServiceId = await createService(service, tenant.token, { name: 'coap', type: 'coap' });
    lwm2mServiceId = await createService(service, tenant.token, { name: 'lwm2m', type: 'lwm2m' });
    server = { address: '127.0.0.1', port: service.ports.coaps! };
  });
  after(async () => {
    for (const stop of stops) await stop().catch(() => undefined);
    await service?.stop();
  });

  it('(a) a PSK device resumes its session from a new socket with an abbreviated handshake and talks CoAP', async () => {
    const endpoint = await secured('resume-1', coapServiceId);
    const first = client('resume-1');
    const coap1 = await coapOver(first);
    assert.equal(first.stats.resumed, false);
    assert.equal(first.stats.handshakeRoundTrips, 3, 'full handshake: ClientHello, ClientHello with cookie, key exchange');
    assert.deepEqual(first.stats.messagesSent, ['clientHello', 'clientHello', 'clientKeyExchange', 'finished']);
    assert.equal(first.cipherSuite, 'TLS_PSK_WITH_AES_128_CCM_8');
    assert.equal((await post(coap1, '/d/resume-1/first', 'one')).code, '2.04');
    const session = first.session!;
    assert.ok(session.id.length > 0 && session.extendedMasterSecret);
    const firstPort = first.address().port;
    await coap1.stop(); // close_notify: the connection ends, the session stays resumable

    const second = client('resume-1', { session });
    const coap2 = await coapOver(second);
    assert.notEqual(second.address().port, firstPort, 'a new socket');
    assert.equal(second.stats.resumed, true, 'the server resumed the session');
    assert.equal(second.stats.handshakeRoundTrips, 2, 'abbreviated: no key-exchange round trip');
    assert.deepEqual(second.stats.messagesSent, ['clientHello', 'clientHello', 'finished'], 'no ClientKeyExchange: the old master secret keyed it');
    assert.ok(second.session!.id.equals(session.id));
    assert.equal((await post(coap2, '/d/resume-1/second', 'two')).code, '2.04');
    const received = await waitFor(async () => {
      const found = await events(endpoint.id, 'coap-request');
      return found.length === 2 ? found : undefined;
    }, 'both requests');
    assert.deepEqual(received.map((e) => e.path).sort(), ['/first', '/second']);

    // A session the server does not know is not resumed: a full handshake follows.
    const unknown = client('resume-1', { session: { ...session, id: Buffer.alloc(32, 7) } });
    const coap3 = await coapOver(unknown);
    assert.equal(unknown.stats.resumed, false);
    assert.equal(unknown.stats.handshakeRoundTrips, 3);
    assert.equal((await post(coap3, '/d/resume-1/third', 'three')).code, '2.04');
  });

  for (const extension of [54, 254] as const) {
    const form = extension === 54 ? 'RFC 9146, empty CID offered' : 'draft-05, 4-byte CID offered';
    it(`(b) Connection ID ${extension} (${form}): an LwM2M device registers, moves to a new port without a handshake, updates and is read there`, async () => {
      const ep = `cid-${extension}`;
      const endpoint = await secured(ep, lwm2mServiceId);
      const ours = extension === 54 ? Buffer.alloc(0) : Buffer.from('c1d2c3d4', 'hex');
      const device = client(ep, { connectionId: { extension, cid: ours } });
      const coap = await coapOver(device);
      const cid = device.connectionId;
      assert.equal(cid?.extension, extension);
      assert.equal(cid.format, extension === 54 ? 'rfc9146' : 'draft05');
      assert.ok(cid.theirs.length > 0, 'the server issued a CID for our records');
      assert.ok(cid.ours.equals(ours));
      const location = await register(coap, ep);
      assert.equal((await read(endpoint.id)).body.values?.[0]?.value, 95, 'read at the first address');
      const oldPort = device.address().port;
      assert.equal(await remoteAddr(endpoint.id), `127.0.0.1:${oldPort}`);
      const handshakeMessages = device.stats.messagesSent.length;

      const moved = await device.rebind();
      assert.notEqual(moved.port, oldPort);
      const update = await coap.request(server, { code: '0.02', options: location.map((segment) => option(OptionNumber.UriPath, segment)) }, { timeout: 3000 });
      assert.equal(update.code, '2.04');
      assert.equal(device.stats.messagesSent.length, handshakeMessages, 'no new handshake');
      assert.equal(device.stats.handshakeRoundTrips, 3);

      const after = await read(endpoint.id);
      assert.equal(after.status, 200, JSON.stringify(after.body));
      assert.equal(after.body.values[0].value, 95, 'the read reached the device at its new port');
      assert.equal(await remoteAddr(endpoint.id), `127.0.0.1:${moved.port}`);
    });
  }

  it('(c) without a Connection ID, records from a rebound socket are dropped: the server does not follow', async () => {
    const endpoint = await secured('no-cid-1', coapServiceId);
    const device = client('no-cid-1');
    const coap = await coapOver(device);
    assert.equal(device.connectionId, undefined);
    assert.equal((await post(coap, '/d/no-cid-1/before', 'b')).code, '2.04');
    await until(async () => (await events(endpoint.id, 'coap-request')).length === 1, 'the first request');
    const oldPort = device.address().port;
    await device.rebind();
    const received = device.stats.recordsReceived;
    await assert.rejects(post(coap, '/d/no-cid-1/after', 'a', 1500), /no response/);
    assert.equal(device.stats.recordsReceived, received, 'not a single record came back to the new port');
    assert.deepEqual((await events(endpoint.id, 'coap-request')).map((e) => e.path), ['/before']);
    assert.equal(await remoteAddr(endpoint.id), `127.0.0.1:${oldPort}`);
  });

  it('(c) with a Connection ID, a forged or replayed record from another address does not move the connection', async () => {
    const ep = 'cid-guard';
    const endpoint = await secured(ep, lwm2mServiceId);
    const device = client(ep, { connectionId: { extension: 54 } });
    const coap = await coapOver(device);
    await register(coap, ep);
    const port = device.address().port;
    const attacker = await bindAttacker();
    stops.push(() => new Promise((resolve) => attacker.socket.close(() => resolve())));
    const ping = encodeMessage(emptyMessage('CON', 0x4242));

    const forged = Buffer.from(device.sealApplicationData(ping));
    forged.writeUInt8(forged[forged.length - 1]! ^ 0x01, forged.length - 1); // the tag no longer verifies
    attacker.send(forged);
    const captured = device.sealApplicationData(ping);
    device.sendRaw(captured); // the device's own record (the server answers the ping with a RST)...
    await sleep(100);
    attacker.send(captured); // ...and the same bytes again from elsewhere: a replay
    await sleep(300);
    assert.equal(attacker.received.length, 0, 'nothing was sent to the other address');
    assert.equal((await read(endpoint.id)).body.values?.[0]?.value, 95, 'the device is still read at its address');
    assert.equal(await remoteAddr(endpoint.id), `127.0.0.1:${port}`);
  });

  it('(d) a wrong PSK gets no connection; an unknown identity a fatal alert', async () => {
    const endpoint = await secured('wrong-key', coapServiceId);
    const wrong = client('wrong-key', { key: Buffer.from('not-the-right-k!'), retransmitMs: 200 });
    await assert.rejects(wrong.start(() => undefined), DtlsTimeoutError);
    // The server drops a Finished it cannot authenticate, silently (RFC 6347 4.1.2.7): the key exchange went unanswered.
    assert.deepEqual(wrong.stats.messagesSent, ['clientHello', 'clientHello', 'clientKeyExchange', 'finished']);
    assert.equal(wrong.stats.flightRetransmissions, 2);
    assert.equal(wrong.connected, false);

    const stranger = client('nobody-knows-me');
    const refused = await stranger.start(() => undefined).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(refused instanceof DtlsAlertError, String(refused));
    assert.equal(refused.level, AlertLevel.fatal);
    assert.equal(refused.description, AlertDescription.unknown_psk_identity);
    assert.deepEqual(await events(endpoint.id, 'coap-request'), []);
  });

  it('(d) a replayed application-data record is ignored: one event, no second answer', async () => {
    const endpoint = await secured('replay-1', coapServiceId);
    const answers: CoapMessage[] = [];
    const device = client('replay-1');
    await device.start((datagram) => answers.push(decodeMessage(datagram)));
    stops.push(() => device.stop());
    const request = encodeMessage({ type: 'CON', code: '0.02', messageId: 0x1234, token: Buffer.from('r1'), options: uriPathOptions('/d/replay-1/once'), payload: Buffer.from('once') });
    const record = device.sealApplicationData(request);
    device.sendRaw(record);
    await until(() => answers.length === 1, 'the answer');
    assert.equal(answers[0]!.code, '2.04');
    device.sendRaw(record); // the very same record: the server's replay window drops it before CoAP sees it
    await sleep(600);
    assert.equal(answers.length, 1, 'no answer to the replayed record');
    // Control: the same CoAP message in a fresh record passes DTLS; CoAP de-duplication answers it again (RFC 7252 4.5).
    device.send(request);
    await until(() => answers.length === 2, 'the answer to the same request in a new record');
    await sleep(200);
    assert.equal((await events(endpoint.id, 'coap-request')).length, 1, 'one event');
  });

  // Server bug (reported, not fixed here): once established, DtlsTransport hands an epoch-0 handshake record to its
  // ClientHello path, which ignores anything else, so a client whose copy of the server's CCS + Finished was lost
  // repeats its last flight in vain (RFC 6347 4.2.4 wants the server's last flight sent again) and never finishes.
  it('(d) a lost server Finished is sent again when the client repeats its last flight', async () => {
    await secured('lost-finished', coapServiceId);
    // Datagrams in: 0 HelloVerifyRequest, 1 ServerHello + ServerHelloDone, 2 ChangeCipherSpec + Finished (lost).
    const device = client('lost-finished', { retransmitMs: 200, drop: (direction, index) => direction === 'in' && index === 2 });
    await device.start(() => undefined);
    stops.push(() => device.stop());
    assert.equal(device.stats.flightRetransmissions, 1);
  });

  // RFC 9146 6 lets an address change happen only for a record "newer" than the newest received: an older record,
  // delayed or captured on the path and sent from elsewhere, must not take the connection (ConnectionProcessor
  // #records compares its sequence number with the newest before it moves the connection).
  it('(c) RFC 9146 6: an older CID record from another address does not move the connection', async () => {
    const ep = 'cid-older';
    const endpoint = await secured(ep, lwm2mServiceId);
    const device = client(ep, { connectionId: { extension: 54 } });
    const coap = await coapOver(device);
    await register(coap, ep);
    const port = device.address().port;
    const attacker = await bindAttacker();
    stops.push(() => new Promise((resolve) => attacker.socket.close(() => resolve())));
    const ping = (id: number) => encodeMessage(emptyMessage('CON', id));
    const older = device.sealApplicationData(ping(0x5001)); // captured, delayed on the path
    device.send(ping(0x5002)); // newer, delivered from the device's address
    await sleep(100);
    attacker.send(older);
    await sleep(300);
    assert.equal(attacker.received.length, 0, 'nothing was sent to the other address');
    assert.equal(await remoteAddr(endpoint.id), `127.0.0.1:${port}`);
    assert.equal((await read(endpoint.id)).body.values?.[0]?.value, 95, 'the device is still read at its address');
  });

  // The CoAP layer matches notifications and responses by DTLS association, not by address (RFC 7252 9.1.1;
  // Transport.sameAssociation), so after a CID rebinding the device's notifications still reach the observation.
  it('(b) an observation made before a Connection ID rebinding goes on after it', async () => {
    const ep = 'cid-observe';
    const endpoint = await secured(ep, lwm2mServiceId);
    const device = client(ep, { connectionId: { extension: 54 } });
    const coap = await coapOver(device);
    await register(coap, ep);
    const observed = await service.request('POST', `/endpoints/${endpoint.id}/lwm2m/observe`, { token: tenant.token, body: { path: '/3/0/9', timeout: 3000 } });
    assert.equal(observed.body.observing, true, JSON.stringify(observed.body));
    const [observer] = coap.observers();
    assert.ok(observer);
    await device.rebind();
    await coap.notify(observer, { code: '2.05', options: [option(OptionNumber.ContentFormat, 0)], payload: '70' }, { confirmable: true });
    await waitFor(async () => (await events(endpoint.id, 'lwm2m-data')).some((e) => JSON.stringify(e.values).includes('70')) || undefined, 'the notification from the new port');
  });

  /** Another UDP socket on loopback, sending to the server and collecting what comes back. */
  async function bindAttacker(): Promise<{ socket: dgram.Socket; received: Buffer[]; send: (datagram: Buffer) => void }> {
    const socket = dgram.createSocket('udp4');
    const received: Buffer[] = [];
    socket.on('message', (datagram) => received.push(datagram));
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return { socket, received, send: (datagram) => socket.send(datagram, server.port, server.address) };
  }
});
