// The contracts of the LwM2M server's state (registrations, observations, held requests: src/lwm2m/
// registration-store.ts, observation-store.ts, queue-store.ts), one set of cases run against every implementation:
// SQLite as the embedded service builds it (registrations through the hot path) and PostgreSQL. There is no
// in-process implementation: one process keeps these in its SQLite file too.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import pg from 'pg';
import type { ObservationStore, StoredObservation } from '../../src/lwm2m/observation-store.js';
import type { DeviceQueueStore, HeldRequest } from '../../src/lwm2m/queue-store.js';
import type { RegistrationStore } from '../../src/lwm2m/registration-store.js';
import type { Registration } from '../../src/lwm2m/registration.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import type { Schema } from '../../src/store/schema.js';
import { sqlStores } from '../../src/store/stores.js';
import { DIALECTS, throwAwayPostgres } from '../helpers/service.js';

interface Lwm2mStores {
  readonly registrations: RegistrationStore;
  readonly observations: ObservationStore;
  readonly queue: DeviceQueueStore;
}

/** One open database and the stores the service makes on it. */
interface Opened {
  readonly stores: Lwm2mStores;
  readonly db: Kysely<Schema>;
  /** Closes the database and opens it again: new store instances on the same data (a restart). */
  reopen(): Promise<Opened>;
  close(): Promise<void>;
}

/** Opens (and migrates) the database of `databaseUrl`, or the SQLite file of `dataDir`. */
async function open(dataDir: string, databaseUrl: string | undefined): Promise<Opened> {
  const database: Database = openDatabase({ dataDir, databaseUrl });
  await migrateToLatest(database);
  const { lwm2m } = sqlStores(database, { dataDir }).devices;
  return {
    stores: { registrations: lwm2m.registrations, observations: lwm2m.observations, queue: lwm2m.queue },
    db: database.db,
    reopen: async () => {
      await database.close();
      return open(dataDir, databaseUrl);
    },
    close: () => database.close(),
  };
}

const implementations = DIALECTS.map((dialect) => ({
  name: dialect.name === 'sqlite' ? 'SQLite (registrations through the hot path)' : 'PostgreSQL',
  // With CI set a missing PostgreSQL fails the file instead of skipping it.
  skip: dialect.skip,
  make: async (dataDir: string): Promise<{ opened: Opened; drop: () => Promise<void> }> => {
    if (dialect.name === 'sqlite') return { opened: await open(dataDir, undefined), drop: async () => {} };
    const { url, drop } = await throwAwayPostgres();
    // Durability against power loss is not what these cases test; it only slows every commit down.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`alter database "${new URL(url).pathname.slice(1)}" set synchronous_commit = off`).finally(() => client.end());
    return { opened: await open(dataDir, url), drop };
  },
}));

/** What a JSON column can say of a value: a key whose value is undefined is the same as an absent one. */
const written = <T>(value: T): T => (value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T));
/** Times as the stores keep them: ISO 8601 to the millisecond. */
const at = (ms: number) => new Date(Date.UTC(2026, 0, 2, 3, 4, 5) + ms).toISOString();

for (const { name, skip, make } of implementations) {
  describe(`LwM2M stores contract: ${name}`, { skip }, () => {
    let dataDir: string;
    let opened: Opened;
    let drop = async () => {};
    let endpoints = 0;
    const stores = () => opened.stores;

    before(async () => {
      dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-lwm2m-contract-'));
      ({ opened, drop } = await make(dataDir));
      for (const account of ['acc-a', 'acc-b']) {
        await opened.db.insertInto('accounts').values({ id: account, name: account, parent_id: null, path: `/${account}/`, external_refs: '{}', created_at: 0, updated_at: 0 }).execute();
        await opened.db.insertInto('services').values({ id: `svc-${account}`, account_id: account, name: 'lwm2m', type: 'lwm2m', options: '{}', created_at: 0, updated_at: 0 }).execute();
      }
    });
    after(async () => {
      await opened?.close();
      await drop();
      await rm(dataDir, { recursive: true, force: true });
    });

    /** A new endpoint of the account (the stores' rows reference endpoints); `key` may repeat across accounts. */
    const endpoint = async (accountId: 'acc-a' | 'acc-b', key = `dev-${endpoints + 1}`): Promise<{ id: string; accountId: string; serviceId: string; key: string }> => {
      const id = `ep-${++endpoints}`;
      const serviceId = `svc-${accountId}`;
      await opened.db.insertInto('endpoints').values({ id, account_id: accountId, service_id: serviceId, key, tags: '{}', status_details: '{}', parameters: '{}', trace: 0, created_at: 0, updated_at: 0 }).execute();
      return { id, accountId, serviceId, key };
    };
    const registration = (of: { id: string; accountId: string; serviceId: string; key: string }, id: string, extra: Partial<Registration> = {}): Registration => ({
      id,
      endpointId: of.id,
      accountId: of.accountId,
      serviceId: of.serviceId,
      endpointName: of.key,
      lifetime: 300,
      lwm2mVersion: '1.1',
      binding: 'UQ',
      sms: undefined,
      queueMode: true,
      objectLinks: [
        { target: '/', attributes: [{ name: 'rt', value: 'oma.lwm2m', quoted: true }, { name: 'ct', value: '110' }] },
        { target: '/3/0', attributes: [{ name: 'ver', value: '1.1' }] },
        { target: '/5', attributes: [{ name: 'obs' }] },
      ],
      rootPath: '/',
      contentFormats: [110, 11542],
      peer: { address: '192.0.2.10', port: 5683 },
      registeredAt: at(0),
      updatedAt: at(0),
      ...extra,
    });
    const observation = (endpointId: string, registrationId: string, token: string, extra: Partial<StoredObservation> = {}): StoredObservation => ({
      token,
      endpointId,
      registrationId,
      operation: 'observe',
      path: '/3303/0/5700',
      paths: undefined,
      format: 11542,
      since: at(10),
      ...extra,
    });
    const held = (of: { id: string; accountId: string }, id: string, createdAt: number, extra: Partial<HeldRequest> = {}): HeldRequest => ({
      id,
      accountId: of.accountId,
      endpointId: of.id,
      kind: 'queued',
      request: { operation: 'read', path: '/3/0/0', timeoutMs: 5000 },
      context: { job: id },
      createdAt,
      expiresAt: createdAt + 60_000,
      ...extra,
    });
    const ids = (items: readonly { id: string }[]) => items.map((item) => item.id);
    const tokens = (items: readonly StoredObservation[]) => items.map((item) => item.token).sort();

    describe('registrations', () => {
      it('reads back every field, by id, by peer and in all()', async () => {
        const [a, b] = [await endpoint('acc-a'), await endpoint('acc-b')];
        const full = registration(a, 'reg-full', {
          sms: '+15550100',
          secure: true,
          identity: 'x509:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
          lwm2mVersion: '1.2',
          binding: 'UT',
          rootPath: '/lwm2m',
          peer: { address: '2001:db8::17', port: 40001 },
          registeredAt: at(1),
          updatedAt: at(2),
        });
        // The least a Register gives: no SMS number, not over DTLS, no content formats.
        const least = registration(b, 'reg-least', { objectLinks: [], contentFormats: [], queueMode: false, binding: 'U', lwm2mVersion: '1.0', peer: { address: '198.51.100.7', port: 5683 } });
        await stores().registrations.add(full);
        await stores().registrations.add(least);
        for (const each of [full, least]) {
          assert.deepEqual(await stores().registrations.get(each.id), written(each));
          assert.deepEqual(await stores().registrations.atPeer(each.peer.address, each.peer.port), written(each));
          assert.deepEqual((await stores().registrations.all()).find((r) => r.id === each.id), written(each));
        }
        assert.equal(await stores().registrations.get('reg-none'), undefined);
      });

      it('an Update changes what the device said and where it is; the old address finds nothing', async () => {
        const a = await endpoint('acc-a');
        const first = registration(a, 'reg-upd', { peer: { address: '192.0.2.20', port: 5683 } });
        await stores().registrations.add(first);
        const updated: Registration = {
          ...first,
          lifetime: 3600,
          binding: 'U',
          queueMode: false,
          sms: '+15550101',
          objectLinks: [{ target: '/3/0', attributes: [] }],
          contentFormats: [112],
          peer: { address: '192.0.2.21', port: 61000 },
          updatedAt: at(60_000),
        };
        await stores().registrations.update(updated);
        assert.deepEqual(await stores().registrations.get('reg-upd'), written(updated));
        assert.equal((await stores().registrations.get('reg-upd'))?.registeredAt, first.registeredAt, 'registeredAt stays');
        assert.deepEqual(await stores().registrations.atPeer('192.0.2.21', 61000), written(updated));
        assert.equal(await stores().registrations.atPeer('192.0.2.20', 5683), undefined);
        // An Update of a registration that is gone changes nothing (and makes none).
        await stores().registrations.update(registration(a, 'reg-gone'));
        assert.equal(await stores().registrations.get('reg-gone'), undefined);
      });

      it("a new registration of an endpoint replaces its old one; another account's endpoint of the same name keeps its own", async () => {
        const [a, b] = [await endpoint('acc-a', 'same-name'), await endpoint('acc-b', 'same-name')];
        await stores().registrations.add(registration(a, 'reg-a1', { peer: { address: '192.0.2.30', port: 1 } }));
        await stores().registrations.add(registration(b, 'reg-b1', { peer: { address: '192.0.2.31', port: 1 } }));
        const again = registration(a, 'reg-a2', { peer: { address: '192.0.2.32', port: 1 }, registeredAt: at(5), updatedAt: at(5) });
        await stores().registrations.add(again);
        assert.equal(await stores().registrations.get('reg-a1'), undefined, 'replaced');
        assert.equal(await stores().registrations.atPeer('192.0.2.30', 1), undefined);
        assert.deepEqual(await stores().registrations.get('reg-a2'), written(again));
        const mine = (await stores().registrations.all()).filter((r) => r.endpointId === a.id || r.endpointId === b.id);
        assert.deepEqual(ids(mine).sort(), ['reg-a2', 'reg-b1']);
        const other = await stores().registrations.get('reg-b1');
        assert.deepEqual([other?.accountId, other?.serviceId, other?.endpointId], ['acc-b', 'svc-acc-b', b.id]);
      });

      it('atPeer: the registration updated last when two share an address (a NAT reused it); only that address and port', async () => {
        const [a, b] = [await endpoint('acc-a'), await endpoint('acc-b')];
        const peer = { address: '203.0.113.5', port: 47000 };
        await stores().registrations.add(registration(a, 'reg-nat-old', { peer, updatedAt: at(100) }));
        await stores().registrations.add(registration(b, 'reg-nat-new', { peer, updatedAt: at(200) }));
        assert.equal((await stores().registrations.atPeer(peer.address, peer.port))?.id, 'reg-nat-new');
        assert.equal(await stores().registrations.atPeer(peer.address, peer.port + 1), undefined);
        assert.equal(await stores().registrations.atPeer('203.0.113.6', peer.port), undefined);
      });

      it('all(heardBy): the registrations of the devices that node heard last, none of the others', async () => {
        const [a, b, c] = [await endpoint('acc-a'), await endpoint('acc-b'), await endpoint('acc-a')];
        for (const [each, id] of [[a, 'reg-heard-a'], [b, 'reg-heard-b'], [c, 'reg-heard-c']] as const) await stores().registrations.add(registration(each, id));
        // What setPresence writes when a node hears a device (migration 0044).
        await opened.db.updateTable('endpoints').set({ heard_node: 'node-x' }).where('id', 'in', [a.id, b.id]).execute();
        await opened.db.updateTable('endpoints').set({ heard_node: 'node-y' }).where('id', '=', c.id).execute();
        assert.deepEqual(ids(await stores().registrations.all('node-x')).sort(), ['reg-heard-a', 'reg-heard-b']);
        assert.deepEqual(ids(await stores().registrations.all('node-y')), ['reg-heard-c']);
        assert.deepEqual(await stores().registrations.all('node-nobody'), []);
        const everyone = ids(await stores().registrations.all());
        assert.ok(['reg-heard-a', 'reg-heard-b', 'reg-heard-c'].every((id) => everyone.includes(id)), 'without heardBy: every node');
      });

      it('remove forgets it everywhere; removing an unknown id is no error', async () => {
        const a = await endpoint('acc-a');
        const gone = registration(a, 'reg-rm', { peer: { address: '192.0.2.40', port: 9 } });
        await stores().registrations.add(gone);
        await stores().registrations.remove('reg-rm');
        assert.equal(await stores().registrations.get('reg-rm'), undefined);
        assert.equal(await stores().registrations.atPeer('192.0.2.40', 9), undefined);
        assert.ok(!ids(await stores().registrations.all()).includes('reg-rm'));
        await stores().registrations.remove('reg-rm');
        await stores().registrations.remove('reg-never');
      });
    });

    describe('observations', () => {
      it('read back every field, by token, by registration and in all()', async () => {
        const a = await endpoint('acc-a');
        const single = observation(a.id, 'reg-obs-1', 'a1b2c3d4');
        const composite = observation(a.id, 'reg-obs-1', '00ff', { operation: 'observeComposite', path: '/', paths: ['/3303/0/5700', '/3/0/9'], format: 112, since: at(20) });
        const elsewhere = observation(a.id, 'reg-obs-0', '0102');
        for (const each of [single, composite, elsewhere]) await stores().observations.add(each);
        for (const each of [single, composite, elsewhere]) {
          assert.deepEqual(written(await stores().observations.get(each.token)), written(each));
          assert.deepEqual(written((await stores().observations.all()).find((o) => o.token === each.token)), written(each));
        }
        assert.deepEqual(tokens(await stores().observations.ofRegistration('reg-obs-1')), ['00ff', 'a1b2c3d4']);
        assert.deepEqual(tokens(await stores().observations.ofRegistration('reg-obs-0')), ['0102']);
        assert.deepEqual(await stores().observations.ofRegistration('reg-obs-none'), []);
        assert.equal(await stores().observations.get('ffff'), undefined);
      });

      it('adding a token again replaces that observation', async () => {
        const a = await endpoint('acc-a');
        await stores().observations.add(observation(a.id, 'reg-obs-2', 'beef'));
        const again = observation(a.id, 'reg-obs-3', 'beef', { path: '/3/0/13', format: 110, since: at(30) });
        await stores().observations.add(again);
        assert.deepEqual(written(await stores().observations.get('beef')), written(again));
        assert.deepEqual(await stores().observations.ofRegistration('reg-obs-2'), []);
        assert.equal((await stores().observations.all()).filter((o) => o.token === 'beef').length, 1);
      });

      it("remove takes one token; removeEndpoint the endpoint's observations and no other's", async () => {
        const [a, b] = [await endpoint('acc-a'), await endpoint('acc-b')];
        for (const token of ['c0', 'c1']) await stores().observations.add(observation(a.id, 'reg-obs-4', token));
        await stores().observations.add(observation(b.id, 'reg-obs-5', 'c2'));
        await stores().observations.remove('c0');
        assert.equal(await stores().observations.get('c0'), undefined);
        assert.equal((await stores().observations.get('c1'))?.token, 'c1');
        await stores().observations.removeEndpoint(a.id);
        assert.deepEqual(await stores().observations.ofRegistration('reg-obs-4'), []);
        assert.equal((await stores().observations.get('c2'))?.endpointId, b.id, "another endpoint's stays");
        await stores().observations.remove('c0');
        await stores().observations.removeEndpoint('ep-never');
      });

      it('removeOrphans: the observations whose registration is gone, counted; the others stay', async () => {
        // Orphans left by earlier cases (their registrations were never added) go first.
        await stores().observations.removeOrphans();
        const a = await endpoint('acc-a');
        await stores().registrations.add(registration(a, 'reg-live'));
        for (const token of ['d0', 'd1']) await stores().observations.add(observation(a.id, 'reg-live', token));
        for (const token of ['d2', 'd3', 'd4']) await stores().observations.add(observation(a.id, 'reg-ended', token));
        assert.equal(await stores().observations.removeOrphans(), 3);
        assert.deepEqual(tokens(await stores().observations.ofRegistration('reg-live')), ['d0', 'd1']);
        assert.deepEqual(await stores().observations.ofRegistration('reg-ended'), []);
        assert.equal(await stores().observations.removeOrphans(), 0);
      });
    });

    describe('held requests', () => {
      it('read back every field, per endpoint and in all()', async () => {
        const [a, b] = [await endpoint('acc-a'), await endpoint('acc-b')];
        const now = Date.now();
        const write = held(a, 'held-w', now, {
          kind: 'proxy',
          request: { operation: 'write', path: '/3/0', values: { '/3/0/14': '+02:00', '/3/0/15': 'Europe/Berlin' }, format: 'senml-cbor', partial: true, timeoutMs: 2000 },
          context: { nested: [1, 'two', { three: null }], flag: true },
          expiresAt: now + 86_400_000,
        });
        const exec = held(a, 'held-x', now + 1, { request: { operation: 'exec', path: '/3/0/4', args: "0='v',1", timeoutMs: 1000 }, context: 'plain text' });
        const attributes = held(b, 'held-y', now + 2, { request: { operation: 'writeAttributes', path: '/3303/0/5700', attributes: { pmin: 10, pmax: 60, gt: 20.5 }, timeoutMs: 1000 }, context: null });
        for (const each of [write, exec, attributes]) await stores().queue.add(each);
        assert.deepEqual(await stores().queue.ofEndpoint(a.id), [written(write), written(exec)]);
        assert.deepEqual(await stores().queue.ofEndpoint(b.id), [written(attributes)], "another account's endpoint: its own only");
        const all = await stores().queue.all();
        for (const each of [write, exec, attributes]) assert.deepEqual(all.find((h) => h.id === each.id), written(each));
        assert.deepEqual(await stores().queue.ofEndpoint('ep-never'), []);
      });

      it('keep the order they were added in per device, even within one millisecond; all() keeps each device in order', async () => {
        const [a, b] = [await endpoint('acc-a'), await endpoint('acc-a')];
        const now = Date.now();
        // Interleaved devices; the first five in the same millisecond, ids not in order.
        const added = [
          held(a, 'q-5', now),
          held(b, 'q-4', now),
          held(a, 'q-3', now),
          held(a, 'q-1', now),
          held(b, 'q-2', now),
          held(a, 'q-0', now + 1),
        ];
        for (const each of added) await stores().queue.add(each);
        assert.deepEqual(ids(await stores().queue.ofEndpoint(a.id)), ['q-5', 'q-3', 'q-1', 'q-0']);
        assert.deepEqual(ids(await stores().queue.ofEndpoint(b.id)), ['q-4', 'q-2']);
        const all = await stores().queue.all();
        assert.deepEqual(ids(all.filter((h) => h.endpointId === a.id)), ['q-5', 'q-3', 'q-1', 'q-0']);
        assert.deepEqual(ids(all.filter((h) => h.endpointId === b.id)), ['q-4', 'q-2']);
      });

      it('remove takes that request only; removing an unknown id is no error', async () => {
        const a = await endpoint('acc-a');
        const now = Date.now();
        for (const id of ['r-0', 'r-1', 'r-2']) await stores().queue.add(held(a, id, now));
        await stores().queue.remove('r-1');
        assert.deepEqual(ids(await stores().queue.ofEndpoint(a.id)), ['r-0', 'r-2']);
        await stores().queue.remove('r-1');
        await stores().queue.remove('r-never');
        assert.deepEqual(ids(await stores().queue.ofEndpoint(a.id)), ['r-0', 'r-2']);
      });

      it('expiry: the store keeps expired requests (ending them is the holder\'s); expiredBefore finds them, oldest expiry first', async () => {
        const a = await endpoint('acc-a');
        // Far in the past, so no other case's requests (made now) are expired by then.
        const base = Date.UTC(2020, 0, 1);
        const added = [
          held(a, 'e-late', base, { expiresAt: base + 3000 }),
          held(a, 'e-early', base, { expiresAt: base + 1000 }),
          held(a, 'e-middle', base, { expiresAt: base + 2000, kind: 'proxy' }),
          held(a, 'e-live', base, { expiresAt: Date.now() + 3_600_000 }),
        ];
        for (const each of added) await stores().queue.add(each);
        assert.deepEqual(ids(await stores().queue.ofEndpoint(a.id)), ['e-late', 'e-early', 'e-middle', 'e-live'], 'expired ones are still held, in order');
        assert.deepEqual(ids(await stores().queue.expiredBefore(base + 3000, 10)), ['e-early', 'e-middle'], 'before, not at');
        assert.deepEqual(ids(await stores().queue.expiredBefore(base + 3001, 10)), ['e-early', 'e-middle', 'e-late']);
        assert.deepEqual(ids(await stores().queue.expiredBefore(base + 3001, 2)), ['e-early', 'e-middle'], 'at most the limit');
        assert.deepEqual(await stores().queue.expiredBefore(base + 1000, 10), []);
        assert.deepEqual(await stores().queue.expiredBefore(base + 2000, 10).then((found) => found.map((h) => written(h))), [written(added[1])], 'with every field');
      });
    });

    it('deleting an endpoint takes its registration, observations and held requests with it', async () => {
      const [a, b] = [await endpoint('acc-a'), await endpoint('acc-a')];
      for (const [each, id] of [[a, 'reg-del-a'], [b, 'reg-del-b']] as const) {
        await stores().registrations.add(registration(each, id));
        await stores().observations.add(observation(each.id, id, `${id}-token`));
        await stores().queue.add(held(each, `${id}-held`, Date.now()));
      }
      await opened.db.deleteFrom('endpoints').where('id', '=', a.id).execute();
      assert.equal(await stores().registrations.get('reg-del-a'), undefined);
      assert.deepEqual(await stores().observations.ofRegistration('reg-del-a'), []);
      assert.deepEqual(await stores().queue.ofEndpoint(a.id), []);
      assert.equal((await stores().registrations.get('reg-del-b'))?.id, 'reg-del-b');
      assert.equal((await stores().observations.ofRegistration('reg-del-b')).length, 1);
      assert.equal((await stores().queue.ofEndpoint(b.id)).length, 1);
    });

    it('a re-opened database gives back everything as it was; requests held after it come after the earlier ones', async () => {
      const [a, b] = [await endpoint('acc-a'), await endpoint('acc-b')];
      const now = Date.now();
      await stores().registrations.add(registration(a, 'reg-keep-a', { secure: true, identity: 'psk-id-a', sms: '+15550102', peer: { address: '192.0.2.50', port: 5684 } }));
      await stores().registrations.add(registration(b, 'reg-keep-b', { peer: { address: '192.0.2.51', port: 5683 } }));
      await opened.db.updateTable('endpoints').set({ heard_node: 'node-keep' }).where('id', '=', a.id).execute();
      await stores().observations.add(observation(a.id, 'reg-keep-a', 'feed', { operation: 'observeComposite', path: '/', paths: ['/3/0/9'] }));
      for (const id of ['k-0', 'k-1']) await stores().queue.add(held(a, id, now, { kind: id === 'k-1' ? 'proxy' : 'queued' }));
      const before = {
        registrations: await stores().registrations.all(),
        heard: await stores().registrations.all('node-keep'),
        atPeer: await stores().registrations.atPeer('192.0.2.50', 5684),
        observations: await stores().observations.all(),
        queue: await stores().queue.all(),
      };
      opened = await opened.reopen();
      const sortById = <T extends { id: string }>(items: T[]) => [...items].sort((x, y) => x.id.localeCompare(y.id));
      assert.deepEqual(sortById(await stores().registrations.all()), sortById(before.registrations));
      assert.deepEqual(await stores().registrations.all('node-keep'), before.heard);
      assert.deepEqual(await stores().registrations.atPeer('192.0.2.50', 5684), before.atPeer);
      assert.deepEqual(await stores().registrations.get('reg-keep-b'), before.registrations.find((r) => r.id === 'reg-keep-b'));
      assert.deepEqual([...(await stores().observations.all())].sort((x, y) => x.token.localeCompare(y.token)), [...before.observations].sort((x, y) => x.token.localeCompare(y.token)));
      assert.deepEqual(await stores().queue.all(), before.queue);
      // The new instance goes on numbering after what the old one stored.
      await stores().queue.add(held(a, 'k-2', Date.now()));
      assert.deepEqual(ids(await stores().queue.ofEndpoint(a.id)), ['k-0', 'k-1', 'k-2']);
    });
  });
}
