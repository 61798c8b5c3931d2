import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { generate, parser, type Packet } from 'mqtt-packet';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { MqttDevices, RawConnection, setPassword } from '../helpers/mqtt.js';
import { waitFor } from '../helpers/devices.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

// Security issue 14, finding 1: an authenticated MQTT 5 SUBSCRIBE or UNSUBSCRIBE without topic filters made
// mqtt-packet's generate() throw inside a socket handler and the service exited. 3.1.1 answered UNSUBACK.
// [MQTT-3.8.3-2] / [MQTT-3.10.3-2]: such a packet is a protocol violation; the connection is closed.

const PASSWORD = 'empty-lists-secret';

/** Empty SUBSCRIBE / UNSUBSCRIBE as a device could send them (packet id 1, nothing after). */
const EMPTY = {
  4: { subscribe: Buffer.from([0x82, 0x02, 0x00, 0x01]), unsubscribe: Buffer.from([0xa2, 0x02, 0x00, 0x01]) },
  // MQTT 5: packet id, a zero-length property block, no payload (the bytes of the report).
  5: { subscribe: Buffer.from([0x82, 0x03, 0x00, 0x01, 0x00]), unsubscribe: Buffer.from([0xa2, 0x03, 0x00, 0x01, 0x00]) },
} as const;

function packetsOf(raw: RawConnection, protocolVersion: 4 | 5): Packet[] {
  const packets: Packet[] = [];
  const reader = parser({ protocolVersion });
  reader.on('packet', (packet) => packets.push(packet));
  reader.parse(Buffer.concat(raw.received));
  return packets;
}

for (const dialect of DIALECTS) {
  describe(`MQTT SUBSCRIBE / UNSUBSCRIBE without topic filters (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let a: TestAccount;
    let serviceId: string;
    const devices = new MqttDevices(() => service.ports.mqtt!);

    before(async () => {
      service = await startService(dialect.name);
      a = await createAccount(service, 'empty-lists');
      serviceId = await createService(service, a.token, { name: 'empty-lists', type: 'mqtt' });
      const endpoint = await createEndpoint(service, a.token, { key: 'empty-lists-1', serviceId });
      await setPassword(service, a.token, endpoint.id as string, PASSWORD);
    });
    after(async () => {
      await devices.closeAll();
      await service?.stop();
    });

    for (const version of [4, 5] as const) {
      for (const kind of ['subscribe', 'unsubscribe'] as const) {
        it(`MQTT ${version === 5 ? '5' : '3.1.1'}: an empty ${kind.toUpperCase()} after log-in closes that connection; the service and other devices go on`, async () => {
          const raw = await RawConnection.open(service.ports.mqtt!);
          raw.write(generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: version, clientId: `empty-${version}-${kind}`, clean: true, keepalive: 30, username: 'empty-lists-1', password: Buffer.from(PASSWORD) }, { protocolVersion: version }));
          const connack = await waitFor(async () => packetsOf(raw, version).find((p) => p.cmd === 'connack'), 'CONNACK');
          assert.equal(version === 5 ? (connack as { reasonCode?: number }).reasonCode : (connack as { returnCode?: number }).returnCode, 0);

          raw.write(EMPTY[version][kind]);
          assert.ok(await raw.closedWithin(3000), 'the connection is closed');
          const after = packetsOf(raw, version);
          assert.ok(!after.some((p) => p.cmd === 'suback' || p.cmd === 'unsuback'), `no acknowledgement: ${after.map((p) => p.cmd).join(',')}`);
          if (version === 5) {
            const disconnect = after.find((p) => p.cmd === 'disconnect') as { reasonCode?: number } | undefined;
            assert.equal(disconnect?.reasonCode, 0x82, 'DISCONNECT with reason 0x82 (protocol error)');
          }

          // Still serving: the API answers and the same device logs in and publishes again.
          assert.equal((await service.request('GET', '/health')).status, 200);
          const client = await devices.connect('empty-lists-1', PASSWORD, { protocolVersion: version });
          await client.publishAsync('empty-lists-1/still-here', 'yes', { qos: 1 });
          await client.endAsync();
        });
      }
    }
  });
}
