import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { history } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

const SECRET_A = 'a-webhook-secret-0123456789';
const SECRET_B = 'b-webhook-secret-0123456789';

/** A ChirpStack v4 HTTP integration `up` event as ChirpStack marshals it (integration.proto, JSON mapping). */
function chirpStackUp(devEui: string, overrides: Record<string, unknown> = {}) {
  return {
    deduplicationId: '3ac7e3c4-4401-4b8d-9386-a5c902f9202d',
    time: '2026-11-22T09:34:15.775023242+00:00',
    deviceInfo: {
      tenantId: '52f14cd4-c6f1-4fbd-8f87-4025e1d49242',
      tenantName: 'ChirpStack',
      applicationId: '17c82e96-be03-4f38-aef3-f83d48582d97',
      applicationName: 'Meters',
      deviceProfileId: '14855bf7-d10d-4aee-b618-ebfcb64dc7ad',
      deviceProfileName: 'EU868 class A',
      deviceName: 'meter in the basement',
      devEui,
      deviceClassEnabled: 'CLASS_A',
      tags: { site: 'berlin' },
    },
    devAddr: '00189440',
    adr: true,
    dr: 5,
    fCnt: 42,
    fPort: 10,
    confirmed: false,
    data: Buffer.from('0102ff', 'hex').toString('base64'),
    object: { temperature: 21.5 },
    rxInfo: [
      { gatewayId: '0016c001f153a14c', uplinkId: 4217106255, nsTime: '2026-11-22T09:34:15.7Z', rssi: -101, snr: -3.5, channel: 2, rfChain: 1, location: {}, context: 'E3OWOQ==', metadata: { region_config_id: 'eu868', region_common_name: 'EU868' }, crcStatus: 'CRC_OK' },
      { gatewayId: '0016c001f1500001', uplinkId: 17, gwTime: '2026-11-22T09:34:15.701Z', rssi: -57, snr: 9.25, channel: 2, rfChain: 1, location: { latitude: 52.52, longitude: 13.405, altitude: 40 }, context: 'AAECAw==', crcStatus: 'CRC_OK' },
    ],
    txInfo: { frequency: 868500000, modulation: { lora: { bandwidth: 125000, spreadingFactor: 7, codeRate: 'CR_4_5' } } },
    ...overrides,
  };
}

/** A The Things Stack v3 webhook uplink (`ApplicationUp` with `uplink_message`). */
function ttsUplink(devEui: string, overrides: Record<string, unknown> = {}) {
  return {
    end_device_ids: { device_id: 'eui-' + devEui.toLowerCase(), application_ids: { application_id: 'parking-sensors' }, dev_eui: devEui, join_eui: '0000000000000000', dev_addr: '260B1234' },
    correlation_ids: ['as:up:01HZQ9W5R2', 'gs:uplink:01HZQ9W4ZC'],
    received_at: '2026-11-22T09:40:01.123456789Z',
    uplink_message: {
      session_key_id: 'AYZ2TFuWDQ==',
      f_port: 2,
      f_cnt: 1337,
      frm_payload: Buffer.from('cafe', 'hex').toString('base64'),
      decoded_payload: { occupied: true },
      rx_metadata: [
        { gateway_ids: { gateway_id: 'rooftop-gw', eui: 'B827EBFFFE123456' }, time: '2026-11-22T09:40:00.987Z', timestamp: 2463457000, rssi: -88, channel_rssi: -88, snr: 7.5, location: { latitude: 48.137, longitude: 11.575, altitude: 520, source: 'SOURCE_REGISTRY' }, uplink_token: 'ChIKEAoOcm9vZnRvcC1ndw==', channel_index: 4, received_at: '2026-11-22T09:40:01.0Z' },
      ],
      settings: { data_rate: { lora: { bandwidth: 125000, spreading_factor: 9, coding_rate: '4/5' } }, frequency: '867500000', timestamp: 2463457000 },
      received_at: '2026-11-22T09:40:01.05Z',
      confirmed: true,
      consumed_airtime: '0.205824s',
      network_ids: { net_id: '000013', tenant_id: 'ttn', cluster_id: 'eu1', cluster_address: 'eu1.cloud.thethings.network' },
    },
    ...overrides,
  };
}

/** A stand-in network server: records each request and answers what the test says. */
async function standIn(answer: (request: { method: string; url: string }) => { status: number; body: unknown }) {
  const requests: { method: string; url: string; headers: http.IncomingHttpHeaders; body: unknown }[] = [];
  const server = http.createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      requests.push({ method: request.method!, url: request.url!, headers: request.headers, body: text === '' ? undefined : JSON.parse(text) });
      const { status, body } = answer({ method: request.method!, url: request.url! });
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

for (const dialect of DIALECTS) {
  describe(`LoRa webhooks and downlinks (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let a: TestAccount;
    let b: TestAccount;
    let loraA: string;
    let loraB: string;
    const post = (path: string, body: unknown, secret: string | null = SECRET_A) =>
      service.request('POST', path, { token: null, body, headers: secret === null ? {} : { 'x-webhook-secret': secret } });

    before(async () => {
      // The stand-in network servers listen on 127.0.0.1: the operator allows that address, and only it.
      service = await startService(dialect.name, { outboundAllow: ['127.0.0.1/32'] });
      a = await createAccount(service, 'lora-a');
      b = await createAccount(service, 'lora-b');
      loraA = await createService(service, a.token, { name: 'chirpstack', type: 'lora', options: { webhookSecret: SECRET_A } });
      loraB = await createService(service, b.token, { name: 'tts', type: 'lora', options: { webhookSecret: SECRET_B, autoProvision: true } });
    });
    after(() => service?.stop());

    it('a ChirpStack uplink becomes a LORA Uplink event with counter, port, payload and radio metadata', async () => {
      const meter = await createEndpoint(service, a.token, { key: '0101010101010101', serviceId: loraA });
      const accepted = await post(`/lora/${loraA}/chirpstack?event=up`, chirpStackUp('0101010101010101'));
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      assert.deepEqual(accepted.body, { event: 'LORA Uplink', endpointId: meter.id });
      const [event] = await history(service, a.token, ['LORA Uplink'], meter.id);
      assert.deepEqual(event!.data, {
        network: 'chirpstack',
        time: '2026-11-22T09:34:15.775023242+00:00',
        deviceName: 'meter in the basement',
        applicationId: '17c82e96-be03-4f38-aef3-f83d48582d97',
        id: '3ac7e3c4-4401-4b8d-9386-a5c902f9202d',
        devEui: '0101010101010101',
        devAddr: '00189440',
        fCnt: 42,
        port: 10,
        confirmed: false,
        payload: '0102ff',
        payloadBase64: 'AQL/',
        decoded: { temperature: 21.5 },
        dr: 5,
        frequency: 868500000,
        spreadingFactor: 7,
        bandwidth: 125000,
        rssi: -57,
        snr: 9.25,
        gateways: [
          { id: '0016c001f1500001', rssi: -57, snr: 9.25, time: '2026-11-22T09:34:15.701Z', location: { latitude: 52.52, longitude: 13.405, altitude: 40 } },
          { id: '0016c001f153a14c', rssi: -101, snr: -3.5, time: null, location: null },
        ],
      });
      const stored = (await service.request('GET', `/endpoints/${meter.id}`, { token: a.token })).body;
      assert.equal(stored.state, 'connected');
      assert.deepEqual(stored.statusDetails, { remoteAddr: '0016c001f1500001', devAddr: '00189440', loraApplicationId: '17c82e96-be03-4f38-aef3-f83d48582d97' });
      assert.deepEqual((await history(service, a.token, ['on-connect'], meter.id)).map((e) => e.data), [{ protocol: 'lora', remoteAddr: '0016c001f1500001' }]);
    });

    it('ChirpStack join, ack, txack and status events; log events are accepted and ignored', async () => {
      const valve = await createEndpoint(service, a.token, { key: '0202020202020202', serviceId: loraA });
      const deviceInfo = chirpStackUp('0202020202020202').deviceInfo;
      const time = '2026-11-22T10:00:00Z';
      const calls: [string, Record<string, unknown>, string | null][] = [
        ['join', { deduplicationId: 'c9dbe358-2578-4fb7-b295-66b44edc45a6', time, deviceInfo, devAddr: '01fa3b2c' }, 'LORA Join'],
        ['ack', { deduplicationId: 'x', time, deviceInfo, queueItemId: '5f1f6a6a-6b6e-4c69-9c1e-2b1e0b1b4d43', acknowledged: true, fCntDown: 7 }, 'LORA Ack'],
        ['txack', { downlinkId: 3190848400, time, deviceInfo, queueItemId: '5f1f6a6a-6b6e-4c69-9c1e-2b1e0b1b4d43', fCntDown: 7, gatewayId: '0016c001f153a14c', txInfo: { frequency: 869525000, power: 14 } }, 'LORA TxAck'],
        ['status', { deduplicationId: 'y', time, deviceInfo, margin: 7, batteryLevel: 87.5 }, 'LORA Status'],
        ['log', { time, deviceInfo, level: 'ERROR', code: 'UPLINK_CODEC', description: 'codec failed' }, null],
      ];
      for (const [event, body, type] of calls) {
        const accepted = await post(`/lora/${loraA}/chirpstack?event=${event}`, body);
        assert.equal(accepted.status, 202, `${event}: ${JSON.stringify(accepted.body)}`);
        assert.equal(accepted.body.event, type);
      }
      const events = await history(service, a.token, ['LORA Join', 'LORA Ack', 'LORA TxAck', 'LORA Status'], valve.id);
      assert.deepEqual(events.map((e) => e.type), ['LORA Join', 'LORA Ack', 'LORA TxAck', 'LORA Status']);
      assert.equal(events[0]!.data.devAddr, '01fa3b2c');
      assert.deepEqual([events[1]!.data.acknowledged, events[1]!.data.fCntDown], [true, 7]);
      assert.equal(events[2]!.data.gatewayId, '0016c001f153a14c');
      assert.deepEqual([events[3]!.data.margin, events[3]!.data.batteryLevel, events[3]!.data.externalPowerSource], [7, 87.5, false]);
      assert.equal((await post(`/lora/${loraA}/chirpstack?event=mystery`, { deviceInfo })).status, 400);
    });

    it('an uplink without receiver metadata is a 400 with a clear error (SPEC Errors 1)', async () => {
      await createEndpoint(service, a.token, { key: '0303030303030303', serviceId: loraA });
      const { rxInfo: _dropped, ...noRx } = chirpStackUp('0303030303030303');
      for (const body of [noRx, { ...noRx, rxInfo: [] }]) {
        const refused = await post(`/lora/${loraA}/chirpstack?event=up`, body);
        assert.equal(refused.status, 400);
        assert.equal(refused.body.error.code, 'IOTB_LORA_RX_INFO_MISSING');
      }
      const tts = ttsUplink('0303030303030303');
      const { rx_metadata: _gone, ...uplink } = tts.uplink_message;
      const refused = await post(`/lora/${loraB}/tts`, { ...tts, uplink_message: uplink }, SECRET_B);
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error.code, 'IOTB_LORA_RX_INFO_MISSING');
      assert.deepEqual(await history(service, a.token, ['LORA Uplink'], 'k.0303030303030303'), []);
    });

    it('webhooks need the service secret: missing, wrong, another service\'s secret or an unknown service answer 401', async () => {
      const body = chirpStackUp('0101010101010101');
      const tokenOnly = await service.request('POST', `/lora/${loraA}/chirpstack?event=up`, { token: a.token, body });
      for (const refused of [
        await post(`/lora/${loraA}/chirpstack?event=up`, body, null),
        await post(`/lora/${loraA}/chirpstack?event=up`, body, 'wrong-secret-0123456789'),
        await post(`/lora/${loraA}/chirpstack?event=up`, body, SECRET_B),
        await post(`/lora/no-such-service/chirpstack?event=up`, body),
        await post(`/lora/${loraA}/tts`, ttsUplink('0101010101010101'), SECRET_B),
        tokenOnly,
      ]) {
        assert.equal(refused.status, 401);
        assert.equal(refused.body.error.code, 'IOTB_LORA_WEBHOOK_UNAUTHORIZED');
      }
      const notLora = await createService(service, a.token, { name: 'udp', type: 'udp', options: { webhookSecret: SECRET_A } });
      assert.equal((await post(`/lora/${notLora}/chirpstack?event=up`, body)).status, 401);
      assert.equal((await history(service, a.token, ['LORA Uplink'], 'k.0101010101010101')).length, 1, 'only the first test\'s uplink');
    });

    it('a webhook reaches only its own service\'s devices: unknown ones are 404 unless the service auto-provisions', async () => {
      const theirs = await createEndpoint(service, b.token, { key: '0404040404040404', serviceId: loraB });
      const unknown = await post(`/lora/${loraA}/chirpstack?event=up`, chirpStackUp('0404040404040404'));
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.error.code, 'IOTB_ENDPOINT_NOT_FOUND');
      assert.deepEqual(await history(service, b.token, ['LORA Uplink', 'on-connect'], theirs.id), [], "B's device with the same DevEUI is untouched");
      assert.equal((await service.request('GET', `/endpoints/${theirs.id}`, { token: b.token })).body.state, 'unavailable');
      // Another service of account A does not count either.
      const other = await createService(service, a.token, { name: 'other lora', type: 'lora', options: { webhookSecret: SECRET_A } });
      await createEndpoint(service, a.token, { key: '0505050505050505', serviceId: other });
      assert.equal((await post(`/lora/${loraA}/chirpstack?event=up`, chirpStackUp('0505050505050505'))).status, 404);
    });

    it('a TTS uplink (upper-case DevEUI) auto-provisions the device keyed by the lower-case DevEUI', async () => {
      const accepted = await post(`/lora/${loraB}/tts`, ttsUplink('70B3D57ED005E2A1'), SECRET_B);
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const endpoint = (await service.request('GET', '/endpoints/k.70b3d57ed005e2a1', { token: b.token })).body;
      assert.equal(endpoint.serviceId, loraB);
      assert.deepEqual(endpoint.statusDetails, { remoteAddr: 'rooftop-gw', devAddr: '260B1234', loraApplicationId: 'parking-sensors', loraDeviceId: 'eui-70b3d57ed005e2a1' });
      const types = (await history(service, b.token, ['on-create', 'on-connect', 'LORA Uplink'], endpoint.id)).map((e) => e.type);
      assert.deepEqual(types, ['on-create', 'on-connect', 'LORA Uplink']);
      const [uplink] = await history(service, b.token, ['LORA Uplink'], endpoint.id);
      assert.deepEqual(
        [uplink!.data.network, uplink!.data.fCnt, uplink!.data.port, uplink!.data.payload, uplink!.data.confirmed, uplink!.data.frequency, uplink!.data.spreadingFactor, uplink!.data.rssi, uplink!.data.snr, uplink!.data.decoded],
        ['tts', 1337, 2, 'cafe', true, 867500000, 9, -88, 7.5, { occupied: true }],
      );
      assert.equal((await service.request('GET', '/endpoints/k.70b3d57ed005e2a1', { token: a.token })).status, 404, 'invisible to account A');

      const join = await post(`/lora/${loraB}/tts`, { end_device_ids: ttsUplink('70B3D57ED005E2A1').end_device_ids, received_at: '2026-11-22T09:39:00Z', join_accept: { session_key_id: 'AYZ2TFuWDQ==', received_at: '2026-11-22T09:39:00Z' } }, SECRET_B);
      assert.deepEqual(join.body, { event: 'LORA Join', endpointId: endpoint.id });
      const queued = await post(`/lora/${loraB}/tts`, { end_device_ids: ttsUplink('70B3D57ED005E2A1').end_device_ids, downlink_queued: { f_port: 1 } }, SECRET_B);
      assert.deepEqual(queued.body, { event: null });
    });

    it('lora.downlink enqueues through ChirpStack exactly as its REST API expects; failures reach the script', async () => {
      const network = await standIn(({ url }) => (url.includes('0707070707070707') ? { status: 404, body: { code: 5, message: 'Object does not exist' } } : { status: 200, body: { id: '8d2b6a2b-3a3e-4c66-9f54-9c4a0f6a1b2c' } }));
      try {
        const withApi = await createService(service, a.token, {
          name: 'chirpstack downlinks',
          type: 'lora',
          options: { webhookSecret: SECRET_A, networkServer: 'chirpstack', apiUrl: `${network.url}/`, apiKey: 'eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.cs-key' },
        });
        const valve = await createEndpoint(service, a.token, { key: '0606060606060606', serviceId: withApi });
        await createEndpoint(service, a.token, { key: '0707070707070707', serviceId: withApi });
        const result = await runScript(service, a.token, `log(JSON.stringify(lora.downlink('k.0606060606060606', '01ff', { port: 10, confirmed: true })));`);
        assert.equal(result.status, 'success', result.error ?? '');
        assert.deepEqual(result.logs, ['{"network":"chirpstack","id":"8d2b6a2b-3a3e-4c66-9f54-9c4a0f6a1b2c"}']);
        const [request] = network.requests;
        assert.equal(request!.method, 'POST');
        assert.equal(request!.url, '/api/devices/0606060606060606/queue');
        assert.equal(request!.headers['grpc-metadata-authorization'], 'Bearer eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.cs-key');
        assert.equal(request!.headers['content-type'], 'application/json');
        assert.deepEqual(request!.body, { queueItem: { devEui: '0606060606060606', confirmed: true, fPort: 10, data: 'Af8=' } });

        const refused = await runScript(service, a.token, `lora.downlink('k.0707070707070707', '00');`);
        assert.match(refused.error ?? '', /lora\.downlink: The network server answered 404/);
        for (const ref of [valve.id, 'k.0606060606060606']) {
          assert.match((await runScript(service, b.token, `lora.downlink('${ref}', '00');`)).error ?? '', /No such endpoint/, "account B cannot send to A's device");
        }
        assert.match((await runScript(service, a.token, `lora.downlink('k.0101010101010101', '00');`)).error ?? '', /networkServer, apiUrl and apiKey/);
        assert.match((await runScript(service, a.token, `lora.downlink('k.0606060606060606', '00', { port: 0 });`)).error ?? '', /FPort from 1 to 223/);
        assert.equal(network.requests.length, 2, 'only the two valid downlinks reached the network server');
      } finally {
        await network.close();
      }
    });

    it('lora.downlink pushes through a TTS webhook exactly as its API expects, with the device id an uplink told', async () => {
      const network = await standIn(() => ({ status: 200, body: {} }));
      try {
        const replaced = await service.request('PUT', `/services/${loraB}`, {
          token: b.token,
          body: { name: 'tts', type: 'lora', options: { webhookSecret: SECRET_B, autoProvision: true, networkServer: 'tts', apiUrl: network.url, apiKey: 'NNSXS.TTSKEY', ttsWebhookId: 'iot-bridge' } },
        });
        assert.equal(replaced.status, 200, JSON.stringify(replaced.body));
        const result = await runScript(service, b.token, `log(JSON.stringify(lora.downlink('k.70b3d57ed005e2a1', 'vu8=', { port: 15, encoding: 'base64', priority: 'HIGH' })));`);
        assert.equal(result.status, 'success', result.error ?? '');
        assert.deepEqual(result.logs, ['{"network":"tts","id":null}']);
        const [request] = network.requests;
        assert.equal(request!.url, '/api/v3/as/applications/parking-sensors/webhooks/iot-bridge/devices/eui-70b3d57ed005e2a1/down/push');
        assert.equal(request!.headers.authorization, 'Bearer NNSXS.TTSKEY');
        assert.deepEqual(request!.body, { downlinks: [{ f_port: 15, frm_payload: 'vu8=', priority: 'HIGH', confirmed: false }] });
      } finally {
        await network.close();
      }
    });

    it('refuses LoRa options it could not use', async () => {
      const short = await service.request('POST', '/services', { token: a.token, body: { name: 'weak', type: 'lora', options: { webhookSecret: 'short' } } });
      assert.equal(short.status, 400);
      assert.match(short.body.error.message, /webhookSecret/);
      const badUrl = await service.request('POST', '/services', { token: a.token, body: { name: 'x', type: 'lora', options: { apiUrl: 'ftp://x' } } });
      assert.equal(badUrl.status, 400);
    });

    it('refuses an apiUrl at an address that is not public unless the operator allows it (nothing is sent)', async () => {
      // Decided from the URL alone: no connection is attempted to any of these.
      const refused: [string, string][] = [
        ['http://169.254.169.254/latest/meta-data', 'link-local'],
        ['http://10.0.0.5:8080', 'private'],
        ['http://192.168.1.1', 'private'],
        ['http://100.64.0.1', 'shared'],
        ['http://127.0.0.2:8080', 'loopback'],
        ['http://[::1]:8080', 'loopback'],
        ['http://[fd00::1]', 'unique-local'],
        ['http://[::ffff:10.1.2.3]', 'private'],
        ['http://0.0.0.0:8080', 'unspecified'],
        ['http://2130706434:8080', 'loopback'], // 127.0.0.2 written as one number: URL normalises it
      ];
      for (const [apiUrl, reason] of refused) {
        const created = await service.request('POST', '/services', { token: a.token, body: { name: 'ssrf', type: 'lora', options: { networkServer: 'chirpstack', apiUrl, apiKey: 'k' } } });
        assert.equal(created.status, 403, apiUrl);
        assert.equal(created.body.error.code, 'IOTB_OUTBOUND_ADDRESS_REFUSED', apiUrl);
        assert.equal(created.body.error.details.reason, reason, apiUrl);
      }
      const replaced = await service.request('PUT', `/services/${loraA}`, { token: a.token, body: { name: 'chirpstack', type: 'lora', options: { webhookSecret: SECRET_A, apiUrl: 'http://169.254.169.254' } } });
      assert.equal(replaced.status, 403);
      assert.equal(replaced.body.error.code, 'IOTB_OUTBOUND_ADDRESS_REFUSED');
    });
  });
}
