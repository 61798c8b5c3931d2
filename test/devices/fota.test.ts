/**
 * FOTA over LwM2M object 5 end to end (issue "File repository and firmware over the air"): the real service,
 * files uploaded over HTTP, the project's LwM2M simulator with its Firmware Update object (tools/lwm2m-firmware.ts)
 * on real UDP sockets, pushing block-wise and pulling over CoAP and HTTP download links. Every device's FOTA
 * ends in exactly one `lwm2m-fota-complete` event.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SimulatedClientOptions } from '../../tools/lwm2m-client.js';
import { firmwarePackage, type FirmwareOptions } from '../../tools/lwm2m-firmware.js';
import { waitFor } from '../helpers/devices.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

for (const dialect of DIALECTS) {
  describe(`FOTA over LwM2M object 5 (${dialect.name})`, { skip: dialect.skip, timeout: 180_000 }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let serviceId: string;
    const devices = new SimulatedDevices(() => service.ports.coap!);
    let n = 0;

    const upload = async (name: string, bytes: Buffer, token = tenant.token) => {
      const response = await fetch(`${service.baseUrl}/file/${encodeURIComponent(name)}/content`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' },
        body: bytes,
      });
      assert.ok(response.status === 201 || response.status === 200, `upload ${name}: ${response.status} ${await response.text()}`);
    };
    /** A registered simulated device with a Firmware Update object, and its endpoint. */
    const device = async (firmware: FirmwareOptions = {}, extra: Partial<SimulatedClientOptions> = {}, tags: string[] = []) => {
      const key = `fw-${++n}`;
      const endpoint = await createEndpoint(service, tenant.token, { key, serviceId, tags });
      const client = await devices.start(key, { transmission: { ackTimeout: 500, maxRetransmit: 2 }, firmware: { version: '1.0.0', updateMs: 50, ...firmware }, ...extra });
      assert.equal(await client.register(), '2.01');
      return { client, endpoint, fw: client.firmware! };
    };
    const completions = async (endpointId: string) => {
      const found = await service.request('GET', `/history?endpoint=${endpointId}&type=lwm2m-fota-complete&limit=50`, { token: tenant.token });
      assert.equal(found.status, 200, JSON.stringify(found.body));
      return (found.body.items as { type: string; data: any }[]).filter((e) => e.type === 'lwm2m-fota-complete').map((e) => e.data);
    };
    /** The one completion event of the endpoint (waits for it, then checks no second one follows). */
    const completion = async (endpointId: string, timeoutMs = 20_000) => {
      const [event] = await waitFor(async () => {
        const found = await completions(endpointId);
        return found.length > 0 ? found : undefined;
      }, `lwm2m-fota-complete of ${endpointId}`, timeoutMs);
      await sleep(300);
      assert.equal((await completions(endpointId)).length, 1, 'exactly one lwm2m-fota-complete');
      return event;
    };
    const fota = (ref: string, body: Record<string, unknown>, token = tenant.token) => service.request('POST', `/endpoints/${ref}/fota`, { token, body });

    before(async () => {
      service = await startService(dialect.name, { publicHost: '127.0.0.1', lwm2mAwakeMs: 300 });
      tenant = await createAccount(service, 'fota-fleet');
      other = await createAccount(service, 'fota-other');
      serviceId = await createService(service, tenant.token, { name: 'lwm2m', type: 'lwm2m' });
    });
    after(async () => {
      await devices.stopAll();
      await service?.stop();
    });

    it('push: writes the package block-wise, executes Update, and reads the new version after the re-registration', async () => {
      const image = firmwarePackage(20_000, { version: '2.0.0' });
      await upload('firmware/app-2.0.0.bin', image);
      const { endpoint, fw } = await device({ delivery: 1 });
      const accepted = await fota(endpoint.id, { file: 'firmware/app-2.0.0.bin', mode: 'push', timeout: 20 });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      assert.equal(accepted.body.state, 'running');
      assert.equal(accepted.body.counts.total, 1);
      const event = await completion(endpoint.id);
      assert.equal(event.outcome, 'success', JSON.stringify(event));
      assert.deepEqual([event.jobId, event.mode, event.previousVersion, event.version, event.updateResult], [accepted.body.id, 'push', '1.0.0', '2.0.0', 1]);
      assert.equal(event.file.sha256, sha256(image));
      assert.equal(fw.packages.length, 1);
      assert.equal(fw.packages[0]!.via, 'push');
      assert.equal(fw.packages[0]!.sha256, sha256(image));
      assert.ok(fw.packages[0]!.blocks.length > 1, 'sent in Block1 blocks');
      assert.deepEqual(fw.registrations, ['2.01'], 'the device came back');

      const status = await service.request('GET', `/endpoints/${endpoint.id}/fota`, { token: tenant.token });
      assert.equal(status.status, 200);
      assert.deepEqual([status.body.device.step, status.body.device.outcome, status.body.device.version], ['done', 'success', '2.0.0']);
      assert.equal(status.body.job.state, 'finished');
      assert.deepEqual(status.body.job.counts, { total: 1, pending: 0, running: 0, success: 1, failed: 0, aborted: 0 });
    });

    it('pull over CoAP: the Package URI is a download link with the port and the file name when asked', async () => {
      const image = firmwarePackage(6000, { version: '3.1.0' });
      await upload('app-3.1.0.bin', image);
      const { endpoint, fw } = await device({ delivery: 0, protocols: [0] });
      const accepted = await fota(`k.${endpoint.key}`, { file: 'app-3.1.0.bin', mode: 'pull', appendFileName: true, includePortInUrl: true, timeout: 20 });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const event = await completion(endpoint.id);
      assert.equal(event.outcome, 'success', JSON.stringify(event));
      assert.equal(event.version, '3.1.0');
      const [received] = fw.packages;
      assert.equal(received?.via, 'coap');
      assert.equal(received?.sha256, sha256(image));
      assert.match(received.uri!, new RegExp(`^coap://127\\.0\\.0\\.1:${service.ports.coap}/download/[A-Za-z0-9_-]+/app-3\\.1\\.0\\.bin$`));
    });

    it('pull over CoAP of a package of 400 blocks: a fast downloader is paced to the rate limit, not refused', async () => {
      const image = firmwarePackage(400 * 1024, { version: '3.2.0' });
      await upload('big.bin', image);
      const { endpoint, fw } = await device({ delivery: 0, protocols: [0] });
      assert.equal((await fota(endpoint.id, { file: 'big.bin', mode: 'pull', timeout: 30 })).status, 202);
      const event = await completion(endpoint.id, 40_000);
      assert.deepEqual([event.outcome, event.version], ['success', '3.2.0'], JSON.stringify(event));
      assert.equal(fw.packages[0]?.sha256, sha256(image));
    });

    it('pull over HTTP (protocol chosen), auto mode from the Delivery Method', async () => {
      const image = firmwarePackage(9000, { version: '4.0.0' });
      await upload('app-4.0.0.bin', image);
      const { endpoint, fw } = await device({ delivery: 2, protocols: [2] });
      const accepted = await fota(endpoint.id, { file: 'app-4.0.0.bin', protocol: 'http', timeout: 20 });
      assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
      const event = await completion(endpoint.id);
      assert.deepEqual([event.outcome, event.mode, event.version], ['success', 'pull', '4.0.0'], JSON.stringify(event));
      assert.equal(fw.packages[0]?.via, 'http');
      assert.match(fw.packages[0].uri!, new RegExp(`^http://127\\.0\\.0\\.1:${service.ports.http}/download/[A-Za-z0-9_-]+$`));
    });

    it('pull over CoAPS: a device registered over DTLS gets a coaps:// link and fetches it in its PSK session', async () => {
      const image = firmwarePackage(7000, { version: '7.0.0' });
      await upload('secure.bin', image);
      const key = `fw-${++n}`;
      const endpoint = await createEndpoint(service, tenant.token, { key, serviceId });
      const secured = await service.request('PUT', `/endpoints/${endpoint.id}/security`, { token: tenant.token, body: { mode: 'psk', identity: key, key: Buffer.from('sixteen-byte-key').toString('hex') } });
      assert.equal(secured.status, 200, JSON.stringify(secured.body));
      const client = await devices.start(key, {
        server: { address: '127.0.0.1', port: service.ports.coaps! },
        lwm2mVersion: '1.1',
        dtls: { identity: key, key: Buffer.from('sixteen-byte-key') },
        transmission: { ackTimeout: 1000, maxRetransmit: 2 },
        firmware: { version: '1.0.0', updateMs: 50, delivery: 0, protocols: [1] },
      });
      assert.equal(await client.register(), '2.01');
      assert.equal((await fota(endpoint.id, { file: 'secure.bin', timeout: 20 })).status, 202);
      const event = await completion(endpoint.id);
      assert.deepEqual([event.outcome, event.mode, event.version], ['success', 'pull', '7.0.0'], JSON.stringify(event));
      assert.equal(client.firmware!.packages[0]?.via, 'coaps');
      assert.match(client.firmware!.packages[0].uri!, /^coaps:\/\/127\.0\.0\.1:\d+\/download\//);
      assert.equal(client.firmware!.packages[0]?.sha256, sha256(image));
    });

    it('a queue-mode device is updated as it wakes: each step waits for its next update', async () => {
      await upload('sleepy.bin', firmwarePackage(3000, { version: '8.0.0' }));
      const { endpoint, client } = await device({}, { lwm2mVersion: '1.1', binding: 'UQ' });
      await sleep(400); // asleep (awake 300 ms after it was heard from)
      assert.equal((await fota(endpoint.id, { file: 'sleepy.bin', mode: 'push', timeout: 20 })).status, 202);
      await sleep(300);
      assert.equal(client.firmware!.packages.length, 0, 'nothing sent while it sleeps');
      // The device wakes now and then (a registration update), as a sleepy tracker does.
      let done = false;
      const wakes = (async () => {
        while (!done) {
          await client.update().catch(() => undefined);
          await sleep(250);
        }
      })();
      const event = await completion(endpoint.id, 30_000);
      done = true;
      await wakes;
      assert.deepEqual([event.outcome, event.version], ['success', '8.0.0'], JSON.stringify(event));
    });

    it('lwm2m.firmwareUpdate starts a FOTA from a script, in the trigger\'s account only', async () => {
      await upload('script.bin', firmwarePackage(2500, { version: '6.0.0' }));
      const { endpoint } = await device();
      const result = await runScript(service, tenant.token, `
        const job = lwm2m.firmwareUpdate(null, 'script.bin', { mode: 'push', timeout: 20 });
        log(job.state, job.counts.total, job.file.name);
        try { lwm2m.firmwareUpdate(null, 'script.bin', { mode: 'sideways' }); } catch (e) { log(e.message); }
      `, { endpoint: endpoint.id });
      assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
      assert.deepEqual(result.logs, ['running 1 script.bin', 'lwm2m.firmwareUpdate: mode is push, pull or auto']);
      assert.deepEqual([(await completion(endpoint.id)).outcome], ['success']);
      // Another tenant's script naming this endpoint: not found, and nothing started.
      const foreign = await runScript(service, other.token, `lwm2m.firmwareUpdate('${endpoint.id}', 'script.bin');`);
      assert.equal(foreign.status, 'failed');
      assert.match(foreign.error ?? '', /IOTB_ENDPOINT_NOT_FOUND/);
      assert.equal((await completions(endpoint.id)).length, 1);
    });

    it('a failed update ends failed with the Update Result and the step', async () => {
      await upload('bad.bin', firmwarePackage(3000));
      const { endpoint } = await device({ outcome: 'fail' });
      assert.equal((await fota(endpoint.id, { file: 'bad.bin', mode: 'push', timeout: 20 })).status, 202);
      const event = await completion(endpoint.id);
      assert.deepEqual([event.outcome, event.step, event.updateResult, event.updateResultText], ['failed', 'updating', 8, 'firmware update failed'], JSON.stringify(event));
    });

    it('an integrity failure (Update Result 5) ends failed', async () => {
      await upload('corrupt.bin', firmwarePackage(3000));
      const { endpoint } = await device({ expectedSha256: '00'.repeat(32) });
      assert.equal((await fota(endpoint.id, { file: 'corrupt.bin', mode: 'push', timeout: 20 })).status, 202);
      const event = await completion(endpoint.id);
      assert.deepEqual([event.outcome, event.updateResult], ['failed', 5], JSON.stringify(event));
    });

    it('a device that never comes back ends aborted when the step times out', async () => {
      await upload('brick.bin', firmwarePackage(3000));
      const { endpoint } = await device({ outcome: 'never-return' });
      assert.equal((await fota(endpoint.id, { file: 'brick.bin', mode: 'push', timeout: 3 })).status, 202);
      const event = await completion(endpoint.id, 30_000);
      assert.equal(event.outcome, 'aborted', JSON.stringify(event));
      assert.equal(event.step, 'updating');
      assert.match(event.reason, /timed out/);
    });

    it('a campaign by tag keeps to its concurrency; a cancelled one ends every device with one event', async () => {
      await upload('fleet.bin', firmwarePackage(4000, { version: '5.0.0' }));
      const fleet = await Promise.all([1, 2, 3].map(() => device({}, {}, ['fleet-a'])));
      const job = await service.request('POST', '/fota/jobs', { token: tenant.token, body: { file: 'fleet.bin', tags: ['fleet-a'], mode: 'push', concurrency: 2, timeout: 20 } });
      assert.equal(job.status, 202, JSON.stringify(job.body));
      assert.equal(job.body.counts.total, 3);
      for (const { endpoint } of fleet) assert.equal((await completion(endpoint.id)).outcome, 'success');
      const done = await service.request('GET', `/fota/jobs/${job.body.id}`, { token: tenant.token });
      assert.deepEqual([done.body.state, done.body.counts.success], ['finished', 3]);
      const listed = await service.request('GET', `/fota/jobs/${job.body.id}/devices`, { token: tenant.token });
      assert.equal(listed.body.total, 3);
      assert.ok(listed.body.items.every((d: any) => d.version === '5.0.0'));

      // Slow installs, one at a time: cancel while the first installs and two wait.
      const slow = await Promise.all([1, 2, 3].map(() => device({ updateMs: 4000 }, {}, ['fleet-b'])));
      const cancelled = await service.request('POST', '/fota/jobs', { token: tenant.token, body: { file: 'fleet.bin', tags: ['fleet-b'], mode: 'push', concurrency: 1, timeout: 20 } });
      assert.equal(cancelled.status, 202);
      await waitFor(async () => (slow[0]!.fw.state === 3 ? true : undefined), 'the first device installing', 10_000);
      const stop = await service.request('POST', `/fota/jobs/${cancelled.body.id}/cancel`, { token: tenant.token });
      assert.equal(stop.status, 200, JSON.stringify(stop.body));
      assert.equal(stop.body.state, 'cancelled');
      assert.equal(stop.body.counts.aborted, 3);
      for (const { endpoint } of slow) {
        const event = await completion(endpoint.id);
        assert.equal(event.outcome, 'aborted');
        assert.match(event.reason, /cancelled/);
      }
      assert.equal(slow[1]!.fw.packages.length, 0, 'devices not started got nothing');
    });

    it('cancelling a campaign whose device never registered answers at once, and the device gets nothing later', async () => {
      await upload('absent.bin', firmwarePackage(2000, { version: '6.0.0' }));
      const key = `fw-absent-${++n}`;
      const endpoint = await createEndpoint(service, tenant.token, { key, serviceId, tags: ['absent'] });
      const job = await service.request('POST', '/fota/jobs', { token: tenant.token, body: { file: 'absent.bin', tags: ['absent'], mode: 'push', timeout: 60 } });
      assert.equal(job.status, 202, JSON.stringify(job.body));
      await waitFor(async () => {
        const devices = await service.request('GET', `/fota/jobs/${job.body.id}/devices`, { token: tenant.token });
        return devices.body.items[0]?.step === 'preparing' ? true : undefined;
      }, 'the device under way (its first request waiting in the queue)', 10_000);
      // Its requests wait for a registration for up to the step timeout (60 s): the cancel must not (it did).
      const asked = Date.now();
      const stop = await service.request('POST', `/fota/jobs/${job.body.id}/cancel`, { token: tenant.token });
      assert.ok(Date.now() - asked < 30_000, 'the cancel answered before the step timeout, not after it');
      assert.equal(stop.status, 200, JSON.stringify(stop.body));
      assert.deepEqual([stop.body.state, stop.body.counts.aborted], ['cancelled', 1]);
      assert.match((await completion(endpoint.id)).reason, /cancelled/);
      // The withdrawn requests are not sent when the device turns up.
      const client = await devices.start(key, { transmission: { ackTimeout: 500, maxRetransmit: 2 }, firmware: { version: '1.0.0', updateMs: 50 } });
      assert.equal(await client.register(), '2.01');
      await sleep(1000);
      assert.equal(client.firmware!.packages.length, 0, 'no package after the cancel');
    });

    it('is scoped to the account: another tenant sees no job, endpoint or file of this one', async () => {
      await upload('mine.bin', firmwarePackage(2000));
      const { endpoint } = await device();
      const job = await fota(endpoint.id, { file: 'mine.bin', mode: 'push', timeout: 20 });
      assert.equal(job.status, 202);
      assertError(await service.request('GET', `/fota/jobs/${job.body.id}`, { token: other.token }), 404, 'IOTB_FOTA_JOB_NOT_FOUND', 'job of another tenant');
      assertError(await service.request('POST', `/fota/jobs/${job.body.id}/cancel`, { token: other.token }), 404, 'IOTB_FOTA_JOB_NOT_FOUND', 'cancel of another tenant');
      assertError(await service.request('GET', `/fota/jobs/${job.body.id}/devices`, { token: other.token }), 404, 'IOTB_FOTA_JOB_NOT_FOUND', 'devices of another tenant');
      assertError(await fota(endpoint.id, { file: 'mine.bin' }, other.token), 404, 'IOTB_ENDPOINT_NOT_FOUND', 'FOTA of another tenant\'s endpoint');
      assertError(await service.request('GET', `/endpoints/${endpoint.id}/fota`, { token: other.token }), 404, 'IOTB_ENDPOINT_NOT_FOUND', 'status of another tenant\'s endpoint');
      const list = await service.request('GET', '/fota/jobs', { token: other.token });
      assert.deepEqual([list.status, list.body.total], [200, 0]);
      // Its own endpoint with this tenant's file name: the file is not found in its account.
      const otherService = await createService(service, other.token, { name: 'lwm2m', type: 'lwm2m' });
      const own = await createEndpoint(service, other.token, { key: 'theirs', serviceId: otherService });
      assertError(await fota(own.id, { file: 'mine.bin', mode: 'push' }, other.token), 404, 'IOTB_FILE_NOT_FOUND', "another tenant's file");
      await completion(endpoint.id);
    });

    it('refuses bad input with the one error body, and a second FOTA of a busy device', async () => {
      await upload('input.bin', firmwarePackage(2000));
      const { endpoint } = await device({ updateMs: 3000 });
      assertError(await fota(endpoint.id, { file: 'input.bin', mode: 'sideways' }), 400, 'IOTB_REQUEST_VALIDATION', 'bad mode');
      assertError(await fota(endpoint.id, { file: 'input.bin', timeout: 0 }), 400, 'IOTB_REQUEST_VALIDATION', 'timeout 0');
      assertError(await fota(endpoint.id, { file: 'input.bin', extra: 1 }), 400, 'IOTB_REQUEST_VALIDATION', 'unknown field');
      assertError(await fota(endpoint.id, {}), 400, 'IOTB_REQUEST_VALIDATION', 'no file');
      assertError(await fota(endpoint.id, { file: 'no-such.bin' }), 404, 'IOTB_FILE_NOT_FOUND', 'unknown file');
      assertError(await fota('k.nobody', { file: 'input.bin' }), 404, 'IOTB_ENDPOINT_NOT_FOUND', 'unknown endpoint');
      assertError(await service.request('POST', '/fota/jobs', { token: tenant.token, body: { file: 'input.bin' } }), 400, 'IOTB_REQUEST_VALIDATION', 'no selection');
      assertError(await service.request('POST', '/fota/jobs', { token: tenant.token, body: { file: 'input.bin', tags: ['nobody-has-this'] } }), 400, 'IOTB_REQUEST_VALIDATION', 'empty selection');
      assertError(await service.request('POST', '/fota/jobs', { token: tenant.token, body: { file: 'input.bin', tags: ['x'], concurrency: 0 } }), 400, 'IOTB_REQUEST_VALIDATION', 'concurrency 0');
      assertError(await service.request('GET', '/fota/jobs/not-a-job', { token: tenant.token }), 404, 'IOTB_FOTA_JOB_NOT_FOUND', 'unknown job');
      assertError(await service.request('GET', `/endpoints/${endpoint.id}/fota`, { token: tenant.token }), 404, 'IOTB_FOTA_JOB_NOT_FOUND', 'no FOTA yet');
      assert.equal((await fota(endpoint.id, { file: 'input.bin', mode: 'push', timeout: 20 })).status, 202);
      assertError(await fota(endpoint.id, { file: 'input.bin', mode: 'push' }), 409, 'IOTB_FOTA_DEVICE_BUSY', 'a second FOTA at once');
      assert.equal((await completion(endpoint.id)).outcome, 'success');
    });
  });
}

/** Without a public host, pulling is refused up front (push still works). */
describe('FOTA without IOTBRIDGE_PUBLIC_HOST', () => {
  let service: TestService;
  before(async () => {
    service = await startService('sqlite');
  });
  after(() => service?.stop());

  it('answers 422 IOTB_FOTA_NO_PUBLIC_HOST for pull and auto', async () => {
    const tenant = await createAccount(service, 'no-host');
    const serviceId = await createService(service, tenant.token, { name: 'lwm2m', type: 'lwm2m' });
    const endpoint = await createEndpoint(service, tenant.token, { key: 'dev', serviceId });
    const put = await fetch(`${service.baseUrl}/file/x.bin/content`, { method: 'PUT', headers: { authorization: `Bearer ${tenant.token}`, 'content-type': 'application/octet-stream' }, body: Buffer.alloc(100) });
    assert.ok(put.status < 300);
    for (const mode of ['pull', 'auto']) {
      assertError(await service.request('POST', `/endpoints/${endpoint.id}/fota`, { token: tenant.token, body: { file: 'x.bin', mode } }), 422, 'IOTB_FOTA_NO_PUBLIC_HOST', mode);
    }
  });
});
