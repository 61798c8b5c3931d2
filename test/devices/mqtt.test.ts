import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { MqttClient } from 'mqtt';
import { generate } from 'mqtt-packet';
import { eventsArrive, history, waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { MqttDevices, RawConnection, run, setPassword } from '../helpers/mqtt.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

const PASSWORD = 'device-secret-1';

/** A CONNECT with an empty client id and clean session 0 (which mqtt.js and mqtt-packet refuse to send). */
function connectWithoutClientId(username: string, password: string): Buffer {
  const field = (text: string) => {
    const bytes = Buffer.from(text);
    return Buffer.concat([Buffer.from([bytes.length >> 8, bytes.length & 0xff]), bytes]);
  };
  // Protocol name, level 4, flags: username + password, clean session 0; keep-alive 30 s.
  const body = Buffer.concat([field('MQTT'), Buffer.from([4, 0xc0, 0, 30]), field(''), field(username), field(password)]);
  return Buffer.concat([Buffer.from([0x10, body.length]), body]);
}

/** The QoS a SUBACK grants for one filter (128: refused; mqtt.js reports that as an error). */
async function grantedQos(client: MqttClient, filter: string): Promise<number> {
  try {
    return (await client.subscribeAsync(filter, { qos: 0 }))[0]!.qos;
  } catch (error) {
    const granted = (error as { packet?: { granted?: number[] } }).packet?.granted;
    if (!granted) throw error;
    return granted[0]!;
  }
}

for (const dialect of DIALECTS) {
  describe(`MQTT devices (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let a: TestAccount;
    let b: TestAccount;
    let serviceA: string;
    let serviceB: string;
    const devices = new MqttDevices(() => service.ports.mqtt!);
    /** An endpoint of `serviceId` with the test password. */
    const device = async (token: string, serviceId: string, key: string, extra: Record<string, unknown> = {}) => {
      const endpoint = await createEndpoint(service, token, { key, serviceId, ...extra });
      await setPassword(service, token, endpoint.id as string, PASSWORD);
      return endpoint;
    };

    before(async () => {
      service = await startService(dialect.name, { mqttMaxPacketBytes: 4096 });
      a = await createAccount(service, 'mqtt-a');
      b = await createAccount(service, 'mqtt-b');
      serviceA = await createService(service, a.token, { name: 'mqtt-a', type: 'mqtt' });
      serviceB = await createService(service, b.token, { name: 'mqtt-b', type: 'mqtt' });
    });
    after(async () => {
      await devices.closeAll();
      await service?.stop();
    });

    it('logs a device in with its key and password; wrong or missing credentials get the right CONNACK code', async () => {
      await device(a.token, serviceA, 'login-1', { parameters: { client_id: 'modem-1' } });
      await createEndpoint(service, a.token, { key: 'no-password', serviceId: serviceA });
      assert.equal(await devices.refusal('login-1', 'wrong-password'), 4, 'bad user name or password');
      assert.equal(await devices.refusal('nobody', PASSWORD), 4, 'unknown key');
      assert.equal(await devices.refusal('no-password', 'anything-at-all'), 4, 'an endpoint without a password cannot log in');
      assert.equal(await devices.refusal(undefined, undefined), 4, 'anonymous');
      assert.equal(await devices.refusal('login-1', PASSWORD, { clientId: 'someone-else' }), 2, "the client id must be the endpoint's client_id");
      assert.equal(await devices.refusal('login-1', PASSWORD, { clientId: 'modem-1' }), 0);
      const raw = await RawConnection.open(service.ports.mqtt!);
      raw.write(connectWithoutClientId('login-1', PASSWORD));
      assert.ok(await raw.closedWithin(3000));
      assert.deepEqual([...Buffer.concat(raw.received)], [0x20, 0x02, 0x00, 0x02], 'an empty client id needs a clean session');
    });

    it('after 5 wrong passwords for a key from one address, its log-ins are refused (CONNACK 3) without a password check', async () => {
      await device(a.token, serviceA, 'guessed-1');
      await device(a.token, serviceA, 'bystander-1');
      for (let attempt = 1; attempt <= 5; attempt++) assert.equal(await devices.refusal('guessed-1', `guess-number-${attempt}`), 4, `attempt ${attempt}`);
      assert.equal(await devices.refusal('guessed-1', PASSWORD), 3, 'even the right password is not checked now');
      assert.equal(await devices.refusal('bystander-1', PASSWORD), 0, 'another key from the same address logs in');
    });

    it('answers a protocol level it does not serve with "unacceptable protocol version" and closes', async () => {
      await device(a.token, serviceA, 'v6-1');
      const raw = await RawConnection.open(service.ports.mqtt!);
      // An MQTT 3.1.1 CONNECT with the protocol level byte (after "MQTT") set to 6.
      const connect = generate({ cmd: 'connect', protocolVersion: 4, protocolId: 'MQTT', clientId: 'v6', clean: true, keepalive: 30, username: 'v6-1', password: Buffer.from(PASSWORD) });
      connect[8] = 6;
      raw.write(connect);
      assert.ok(await raw.closedWithin(3000));
      assert.deepEqual([...Buffer.concat(raw.received)], [0x20, 0x02, 0x00, 0x01]);
    });

    it('a publication becomes an mqtt-publish event, durable before PUBACK; connect and close are on-connect / on-disconnect', async () => {
      const sensor = await device(a.token, serviceA, 'sensor-1');
      const client = await devices.connect('sensor-1', PASSWORD, { clientId: 'sensor-client' });
      const connected = await eventsArrive(service, a.token, ['on-connect'], 1, sensor.id);
      assert.equal(connected[0]!.data.protocol, 'mqtt');
      assert.equal(connected[0]!.data.clientId, 'sensor-client');
      const stored = (await service.request('GET', `/endpoints/${sensor.id}`, { token: a.token })).body;
      assert.equal(stored.state, 'connected');
      assert.match(stored.statusDetails.remoteAddr, /^127\.0\.0\.1:\d+$/);

      await client.publishAsync('sensor-1/telemetry', '{"t":21.5}', { qos: 1 });
      // PUBACK came back, so the event is already stored: no waiting.
      const [published] = await history(service, a.token, ['mqtt-publish'], sensor.id);
      assert.equal(published!.data.topic, 'sensor-1/telemetry');
      assert.equal(published!.data.text, '{"t":21.5}');
      assert.equal(published!.data.payload, Buffer.from('{"t":21.5}').toString('hex'));
      assert.equal(published!.data.qos, 1);
      assert.equal(published!.data.retain, false);
      await client.publishAsync('sensor-1', Buffer.from([0, 1, 2]), { qos: 2 });
      const both = await history(service, a.token, ['mqtt-publish'], sensor.id);
      assert.deepEqual(both.map((e) => [e.data.topic, e.data.qos, e.data.text]), [['sensor-1/telemetry', 1, '{"t":21.5}'], ['sensor-1', 2, undefined]]);

      await client.subscribeAsync('sensor-1/cmd/#', { qos: 1 });
      await client.unsubscribeAsync('sensor-1/cmd/#');
      const subscriptions = await eventsArrive(service, a.token, ['mqtt-subscribe', 'mqtt-unsubscribe'], 2, sensor.id);
      assert.deepEqual(subscriptions.map((e) => [e.type, e.data.topics]), [['mqtt-subscribe', [{ topic: 'sensor-1/cmd/#', qos: 1 }]], ['mqtt-unsubscribe', [{ topic: 'sensor-1/cmd/#' }]]]);

      await client.endAsync();
      const gone = await eventsArrive(service, a.token, ['on-disconnect'], 1, sensor.id);
      assert.equal(gone[0]!.data.protocol, 'mqtt');
      assert.equal((await service.request('GET', `/endpoints/${sensor.id}`, { token: a.token })).body.state, 'unavailable');
    });

    it('a device publishes and subscribes only inside its own topic space', async () => {
      await device(a.token, serviceA, 'space-1');
      await device(a.token, serviceA, 'space-2');
      const other = await devices.connect('space-2', PASSWORD);
      await other.subscribeAsync('space-2/#', { qos: 0 });
      const client = await devices.connect('space-1', PASSWORD);
      for (const filter of ['#', '+/cmd', 'space-2/#', '$SYS/#', '+/#', '+']) {
        assert.equal(await grantedQos(client, filter), 128, `${filter} is refused (SUBACK 0x80)`);
      }
      const granted = await client.subscribeAsync(['space-1/#', 'space-1', 'space-1/+/status'], { qos: 1 });
      assert.deepEqual(granted.map((g) => g.qos), [1, 1, 1]);

      // Publishing outside the space closes the connection (MQTT 3.1.1 has no negative PUBACK) and delivers nothing.
      const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
      client.publish('space-2/cmd', 'hijack', { qos: 0 });
      await closed;
      const sys = await devices.connect('space-1', PASSWORD);
      const sysClosed = new Promise<void>((resolve) => sys.once('close', () => resolve()));
      sys.publish('$SYS/broker/uptime', 'spoof', { qos: 0 });
      await sysClosed;
      await sleep(200);
      assert.deepEqual(other.received, []);
    });

    it('keys and client ids with wildcards or separators never widen access', async () => {
      await device(a.token, serviceA, 'a/b');
      await device(a.token, serviceA, 'plus+');
      assert.equal(await devices.refusal('a/b', PASSWORD), 5, 'a key with / cannot be a topic level');
      assert.equal(await devices.refusal('plus+', PASSWORD), 5);
      await device(a.token, serviceA, 'wild-1');
      const client = await devices.connect('wild-1', PASSWORD, { clientId: '#' });
      assert.equal(await grantedQos(client, '#'), 128, 'a client id of # grants nothing');
    });

    it("another account cannot take a device's key, log in as it, or reach it from a script", async () => {
      await device(a.token, serviceA, 'twin');
      const taken = await service.request('POST', '/endpoints', { token: b.token, body: { key: 'twin', serviceId: serviceB } });
      assert.equal(taken.status, 409, 'the key belongs to the account that created it first');
      assert.equal(taken.body.error.code, 'IOTB_ENDPOINT_KEY_IN_USE');
      await setPassword(service, b.token, (await createEndpoint(service, b.token, { key: 'twin-b', serviceId: serviceB })).id, 'other-account-secret');
      assert.equal(await devices.refusal('twin', 'other-account-secret'), 4, "B's secret does not open A's device");
      const twinA = await devices.connect('twin', PASSWORD);
      const twinB = await devices.connect('twin-b', 'other-account-secret');
      await twinA.subscribeAsync('twin/#', { qos: 1 });
      assert.equal(await grantedQos(twinB, 'twin/#'), 128, "B's device cannot subscribe to A's topics");
      await twinA.publishAsync('twin/data', 'from-a', { qos: 1 });
      await waitFor(async () => (twinA.received.length >= 1 ? true : undefined), 'own echo');
      await sleep(200);
      assert.deepEqual(twinA.received.map((m) => m.payload), ['from-a']);
      // B's script cannot publish to A's device.
      const endpointOfA = (await service.request('GET', '/endpoints/k.twin', { token: a.token })).body;
      for (const call of [`mqtt.publish(${JSON.stringify(endpointOfA.id)}, 'twin/cmd', 'x');`, `mqtt.subscribe(${JSON.stringify(endpointOfA.id)}, 'twin/#');`]) {
        const crossed = await runScript(service, b.token, call);
        assert.equal(crossed.status, 'failed', call);
        assert.match(crossed.error ?? '', /no such endpoint|not found/i);
      }
    });

    it('mqtt.publish reaches a connected device; retained messages reach later subscribers', async () => {
      const target = await device(a.token, serviceA, 'actuator-1');
      const client = await devices.connect('actuator-1', PASSWORD);
      await client.subscribeAsync('actuator-1/cmd', { qos: 1 });
      const result = await runScript(service, a.token, `
        var sent = mqtt.publish(null, 'actuator-1/cmd', {on: true}, {qos: 1});
        console.log(JSON.stringify(sent));
        mqtt.publish(null, 'actuator-1/config', 'interval=60', {retain: true});
        try { mqtt.publish(null, 'actuator-2/cmd', 'x'); } catch (e) { console.log('refused: ' + e.message); }
      `, { endpoint: target.id });
      assert.equal(result.status, 'success', result.error ?? '');
      assert.deepEqual(JSON.parse(result.logs[0]!), { topic: 'actuator-1/cmd', qos: 1, retain: false, bytes: 11, connected: true });
      assert.match(result.logs[1]!, /refused: .*topic space actuator-1\/#/);
      await waitFor(async () => (client.received.length > 0 ? true : undefined), 'the command');
      assert.deepEqual(client.received[0], { topic: 'actuator-1/cmd', payload: '{"on":true}', retain: false, qos: 1 });
      const later = await devices.connect('actuator-1', PASSWORD, { clientId: 'second' });
      await later.subscribeAsync('actuator-1/config', { qos: 0 });
      await waitFor(async () => (later.received.length > 0 ? true : undefined), 'the retained message');
      assert.deepEqual(later.received[0], { topic: 'actuator-1/config', payload: 'interval=60', retain: true, qos: 0 });
    });

    it('a second connection of the same device takes the session over; the device stays connected', async () => {
      const endpoint = await device(a.token, serviceA, 'takeover-1');
      const first = await devices.connect('takeover-1', PASSWORD);
      const firstClosed = new Promise<void>((resolve) => first.once('close', () => resolve()));
      await devices.connect('takeover-1', PASSWORD, { clientId: 'another-id' });
      await firstClosed;
      await eventsArrive(service, a.token, ['on-connect'], 2, endpoint.id);
      await sleep(200);
      assert.equal((await service.request('GET', `/endpoints/${endpoint.id}`, { token: a.token })).body.state, 'connected');
    });

    it('works with mosquitto_pub and mosquitto_sub', async () => {
      const endpoint = await device(a.token, serviceA, 'mosquitto-1');
      const port = String(service.ports.mqtt);
      const subscriber = run('mosquitto_sub', ['-h', '127.0.0.1', '-p', port, '-u', 'mosquitto-1', '-P', PASSWORD, '-i', 'sub-1', '-t', 'mosquitto-1/cmd', '-C', '1', '-W', '10', '-q', '1']);
      await eventsArrive(service, a.token, ['mqtt-subscribe'], 1, endpoint.id);
      await runScript(service, a.token, "mqtt.publish(null, 'mosquitto-1/cmd', 'reboot', {qos: 1});", { endpoint: endpoint.id });
      assert.equal((await subscriber).stdout.trim(), 'reboot');
      await run('mosquitto_pub', ['-h', '127.0.0.1', '-p', port, '-u', 'mosquitto-1', '-P', PASSWORD, '-i', 'pub-1', '-t', 'mosquitto-1/up', '-m', 'hello', '-q', '1']);
      const [event] = await eventsArrive(service, a.token, ['mqtt-publish'], 1, endpoint.id);
      assert.equal(event!.data.text, 'hello');
      const refused = await run('mosquitto_pub', ['-h', '127.0.0.1', '-p', port, '-u', 'mosquitto-1', '-P', 'wrong-password', '-t', 'mosquitto-1/up', '-m', 'x']).catch((error: { stderr: string }) => error);
      assert.match((refused).stderr, /not authori[sz]ed|bad user ?name or password/i);
    });

    it('survives malformed and hostile packets: each closes only its own connection', async () => {
      await device(a.token, serviceA, 'steady-1');
      await device(a.token, serviceA, 'hostile-1');
      const steady = await devices.connect('steady-1', PASSWORD);
      await steady.subscribeAsync('steady-1/#', { qos: 0 });
      const connect = generate({ cmd: 'connect', protocolVersion: 4, protocolId: 'MQTT', clientId: 'x', clean: true, keepalive: 30, username: 'hostile-1', password: Buffer.from(PASSWORD) });
      const cases: [string, Buffer[]][] = [
        ['a first packet other than CONNECT', [generate({ cmd: 'pingreq' })]],
        ['garbage', [Buffer.from('GET / HTTP/1.1\r\n\r\n')]],
        ['a CONNECT over the size limit, closed before its body is sent', [Buffer.from([0x10, 0xff, 0xff, 0x7f])]],
        ['a PUBLISH over the size limit, closed before its body is sent', [connect, Buffer.from([0x30, 0xff, 0xff, 0x7f])]],
        ['a malformed remaining length', [Buffer.from([0x10, 0xff, 0xff, 0xff, 0xff, 0x01])]],
        ['a zero-length topic', [connect, Buffer.from([0x30, 0x04, 0x00, 0x00, 0x68, 0x69])]],
        ['a CONNACK sent by the client', [connect, generate({ cmd: 'connack', returnCode: 0, sessionPresent: false })]],
        ['a malformed DISCONNECT', [connect, Buffer.from([0xe0, 0x01, 0x00])]],
        ['a DISCONNECT with reserved flags', [connect, Buffer.from([0xe1, 0x00])]],
        ['a second CONNECT', [connect, connect]],
      ];
      for (const [what, packets] of cases) {
        const raw = await RawConnection.open(service.ports.mqtt!);
        for (const packet of packets) raw.write(packet);
        assert.ok(await raw.closedWithin(3000), `${what} closes the connection`);
      }
      await steady.publishAsync('steady-1/still', 'alive', { qos: 1 });
      await waitFor(async () => (steady.received.some((m) => m.payload === 'alive') ? true : undefined), 'the steady client still served');
    });

    it('persistent sessions, their queued messages and retained messages survive a restart', async () => {
      const endpoint = await device(a.token, serviceA, 'sleepy-1');
      const first = await devices.connect('sleepy-1', PASSWORD, { clientId: 'sleepy', clean: false });
      await first.subscribeAsync('sleepy-1/cmd', { qos: 1 });
      await first.endAsync();
      await eventsArrive(service, a.token, ['on-disconnect'], 1, endpoint.id);
      // While it sleeps: a queued command, a subscription added by a script, and a retained message.
      const queued = await runScript(service, a.token, `
        mqtt.publish(null, 'sleepy-1/cmd', 'while-asleep', {qos: 1});
        mqtt.subscribe(null, 'sleepy-1/ota/#', {qos: 1});
        mqtt.publish(null, 'sleepy-1/ota/url', 'http://fw', {qos: 1});
        mqtt.publish(null, 'sleepy-1/cfg', 'v2', {qos: 1, retain: true});
      `, { endpoint: endpoint.id });
      assert.equal(queued.status, 'success', queued.error ?? '');

      service = await service.restart();
      const back = await devices.connect('sleepy-1', PASSWORD, { clientId: 'sleepy', clean: false });
      assert.equal(back.connected, true);
      await waitFor(async () => (back.received.length >= 2 ? true : undefined), 'the queued messages after the restart');
      assert.deepEqual(back.received.map((m) => [m.topic, m.payload]).sort(), [['sleepy-1/cmd', 'while-asleep'], ['sleepy-1/ota/url', 'http://fw']]);
      await back.subscribeAsync('sleepy-1/cfg', { qos: 1 });
      await waitFor(async () => (back.received.some((m) => m.topic === 'sleepy-1/cfg' && m.retain) ? true : undefined), 'the retained message after the restart');
      await back.endAsync();
      // A clean session gives the stored session up.
      const clean = await devices.connect('sleepy-1', PASSWORD, { clientId: 'sleepy', clean: true });
      await clean.endAsync();
      await runScript(service, a.token, "mqtt.publish(null, 'sleepy-1/cmd', 'dropped', {qos: 1});", { endpoint: endpoint.id });
      const again = await devices.connect('sleepy-1', PASSWORD, { clientId: 'sleepy', clean: false });
      await sleep(300);
      assert.deepEqual(again.received, []);
    });
  });
}
