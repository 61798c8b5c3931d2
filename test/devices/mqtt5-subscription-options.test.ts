import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import mqtt, { type IClientOptions, type IClientSubscribeOptions, type MqttClient } from 'mqtt';
import { generate, parser, type Packet } from 'mqtt-packet';
import { CrashTestStorage } from '../helpers/crash-storage.js';
import { waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { FuzzService, fuzzAccount, fuzzEndpoint, fuzzService } from '../helpers/fuzz.js';
import { RawConnection, setPassword } from '../helpers/mqtt.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/**
 * MQTT 5 subscription options (MQTT 5.0, 3.8.3.1) through the service's broker, with mqtt.js as the device: No Local
 * (a device's own publications are not sent back to it, live or queued in its session, across kill -9) and Retain
 * Handling (0 retained messages on every SUBSCRIBE, 1 only for a new subscription, 2 never); a queued message goes
 * out with RETAIN 0 (MQTT-3.3.1-9). Retain As Published is not carried (docs/mqtt.md).
 */
const PASSWORD = 'options-secret-5';
/** How long to wait for a message that must not come. */
const QUIET_MS = 400;

type Received = { topic: string; payload: string; retain: boolean }[];
type Device = MqttClient & { received: Received };

function connectDevice(port: number, key: string, options: IClientOptions = {}): Promise<Device> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${port}`, { username: key, password: PASSWORD, reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: 5, ...options });
  const received: Received = [];
  // Listening before CONNACK: queued messages follow it at once.
  client.on('message', (topic, payload, packet) => received.push({ topic, payload: payload.toString(), retain: packet.retain }));
  return new Promise((resolve, reject) => client.once('connect', () => resolve(Object.assign(client, { received }))).once('error', reject));
}

const payloads = (device: Device) => device.received.map((message) => message.payload).sort();
const arrived = (device: Device, payload: string) => waitFor(async () => device.received.find((message) => message.payload === payload), `"${payload}"`);

for (const dialect of DIALECTS) {
  describe(`MQTT 5 subscription options (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let a: TestAccount;
    let b: TestAccount;
    let serviceA: string;
    let serviceB: string;
    const devices: MqttClient[] = [];
    const device = async (token: string, serviceId: string, key: string) => {
      const endpoint = await createEndpoint(service, token, { key, serviceId });
      await setPassword(service, token, endpoint.id as string, PASSWORD);
      return endpoint.id as string;
    };
    const connect = async (key: string, options: IClientOptions = {}) => {
      const connected = await connectDevice(service.ports.mqtt!, key, options);
      devices.push(connected);
      return connected;
    };
    const subscribe = async (client: MqttClient, filter: string, options: Partial<IClientSubscribeOptions>) => {
      const granted = await client.subscribeAsync(filter, { qos: 1, ...options });
      return granted.map((grant) => grant.qos);
    };

    before(async () => {
      service = await startService(dialect.name);
      a = await createAccount(service, 'mqtt5-options-a');
      b = await createAccount(service, 'mqtt5-options-b');
      serviceA = await createService(service, a.token, { name: 'options-a', type: 'mqtt' });
      serviceB = await createService(service, b.token, { name: 'options-b', type: 'mqtt' });
    });
    after(async () => {
      await Promise.all(devices.map((client) => client.endAsync(true).catch(() => undefined)));
      await service?.stop();
    });

    it("No Local: a device's own publications do not come back on such a subscription; a script's do, and other subscriptions are as before", async () => {
      const endpoint = await device(a.token, serviceA, 'nl5-1');
      const client = await connect('nl5-1');
      assert.deepEqual(await subscribe(client, 'nl5-1/quiet/#', { nl: true }), [1]);
      assert.deepEqual(await subscribe(client, 'nl5-1/echo/#', {}), [1]);
      await client.publishAsync('nl5-1/quiet/t', 'own-quiet', { qos: 1 });
      await client.publishAsync('nl5-1/quiet/t', 'own-quiet-0', { qos: 0 });
      await client.publishAsync('nl5-1/echo/t', 'own-echo', { qos: 1 });
      const script = await runScript(service, a.token, "mqtt.publish(null, 'nl5-1/quiet/cmd', 'from-script', { qos: 1 });", { endpoint });
      assert.equal(script.status, 'success', script.error ?? '');
      await arrived(client, 'own-echo');
      await arrived(client, 'from-script');
      await sleep(QUIET_MS);
      assert.deepEqual(payloads(client), ['from-script', 'own-echo']);
    });

    it('Retain Handling: 0 sends retained messages at every SUBSCRIBE, 1 only for a new subscription, 2 never; live messages flow whatever it says', async () => {
      const endpoint = await device(a.token, serviceA, 'rh5-1');
      const kept = await runScript(service, a.token, "mqtt.publish(null, 'rh5-1/state', 'kept', { qos: 1, retain: true });", { endpoint });
      assert.equal(kept.status, 'success', kept.error ?? '');
      const client = await connect('rh5-1');
      const retainedCount = () => client.received.filter((message) => message.payload === 'kept').length;

      await subscribe(client, 'rh5-1/#', { rh: 2 });
      await sleep(QUIET_MS);
      assert.equal(retainedCount(), 0, 'Retain Handling 2: none');
      await subscribe(client, 'rh5-1/state', { rh: 1 });
      await waitFor(async () => (retainedCount() === 1 ? true : undefined), 'Retain Handling 1, a new subscription: the retained message');
      assert.equal(client.received[0]!.retain, true);
      await subscribe(client, 'rh5-1/state', { rh: 1 });
      await sleep(QUIET_MS);
      assert.equal(retainedCount(), 1, 'Retain Handling 1, an existing subscription: none');
      await subscribe(client, 'rh5-1/state', { rh: 0 });
      await waitFor(async () => (retainedCount() === 2 ? true : undefined), 'Retain Handling 0: the retained message again');
      await subscribe(client, 'rh5-1/#', { rh: 2 });
      await sleep(QUIET_MS);
      assert.equal(retainedCount(), 2, 'Retain Handling 2 on an overlapping filter: none, whatever an earlier SUBSCRIBE asked');

      // A live publication goes to the subscriptions that asked for no retained messages, once per matching filter, RETAIN 0.
      await runScript(service, a.token, "mqtt.publish(null, 'rh5-1/state', 'live', { qos: 1, retain: true });", { endpoint });
      await waitFor(async () => (client.received.filter((message) => message.payload === 'live').length === 2 ? true : undefined), 'the live message on both filters');
      assert.ok(client.received.filter((message) => message.payload === 'live').every((message) => !message.retain));
    });

    it('a message queued for a persistent session goes out with RETAIN 0, and without the No Local subscriber\'s own publications', async () => {
      const endpoint = await device(a.token, serviceA, 'queue5-1');
      const session = { clientId: 'queue5', clean: false, properties: { sessionExpiryInterval: 3600 } };
      const first = await connect('queue5-1', session);
      await subscribe(first, 'queue5-1/#', { nl: true });
      // Its own message while connected: not sent back, and not kept for the next connection either.
      await first.publishAsync('queue5-1/own', 'own', { qos: 1 });
      await first.endAsync();
      const queued = await runScript(service, a.token, "mqtt.publish(null, 'queue5-1/cmd', 'while-away', { qos: 1, retain: true });", { endpoint });
      assert.equal(queued.status, 'success', queued.error ?? '');
      const back = await connect('queue5-1', session);
      const message = await arrived(back, 'while-away');
      assert.equal(message.retain, false, 'MQTT-3.3.1-9: RETAIN 0 for an established subscription');
      await sleep(QUIET_MS);
      assert.deepEqual(payloads(back), ['while-away']);
    });

    it('a SUBSCRIBE with Retain Handling 3 is malformed: DISCONNECT 0x81, other devices stay served', async () => {
      await device(a.token, serviceA, 'bad-rh5-1');
      await device(a.token, serviceA, 'steady-rh5-1');
      const steady = await connect('steady-rh5-1');
      await subscribe(steady, 'steady-rh5-1/#', { nl: true });
      const raw = await RawConnection.open(service.ports.mqtt!);
      raw.write(generate({ cmd: 'connect', protocolVersion: 5, protocolId: 'MQTT', clientId: 'bad-rh', clean: true, keepalive: 30, username: 'bad-rh5-1', password: Buffer.from(PASSWORD) }, { protocolVersion: 5 }));
      await waitFor(async () => (raw.received.length > 0 ? true : undefined), 'CONNACK');
      // Topic "bad-rh5-1/x", options byte 0x31: QoS 1, Retain Handling 3.
      const topic = Buffer.from('bad-rh5-1/x');
      const body = Buffer.concat([Buffer.from([0x00, 0x01, 0x00, 0x00, topic.length]), topic, Buffer.from([0x31])]);
      raw.write(Buffer.concat([Buffer.from([0x82, body.length]), body]));
      assert.ok(await raw.closedWithin(3000), 'the connection is closed');
      const packets: Packet[] = [];
      const reader = parser({ protocolVersion: 5 });
      reader.on('packet', (packet) => packets.push(packet));
      reader.parse(Buffer.concat(raw.received));
      const last = packets.at(-1);
      assert.equal(last?.cmd === 'disconnect' && last.reasonCode, 0x81);
      await steady.publishAsync('steady-rh5-1/t', 'still-here', { qos: 1 });
      await runScript(service, a.token, "mqtt.publish('k.steady-rh5-1', 'steady-rh5-1/t', 'from-script', { qos: 1 });");
      await arrived(steady, 'from-script');
      assert.deepEqual(payloads(steady), ['from-script']);
    });

    it("another account's device gets nothing of this one's retained messages, whatever options it subscribes with", async () => {
      const endpoint = await device(a.token, serviceA, 'owner5-1');
      await runScript(service, a.token, "mqtt.publish(null, 'owner5-1/secret', 'a-only', { qos: 1, retain: true });", { endpoint });
      await device(b.token, serviceB, 'owner5-2');
      const other = await connect('owner5-2');
      // Outside its topic space: refused, and in any case another service's broker.
      await assert.rejects(other.subscribeAsync('owner5-1/#', { qos: 1, rh: 0 }), (error: { code?: number; packet?: { granted?: number[] } }) => {
        assert.equal(error.code ?? error.packet?.granted?.[0], 0x87);
        return true;
      });
      assert.deepEqual(await subscribe(other, 'owner5-2/#', { rh: 0 }), [1]);
      await sleep(QUIET_MS);
      assert.deepEqual(other.received, []);
    });
  });

  describe(`MQTT 5 subscription options across kill -9 (${dialect.name})`, { skip: dialect.skip }, () => {
    let storage: CrashTestStorage;
    let service: FuzzService;
    const devices: MqttClient[] = [];
    const connect = async (key: string, options: IClientOptions) => {
      const connected = await connectDevice(service.ports.mqtt!, key, options);
      devices.push(connected);
      return connected;
    };

    before(async () => {
      storage = await CrashTestStorage.create(dialect.name, 'mqtt5-options-crash');
      service = await storage.start();
    });
    after(async () => {
      await Promise.all(devices.map((client) => client.endAsync(true).catch(() => undefined)));
      await service?.stop();
      await storage?.remove();
    });

    it('a persistent session keeps No Local and Retain Handling of its subscriptions through kill -9', async () => {
      const tenant = await fuzzAccount(service, 'mqtt5-options-crash');
      const serviceId = await fuzzService(service, tenant.token, { name: 'mqtt', type: 'mqtt' });
      await fuzzEndpoint(service, tenant.token, { key: 'crash5-1', serviceId }, PASSWORD);
      const session = { clientId: 'crash5', clean: false, properties: { sessionExpiryInterval: 3600 } };
      const before = await connect('crash5-1', session);
      assert.deepEqual((await before.subscribeAsync('crash5-1/quiet/#', { qos: 1, nl: true })).map((grant) => grant.qos), [1]);
      // QoS 0: nothing of it is queued, so what comes after the crash is only what the options let through.
      assert.deepEqual((await before.subscribeAsync('crash5-1/state', { qos: 0, rh: 1 })).map((grant) => grant.qos), [0]);
      await before.publishAsync('crash5-1/state', 'kept', { qos: 1, retain: true });
      await before.publishAsync('crash5-1/quiet/t', 'own-before', { qos: 1 });
      await arrived(before, 'kept');

      await CrashTestStorage.kill(service);
      service = await storage.start();
      const back = await connect('crash5-1', session);
      await back.publishAsync('crash5-1/quiet/t', 'own-after', { qos: 1 });
      await back.publishAsync('crash5-1/state', 'live-after', { qos: 1 });
      await arrived(back, 'live-after');
      // The subscription to crash5-1/state exists (restored): Retain Handling 1 sends nothing at this SUBSCRIBE.
      await back.subscribeAsync('crash5-1/state', { qos: 0, rh: 1 });
      await sleep(QUIET_MS);
      assert.deepEqual(payloads(back), ['live-after'], 'neither own publication (before or after the crash) nor the retained one again');
    });
  });
}
