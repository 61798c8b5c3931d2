// Issue 21, Super-Admin suspend: devices of the account that are connected when it is suspended are ended at once
// (MQTT 3.1.1 closed, MQTT 5 told DISCONNECT 0x98 Administrative action, TCP closed, LwM2M registration ended so its
// next Update gets 4.04), they are refused when they come back, and another account's devices stay connected.
// After resume they come back.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import mqtt, { type IDisconnectPacket, type MqttClient } from 'mqtt';
import { TcpDevice, waitFor } from '../helpers/devices.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { connackCode, setPassword } from '../helpers/mqtt.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

const PASSWORD = 'device-password-1';

for (const dialect of DIALECTS) {
  describe(`suspending an account disconnects its devices (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    const lwm2m = new SimulatedDevices(() => service.ports.coap!);
    const clients: MqttClient[] = [];
    const sockets: TcpDevice[] = [];

    /** An MQTT device of the account, logged in; `version` 4 is MQTT 3.1.1. */
    const mqttDevice = async (account: TestAccount, serviceId: string, key: string, version: 4 | 5) => {
      const endpoint = await createEndpoint(service, account.token, { key, serviceId });
      await setPassword(service, account.token, endpoint.id as string, PASSWORD);
      const client = mqtt.connect(`mqtt://127.0.0.1:${service.ports.mqtt}`, { username: key, password: PASSWORD, reconnectPeriod: 0, connectTimeout: 5000, protocolVersion: version });
      clients.push(client);
      const seen: { disconnect?: IDisconnectPacket; closed: boolean } = { closed: false };
      client.once('disconnect', (packet) => (seen.disconnect = packet));
      client.once('close', () => (seen.closed = true));
      await new Promise((resolve, reject) => client.once('connect', resolve).once('error', reject));
      return { endpoint, client, seen };
    };
    const stateOf = async (account: TestAccount, id: string) => (await service.request('GET', `/endpoints/${id}`, { token: account.token })).body.state as string;

    before(async () => {
      service = await startService(dialect.name);
      tenant = await createAccount(service, 'suspend-tenant');
      other = await createAccount(service, 'suspend-other');
    });
    after(async () => {
      for (const client of clients) client.end(true);
      for (const socket of sockets) socket.socket.destroy();
      await lwm2m.stopAll();
      await service?.stop();
    });

    it('ends MQTT 3.1.1, MQTT 5, TCP and LwM2M devices of the suspended account only; they are refused until resume', async () => {
      const tenantMqtt = await createService(service, tenant.token, { name: 'mqtt', type: 'mqtt' });
      const otherMqtt = await createService(service, other.token, { name: 'mqtt', type: 'mqtt' });
      const tenantTcp = await createService(service, tenant.token, { name: 'tcp', type: 'tcp' });
      const tenantLwm2m = await createService(service, tenant.token, { name: 'lwm2m', type: 'lwm2m' });

      const v3 = await mqttDevice(tenant, tenantMqtt, 'sus-v3', 4);
      const v5 = await mqttDevice(tenant, tenantMqtt, 'sus-v5', 5);
      const bystander = await mqttDevice(other, otherMqtt, 'sus-other', 5);
      const gateway = await createEndpoint(service, tenant.token, { key: 'sus-tcp', serviceId: tenantTcp });
      const tcp = await TcpDevice.connect(service.ports.tcp!);
      sockets.push(tcp);
      await tcp.write('sus-tcp\n');
      await waitFor(async () => ((await stateOf(tenant, gateway.id as string)) === 'connected' ? true : undefined), 'the TCP device connected');
      const sensor = await createEndpoint(service, tenant.token, { key: 'sus-lwm2m', serviceId: tenantLwm2m });
      const device = await lwm2m.start('sus-lwm2m', { lifetime: 300 });
      assert.equal(await device.register(), '2.01');

      const suspended = await service.request('POST', `/super/accounts/${tenant.accountId}/suspend`, { body: { reason: 'unpaid invoice' } });
      assert.equal(suspended.status, 200, JSON.stringify(suspended.body));

      let tcpClosed = false;
      void tcp.closed.then(() => (tcpClosed = true));
      await waitFor(async () => (v5.seen.closed && v3.seen.closed && tcpClosed ? true : undefined), 'the MQTT and TCP connections closed by the service');
      assert.equal(v5.seen.disconnect?.reasonCode, 0x98, 'MQTT 5: DISCONNECT Administrative action');
      for (const id of [v3.endpoint.id, v5.endpoint.id, gateway.id, sensor.id] as string[]) {
        await waitFor(async () => ((await stateOf(tenant, id)) === 'unavailable' ? true : undefined), `endpoint ${id} unavailable`);
      }
      assert.equal(await device.update(), '4.04', 'the LwM2M registration is over');
      assert.equal(await device.register(), '4.03', 'and a new one is refused');
      assert.equal(await connackCode(service.ports.mqtt!, { key: 'sus-v3', password: PASSWORD }), 5, 'MQTT 3.1.1 refused: not authorized');
      assert.equal(bystander.client.connected, true, "another account's device stays connected");
      assert.equal(await stateOf(other, bystander.endpoint.id as string), 'connected');

      const resumed = await service.request('POST', `/super/accounts/${tenant.accountId}/resume`, {});
      assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
      assert.equal(await connackCode(service.ports.mqtt!, { key: 'sus-v3', password: PASSWORD }), 0, 'back after resume');
      assert.equal(await device.register(), '2.01');
    });

    it('only a Super-Admin suspends: the account itself cannot, and its devices stay connected', async () => {
      const serviceId = await createService(service, other.token, { name: 'mqtt-2', type: 'mqtt' });
      const kept = await mqttDevice(other, serviceId, 'sus-kept', 4);
      assertError(await service.request('POST', `/super/accounts/${other.accountId}/suspend`, { token: other.token, body: { reason: 'self' } }), 403, 'IOTB_AUTH_FORBIDDEN', 'an account token');
      assert.equal(kept.client.connected, true);
    });
  });
}
