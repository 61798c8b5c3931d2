import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { generate } from 'mqtt-packet';
import WebSocket from 'ws';
import { eventsArrive, history, waitFor, within } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { run, setPassword } from '../helpers/mqtt.js';
import { runScript } from '../helpers/scripts.js';
import { startService, type TestService } from '../helpers/service.js';

const PASSWORD = 'device-secret-1';
const MAX_PACKET_BYTES = 4096;

type Device = MqttClient & { received: { topic: string; payload: string; qos: number }[] };

const connectOf = (key: string) => generate({ cmd: 'connect', protocolVersion: 4, protocolId: 'MQTT', clientId: `raw-${key}`, clean: true, keepalive: 30, username: key, password: Buffer.from(PASSWORD) });

/** A raw MQTT-over-WebSocket connection: sends frames as given, collects frames back, knows the close code. */
class RawWebSocket {
  readonly socket: WebSocket;
  readonly received: Buffer[] = [];
  readonly closed: Promise<number>;

  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.on('message', (data: Buffer) => this.received.push(data));
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.on('close', (code) => resolve(code)));
  }

  static async open(url: string): Promise<RawWebSocket> {
    const socket = new WebSocket(url, 'mqtt');
    await new Promise<void>((resolve, reject) => socket.once('open', resolve).once('error', reject));
    return new RawWebSocket(socket);
  }

  /** Logs in with a raw CONNECT and waits for the accepting CONNACK. */
  async logIn(key: string): Promise<void> {
    this.socket.send(connectOf(key));
    await waitFor(async () => (this.received.length > 0 ? true : undefined), 'CONNACK over WebSocket');
    assert.deepEqual([...this.received[0]!], [0x20, 0x02, 0x00, 0x00]);
  }

  async closedWithin(ms: number): Promise<number | undefined> {
    return within(this.closed, ms, () => undefined);
  }
}

describe('MQTT over TLS and WebSocket (sqlite)', () => {
  let service: TestService;
  let account: TestAccount;
  let serviceId: string;
  let certDir: string;
  let certFile: string;
  let cert: Buffer;
  const clients: MqttClient[] = [];
  const sockets: RawWebSocket[] = [];

  const device = async (key: string) => {
    const endpoint = await createEndpoint(service, account.token, { key, serviceId });
    await setPassword(service, account.token, endpoint.id as string, PASSWORD);
    return endpoint;
  };
  const connect = async (url: string, key: string, options: IClientOptions = {}): Promise<Device> => {
    const client = await mqtt.connectAsync(url, { username: key, password: PASSWORD, reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: 4, ...options });
    clients.push(client);
    const received: Device['received'] = [];
    client.on('message', (topic, payload, packet) => received.push({ topic, payload: payload.toString(), qos: packet.qos }));
    return Object.assign(client, { received });
  };
  const tlsUrl = () => `mqtts://127.0.0.1:${service.ports.mqttTls}`;
  const wsUrl = () => `ws://127.0.0.1:${service.ports.mqttWs}/mqtt`;
  const rawWs = async () => {
    const socket = await RawWebSocket.open(wsUrl());
    sockets.push(socket);
    return socket;
  };

  before(async () => {
    await run('sh', ['-c', 'command -v openssl']);
    certDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-mqtt-tls-'));
    certFile = path.join(certDir, 'cert.pem');
    const keyFile = path.join(certDir, 'key.pem');
    // Valid for the name (SNI) and for the address the tests dial, so clients need no --insecure.
    await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', keyFile, '-out', certFile, '-days', '1']);
    cert = await readFile(certFile);
    service = await startService('sqlite', { mqttTlsPort: 0, mqttTlsCert: certFile, mqttTlsKey: keyFile, mqttWsPort: 0, mqttMaxPacketBytes: MAX_PACKET_BYTES });
    account = await createAccount(service, 'mqtt-listeners');
    serviceId = await createService(service, account.token, { name: 'mqtt-listeners', type: 'mqtt' });
  });
  after(async () => {
    for (const socket of sockets) socket.socket.terminate();
    await Promise.all(clients.map((client) => client.endAsync(true).catch(() => undefined)));
    await service?.stop();
    if (certDir) await rm(certDir, { recursive: true, force: true });
  });

  it('reports the TLS and WebSocket ports next to the TCP one', () => {
    const { mqtt: plain, mqttTls, mqttWs } = service.ports;
    for (const port of [plain, mqttTls, mqttWs]) assert.ok(Number.isInteger(port) && port! > 0, JSON.stringify(service.ports));
    assert.equal(new Set([plain, mqttTls, mqttWs]).size, 3, 'three listeners on three ports');
  });

  describe('TLS', () => {
    it('a device publishes over mqtts with the certificate verified; the mqtt-publish event is stored before PUBACK', async () => {
      const endpoint = await device('tls-1');
      const client = await connect(tlsUrl(), 'tls-1', { ca: cert, rejectUnauthorized: true, servername: 'localhost', clientId: 'tls-client' });
      const connected = await eventsArrive(service, account.token, ['on-connect'], 1, endpoint.id);
      assert.equal(connected[0]!.data.protocol, 'mqtt');
      assert.equal(connected[0]!.data.clientId, 'tls-client');
      await client.publishAsync('tls-1/telemetry', '{"t":20}', { qos: 1 });
      const [published] = await history(service, account.token, ['mqtt-publish'], endpoint.id);
      assert.ok(published, 'the event is in /history as soon as PUBACK came');
      assert.equal(published.data.topic, 'tls-1/telemetry');
      assert.equal(published.data.text, '{"t":20}');
      assert.equal(published.data.qos, 1);
      assert.equal(published.data.clientId, 'tls-client');
      await client.endAsync();
    });

    it('an MQTT 5 device works over TLS too (publication properties reach the event)', async () => {
      const endpoint = await device('tls5-1');
      const client = await connect(tlsUrl(), 'tls5-1', { ca: cert, rejectUnauthorized: true, servername: 'localhost', protocolVersion: 5 });
      await client.publishAsync('tls5-1/up', 'v5', { qos: 1, properties: { contentType: 'text/plain' } });
      const [published] = await history(service, account.token, ['mqtt-publish'], endpoint.id);
      assert.deepEqual(published?.data.properties, { contentType: 'text/plain' });
      await client.endAsync();
    });

    it('the certificate is really checked: without its CA the client refuses the server', async () => {
      await assert.rejects(
        mqtt.connectAsync(tlsUrl(), { username: 'tls-1', password: PASSWORD, reconnectPeriod: 0, connectTimeout: 5000, rejectUnauthorized: true }),
        /self[- ]signed|unable to verify|certificate/i,
      );
    });

    it('plain MQTT on the TLS port gets no CONNACK', async () => {
      const socket = net.connect(service.ports.mqttTls!, '127.0.0.1');
      const received: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => received.push(chunk));
      socket.on('error', () => undefined);
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      await new Promise<void>((resolve) => socket.once('connect', resolve));
      socket.write(connectOf('tls-1'));
      await within(closed, 3000, () => undefined);
      socket.destroy();
      const bytes = Buffer.concat(received);
      assert.ok(bytes.length === 0 || bytes[0] !== 0x20, 'whatever comes back is not a CONNACK');
    });

    it('works with mosquitto_pub --cafile (certificate checked against 127.0.0.1)', async () => {
      const endpoint = await device('tls-mosquitto');
      const port = String(service.ports.mqttTls);
      // mosquitto_pub exits 0 only after CONNACK 0 and, at QoS 1, the PUBACK: the log-in and the publication went through TLS.
      await run('mosquitto_pub', ['--cafile', certFile, '-h', '127.0.0.1', '-p', port, '-u', 'tls-mosquitto', '-P', PASSWORD, '-i', 'tls-pub', '-t', 'tls-mosquitto/up', '-m', 'over-tls', '-q', '1']);
      const [connected] = await eventsArrive(service, account.token, ['on-connect'], 1, endpoint.id);
      assert.equal(connected!.data.clientId, 'tls-pub');
      const refused = await run('mosquitto_pub', ['--cafile', certFile, '-h', '127.0.0.1', '-p', port, '-u', 'tls-mosquitto', '-P', 'wrong-password', '-t', 'tls-mosquitto/up', '-m', 'x']).catch((error: { stderr: string }) => error);
      assert.match(refused.stderr, /not authori[sz]ed|bad user ?name or password/i);
      const untrusted = await run('mosquitto_pub', ['-h', '127.0.0.1', '-p', port, '--capath', '/etc/ssl/certs', '-u', 'tls-mosquitto', '-P', PASSWORD, '-t', 'tls-mosquitto/up', '-m', 'x']).catch((error: { stderr: string; code: number }) => error);
      assert.notEqual((untrusted as { code?: number }).code ?? 0, 0, 'trusting only the system CAs, mosquitto_pub refuses the self-signed server');
      assert.match(untrusted.stderr, /certificate verify failed|tls|ssl/i);
    });

    it('a mosquitto_pub publication over TLS becomes an mqtt-publish event', async () => {
      const endpoint = await device('tls-mosquitto-event');
      for (let i = 0; i < 5; i++) {
        await run('mosquitto_pub', ['--cafile', certFile, '-h', '127.0.0.1', '-p', String(service.ports.mqttTls), '-u', 'tls-mosquitto-event', '-P', PASSWORD, '-i', `tls-pub-${i}`, '-t', 'tls-mosquitto-event/up', '-m', `over-tls-${i}`, '-q', '1']);
      }
      // Each PUBACK came after the event was stored (or should have): all five are there at once.
      const events = await history(service, account.token, ['mqtt-publish'], endpoint.id);
      assert.deepEqual(events.map((e) => [e.data.text, e.data.clientId]), [0, 1, 2, 3, 4].map((i) => [`over-tls-${i}`, `tls-pub-${i}`]));
    });

    it('a TLS client that fails the handshake does not disturb a connected one', async () => {
      await device('tls-steady');
      const steady = await connect(tlsUrl(), 'tls-steady', { ca: cert, servername: 'localhost' });
      await steady.subscribeAsync('tls-steady/#', { qos: 1 });
      // Garbage where a ClientHello belongs, then a handshake the client aborts.
      const garbage = net.connect(service.ports.mqttTls!, '127.0.0.1');
      garbage.on('error', () => undefined);
      garbage.write(Buffer.from('GET / HTTP/1.1\r\n\r\n'));
      const aborted = tls.connect({ port: service.ports.mqttTls!, host: '127.0.0.1', rejectUnauthorized: true });
      await new Promise<void>((resolve) => aborted.once('error', () => resolve()));
      garbage.destroy();
      await steady.publishAsync('tls-steady/ping', 'pong', { qos: 1 });
      await waitFor(async () => (steady.received.some((m) => m.payload === 'pong') ? true : undefined), 'own echo over TLS');
    });
  });

  describe('WebSocket', () => {
    it('a device logs in over ws://…/mqtt, subscribes, and receives what a script publishes to it', async () => {
      const endpoint = await device('ws-1');
      const client = await connect(wsUrl(), 'ws-1', { clientId: 'ws-client' });
      await client.subscribeAsync('ws-1/cmd', { qos: 1 });
      const [subscribed] = await eventsArrive(service, account.token, ['mqtt-subscribe'], 1, endpoint.id);
      assert.deepEqual(subscribed!.data.topics, [{ topic: 'ws-1/cmd', qos: 1 }]);
      const result = await runScript(service, account.token, "console.log(JSON.stringify(mqtt.publish(null, 'ws-1/cmd', 'hi', {qos: 1})));", { endpoint: endpoint.id });
      assert.equal(result.status, 'success', result.error ?? '');
      assert.deepEqual(JSON.parse(result.logs[0]!), { topic: 'ws-1/cmd', qos: 1, retain: false, bytes: 2, connected: true });
      await waitFor(async () => (client.received.length > 0 ? true : undefined), 'the command over WebSocket');
      assert.deepEqual(client.received, [{ topic: 'ws-1/cmd', payload: 'hi', qos: 1 }]);
      // And the other way: a publication over WebSocket is an event like any other.
      await client.publishAsync('ws-1/up', 'from-ws', { qos: 1 });
      const [published] = await history(service, account.token, ['mqtt-publish'], endpoint.id);
      assert.equal(published!.data.text, 'from-ws');
      assert.equal(published!.data.clientId, 'ws-client');
    });

    it('an MQTT 5 device logs in over WebSocket, publishes through a topic alias and receives what a script publishes', async () => {
      const endpoint = await device('ws5-1');
      const client = await connect(wsUrl(), 'ws5-1', { protocolVersion: 5 });
      await client.subscribeAsync('ws5-1/cmd', { qos: 1 });
      await runScript(service, account.token, "mqtt.publish(null, 'ws5-1/cmd', 'hi-5', {qos: 1});", { endpoint: endpoint.id });
      await waitFor(async () => (client.received.length > 0 ? true : undefined), 'the command over WebSocket');
      assert.deepEqual(client.received, [{ topic: 'ws5-1/cmd', payload: 'hi-5', qos: 1 }]);
      await client.publishAsync('ws5-1/up', 'one', { qos: 1, properties: { topicAlias: 1 } });
      await client.publishAsync('', 'two', { qos: 1, properties: { topicAlias: 1 } });
      const events = await history(service, account.token, ['mqtt-publish'], endpoint.id);
      assert.deepEqual(events.map((e) => [e.data.topic, e.data.text]).sort(), [['ws5-1/up', 'one'], ['ws5-1/up', 'two']]);
    });

    it('negotiates the mqtt subprotocol, serves only /mqtt, and answers plain HTTP with 426', async () => {
      const raw = await rawWs();
      assert.equal(raw.socket.protocol, 'mqtt');
      await assert.rejects(
        new Promise<void>((resolve, reject) => {
          const other = new WebSocket(`ws://127.0.0.1:${service.ports.mqttWs}/elsewhere`, 'mqtt');
          other.once('open', () => {
            other.terminate();
            resolve();
          });
          other.once('error', reject);
        }),
        /Unexpected server response: 400/,
      );
      const plain = await fetch(`http://127.0.0.1:${service.ports.mqttWs}/`);
      assert.equal(plain.status, 426);
      assert.match(await plain.text(), /\/mqtt/);
    });

    it('a WebSocket message over the packet limit closes that connection only', async () => {
      await device('ws-steady');
      await device('ws-big');
      const steady = await connect(wsUrl(), 'ws-steady');
      await steady.subscribeAsync('ws-steady/#', { qos: 1 });
      const stillServed = async (payload: string) => {
        assert.equal(steady.connected, true, `the steady client is still connected (${payload})`);
        await steady.publishAsync('ws-steady/check', payload, { qos: 1 });
        await waitFor(async () => (steady.received.some((m) => m.payload === payload) ? true : undefined), `the steady client still served (${payload})`);
      };

      // A frame larger than any packet may be: the WebSocket layer closes with 1009 (message too big).
      const frame = await rawWs();
      await frame.logIn('ws-big');
      frame.socket.send(Buffer.alloc(MAX_PACKET_BYTES + 6, 0x30));
      assert.equal(await frame.closedWithin(3000), 1009);
      await stillServed('after a big frame');

      // A frame within the WebSocket limit carrying a PUBLISH whose remaining length is one over: the guard closes.
      const packet = await rawWs();
      await packet.logIn('ws-big');
      const header = Buffer.from([0x30, 0x81, 0x20]); // remaining length 4097
      assert.equal(header.length + MAX_PACKET_BYTES + 1, MAX_PACKET_BYTES + 4);
      packet.socket.send(Buffer.concat([header, Buffer.from([0, 8]), Buffer.from('ws-big/x'), Buffer.alloc(MAX_PACKET_BYTES + 1 - 10)]));
      assert.ok((await packet.closedWithin(3000)) !== undefined, 'a packet over the limit closes the connection');
      await stillServed('after a big packet');

      // The announced length alone is enough: the body is never sent.
      const announced = await rawWs();
      await announced.logIn('ws-big');
      announced.socket.send(Buffer.from([0x30, 0xff, 0xff, 0x7f]));
      assert.ok((await announced.closedWithin(3000)) !== undefined, 'an announced length over the limit closes the connection');

      // A packet exactly at the limit is fine.
      const endpoint = (await service.request('GET', '/endpoints/k.ws-big', { token: account.token })).body;
      const atLimit = await connect(wsUrl(), 'ws-big', { clientId: 'ws-at-limit' });
      const topic = 'ws-big/x';
      // Remaining length = 2 + topic + 2 (message id, QoS 1) + payload.
      await atLimit.publishAsync(topic, Buffer.alloc(MAX_PACKET_BYTES - 4 - topic.length, 0x61), { qos: 1 });
      const events = await history(service, account.token, ['mqtt-publish'], endpoint.id);
      assert.equal(events.at(-1)!.data.topic, topic);
      assert.equal(atLimit.connected, true);

      // mqtt.js sends one packet per message: a payload over the limit ends its connection too.
      const closed = new Promise<void>((resolve) => atLimit.once('close', () => resolve()));
      atLimit.publish(topic, Buffer.alloc(MAX_PACKET_BYTES + 1, 0x62), { qos: 0 });
      await closed;
      await stillServed('after mqtt.js sent too much');
    });

    it('logs in over WebSocket with the same CONNACK codes as over TCP', async () => {
      await device('ws-login');
      const refused = await mqtt
        .connectAsync(wsUrl(), { username: 'ws-login', password: 'wrong-password', reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: 4 })
        .then(async (client) => {
          await client.endAsync(true);
          return 0;
        })
        .catch((error: { code?: number }) => error.code);
      assert.equal(refused, 4);
      const raw = await rawWs();
      raw.socket.send(generate({ cmd: 'pingreq' }));
      assert.ok((await raw.closedWithin(3000)) !== undefined, 'a first packet other than CONNECT closes the WebSocket');
    });

    it('a generated device secret logs in over WebSocket and TLS as over TCP; another device’s secret does not', async () => {
      const created = await service.request('POST', '/endpoints/bulk', {
        token: account.token,
        body: { items: ['ws-gen-1', 'ws-gen-2'].map((key) => ({ key, serviceId, credentials: { generate: true } })) },
      });
      const [first, second] = created.body.items.map((item: { endpoint: { credentials: { password: string } } }) => item.endpoint.credentials.password);
      for (const url of [wsUrl(), tlsUrl()]) {
        const client = await connect(url, 'ws-gen-1', { password: first, ca: cert });
        assert.ok(client.connected, url);
        await client.endAsync();
        const refused = await mqtt
          .connectAsync(url, { username: 'ws-gen-1', password: second, ca: cert, reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: 4 })
          .then(async (other) => {
            await other.endAsync(true);
            return 0;
          })
          .catch((error: { code?: number }) => error.code);
        assert.equal(refused, 4, `${url}: the other device's secret is refused`);
      }
    });
  });
});
