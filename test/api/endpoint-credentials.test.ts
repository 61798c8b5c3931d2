import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DeviceCredentials } from '../../src/domain/device-credentials.js';
import { Endpoints, type Endpoint } from '../../src/domain/endpoints.js';
import { Services } from '../../src/domain/services.js';
import { hashPassword } from '../../src/domain/secrets.js';
import { PASSWORD_MIN_LENGTH } from '../../src/domain/users.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { SqlEndpointStore } from '../../src/store/endpoint-store.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { SqlServiceStore } from '../../src/store/service-store.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { rewindMigrations } from '../helpers/migrations.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/** The one error body of the API: `{ error: { code, message, details? } }` and nothing else. */
for (const dialect of DIALECTS) {
  describe(`endpoint credentials over HTTP (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let account: TestAccount;
    let serviceId: string;
    /** A second connection to the same storage: what another process of the service would see and do. */
    let other: Database;

    before(async () => {
      service = await startService(dialect.name);
      account = await createAccount(service, 'credentials');
      serviceId = await createService(service, account.token, { name: 'mqtt devices', type: 'mqtt' });
      other = openDatabase(service.bridge.config);
    });
    after(async () => {
      await other?.close();
      await service?.stop();
    });

    const credentials = (ref: string) => service.request('GET', `/endpoints/${ref}/credentials`, { token: account.token });
    const setPassword = (ref: string, body: unknown) => service.request('PUT', `/endpoints/${ref}/credentials`, { token: account.token, body });
    const endpointById = async (id: string): Promise<Endpoint> => {
      const endpoint = await service.bridge.domain.endpoints.byId(account.accountId, id);
      assert.ok(endpoint);
      return endpoint;
    };
    const storedHash = async (endpointId: string): Promise<string | undefined> => {
      const row = await other.db.selectFrom('endpoint_credentials').select('password_hash').where('endpoint_id', '=', endpointId).executeTakeFirst();
      return row?.password_hash;
    };

    it('sets, reads back, replaces and deletes a device password, by id and by k.<key>, never returning it', async () => {
      const endpoint = await createEndpoint(service, account.token, { key: 'sensor-1', serviceId });
      assert.deepEqual((await credentials('k.sensor-1')).body, { passwordSet: false });

      const before = Date.now();
      const set = await setPassword('k.sensor-1', { password: 'first-password' });
      assert.equal(set.status, 204, JSON.stringify(set.body));
      assert.equal(set.body, undefined);
      const read = await credentials(endpoint.id);
      assert.equal(read.status, 200);
      assert.deepEqual(Object.keys(read.body).sort(), ['kind', 'passwordSet', 'updatedAt']);
      assert.equal(read.body.kind, 'chosen');
      assert.equal(read.body.passwordSet, true);
      assert.ok(Date.parse(read.body.updatedAt) >= before - 1000);
      const hash = await storedHash(endpoint.id);
      assert.match(hash ?? '', /^pbkdf2-sha512\$10000\$/, 'stored as a PBKDF2 hash');
      assert.ok(!hash?.includes('first-password'));
      assert.ok(!JSON.stringify((await service.request('GET', `/endpoints/${endpoint.id}`, { token: account.token })).body).includes(hash ?? 'x'));

      await new Promise((resolve) => setTimeout(resolve, 5));
      assert.equal((await setPassword(endpoint.id, { password: 'second-password' })).status, 204);
      const replaced = await credentials('k.sensor-1');
      assert.equal(replaced.body.passwordSet, true);
      assert.ok(replaced.body.updatedAt > read.body.updatedAt, 'updatedAt moves on a replacement');
      assert.notEqual(await storedHash(endpoint.id), hash);

      const removed = await service.request('DELETE', '/endpoints/k.sensor-1/credentials', { token: account.token });
      assert.equal(removed.status, 204);
      assert.deepEqual((await credentials('k.sensor-1')).body, { passwordSet: false });
      assert.equal(await storedHash(endpoint.id), undefined);
      // Idempotent: deleting when none is set is no error.
      assert.equal((await service.request('DELETE', `/endpoints/${endpoint.id}/credentials`, { token: account.token })).status, 204);
    });

    it('refuses passwords that are too short or too long, and fields other than password, with the one error body', async () => {
      const endpoint = await createEndpoint(service, account.token, { key: 'sensor-2', serviceId });
      const cases: [string, unknown][] = [
        ['short', { password: 'x'.repeat(PASSWORD_MIN_LENGTH - 1) }],
        ['long', { password: 'x'.repeat(257) }],
        ['extra field', { password: 'long-enough-1', hash: 'scrypt$…' }],
        ['missing password', {}],
        // (A number would be taken as its digits: the API coerces scalar types, coerceTypes 'array' in server.ts.)
        ['not a string', { password: { value: 'long-enough-1' } }],
        ['not JSON', '{"password": '],
      ];
      for (const [name, body] of cases) assertError(await setPassword('k.sensor-2', body), 400, 'IOTB_REQUEST_VALIDATION', name);
      assert.deepEqual((await credentials('k.sensor-2')).body, { passwordSet: false }, 'nothing was stored');

      // The bounds are inclusive, counted in characters (code points), not bytes.
      assert.equal((await setPassword('k.sensor-2', { password: 'x'.repeat(PASSWORD_MIN_LENGTH) })).status, 204);
      assert.equal((await setPassword('k.sensor-2', { password: '€'.repeat(256) })).status, 204);
      assert.equal(await service.bridge.domain.credentials.verify(await endpointById(endpoint.id), '€'.repeat(256)), true);
      assert.equal((await setPassword('k.sensor-2', { password: '😀'.repeat(256) })).status, 204, '256 code points are 512 UTF-16 units');

      // Callers other than HTTP (scripts, the CLI) get the same check from the domain.
      const scope = await service.bridge.domain.accounts.platformScope(account.accountId, 'test');
      await assert.rejects(service.bridge.domain.credentials.set(scope, 'k.sensor-2', { password: 'short' }), { code: 'IOTB_REQUEST_VALIDATION' });
      await assert.rejects(service.bridge.domain.credentials.set(scope, 'k.sensor-2', { password: 'y'.repeat(257) }), { code: 'IOTB_REQUEST_VALIDATION' });
    });

    it('answers 404 IOTB_ENDPOINT_NOT_FOUND for unknown endpoints on every credentials route', async () => {
      for (const ref of ['k.no-such-device', 'no-such-id']) {
        assertError(await credentials(ref), 404, 'IOTB_ENDPOINT_NOT_FOUND', `GET ${ref}`);
        assertError(await setPassword(ref, { password: 'long-enough-1' }), 404, 'IOTB_ENDPOINT_NOT_FOUND', `PUT ${ref}`);
        assertError(await service.request('DELETE', `/endpoints/${ref}/credentials`, { token: account.token }), 404, 'IOTB_ENDPOINT_NOT_FOUND', `DELETE ${ref}`);
      }
    });

    it('chooses among services sharing a key with ?serviceId, like the other endpoint routes', async () => {
      const second = await createService(service, account.token, { name: 'second', type: 'mqtt' });
      await createEndpoint(service, account.token, { key: 'shared', serviceId });
      const inSecond = await createEndpoint(service, account.token, { key: 'shared', serviceId: second });
      assertError(await setPassword('k.shared', { password: 'long-enough-1' }), 409, 'IOTB_ENDPOINT_KEY_AMBIGUOUS', 'ambiguous key');
      const put = await service.request('PUT', `/endpoints/k.shared/credentials?serviceId=${second}`, { token: account.token, body: { password: 'long-enough-1' } });
      assert.equal(put.status, 204);
      assert.equal((await credentials(inSecond.id)).body.passwordSet, true);
      assert.equal((await service.request('GET', `/endpoints/k.shared/credentials?serviceId=${serviceId}`, { token: account.token })).body.passwordSet, false);
    });

    it('verifies a device password through the domain: true for the password set, false otherwise', async () => {
      const { credentials: endpoints } = service.bridge.domain;
      const created = await createEndpoint(service, account.token, { key: 'sensor-3', serviceId });
      const endpoint = await endpointById(created.id);
      assert.equal(await endpoints.verify(endpoint, 'anything-at-all'), false, 'no password set');

      await setPassword('k.sensor-3', { password: 'device-secret-1' });
      assert.equal(await endpoints.verify(endpoint, 'device-secret-1'), true);
      assert.equal(await endpoints.verify(endpoint, 'device-secret-1'), true, 'again (remembered)');
      assert.equal(await endpoints.verify(endpoint, 'device-secret-2'), false);
      assert.equal(await endpoints.verify(endpoint, 'device-secret-1 '), false);
      assert.equal(await endpoints.verify(endpoint, ''), false);

      // A replacement in this process: the remembered log-in no longer counts.
      await setPassword('k.sensor-3', { password: 'device-secret-2' });
      assert.equal(await endpoints.verify(endpoint, 'device-secret-1'), false);
      assert.equal(await endpoints.verify(endpoint, 'device-secret-2'), true);

      await service.request('DELETE', '/endpoints/k.sensor-3/credentials', { token: account.token });
      assert.equal(await endpoints.verify(endpoint, 'device-secret-2'), false, 'deleted');

      // Another endpoint's password is not this one's.
      const neighbour = await createEndpoint(service, account.token, { key: 'sensor-4', serviceId });
      await setPassword('k.sensor-4', { password: 'neighbour-secret' });
      assert.equal(await endpoints.verify(endpoint, 'neighbour-secret'), false);
      assert.equal(await endpoints.verify(await endpointById(neighbour.id), 'neighbour-secret'), true);
    });

    it('accepts a password stored before (scrypt), and stores it as PBKDF2 at its first good log-in', async () => {
      const { credentials: devices } = service.bridge.domain;
      const created = await createEndpoint(service, account.token, { key: 'legacy-1', serviceId });
      const endpoint = await endpointById(created.id);
      const legacy = await hashPassword('set-long-ago');
      await new SqlEndpointStore(other.db, other.dialect).setPasswordHash(created.id, legacy, new Date().toISOString());
      assert.equal(await devices.verify(endpoint, 'wrong-password'), false);
      assert.equal(await storedHash(created.id), legacy, 'a wrong password changes nothing');
      assert.equal(await devices.verify(endpoint, 'set-long-ago'), true);
      assert.match((await storedHash(created.id)) ?? '', /^pbkdf2-sha512\$/, 'stored again in the current form');
      assert.equal(await devices.verify(endpoint, 'set-long-ago'), true);
      assert.equal((await credentials(created.id)).body.kind, 'chosen');
    });

    it('does not trust a remembered log-in after another process changed or removed the password', async () => {
      const { credentials: endpoints } = service.bridge.domain;
      const created = await createEndpoint(service, account.token, { key: 'sensor-5', serviceId });
      const endpoint = await endpointById(created.id);
      await setPassword('k.sensor-5', { password: 'before-change' });
      assert.equal(await endpoints.verify(endpoint, 'before-change'), true);

      // The other process's domain, on the same storage; this process's memory is not told.
      const store = new SqlEndpointStore(other.db, other.dialect);
      const elsewhere = new DeviceCredentials(store, new Endpoints(store, new Services(new SqlServiceStore(other.db))));
      const scope = await service.bridge.domain.accounts.platformScope(account.accountId, 'other process');
      await elsewhere.set(scope, 'k.sensor-5', { password: 'after-change' });
      assert.equal(await endpoints.verify(endpoint, 'before-change'), false);
      assert.equal(await endpoints.verify(endpoint, 'after-change'), true);

      await elsewhere.delete(scope, 'k.sensor-5');
      assert.equal(await endpoints.verify(endpoint, 'after-change'), false);
      assert.deepEqual(await endpoints.get(scope, 'k.sensor-5'), { passwordSet: false });
    });

    it('lets a sub-account be managed through :accountId, and keeps each account to its own endpoints', async () => {
      const child = await createAccount(service, 'credentials-child', { token: account.token });
      const childService = await createService(service, child.token, { name: 'child mqtt', type: 'mqtt' });
      const childEndpoint = await createEndpoint(service, child.token, { key: 'child-device', serviceId: childService });
      const asChild = await service.request('PUT', '/endpoints/k.child-device/credentials', { token: account.token, account: child.accountId, body: { password: 'from-the-parent' } });
      assert.equal(asChild.status, 204);
      assert.equal((await service.request('GET', `/endpoints/${childEndpoint.id}/credentials`, { token: child.token })).body.passwordSet, true);
      // Without the suffix the parent acts in its own account, where the child's endpoint is not.
      assertError(await credentials(childEndpoint.id), 404, 'IOTB_ENDPOINT_NOT_FOUND', 'parent without :accountId');
      assertError(await service.request('DELETE', `/endpoints/${childEndpoint.id}/credentials`, { token: child.token, account: account.accountId }), 403, 'IOTB_AUTH_ACCOUNT_FORBIDDEN', 'child reaching up');
    });

    it('deletes the password with its endpoint', async () => {
      const created = await createEndpoint(service, account.token, { key: 'sensor-6', serviceId });
      await setPassword('k.sensor-6', { password: 'gone-with-it' });
      assert.ok(await storedHash(created.id));
      assert.equal((await service.request('DELETE', '/endpoints/k.sensor-6', { token: account.token })).status, 204);
      assert.equal(await storedHash(created.id), undefined);
      await createEndpoint(service, account.token, { key: 'sensor-6', serviceId });
      assert.deepEqual((await credentials('k.sensor-6')).body, { passwordSet: false }, 'a new endpoint with the key starts without one');
    });

    it('describes the three routes in the OpenAPI document', async () => {
      const doc = (await service.request('GET', '/openapi.json', { token: null })).body as { paths: Record<string, Record<string, { summary?: string }>> };
      const operations = doc.paths['/endpoints/{ref}/credentials'];
      assert.ok(operations, 'path documented');
      for (const method of ['get', 'put', 'delete']) assert.ok(operations[method]?.summary, `${method} has a summary`);
    });

    // Runs last: it rewinds this database's migrations.
    it('upgrades a database that has run every earlier migration (0008 and 0011 included) to 0012 and later', async () => {
      // Undo 0012 and the migrations after it, as if this were a database of the release before.
      const undone = await rewindMigrations(other.db, ['0012-endpoint-credentials', '0013-mqtt-sessions', '0015-mqtt-session-expiry', '0016-event-endpoint-index', '0017-events-time-index']);
      for (const table of ['endpoint_credentials', 'mqtt_retained', 'mqtt_subscriptions', 'mqtt_outgoing', 'mqtt_incoming', 'mqtt_session_expiry', 'event_endpoints']) await other.db.schema.dropTable(table).execute();
      await other.db.deleteFrom('event_cursor').where('name', '=', 'endpoint-index').execute();
      await other.db.schema.createIndex('events_endpoint').on('events').columns(['endpoint_id', 'seq']).execute();
      await other.db.schema.createIndex('events_time').on('events').column('time').execute();
      assert.deepEqual(await migrateToLatest(other), undone);
      assert.deepEqual(await migrateToLatest(other), [], 'nothing left to apply');
      const endpoint = await createEndpoint(service, account.token, { key: 'after-upgrade', serviceId });
      assert.equal((await setPassword(endpoint.id, { password: 'after-upgrade' })).status, 204);
    });
  });
}
