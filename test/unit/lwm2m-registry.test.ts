import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ObjectModel } from '../../src/lwm2m/model.js';
import { DdfError } from '../../src/lwm2m/objects/ddf.js';
import { ObjectLimitError, ObjectRegistry, translatePath, type ObjectModelStore, type StoredObjectModel } from '../../src/lwm2m/objects/registry.js';

/** The store contract in memory: enough to see what the registry writes and reads back. */
class MemoryObjectModelStore implements ObjectModelStore {
  readonly rows = new Map<string, StoredObjectModel>();
  failNext = false;

  async all() {
    return [...this.rows.values()];
  }
  async put(accountId: string, models: readonly ObjectModel[], now: string) {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('disk full');
    }
    for (const model of models) {
      const key = `${accountId}/${model.id}`;
      this.rows.set(key, { accountId, model, createdAt: this.rows.get(key)?.createdAt ?? now, updatedAt: now });
    }
  }
  async delete(accountId: string, objectId: number) {
    return this.rows.delete(`${accountId}/${objectId}`);
  }
}

/** A custom Device (object 3) whose resource 9 is renamed, and a vendor object 33000. */
const CUSTOM = `<LWM2M>
  <Object ObjectType="MODefinition"><Name>Vendor Device</Name><ObjectID>3</ObjectID><ObjectVersion>9.9</ObjectVersion>
    <MultipleInstances>Single</MultipleInstances><Mandatory>Mandatory</Mandatory>
    <Resources><Item ID="9"><Name>Charge</Name><Operations>R</Operations><MultipleInstances>Single</MultipleInstances><Mandatory>Optional</Mandatory><Type>Float</Type></Item></Resources>
  </Object>
  <Object ObjectType="MODefinition"><Name>Valve</Name><ObjectID>33000</ObjectID>
    <MultipleInstances>Multiple</MultipleInstances><Mandatory>Optional</Mandatory>
    <Resources><Item ID="1"><Name>Open</Name><Operations>RW</Operations><MultipleInstances>Single</MultipleInstances><Mandatory>Mandatory</Mandatory><Type>Boolean</Type></Item></Resources>
  </Object>
</LWM2M>`;

describe('object registry', () => {
  it('ships the core OMA objects and the common IPSO objects', () => {
    const registry = new ObjectRegistry();
    const expected = [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 19, 3200, 3201, 3202, 3203, 3300, 3301, 3303, 3304, 3311, 3312, 3313, 3315, 3323, 3336, 3341, 3342, 3347];
    for (const id of expected) assert.ok(registry.object(id), `object ${id} is shipped`);
    assert.deepEqual(registry.list('any').map((entry) => entry.model.id), expected);
    assert.ok(registry.list('any').every((entry) => entry.source === 'shipped'));
    assert.equal(registry.object(3)?.name, 'Device');
    assert.equal(registry.resource(3303, 5700)?.name, 'Sensor Value');
    assert.equal(registry.resource(3303, 5700)?.type, 'float');
    assert.equal(registry.object(4242), undefined);
    assert.equal(registry.resource(3, 4242), undefined);
  });

  it('translates paths to object and resource names', () => {
    const registry = new ObjectRegistry();
    assert.deepEqual(translatePath(registry, '/3/0/9'), { object: 'Device', resource: 'Battery Level' });
    assert.deepEqual(translatePath(registry, '/3/0/7/1'), { object: 'Device', resource: 'Power Source Voltage' });
    assert.deepEqual(translatePath(registry, '/3303/1'), { object: 'Temperature' });
    assert.deepEqual(translatePath(registry, '/3/0/999'), { object: 'Device' });
    assert.deepEqual(translatePath(registry, '/31999/0/1'), {});
    assert.deepEqual(translatePath(registry, '/'), {});
    assert.deepEqual(translatePath(registry, { objectId: 5, instanceId: 0, resourceId: 3 }), { object: 'Firmware Update', resource: 'State' });
    assert.throws(() => translatePath(registry, 'not a path'), RangeError);
    assert.deepEqual(registry.translate('acc', '/1/0/1'), { object: 'LwM2M Server', resource: 'Lifetime' });
  });

  it("lets an account's upload override a shipped object for that account only", async () => {
    const store = new MemoryObjectModelStore();
    const registry = new ObjectRegistry({ store });
    const models = await registry.upload('acc-a', CUSTOM);
    assert.deepEqual(models.map((model) => model.id), [3, 33000]);

    const a = registry.lookupFor('acc-a');
    const b = registry.lookupFor('acc-b');
    assert.equal(a.object(3)?.name, 'Vendor Device');
    assert.equal(a.resource(3, 9)?.name, 'Charge');
    // The override replaces the whole object: resources it does not define are unknown to the account.
    assert.equal(a.resource(3, 0), undefined);
    assert.equal(a.object(33000)?.name, 'Valve');
    assert.equal(a.object(3303)?.name, 'Temperature', 'other shipped objects stay visible');
    assert.equal(b.object(3)?.name, 'Device');
    assert.equal(b.object(33000), undefined);
    assert.equal(registry.object(3)?.name, 'Device', 'the registry itself answers with shipped definitions');
    assert.deepEqual(registry.translate('acc-a', '/3/0/9'), { object: 'Vendor Device', resource: 'Charge' });
    assert.deepEqual(registry.translate('acc-b', '/3/0/9'), { object: 'Device', resource: 'Battery Level' });

    assert.deepEqual(registry.get('acc-a', 3)?.source, 'account');
    assert.deepEqual(registry.get('acc-b', 3)?.source, 'shipped');
    assert.equal(registry.get('acc-b', 33000), undefined);
    const listed = registry.list('acc-a');
    assert.deepEqual(listed.at(-1)?.model.id, 33000);
    assert.equal(listed.filter((entry) => entry.source === 'account').length, 2);
    assert.equal(store.rows.size, 2);
  });

  it('keeps look-ups current after uploads and deletions, and restores the shipped object on delete', async () => {
    const registry = new ObjectRegistry({ store: new MemoryObjectModelStore() });
    const view = registry.lookupFor('acc');
    await registry.upload('acc', CUSTOM);
    assert.equal(view.object(3)?.name, 'Vendor Device');
    assert.equal(registry.hasUpload('acc', 3), true);
    assert.equal(await registry.remove('acc', 3), true);
    assert.equal(view.object(3)?.name, 'Device');
    assert.equal(await registry.remove('acc', 3), false, 'nothing left to remove');
    assert.equal(await registry.remove('acc', 33000), true);
    assert.equal(view.object(33000), undefined);
    assert.equal(registry.isShipped(3), true);
    assert.equal(registry.isShipped(33000), false);
  });

  it('replaces an earlier upload of the same object id and keeps when it was first uploaded', async () => {
    const store = new MemoryObjectModelStore();
    const registry = new ObjectRegistry({ store });
    await registry.upload('acc', CUSTOM);
    const first = store.rows.get('acc/33000')!;
    await new Promise((resolve) => setTimeout(resolve, 5));
    await registry.upload('acc', CUSTOM.replace('<Name>Valve</Name>', '<Name>Valve v2</Name>'));
    assert.equal(registry.lookupFor('acc').object(33000)?.name, 'Valve v2');
    assert.equal(store.rows.get('acc/33000')?.createdAt, first.createdAt);
    assert.notEqual(store.rows.get('acc/33000')?.updatedAt, first.updatedAt);
  });

  it('stores nothing when the document is invalid or the store fails', async () => {
    const store = new MemoryObjectModelStore();
    const registry = new ObjectRegistry({ store });
    await assert.rejects(registry.upload('acc', CUSTOM.replace('<ObjectID>33000</ObjectID>', '<ObjectID>99999</ObjectID>')), DdfError);
    assert.equal(store.rows.size, 0);
    assert.equal(registry.lookupFor('acc').object(3)?.name, 'Device');
    store.failNext = true;
    await assert.rejects(registry.upload('acc', CUSTOM), /disk full/);
    assert.equal(registry.lookupFor('acc').object(3)?.name, 'Device', 'memory follows the store');
  });

  it('limits how many definitions one account may upload, counting replacements once', async () => {
    const store = new MemoryObjectModelStore();
    const registry = new ObjectRegistry({ store, maxUploadsPerAccount: 2 });
    const single = (id: number) =>
      `<LWM2M><Object><Name>O${id}</Name><ObjectID>${id}</ObjectID><MultipleInstances>Single</MultipleInstances><Mandatory>Optional</Mandatory></Object></LWM2M>`;
    await registry.upload('acc', CUSTOM);
    await registry.upload('acc', CUSTOM); // the same two ids again: still two
    await assert.rejects(registry.upload('acc', single(33001)), ObjectLimitError);
    assert.equal(registry.lookupFor('acc').object(33001), undefined);
    assert.equal(store.rows.size, 2);
    await registry.upload('other', single(33001)); // the limit is per account
    await registry.remove('acc', 3);
    await registry.upload('acc', single(33001));
    assert.equal(registry.lookupFor('acc').object(33001)?.name, 'O33001');
  });

  it('loads the uploads of every account from the store at start', async () => {
    const store = new MemoryObjectModelStore();
    await new ObjectRegistry({ store }).upload('acc-a', CUSTOM);
    const restarted = new ObjectRegistry({ store });
    assert.equal(restarted.lookupFor('acc-a').object(3)?.name, 'Device', 'not loaded yet');
    await restarted.load();
    assert.equal(restarted.lookupFor('acc-a').object(3)?.name, 'Vendor Device');
    assert.equal(restarted.lookupFor('acc-b').object(3)?.name, 'Device');
  });

  it('takes other shipped definitions when given', () => {
    const registry = new ObjectRegistry({ shipped: [] });
    assert.equal(registry.object(3), undefined);
    assert.deepEqual(registry.list('acc'), []);
  });
});
