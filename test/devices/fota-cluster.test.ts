// Issue 22, FOTA in a cluster: two nodes on one PostgreSQL database and one Redis. A device registered with node B
// is updated by a job made on node A, which drives the job: each request of the run goes to node B (the node that
// holds the device) and node A sees the device come back after its reboot by asking node B, since B's
// notifications and registration changes do not reach A. Push and pull (from node A's download link); another
// account cannot start or see a job for the device.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { firmwarePackage } from '../../tools/lwm2m-firmware.js';
import { twoNodes } from '../helpers/cluster.js';
import { waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { redisSkip } from '../helpers/redis.js';
import { DIALECTS, type TestService } from '../helpers/service.js';

const postgres = DIALECTS.find((dialect) => dialect.name === 'postgres')!;
const skip = postgres.skip || (await redisSkip());
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('FOTA of a device held by another node (PostgreSQL + Redis)', { skip, timeout: 120_000 }, () => {
  let database: { url: string; drop: () => Promise<void> };
  let nodeA: TestService;
  let nodeB: TestService;
  let tenant: TestAccount;
  let other: TestAccount;
  let serviceId: string;
  const onB = new SimulatedDevices(() => nodeB.ports.coap!);

  const upload = async (name: string, bytes: Buffer) => {
    const response = await fetch(`${nodeA.baseUrl}/file/${encodeURIComponent(name)}/content`, { method: 'PUT', headers: { authorization: `Bearer ${tenant.token}`, 'content-type': 'application/octet-stream' }, body: bytes });
    assert.ok(response.status === 201 || response.status === 200, `upload ${name}: ${response.status}`);
  };
  const completions = async (endpointId: string) => {
    const found = await nodeA.request('GET', `/history?endpoint=${endpointId}&type=lwm2m-fota-complete&limit=50`, { token: tenant.token });
    return (found.body.items as { data: Record<string, unknown> }[]).map((event) => event.data);
  };
  const completion = async (endpointId: string) => {
    const [event] = await waitFor(async () => {
      const found = await completions(endpointId);
      return found.length > 0 ? found : undefined;
    }, `lwm2m-fota-complete of ${endpointId}`, 30_000);
    await sleep(300);
    assert.equal((await completions(endpointId)).length, 1, 'exactly one lwm2m-fota-complete');
    return event!;
  };

  before(async () => {
    ({ database, nodeA, nodeB } = await twoNodes({ publicHost: '127.0.0.1', lwm2mAwakeMs: 300 }));
    tenant = await createAccount(nodeA, 'fota-cluster');
    other = await createAccount(nodeA, 'fota-cluster-other');
    serviceId = await createService(nodeA, tenant.token, { name: 'lwm2m', type: 'lwm2m' });
  });
  after(async () => {
    await onB.stopAll();
    await nodeB?.stop();
    await nodeA?.stop();
    await database?.drop();
  });

  it('push: a job made on node A updates a device registered with node B, which comes back to node B after its reboot', async () => {
    const image = firmwarePackage(12_000, { version: '2.0.0' });
    await upload('fw-2.0.0.bin', image);
    const endpoint = await createEndpoint(nodeA, tenant.token, { key: 'fw-push', serviceId });
    const client = await onB.start('fw-push', { transmission: { ackTimeout: 500, maxRetransmit: 2 }, firmware: { version: '1.0.0', updateMs: 50, delivery: 1 } });
    assert.equal(await client.register(), '2.01');
    // Another account can neither start a job for the device nor see it.
    assert.equal((await nodeA.request('POST', `/endpoints/${endpoint.id as string}/fota`, { token: other.token, body: { file: 'fw-2.0.0.bin', mode: 'push', timeout: 20 } })).status, 404);
    const accepted = await nodeA.request('POST', `/endpoints/${endpoint.id as string}/fota`, { token: tenant.token, body: { file: 'fw-2.0.0.bin', mode: 'push', timeout: 20 } });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const event = await completion(endpoint.id as string);
    assert.equal(event.outcome, 'success', JSON.stringify(event));
    assert.deepEqual([event.previousVersion, event.version, event.updateResult], ['1.0.0', '2.0.0', 1]);
    const fw = client.firmware!;
    assert.equal(fw.packages.length, 1);
    assert.deepEqual([fw.packages[0]!.via, fw.packages[0]!.sha256], ['push', sha256(image)]);
    assert.deepEqual(fw.registrations, ['2.01'], 'the device came back, to node B');
    assert.equal((await nodeB.request('GET', `/endpoints/${endpoint.id as string}/fota`, { token: tenant.token })).body.device.outcome, 'success');
  });

  it('pull over CoAP: the device on node B fetches node A\'s download link; node A follows it to success', async () => {
    const image = firmwarePackage(6000, { version: '3.0.0' });
    await upload('fw-3.0.0.bin', image);
    const endpoint = await createEndpoint(nodeA, tenant.token, { key: 'fw-pull', serviceId });
    const client = await onB.start('fw-pull', { transmission: { ackTimeout: 500, maxRetransmit: 2 }, firmware: { version: '1.0.0', updateMs: 50, delivery: 0, protocols: [0] } });
    assert.equal(await client.register(), '2.01');
    const accepted = await nodeA.request('POST', `/endpoints/k.fw-pull/fota`, { token: tenant.token, body: { file: 'fw-3.0.0.bin', mode: 'pull', includePortInUrl: true, timeout: 20 } });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const event = await completion(endpoint.id as string);
    assert.deepEqual([event.outcome, event.version], ['success', '3.0.0'], JSON.stringify(event));
    const [received] = client.firmware!.packages;
    assert.equal(received?.sha256, sha256(image));
    assert.match(received.uri!, new RegExp(`^coap://127\\.0\\.0\\.1:${nodeA.ports.coap}/download/`));
  });
});
