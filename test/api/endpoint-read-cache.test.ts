// Endpoint rows are kept in memory for reads (src/store/endpoint-read-cache.ts). Every way an endpoint changes must
// show at the next read: an edit, a key renamed, a device heard, a script's update, a bulk edit, a delete of the
// endpoint, its service or its account. Each case reads first (so the row is held), changes, and reads again.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { UdpDevice, waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { runScript } from '../helpers/scripts.js';
import { ADMIN_TOKEN, DIALECTS, startService, type TestService } from '../helpers/service.js';

for (const dialect of DIALECTS) {
  describe(`endpoint reads after every kind of change (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let account: TestAccount;
    let other: TestAccount;
    let udp: string;

    before(async () => {
      service = await startService(dialect.name);
      account = await createAccount(service, 'cached reads');
      other = await createAccount(service, 'cached reads other');
      udp = await createService(service, account.token, { name: 'udp', type: 'udp' });
    });
    after(() => service?.stop());

    const read = (ref: string, token = account.token) => service.request('GET', `/endpoints/${ref}`, { token });

    it('shows an edit at once, by id and by key, and a renamed key moves', async () => {
      const created = await createEndpoint(service, account.token, { key: 'edit-1', serviceId: udp, tags: ['a'] });
      assert.deepEqual((await read(created.id)).body.tags, ['a']);
      assert.deepEqual((await read('k.edit-1')).body.tags, ['a']);
      const patched = await service.request('PATCH', `/endpoints/${created.id}`, { token: account.token, body: { addTags: ['b'], statusDetails: { floor: 3 } } });
      assert.equal(patched.status, 200);
      for (const ref of [created.id, 'k.edit-1']) {
        const again = await read(ref);
        assert.deepEqual(again.body.tags, ['a', 'b'], ref);
        assert.deepEqual(again.body.statusDetails, { floor: 3 }, ref);
        assert.deepEqual(again.body, patched.body, ref);
      }
      const renamed = await service.request('PUT', `/endpoints/${created.id}`, { token: account.token, body: { key: 'edit-1-renamed', serviceId: udp } });
      assert.equal(renamed.status, 200);
      assert.equal((await read('k.edit-1')).status, 404);
      assert.equal((await read('k.edit-1-renamed')).body.id, created.id);
      assert.deepEqual((await read(created.id)).body.tags, []);
    });

    it('shows a device heard: state and last seen at the next read', async () => {
      const meter = await createEndpoint(service, account.token, { key: 'meter-1', serviceId: udp });
      assert.equal((await read('k.meter-1')).body.lastSeenAt, null);
      const device = await UdpDevice.open(service.ports.udp!);
      try {
        await device.send('meter-1:21.5C');
        const heard = await waitFor(async () => {
          const now = (await read(meter.id)).body;
          return now.lastSeenAt === null ? undefined : now;
        }, 'the device heard');
        assert.equal(heard.state, 'connected');
        assert.deepEqual((await read('k.meter-1')).body, heard);
        const first = heard.lastSeenAt as string;
        await new Promise((resolve) => setTimeout(resolve, 5));
        await device.send('meter-1:21.6C');
        await waitFor(async () => ((await read('k.meter-1')).body.lastSeenAt !== first ? true : undefined), 'heard again');
      } finally {
        device.close();
      }
    });

    it("shows a script's update and a bulk edit", async () => {
      const lamp = await createEndpoint(service, account.token, { key: 'lamp-1', serviceId: udp, tags: ['lamps'] });
      assert.deepEqual((await read(lamp.id)).body.statusDetails, {});
      const ran = await runScript(service, account.token, `endpoint.update('k.lamp-1', { statusDetails: { on: true } }); log('ok');`);
      assert.equal(ran.status, 'success', `${ran.error} line ${ran.line}`);
      assert.deepEqual((await read(lamp.id)).body.statusDetails, { on: true });
      const bulk = await service.request('PATCH', '/endpoints?tag=lamps', { token: account.token, body: { addTags: ['checked'] } });
      assert.equal(bulk.status, 200, JSON.stringify(bulk.body));
      assert.equal(bulk.body.updated, 1);
      assert.deepEqual((await read('k.lamp-1')).body.tags, ['lamps', 'checked']);
    });

    it('answers 404 after the endpoint, its service or its account is deleted, and finds a new one under the old key', async () => {
      const gone = await createEndpoint(service, account.token, { key: 'gone-1', serviceId: udp });
      assert.equal((await read('k.gone-1')).status, 200);
      assert.equal((await service.request('DELETE', `/endpoints/${gone.id}`, { token: account.token })).status, 204);
      assert.equal((await read(gone.id)).status, 404);
      assert.equal((await read('k.gone-1')).status, 404);
      const again = await createEndpoint(service, account.token, { key: 'gone-1', serviceId: udp });
      assert.equal((await read('k.gone-1')).body.id, again.id);

      const doomedService = await createService(service, account.token, { name: 'doomed', type: 'udp', options: { port: 0 } });
      const inService = await createEndpoint(service, account.token, { key: 'in-doomed', serviceId: doomedService });
      assert.equal((await read(inService.id)).status, 200);
      const deleted = await service.request('DELETE', `/services/${doomedService}?cascade=true`, { token: account.token });
      assert.equal(deleted.status, 204, JSON.stringify(deleted.body));
      assert.equal((await read(inService.id)).status, 404);
      assert.equal((await read('k.in-doomed')).status, 404);

      const sub = await createAccount(service, 'doomed account');
      const subService = await createService(service, sub.token, { name: 'udp', type: 'udp' });
      const inAccount = await createEndpoint(service, sub.token, { key: 'in-doomed-account', serviceId: subService });
      assert.equal((await read(inAccount.id, sub.token)).status, 200);
      const removed = await service.request('DELETE', `/accounts/${sub.accountId}?cascade=true`, { token: ADMIN_TOKEN });
      assert.equal(removed.status, 204, JSON.stringify(removed.body));
      // The account's tokens went with it; the operator's token acting in the account finds nothing either.
      assert.notEqual((await read(inAccount.id, `${ADMIN_TOKEN}:${sub.accountId}`)).status, 200);
    });

    it('another account reads none of the endpoints the first one read', async () => {
      const mine = await createEndpoint(service, account.token, { key: 'mine-1', serviceId: udp });
      assert.equal((await read(mine.id)).status, 200);
      assert.equal((await read('k.mine-1')).status, 200);
      assert.equal((await read(mine.id, other.token)).status, 404);
      assert.equal((await read('k.mine-1', other.token)).status, 404);
    });

    it('hands out rows nobody can change for the next reader', async () => {
      const held = await createEndpoint(service, account.token, { key: 'frozen-1', serviceId: udp, tags: ['x'], statusDetails: { a: 1 } });
      const scope = { accountId: account.accountId, accountPath: '', principal: {} } as never;
      const first = await service.bridge.domain.endpoints.get(scope, held.id as string);
      assert.throws(() => (first.tags).push('y'), TypeError);
      assert.throws(() => {
        (first.statusDetails as Record<string, unknown>).a = 2;
      }, TypeError);
      assert.deepEqual((await read(held.id)).body.tags, ['x']);
    });
  });
}

describe('IOTBRIDGE_ENDPOINT_CACHE_SIZE', () => {
  it('refuses a size that is not a whole number from 0', async () => {
    await assert.rejects(startService('sqlite', { endpointCacheSize: -1 }), /IOTBRIDGE_ENDPOINT_CACHE_SIZE must be an integer from 0/);
  });
});
