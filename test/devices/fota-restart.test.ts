/**
 * FOTA jobs survive kill -9 (issue "File repository and firmware over the air": "Survive a restart (resume or
 * fail each device clearly; never leave a device mid-update unnoticed)"). A spawned service is killed with
 * SIGKILL while one device installs and another waits its turn; started again on the same data and port, it
 * takes the job up: the installing device is followed to its re-registration, the waiting one is updated, and
 * each ends in exactly one lwm2m-fota-complete.
 */
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SimulatedClient } from '../../tools/lwm2m-client.js';
import { firmwarePackage } from '../../tools/lwm2m-firmware.js';
import { until, waitFor } from '../helpers/devices.js';
import { FuzzService, fuzzAccount, fuzzEndpoint, fuzzService } from '../helpers/fuzz.js';
import { DIALECTS, throwAwayPostgres } from '../helpers/service.js';

async function freeUdpPort(): Promise<number> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}

for (const dialect of DIALECTS) {
  describe(`FOTA across kill -9 (${dialect.name})`, { skip: dialect.skip, timeout: 120_000 }, () => {
    let dataDir: string;
    let database: { url: string; drop: () => Promise<void> } | undefined;
    let coapPort: number;
    let service: FuzzService;
    const clients: SimulatedClient[] = [];
    const env = () => ({
      IOTBRIDGE_DATA_DIR: dataDir,
      IOTBRIDGE_COAP_PORT: String(coapPort),
      IOTBRIDGE_PUBLIC_HOST: '127.0.0.1',
      ...(database && { IOTBRIDGE_DATABASE_URL: database.url }),
    });

    before(async () => {
      dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-fota-restart-'));
      if (dialect.name === 'postgres') database = await throwAwayPostgres();
      coapPort = await freeUdpPort();
      service = await FuzzService.start(env());
    });
    after(async () => {
      for (const client of clients) await client.stop();
      await service?.stop();
      await rm(dataDir, { recursive: true, force: true });
      await database?.drop();
    });

    it('takes a running job up after the crash: the installing device is followed, the waiting one updated', async () => {
      const { token } = await fuzzAccount(service, 'fota-restart');
      const serviceId = await fuzzService(service, token, { name: 'lwm2m', type: 'lwm2m' });
      const image = firmwarePackage(5000, { version: '9.0.0' });
      const put = await service.request('PUT', '/file/restart.bin/content', { token, body: image, headers: { 'content-type': 'application/octet-stream' } });
      assert.ok(put.status === 201, put.text);
      const devices: SimulatedClient[] = [];
      for (const key of ['first', 'second']) {
        await fuzzEndpoint(service, token, { key, serviceId, tags: ['restart'] });
        // Installing takes 4 s: long enough for the service to be killed and started again meanwhile.
        const client = new SimulatedClient({ server: { address: '127.0.0.1', port: coapPort }, endpointName: key, lifetime: 300, transmission: { ackTimeout: 500, maxRetransmit: 4 }, firmware: { version: '1.0.0', updateMs: 4000 } });
        await client.start();
        clients.push(client);
        assert.equal(await client.register(), '2.01');
        devices.push(client);
      }
      const job = await service.request('POST', '/fota/jobs', { token, body: { file: 'restart.bin', tags: ['restart'], mode: 'push', concurrency: 1, timeout: 30 } });
      assert.equal(job.status, 202, job.text);
      await waitFor(async () => (devices[0]!.firmware!.state === 3 ? true : undefined), 'the first device installing', 15_000);

      service.child.kill('SIGKILL');
      await new Promise((resolve) => service.child.once('exit', resolve));
      service = await FuzzService.start(env());
      assert.equal(service.ports.coap, coapPort);

      const completions = async () => {
        const found = await service.request('GET', '/history?type=lwm2m-fota-complete&limit=50', { token });
        return (found.json.items as { endpointId: string; data: { outcome: string; version: string; jobId: string } }[]).filter((e) => (e as unknown as { type: string }).type === 'lwm2m-fota-complete');
      };
      await until(async () => (await completions()).length >= 2, 'both devices done', 60_000);
      const events = await completions();
      assert.equal(events.length, 2, 'one event per device');
      assert.ok(events.every((e) => e.data.outcome === 'success' && e.data.version === '9.0.0' && e.data.jobId === job.json.id), JSON.stringify(events.map((e) => e.data)));
      const done = await service.request('GET', `/fota/jobs/${job.json.id}`, { token });
      assert.equal(done.json.state, 'finished');
      assert.equal(done.json.counts.success, 2);
      assert.equal(devices[1]!.firmware!.packages.length, 1, 'the device waiting its turn was updated after the restart');
    });
  });
}
