import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generate, parser, type Packet } from 'mqtt-packet';
import { until } from '../helpers/devices.js';
import { FuzzService, fuzzAccount, fuzzEndpoint, fuzzService } from '../helpers/fuzz.js';
import { DIALECTS, throwAwayPostgres } from '../helpers/service.js';

const PASSWORD = 'qos2-device-secret';

/** A device written by hand over a socket: it answers only what the test tells it to, so a QoS 2 flow can stop half-way. */
class HandDevice {
  readonly received: Packet[] = [];
  readonly #socket: net.Socket;

  private constructor(socket: net.Socket) {
    this.#socket = socket;
    const reader = parser({ protocolVersion: 4 });
    reader.on('packet', (packet: Packet) => this.received.push(packet));
    socket.on('data', (chunk: Buffer) => reader.parse(chunk));
    socket.on('error', () => undefined);
  }

  static async connect(port: number, key: string): Promise<{ device: HandDevice; sessionPresent: boolean }> {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const device = new HandDevice(socket);
    device.send({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: false, clientId: `${key}-client`, keepalive: 0, username: key, password: Buffer.from(PASSWORD) });
    const connack = await device.next('connack');
    assert.equal(connack.cmd === 'connack' && connack.returnCode, 0);
    return { device, sessionPresent: connack.cmd === 'connack' && connack.sessionPresent };
  }

  send(packet: Packet): void {
    this.#socket.write(generate(packet));
  }

  /** The first packet of this kind received and not yet taken. */
  async next<C extends Packet['cmd']>(cmd: C, what: string = cmd): Promise<Extract<Packet, { cmd: C }>> {
    let found: Packet | undefined;
    await until(() => (found = this.received.find((packet) => packet.cmd === cmd)) !== undefined, what, 10_000);
    this.received.splice(this.received.indexOf(found!), 1);
    return found as Extract<Packet, { cmd: C }>;
  }

  close(): void {
    this.#socket.destroy();
  }
}

/**
 * A QoS 2 delivery to a device with a persistent session, interrupted by kill -9 between the device's PUBREC and its
 * PUBCOMP: after the restart the service sends the PUBREL again, not the PUBLISH (MQTT-4.4.0-1: the device may
 * have passed the message on already, and a PUBLISH would be a second one); a message not yet PUBREC'd is sent
 * again as a PUBLISH with DUP; a completed flow is sent no more.
 */
for (const dialect of DIALECTS) describe(`MQTT QoS 2 state across kill -9 (${dialect.name})`, { skip: dialect.skip }, () => {
  let dataDir: string;
  let database: { url: string; drop: () => Promise<void> } | undefined;
  let service: FuzzService;
  const devices: HandDevice[] = [];
  const env = () => ({ IOTBRIDGE_DATA_DIR: dataDir, ...(database && { IOTBRIDGE_DATABASE_URL: database.url }) });
  const connect = async (key: string) => {
    const connected = await HandDevice.connect(service.ports.mqtt!, key);
    devices.push(connected.device);
    return connected;
  };
  const killAndStart = async () => {
    for (const device of devices.splice(0)) device.close();
    service.child.kill('SIGKILL');
    await new Promise((resolve) => service.child.once('exit', resolve));
    service = await FuzzService.start(env());
  };

  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-mqtt-qos2-crash-'));
    if (dialect.name === 'postgres') database = await throwAwayPostgres();
    service = await FuzzService.start(env());
  });
  after(async () => {
    for (const device of devices) device.close();
    await service?.stop();
    await rm(dataDir, { recursive: true, force: true });
    await database?.drop();
  });

  it('the PUBREL, not the PUBLISH, is sent again after a crash; an unanswered PUBLISH comes again with DUP; a completed flow does not', async () => {
    const tenant = await fuzzAccount(service, 'mqtt-qos2-crash');
    const serviceId = await fuzzService(service, tenant.token, { name: 'mqtt', type: 'mqtt' });
    const endpointId = await fuzzEndpoint(service, tenant.token, { key: 'valve-7', serviceId }, PASSWORD);
    // Another tenant's device with its own session: nothing of valve-7's reaches it.
    const other = await fuzzAccount(service, 'mqtt-qos2-other');
    const otherService = await fuzzService(service, other.token, { name: 'mqtt', type: 'mqtt' });
    await fuzzEndpoint(service, other.token, { key: 'valve-8', serviceId: otherService }, PASSWORD);
    const trigger = await service.request('POST', '/triggers', {
      token: tenant.token,
      body: { name: 'command', events: ['send-command'], script: "mqtt.publish(null, event.endpointKey + '/cmd', event.data.command, { qos: 2 });" },
    });
    assert.equal(trigger.status, 201, trigger.text);

    const { device } = await connect('valve-7');
    device.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'valve-7/cmd', qos: 2 }] });
    assert.deepEqual((await device.next('suback')).granted, [2]);
    const { device: bystander } = await connect('valve-8');
    bystander.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'valve-8/cmd', qos: 2 }] });
    await bystander.next('suback');

    const sent: { command: string; messageId: number }[] = [];
    for (const command of ['open', 'close']) {
      const posted = await service.request('POST', '/events', { token: tenant.token, body: { type: 'send-command', endpoint: endpointId, data: { command } } });
      assert.equal(posted.status, 202, posted.text);
      const publish = await device.next('publish', `the "${command}" PUBLISH`);
      assert.equal(publish.payload.toString(), command);
      assert.equal(publish.qos, 2);
      sent.push({ command, messageId: publish.messageId! });
    }
    const [open, close] = sent as [(typeof sent)[number], (typeof sent)[number]];
    // The device answers "open" with PUBREC and gets the PUBREL; it never answered "close". Then the service crashes.
    device.send({ cmd: 'pubrec', messageId: open.messageId });
    assert.equal((await device.next('pubrel', 'the PUBREL of "open"')).messageId, open.messageId);
    await killAndStart();

    const back = await connect('valve-7');
    assert.equal(back.sessionPresent, true);
    assert.equal((await back.device.next('pubrel', 'the PUBREL of "open" again')).messageId, open.messageId);
    const again = await back.device.next('publish', 'the "close" PUBLISH again');
    assert.deepEqual([again.payload.toString(), again.messageId, again.dup], ['close', close.messageId, true]);
    // "open" is not delivered a second time.
    assert.deepEqual(back.device.received.filter((packet) => packet.cmd === 'publish'), []);
    // A PUBCOMP for a packet id the service never used is ignored, and the connection stays.
    back.device.send({ cmd: 'pubcomp', messageId: 999 });
    back.device.send({ cmd: 'pingreq' });
    await back.device.next('pingresp', 'the PINGRESP after a stray PUBCOMP');
    // Both flows completed.
    back.device.send({ cmd: 'pubcomp', messageId: open.messageId });
    back.device.send({ cmd: 'pubrec', messageId: close.messageId });
    assert.equal((await back.device.next('pubrel', 'the PUBREL of "close"')).messageId, close.messageId);
    back.device.send({ cmd: 'pubcomp', messageId: close.messageId });
    back.device.send({ cmd: 'pingreq' });
    await back.device.next('pingresp');
    await killAndStart();

    const last = await connect('valve-7');
    assert.equal(last.sessionPresent, true);
    last.device.send({ cmd: 'pingreq' });
    await last.device.next('pingresp');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(last.device.received, [], 'nothing is sent again once the flows completed');
    const { device: otherBack } = await connect('valve-8');
    otherBack.send({ cmd: 'pingreq' });
    await otherBack.next('pingresp');
    assert.deepEqual(otherBack.received, [], "the other tenant's device got nothing of valve-7's");
  });
});
