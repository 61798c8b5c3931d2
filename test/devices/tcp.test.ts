import assert from 'node:assert/strict';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createTrigger, eventsArrive, executionsOf, history, TcpDevice } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/** `payload` behind a 2-byte big-endian length. */
function u16Frame(payload: Buffer | string): Buffer {
  const bytes = Buffer.from(payload);
  const header = Buffer.alloc(2);
  header.writeUInt16BE(bytes.length);
  return Buffer.concat([header, bytes]);
}

for (const dialect of DIALECTS) {
  describe(`TCP devices (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let a: TestAccount;
    let b: TestAccount;
    /** Login framing: "<key>\n" first, then lines. */
    let lines: string;
    /** Teltonika-like: 2-byte length frames, the first one the IMEI, answered with 0x01. */
    let binary: string;
    /** Account B: 2-byte length frames, each "<key>:<payload>". */
    let prefixed: string;
    const connections: TcpDevice[] = [];
    const connect = async () => {
      const device = await TcpDevice.connect(service.ports.tcp!);
      connections.push(device);
      return device;
    };

    before(async () => {
      service = await startService(dialect.name);
      a = await createAccount(service, 'tcp-a');
      b = await createAccount(service, 'tcp-b');
      lines = await createService(service, a.token, { name: 'lines', type: 'tcp' });
      binary = await createService(service, a.token, { name: 'trackers', type: 'tcp', options: { framing: 'length', lengthBytes: 2, loginReplyHex: '01', maxFrameBytes: 512 } });
      prefixed = await createService(service, b.token, { name: 'prefixed', type: 'tcp', options: { framing: 'length', lengthBytes: 2, keyRule: 'prefix', maxFrameBytes: 64 } });
    });
    after(async () => {
      for (const c of connections) c.socket.destroy();
      await service?.stop();
    });

    it('a login line names the device: on-connect, a tcp-message per line, on-disconnect when it closes', async () => {
      const gateway = await createEndpoint(service, a.token, { key: 'gw-1', serviceId: lines });
      const device = await connect();
      await device.write('gw-1\nfirst li');
      await device.write('ne\n\nsecond line\n');
      const messages = await eventsArrive(service, a.token, ['tcp-message'], 2, gateway.id);
      assert.deepEqual(messages.map((m) => m.data.text), ['first line', 'second line'], 'an empty line is a keep-alive, not a message');
      const local = `${device.socket.localAddress}:${device.socket.localPort}`;
      assert.equal(messages[0]!.data.remoteAddr, local);
      assert.equal((await service.request('GET', `/endpoints/${gateway.id}`, { token: a.token })).body.state, 'connected');
      await device.end();
      await eventsArrive(service, a.token, ['on-disconnect'], 1, gateway.id);
      const types = (await history(service, a.token, ['on-connect', 'tcp-message', 'on-disconnect'], gateway.id)).map((e) => e.type);
      assert.deepEqual(types, ['on-connect', 'tcp-message', 'tcp-message', 'on-disconnect']);
      assert.equal((await service.request('GET', `/endpoints/${gateway.id}`, { token: a.token })).body.state, 'unavailable');
    });

    it('length-prefixed framing: a binary login answered with 0x01, then data frames', async () => {
      const tracker = await createEndpoint(service, a.token, { key: '356307042441013', serviceId: binary });
      const device = await connect();
      await device.write(u16Frame('356307042441013'));
      assert.deepEqual([...(await device.receivedAtLeast(1))], [0x01]);
      await device.write(Buffer.concat([u16Frame(Buffer.from('00000000000000fe', 'hex')), u16Frame(Buffer.from([1, 2]))]));
      const messages = await eventsArrive(service, a.token, ['tcp-message'], 2, tracker.id);
      assert.deepEqual(messages.map((m) => m.data.payload), ['00000000000000fe', '0102']);
    });

    it('the prefix rule: every frame starts with the key; frames naming another key are dropped', async () => {
      const sensor = await createEndpoint(service, b.token, { key: 'sensor-9', serviceId: prefixed });
      const device = await connect();
      await device.write(Buffer.concat([u16Frame('sensor-9:t=4'), u16Frame('other:t=5'), u16Frame('sensor-9:t=6')]));
      const messages = await eventsArrive(service, b.token, ['tcp-message'], 2, sensor.id);
      assert.deepEqual(messages.map((m) => m.data.text), ['t=4', 't=6']);
      assert.deepEqual(await history(service, a.token, ['tcp-message'], undefined).then((all) => all.filter((e) => e.endpointKey === 'sensor-9')), []);
    });

    it('unknown devices, oversized frames and garbage close the connection, never the service', async () => {
      const unknown = await connect();
      await unknown.write('nobody-here\n');
      assert.ok(await unknown.closedWithin(3000), 'an unknown device is disconnected');

      const noLogin = await connect();
      await noLogin.write(Buffer.alloc(5000, 0x41)); // no delimiter, no plausible length header within 4 KiB
      assert.ok(await noLogin.closedWithin(3000), 'a first frame must come within 4 KiB');

      await createEndpoint(service, b.token, { key: 'big-1', serviceId: prefixed });
      const big = await connect();
      await big.write(u16Frame('big-1:ok'));
      await eventsArrive(service, b.token, ['tcp-message'], 1, 'k.big-1');
      await big.write(Buffer.from([0x00, 0xff])); // announces 255 bytes, over maxFrameBytes 64: refused from the header
      assert.ok(await big.closedWithin(3000), 'an oversized frame closes the connection');
      await eventsArrive(service, b.token, ['on-disconnect'], 1, 'k.big-1');

      const garbage = await connect();
      await garbage.write(Buffer.from([0xff, 0xfe, 0x00, 0x0a, 0x0a, 0x00]));
      garbage.socket.destroy();
      // Still serving.
      await createEndpoint(service, a.token, { key: 'gw-2', serviceId: lines });
      const fine = await connect();
      await fine.write('gw-2\nalive\n');
      const [message] = await eventsArrive(service, a.token, ['tcp-message'], 1, 'k.gw-2');
      assert.equal(message!.data.text, 'alive');
    });

    it('tcp.send writes a frame to the connected device and emits tcp-sent; other accounts cannot', async () => {
      const gate = await createEndpoint(service, a.token, { key: 'gate-1', serviceId: lines });
      const trigger = await createTrigger(service, a.token, 'open gate', ['tcp-message'], `
        if (event.endpointKey === 'gate-1' && event.data.text === 'open?') log(JSON.stringify(tcp.send(null, 'OPEN', { encoding: 'utf8' })));
      `);
      const device = await connect();
      await device.write('gate-1\nopen?\n');
      assert.equal((await device.receivedAtLeast(5)).toString(), 'OPEN\n');
      const [run] = await executionsOf(service, a.token, trigger, 1);
      assert.deepEqual(run!.logs, ['{"bytes":4}']);
      const [sent] = await eventsArrive(service, a.token, ['tcp-sent'], 1, gate.id);
      assert.equal(sent!.data.text, 'OPEN');
      await service.request('DELETE', `/triggers/${trigger}`, { token: a.token });

      for (const ref of [gate.id, 'k.gate-1']) {
        assert.match((await runScript(service, b.token, `tcp.send('${ref}', '00');`)).error ?? '', /tcp\.send: IOTB_ENDPOINT_NOT_FOUND: No such endpoint/);
      }
      assert.match((await runScript(service, a.token, `tcp.send('k.gate-1', 'a\\nb', { encoding: 'utf8' });`)).error ?? '', /delimiter/);
      await device.end();
      await eventsArrive(service, a.token, ['on-disconnect'], 1, gate.id);
      assert.match((await runScript(service, a.token, `tcp.send('k.gate-1', '00');`)).error ?? '', /no open connection/);
      assert.equal(device.received.toString(), 'OPEN\n');
    });

    it('a device that reconnects replaces its old connection', async () => {
      const roamer = await createEndpoint(service, a.token, { key: 'roam-1', serviceId: lines });
      const first = await connect();
      await first.write('roam-1\n');
      await eventsArrive(service, a.token, ['on-connect'], 1, roamer.id);
      const second = await connect();
      await second.write('roam-1\nhello again\n');
      assert.ok(await first.closedWithin(3000), 'the old connection is closed');
      await eventsArrive(service, a.token, ['tcp-message'], 1, roamer.id);
      const types = (await history(service, a.token, ['on-connect', 'on-disconnect'], roamer.id)).map((e) => [e.type, e.data.reason ?? null]);
      assert.deepEqual(types, [['on-connect', null], ['on-disconnect', 'replaced by a new connection'], ['on-connect', null]]);
      assert.equal((await runScript(service, a.token, `tcp.send('k.roam-1', 'hi', { encoding: 'utf8' });`)).status, 'success');
      assert.equal((await second.receivedAtLeast(3)).toString(), 'hi\n');
      await sleep(50);
      assert.equal(first.received.length, 0);
    });

    it('an autoProvision service creates a device from its login', async () => {
      const auto = await createService(service, b.token, { name: 'auto', type: 'tcp', options: { delimiter: '\r\n', autoProvision: true } });
      const device = await connect();
      await device.write('fresh-1\r\nhi\r\n');
      const [created] = await eventsArrive(service, b.token, ['on-create'], 1, 'k.fresh-1');
      assert.equal(created!.serviceId, auto);
      await eventsArrive(service, b.token, ['tcp-message'], 1, 'k.fresh-1');
    });
  });
}

describe('TCP port', () => {
  it('a taken port stops the service with a message naming IOTBRIDGE_TCP_PORT', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '0.0.0.0', resolve));
    try {
      await assert.rejects(startService('sqlite', { tcpPort: (holder.address() as net.AddressInfo).port }), /TCP port \d+ is already in use: set IOTBRIDGE_TCP_PORT/);
    } finally {
      holder.close();
    }
  });
});
