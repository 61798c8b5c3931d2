import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { generate, parser, type IConnackPacket, type IConnectPacket, type Packet } from 'mqtt-packet';
import { eventsArrive, history, waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { RawConnection, run, setPassword } from '../helpers/mqtt.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

const PASSWORD = 'device-secret-5';
const MAX_PACKET_BYTES = 4096;

type Received = { topic: string; payload: string; retain: boolean; qos: number }[];

/** The MQTT 5 packets a raw connection received. */
function packetsOf(raw: RawConnection): Packet[] {
  const packets: Packet[] = [];
  const reader = parser({ protocolVersion: 5 });
  reader.on('packet', (packet) => packets.push(packet));
  reader.parse(Buffer.concat(raw.received));
  return packets;
}

/** `packet`, asserted to be a `cmd` packet. */
function expectPacket<K extends Packet['cmd']>(packet: Packet | undefined, cmd: K, what = cmd as string): Extract<Packet, { cmd: K }> {
  assert.equal(packet?.cmd, cmd, what);
  return packet as Extract<Packet, { cmd: K }>;
}

function connect5(username: string, password: string, extra: Partial<IConnectPacket> = {}): Buffer {
  return generate({ cmd: 'connect', protocolVersion: 5, protocolId: 'MQTT', clientId: 'raw-5', clean: true, keepalive: 30, username, password: Buffer.from(password), ...extra }, { protocolVersion: 5 });
}

/** The packets that came back on a raw MQTT 5 connection once `count` of them have. */
async function exchange(raw: RawConnection, count: number): Promise<Packet[]> {
  return waitFor(async () => {
    const packets = packetsOf(raw);
    return packets.length >= count ? packets : undefined;
  }, `${count} packets`);
}

/** The reason code an awaited MQTT 5 operation failed with (mqtt.js rejects with `code`, or a SUBACK's `packet`), 0 when it succeeded. */
async function failure(operation: Promise<unknown>): Promise<number> {
  try {
    await operation;
  } catch (error) {
    const { code, packet } = error as { code?: number; packet?: { granted?: number[] } };
    return code ?? packet?.granted?.[0] ?? -1;
  }
  return 0;
}

for (const dialect of DIALECTS) {
  describe(`MQTT 5 devices (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let a: TestAccount;
    let b: TestAccount;
    let serviceA: string;
    let serviceB: string;
    const clients: MqttClient[] = [];
    const device = async (token: string, serviceId: string, key: string, extra: Record<string, unknown> = {}) => {
      const endpoint = await createEndpoint(service, token, { key, serviceId, ...extra });
      await setPassword(service, token, endpoint.id as string, PASSWORD);
      return endpoint;
    };
    /** An mqtt.js client speaking MQTT 5, logged in as `key`. */
    const connect = async (key: string, options: IClientOptions = {}): Promise<MqttClient & { received: Received; connack: IConnackPacket }> => {
      const client = mqtt.connect(`mqtt://127.0.0.1:${service.ports.mqtt}`, { username: key, password: PASSWORD, reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: 5, ...options });
      clients.push(client);
      // Listening before CONNACK: queued messages follow it at once.
      const received: Received = [];
      client.on('message', (topic, payload, packet) => received.push({ topic, payload: payload.toString(), retain: packet.retain, qos: packet.qos }));
      const connack = await new Promise<IConnackPacket>((resolve, reject) => client.once('connect', resolve).once('error', reject));
      return Object.assign(client, { received, connack });
    };
    const closed = (client: MqttClient) => new Promise<void>((resolve) => (client.disconnected ? resolve() : client.once('close', () => resolve())));

    before(async () => {
      service = await startService(dialect.name, { mqttMaxPacketBytes: MAX_PACKET_BYTES });
      a = await createAccount(service, 'mqtt5-a');
      b = await createAccount(service, 'mqtt5-b');
      serviceA = await createService(service, a.token, { name: 'mqtt5-a', type: 'mqtt' });
      serviceB = await createService(service, b.token, { name: 'mqtt5-b', type: 'mqtt' });
    });
    after(async () => {
      await Promise.all(clients.map((client) => client.endAsync(true).catch(() => undefined)));
      await service?.stop();
    });

    it('logs an MQTT 5 device in: CONNACK 0x00 with what the service supports; refusals carry MQTT 5 reason codes and a reason string', async () => {
      await device(a.token, serviceA, 'login5-1', { parameters: { client_id: 'modem-5' } });
      const raw = await RawConnection.open(service.ports.mqtt!);
      raw.write(connect5('login5-1', PASSWORD, { clientId: 'modem-5' }));
      const connack = expectPacket((await exchange(raw, 1))[0], 'connack');
      assert.equal(connack.reasonCode, 0);
      assert.deepEqual(connack.properties, {
        receiveMaximum: 1000,
        maximumPacketSize: MAX_PACKET_BYTES,
        topicAliasMaximum: 64,
        retainAvailable: true,
        wildcardSubscriptionAvailable: true,
        subscriptionIdentifiersAvailable: false,
        sharedSubscriptionAvailable: false,
      });
      raw.socket.destroy();

      const refusals: [string, Buffer, number, RegExp | undefined][] = [
        ['wrong password', connect5('login5-1', 'wrong-password', { clientId: 'modem-5' }), 0x86, /wrong password/],
        ['unknown key', connect5('nobody-5', PASSWORD), 0x86, /unknown endpoint key/],
        ["a client id other than the endpoint's client_id", connect5('login5-1', PASSWORD, { clientId: 'someone-else' }), 0x85, /client_id/],
        ['an authentication method (enhanced authentication)', connect5('login5-1', PASSWORD, { clientId: 'modem-5', properties: { authenticationMethod: 'SCRAM-SHA-1' } }), 0x8c, /SCRAM-SHA-1/],
        ['no reason string when the device asks for none', connect5('nobody-5', PASSWORD, { properties: { requestProblemInformation: false } }), 0x86, undefined],
      ];
      for (const [what, bytes, code, reason] of refusals) {
        const refused = await RawConnection.open(service.ports.mqtt!);
        refused.write(bytes);
        assert.ok(await refused.closedWithin(3000), `${what}: closed`);
        const answer = expectPacket(packetsOf(refused)[0], 'connack', what);
        assert.equal(answer.reasonCode, code, what);
        if (reason) assert.match(answer.properties?.reasonString ?? '', reason, what);
        else assert.equal(answer.properties?.reasonString, undefined, what);
      }
    });

    it('after 5 wrong passwords for a key from one address, its log-ins get CONNACK 0x9F (connection rate exceeded)', async () => {
      await device(a.token, serviceA, 'guessed5-1');
      const attempt = async (password: string) => {
        const raw = await RawConnection.open(service.ports.mqtt!);
        raw.write(connect5('guessed5-1', password));
        await raw.closedWithin(3000);
        return expectPacket(packetsOf(raw)[0], 'connack');
      };
      for (let i = 1; i <= 5; i++) assert.equal((await attempt(`guess-number-${i}`)).reasonCode, 0x86);
      const refused = await attempt(PASSWORD);
      assert.equal(refused.reasonCode, 0x9f);
      assert.match(refused.properties?.reasonString ?? '', /too many failed log-ins/);
    });

    it('assigns the endpoint key as client id when the CONNECT has none', async () => {
      await device(a.token, serviceA, 'anon5-1');
      const raw = await RawConnection.open(service.ports.mqtt!);
      raw.write(connect5('anon5-1', PASSWORD, { clientId: '', properties: { sessionExpiryInterval: 60 } }));
      const connack = expectPacket((await exchange(raw, 1))[0], 'connack');
      assert.equal(connack.reasonCode, 0);
      assert.equal(connack.properties?.assignedClientIdentifier, 'anon5-1');
      raw.socket.destroy();
    });

    it('a publication with properties becomes an mqtt-publish event carrying them; on-connect says protocol version 5', async () => {
      const sensor = await device(a.token, serviceA, 'sensor5-1');
      const client = await connect('sensor5-1', { clientId: 'sensor5-client', properties: { sessionExpiryInterval: 0 } });
      const [connected] = await eventsArrive(service, a.token, ['on-connect'], 1, sensor.id);
      assert.equal(connected!.data.protocol, 'mqtt');
      assert.equal(connected!.data.protocolVersion, 5);
      assert.equal(connected!.data.cleanStart, true);
      assert.equal(connected!.data.sessionExpiryInterval, 0);

      await client.publishAsync('sensor5-1/telemetry', '{"t":21.5}', {
        qos: 1,
        properties: { contentType: 'application/json', payloadFormatIndicator: true, responseTopic: 'sensor5-1/reply', correlationData: Buffer.from([1, 2, 3]), userProperties: { site: 'north', unit: 'C' } },
      });
      // PUBACK came back, so the event is already stored.
      const [published] = await history(service, a.token, ['mqtt-publish'], sensor.id);
      assert.equal(published!.data.topic, 'sensor5-1/telemetry');
      assert.equal(published!.data.text, '{"t":21.5}');
      assert.equal(published!.data.qos, 1);
      assert.deepEqual(published!.data.properties, {
        contentType: 'application/json',
        payloadFormatIndicator: true,
        responseTopic: 'sensor5-1/reply',
        correlationData: Buffer.from([1, 2, 3]).toString('base64'),
        userProperties: { site: 'north', unit: 'C' },
      });
      await client.publishAsync('sensor5-1/plain', 'x', { qos: 2 });
      await client.publishAsync('sensor5-1/plain', 'y', { qos: 0 });
      const plain = await eventsArrive(service, a.token, ['mqtt-publish'], 3, sensor.id);
      for (const event of plain.filter((e) => e.data.topic === 'sensor5-1/plain')) assert.equal(event.data.properties, undefined, 'no properties, no field');
    });

    it('resolves topic aliases the device sets; an alias out of range ends the connection with DISCONNECT 0x94', async () => {
      const sensor = await device(a.token, serviceA, 'alias5-1');
      const client = await connect('alias5-1');
      await client.publishAsync('alias5-1/long/topic/name', 'first', { qos: 1, properties: { topicAlias: 3 } });
      await client.publishAsync('', 'second', { qos: 1, properties: { topicAlias: 3 } });
      const events = await eventsArrive(service, a.token, ['mqtt-publish'], 2, sensor.id);
      assert.deepEqual(events.map((e) => [e.data.topic, e.data.text]).sort(), [['alias5-1/long/topic/name', 'first'], ['alias5-1/long/topic/name', 'second']]);

      const raw = await RawConnection.open(service.ports.mqtt!);
      raw.write(connect5('alias5-1', PASSWORD));
      await exchange(raw, 1);
      raw.write(generate({ cmd: 'publish', topic: 'alias5-1/x', payload: Buffer.from('z'), qos: 0, retain: false, dup: false, properties: { topicAlias: 65 } }, { protocolVersion: 5 }));
      assert.ok(await raw.closedWithin(3000));
      assert.equal(expectPacket(packetsOf(raw).at(-1), 'disconnect').reasonCode, 0x94);
    });

    it('a publication outside the topic space gets PUBACK/PUBREC 0x87 and the connection stays; no event is stored', async () => {
      const sensor = await device(a.token, serviceA, 'space5-1');
      const client = await connect('space5-1');
      assert.equal(await failure(client.publishAsync('space5-2/steal', 'x', { qos: 1 })), 0x87);
      assert.equal(await failure(client.publishAsync('$SYS/broker/x', 'x', { qos: 2 })), 0x87);
      await client.publishAsync('elsewhere/qos0', 'dropped', { qos: 0 });
      await client.publishAsync('space5-1/ok', 'kept', { qos: 1 });
      assert.equal(client.connected, true);
      const events = await history(service, a.token, ['mqtt-publish'], sensor.id);
      assert.deepEqual(events.map((e) => e.data.topic), ['space5-1/ok']);
    });

    it('SUBACK and UNSUBACK carry reason codes; mqtt.publish reaches the device', async () => {
      const target = await device(a.token, serviceA, 'sub5-1');
      const client = await connect('sub5-1');
      const granted = await client.subscribeAsync({ 'sub5-1/cmd': { qos: 1 }, 'sub5-1/cfg': { qos: 2 } });
      assert.deepEqual(granted.map((g) => g.qos).sort(), [1, 2]);
      assert.equal(await failure(client.subscribeAsync('sub5-2/#', { qos: 1 })), 0x87, 'outside the topic space: not authorized');
      assert.equal(await failure(client.subscribeAsync('$share/group/sub5-1/cmd', { qos: 1 })), 0x9e, 'shared subscriptions are not supported');
      const result = await runScript(service, a.token, "mqtt.publish(null, 'sub5-1/cmd', {on: true}, {qos: 1});", { endpoint: target.id });
      assert.equal(result.status, 'success', result.error ?? '');
      await waitFor(async () => (client.received.length > 0 ? true : undefined), 'the command');
      assert.deepEqual(client.received[0], { topic: 'sub5-1/cmd', payload: '{"on":true}', retain: false, qos: 1 });

      const raw = await RawConnection.open(service.ports.mqtt!);
      raw.write(connect5('sub5-1', PASSWORD, { clientId: 'raw-unsub' }));
      await exchange(raw, 1);
      raw.write(generate({ cmd: 'unsubscribe', messageId: 7, unsubscriptions: ['sub5-1/a', 'sub5-1/b'] }, { protocolVersion: 5 }));
      const unsuback = expectPacket((await exchange(raw, 2))[1], 'unsuback');
      assert.equal(unsuback.messageId, 7);
      assert.deepEqual(unsuback.granted, [0, 0]);
      raw.socket.destroy();
    });

    it('does not send a device messages over the Maximum Packet Size it asked for, and goes on with the next', async () => {
      const target = await device(a.token, serviceA, 'small5-1');
      const client = await connect('small5-1', { properties: { maximumPacketSize: 200 } });
      await client.subscribeAsync('small5-1/#', { qos: 1 });
      const result = await runScript(service, a.token, `
        mqtt.publish(null, 'small5-1/big', '${'x'.repeat(500)}', {qos: 1});
        mqtt.publish(null, 'small5-1/small', 'fits', {qos: 1});
      `, { endpoint: target.id });
      assert.equal(result.status, 'success', result.error ?? '');
      await waitFor(async () => (client.received.length > 0 ? true : undefined), 'the small message');
      await sleep(200);
      assert.deepEqual(client.received.map((m) => m.topic), ['small5-1/small']);
    });

    it('sessions follow Clean Start and Session Expiry Interval', async () => {
      const endpoint = await device(a.token, serviceA, 'session5-1');
      const queue = (text: string) => runScript(service, a.token, `mqtt.publish(null, 'session5-1/cmd', '${text}', {qos: 1});`, { endpoint: endpoint.id });
      /** Connects, collects what arrives in 300 ms, disconnects; says whether a session was present and what came. */
      const visit = async (clean: boolean, sessionExpiryInterval: number, subscribe = false) => {
        const client = await connect('session5-1', { clientId: 'session5', clean, properties: { sessionExpiryInterval } });
        if (subscribe) await client.subscribeAsync('session5-1/cmd', { qos: 1 });
        await sleep(300);
        const received = client.received.map((m) => m.payload);
        await client.endAsync();
        await waitFor(async () => ((await service.request('GET', `/endpoints/${endpoint.id}`, { token: a.token })).body.state === 'unavailable' ? true : undefined), 'disconnected');
        return { present: client.connack.sessionPresent, received };
      };

      // Expiry 300 s: the session outlives the connection and gets its queued message on return.
      assert.deepEqual(await visit(true, 300, true), { present: false, received: [] });
      await queue('kept');
      assert.deepEqual(await visit(false, 300), { present: true, received: ['kept'] });
      // Expiry 0 (the MQTT 5 default): the session ends with the connection.
      assert.deepEqual(await visit(false, 0), { present: true, received: [] });
      await queue('gone-with-connection');
      assert.deepEqual(await visit(false, 300), { present: false, received: [] });
      // Clean Start with an expiry: the old session is dropped, the new one kept.
      await visit(true, 300, true);
      await queue('before-clean-start');
      assert.deepEqual(await visit(true, 300), { present: false, received: [] }, 'Clean Start drops what was queued and the subscriptions');
      await queue('after-clean-start');
      assert.deepEqual(await visit(false, 300), { present: false, received: [] }, 'nothing was subscribed since');
      // An expiry that runs out while the device is away: nothing is left when it comes back.
      await visit(true, 1, true);
      await queue('expired');
      await sleep(1500);
      assert.deepEqual(await visit(false, 300), { present: false, received: [] });
    });

    it('an MQTT 5 session with an expiry and its queued messages survive a restart; a run-out expiry still counts after one', async () => {
      const endpoint = await device(a.token, serviceA, 'restart5-1');
      const first = await connect('restart5-1', { clientId: 'restart5', clean: true, properties: { sessionExpiryInterval: 3600 } });
      await first.subscribeAsync('restart5-1/cmd', { qos: 1 });
      await first.endAsync();
      await eventsArrive(service, a.token, ['on-disconnect'], 1, endpoint.id);
      const queued = await runScript(service, a.token, "mqtt.publish(null, 'restart5-1/cmd', 'while-away', {qos: 1});", { endpoint: endpoint.id });
      assert.equal(queued.status, 'success', queued.error ?? '');
      await device(a.token, serviceA, 'bystander5-1');
      const bystander = await connect('bystander5-1');
      const told = new Promise<number | undefined>((resolve) => bystander.once('disconnect', (packet) => resolve(packet.reasonCode)));
      service = await service.restart();
      assert.equal(await told, 0x8b, 'a connected MQTT 5 device hears "server shutting down"');
      const back = await connect('restart5-1', { clientId: 'restart5', clean: false, properties: { sessionExpiryInterval: 1 } });
      await waitFor(async () => (back.received.length > 0 ? true : undefined), 'the queued message after the restart');
      assert.deepEqual(back.received.map((m) => m.payload), ['while-away']);
      await back.endAsync();
      await eventsArrive(service, a.token, ['on-disconnect'], 2, endpoint.id);
      await runScript(service, a.token, "mqtt.publish(null, 'restart5-1/cmd', 'after-expiry', {qos: 1});", { endpoint: endpoint.id });
      service = await service.restart();
      await sleep(1200);
      const late = await connect('restart5-1', { clientId: 'restart5', clean: false, properties: { sessionExpiryInterval: 60 } });
      await sleep(300);
      assert.deepEqual(late.received, [], 'the session had expired');
    });

    it('a second connection takes the session over: the first hears DISCONNECT 0x8E', async () => {
      await device(a.token, serviceA, 'takeover5-1');
      const first = await connect('takeover5-1');
      const reason = new Promise<number | undefined>((resolve) => first.once('disconnect', (packet) => resolve(packet.reasonCode)));
      await connect('takeover5-1', { clientId: 'another' });
      assert.equal(await reason, 0x8e);
      await closed(first);
    });

    it('"disconnect with will message" publishes the will; a normal DISCONNECT does not', async () => {
      const endpoint = await device(a.token, serviceA, 'will5-1');
      const will = { topic: 'will5-1/status', payload: Buffer.from('offline'), qos: 1 as const, retain: true };
      const graceful = await connect('will5-1', { clientId: 'w1', will: { ...will, payload: Buffer.from('graceful') } });
      await graceful.endAsync(false, { reasonCode: 0 });
      await eventsArrive(service, a.token, ['on-disconnect'], 1, endpoint.id);
      const leaving = await connect('will5-1', { clientId: 'w2', will });
      await leaving.endAsync(false, { reasonCode: 0x04 });
      // The broker publishes the will as it closes the connection, before on-disconnect: it is retained by then.
      await eventsArrive(service, a.token, ['on-disconnect'], 2, endpoint.id);
      const reader = await connect('will5-1', { clientId: 'w3' });
      await reader.subscribeAsync('will5-1/status', { qos: 1 });
      await waitFor(async () => (reader.received.length > 0 ? true : undefined), 'the will');
      await sleep(200);
      // Retained or (if the reader was quicker than the broker) live: either way only the will of the connection that asked for it.
      assert.deepEqual(reader.received.map((m) => [m.topic, m.payload]), [['will5-1/status', 'offline']]);
    });

    it('a packet over the size limit after CONNACK gets DISCONNECT 0x95; a malformed one 0x81; other devices stay served', async () => {
      await device(a.token, serviceA, 'steady5-1');
      await device(a.token, serviceA, 'hostile5-1');
      const steady = await connect('steady5-1');
      await steady.subscribeAsync('steady5-1/#', { qos: 0 });
      const cases: [string, Buffer, number][] = [
        ['a PUBLISH over the size limit', Buffer.from([0x30, 0xff, 0xff, 0x7f]), 0x95],
        // A PUBLISH whose property length runs past the packet.
        ['a malformed PUBLISH', Buffer.from([0x30, 0x06, 0x00, 0x01, 0x61, 0x7f, 0x01, 0x02]), 0x81],
        ['a CONNACK sent by the client', generate({ cmd: 'connack', reasonCode: 0, sessionPresent: false }, { protocolVersion: 5 }), 0x82],
        ['an AUTH packet', generate({ cmd: 'auth', reasonCode: 0x18 }, { protocolVersion: 5 }), 0x82],
        ['a DISCONNECT giving an expiry after CONNECT had none', generate({ cmd: 'disconnect', reasonCode: 0, properties: { sessionExpiryInterval: 10 } }, { protocolVersion: 5 }), 0x82],
        ['a subscription identifier', generate({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'hostile5-1/x', qos: 0 }], properties: { subscriptionIdentifier: 5 } }, { protocolVersion: 5 }), 0xa1],
      ];
      for (const [what, bytes, code] of cases) {
        const raw = await RawConnection.open(service.ports.mqtt!);
        raw.write(connect5('hostile5-1', PASSWORD, { clientId: `hostile-${code}` }));
        await exchange(raw, 1);
        raw.write(bytes);
        assert.ok(await raw.closedWithin(3000), `${what} closes the connection`);
        assert.equal(expectPacket(packetsOf(raw).at(-1), 'disconnect', what).reasonCode, code, what);
      }
      await steady.publishAsync('steady5-1/still', 'alive', { qos: 1 });
      await waitFor(async () => (steady.received.some((m) => m.payload === 'alive') ? true : undefined), 'the steady client still served');
    });

    it("another account can neither take a device's key nor log in as it over MQTT 5", async () => {
      await device(a.token, serviceA, 'twin5');
      const taken = await service.request('POST', '/endpoints', { token: b.token, body: { key: 'twin5', serviceId: serviceB } });
      assert.equal(taken.status, 409);
      assert.equal(taken.body.error.code, 'IOTB_ENDPOINT_KEY_IN_USE');
      await setPassword(service, b.token, (await createEndpoint(service, b.token, { key: 'twin5-b', serviceId: serviceB })).id, 'other-account-secret');
      await assert.rejects(connect('twin5', { clientId: 'twin-b', password: 'other-account-secret' }), (error: { code?: number }) => error.code === 0x86, "B's secret does not open A's device (0x86)");
      const twinA = await connect('twin5', { clientId: 'twin-a' });
      await twinA.subscribeAsync('twin5/#', { qos: 1 });
      await twinA.publishAsync('twin5/data', 'from-a', { qos: 1 });
      await waitFor(async () => (twinA.received.length >= 1 ? true : undefined), 'own echo');
      assert.deepEqual(twinA.received.map((m) => m.payload), ['from-a']);
    });

    it('works with mosquitto_pub and mosquitto_sub speaking MQTT 5 (user properties reach the event)', async () => {
      const endpoint = await device(a.token, serviceA, 'mosquitto5-1');
      const port = String(service.ports.mqtt);
      const subscriber = run('mosquitto_sub', ['-V', 'mqttv5', '-h', '127.0.0.1', '-p', port, '-u', 'mosquitto5-1', '-P', PASSWORD, '-i', 'sub5', '-t', 'mosquitto5-1/cmd', '-C', '1', '-W', '10', '-q', '1']);
      await eventsArrive(service, a.token, ['mqtt-subscribe'], 1, endpoint.id);
      await runScript(service, a.token, "mqtt.publish(null, 'mosquitto5-1/cmd', 'reboot', {qos: 1});", { endpoint: endpoint.id });
      assert.equal((await subscriber).stdout.trim(), 'reboot');
      await run('mosquitto_pub', ['-V', 'mqttv5', '-h', '127.0.0.1', '-p', port, '-u', 'mosquitto5-1', '-P', PASSWORD, '-i', 'pub5', '-t', 'mosquitto5-1/up', '-m', 'hello', '-q', '2', '-D', 'publish', 'user-property', 'fw', '1.2.3']);
      const [event] = await eventsArrive(service, a.token, ['mqtt-publish'], 1, endpoint.id);
      assert.equal(event!.data.text, 'hello');
      assert.deepEqual(event!.data.properties, { userProperties: { fw: '1.2.3' } });
      const refused = await run('mosquitto_pub', ['-V', 'mqttv5', '-h', '127.0.0.1', '-p', port, '-u', 'mosquitto5-1', '-P', 'wrong-password', '-t', 'mosquitto5-1/up', '-m', 'x']).catch((error: { stderr: string }) => error);
      assert.match(refused.stderr, /bad user ?name or password/i);
    });
  });
}
