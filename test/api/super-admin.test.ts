// Issue 21, Super-Admin: /super/* refused to every other principal and audited in the root account's log; an
// endpoint found by key across accounts; diagnostics answer; suspending an account refuses its real MQTT device at
// CONNECT (another account's connects), stops its triggers (events still stored) and makes its tokens read-only,
// resume brings them back; maxEndpoints, eventsPerSecond and scriptCpuMsPerMinute enforced; both survive a restart; impersonation gives a
// short-lived token of the account (not Super-Admin), audited in both accounts; bad input.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../helpers/devices.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { MqttDevices, setPassword } from '../helpers/mqtt.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

const PASSWORD = 'device-password-1';
/** MQTT 3.1.1 CONNACK return codes. */
const NOT_AUTHORIZED = 5;

const GETS = ['/super/accounts', '/super/endpoints?key=x', '/super/lookup?key=x', '/super/events', '/super/triggers', '/super/devices', '/super/storage'];

for (const dialect of DIALECTS) {
  describe(`Super-Admin (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let child: TestAccount;
    let childUserToken: string;
    let triggerId: string;
    const devices = new MqttDevices(() => service.ports.mqtt!);

    const limitsOf = async (accountId: string) => (await service.request('GET', `/super/accounts/${accountId}/limits`)).body;
    const executions = async () => (await service.request('GET', `/executions?triggerId=${triggerId}`, { token: tenant.token })).body.items as Array<Record<string, any>>;
    const logOf = async (token: string | undefined, query: string) => (await service.request('GET', `/log?${query}`, { token })).body.items as Array<Record<string, any>>;

    before(async () => {
      service = await startService(dialect.name);
      tenant = await createAccount(service, 'super-tenant');
      other = await createAccount(service, 'super-other');
      child = await createAccount(service, 'super-child', { token: tenant.token, parentId: tenant.accountId });
      const user = await service.request('POST', '/users', { token: child.token, body: { email: 'child@example.com', password: 'child password 1' } });
      assert.equal(user.status, 201, JSON.stringify(user.body));
      const login = await service.request('POST', '/auth/login', { token: null, body: { email: 'child@example.com', password: 'child password 1', accountId: child.accountId } });
      assert.equal(login.status, 200, JSON.stringify(login.body));
      childUserToken = login.body.token;
      for (const account of [tenant, other]) {
        const mqtt = await createService(service, account.token, { name: 'trackers', type: 'mqtt' });
        const endpoint = await createEndpoint(service, account.token, { key: account === tenant ? 'tenant-dev' : 'other-dev', serviceId: mqtt });
        await setPassword(service, account.token, endpoint.id, PASSWORD);
        // The same key in both accounts, on a protocol without a shared port: the lookup finds both.
        const meters = await createService(service, account.token, { name: 'meters', type: 'http' });
        await createEndpoint(service, account.token, { key: 'shared-meter', serviceId: meters });
      }
      const trigger = await service.request('POST', '/triggers', { token: tenant.token, body: { name: 'counter', events: ['ping'], script: `log('ran ' + event.data.n);` } });
      assert.equal(trigger.status, 201, JSON.stringify(trigger.body));
      triggerId = trigger.body.id;
    });

    after(async () => {
      await devices.closeAll();
      await service?.stop();
    });

    it('every /super route answers 403 to an account admin token and to a sub-account user, and audits them', async () => {
      const actions: Array<[string, string, unknown]> = [
        ['POST', `/super/accounts/${other.accountId}/suspend`, { reason: 'x' }],
        ['POST', `/super/accounts/${other.accountId}/resume`, undefined],
        ['GET', `/super/accounts/${other.accountId}/limits`, undefined],
        ['PUT', `/super/accounts/${other.accountId}/limits`, { maxEndpoints: 1 }],
        ['POST', '/super/impersonate', { accountId: other.accountId }],
      ];
      for (const token of [tenant.token, childUserToken]) {
        for (const path of GETS) assertError(await service.request('GET', path, { token }), 403, 'IOTB_AUTH_FORBIDDEN', `GET ${path}`);
        for (const [method, path, body] of actions) assertError(await service.request(method, path, { token, body }), 403, 'IOTB_AUTH_FORBIDDEN', `${method} ${path}`);
      }
      assert.equal((await limitsOf(other.accountId)).suspended, false, 'nothing refused happened');
      const audited = await waitFor(async () => {
        const found = (await logOf(undefined, 'source=audit&text=super-admin')).filter((entry) => entry.data?.status === 403 && entry.data?.tokenAccountId === child.accountId);
        return found.length >= GETS.length + actions.length ? found : undefined;
      }, 'refused calls in the root log');
      assert.ok(audited.some((entry) => entry.message === 'super-admin POST /super/impersonate → 403' && entry.data.userId));
    });

    it('/super/endpoints?key finds the endpoints of every account; /super/lookup answers 308 to it', async () => {
      const found = await service.request('GET', '/super/endpoints?key=shared-meter');
      assert.equal(found.status, 200, JSON.stringify(found.body));
      assert.deepEqual(found.body.items.map((item: any) => item.accountId).sort(), [tenant.accountId, other.accountId].sort());
      const first = found.body.items[0];
      assert.deepEqual(Object.keys(first).sort(), ['accountId', 'accountName', 'id', 'key', 'lastSeen', 'serviceId', 'serviceName', 'serviceType', 'state'].sort());
      assert.equal(first.serviceType, 'http');
      assert.equal(first.state, 'unavailable');
      assert.match(first.accountName, /^super-(tenant|other)$/);
      const byId = await service.request('GET', `/super/endpoints?id=${first.id}`);
      assert.deepEqual(byId.body.items, [first]);
      assert.deepEqual((await service.request('GET', '/super/endpoints?key=nobody-has-this')).body.items, []);
      const moved = await fetch(`${service.baseUrl}/super/lookup?key=shared-meter`, { headers: { authorization: 'Bearer AT:test-admin-token-0123456789' }, redirect: 'manual' });
      assert.equal(moved.status, 308);
      assert.equal(moved.headers.get('location'), '/super/endpoints?key=shared-meter');
      assertError(await service.request('GET', '/super/endpoints'), 400, 'IOTB_REQUEST_VALIDATION', 'neither key nor id');
      assertError(await service.request('GET', '/super/endpoints?key=a&id=b'), 400, 'IOTB_REQUEST_VALIDATION', 'both');
      const audit = await waitFor(async () => (await logOf(undefined, 'source=audit&text=/super/endpoints')).find((entry) => entry.data?.query?.key === 'shared-meter'), 'the lookup in the root log');
      assert.equal(audit.data.status, 200);
    });

    it('diagnostics: events, triggers, devices, storage', async () => {
      const events = await service.request('GET', '/super/events');
      assert.equal(events.status, 200, JSON.stringify(events.body));
      assert.equal(typeof events.body.lag.lastSeq, 'number');
      assert.ok(events.body.lag.cursors.some((cursor: any) => cursor.name === 'bus'));
      const triggers = await service.request('GET', '/super/triggers?top=5');
      assert.equal(triggers.status, 200, JSON.stringify(triggers.body));
      // Workers start with the first run placed on them.
      assert.ok(triggers.body.workers.configured >= 1);
      assert.ok(triggers.body.workers.count <= triggers.body.workers.configured);
      assert.ok(Array.isArray(triggers.body.recent.slowest));
      const deviceView = await service.request('GET', '/super/devices');
      assert.equal(deviceView.status, 200, JSON.stringify(deviceView.body));
      assert.equal(deviceView.body.nodes.length, 1);
      assert.equal(deviceView.body.nodes[0].servers.mqtt, service.ports.mqtt);
      const storage = await service.request('GET', '/super/storage');
      assert.equal(storage.status, 200, JSON.stringify(storage.body));
      assert.equal(storage.body.dialect, dialect.name);
      const endpoints = storage.body.tables.find((table: any) => table.table === 'endpoints');
      assert.ok(endpoints, 'the endpoints table is listed');
      if (dialect.name === 'sqlite') assert.equal(endpoints.rows, 4, 'counted exactly on SQLite');
      assert.equal(storage.body.retention.historyDays, 30);
    });

    it('suspend: the account’s MQTT device is refused at CONNECT, another account’s connects; triggers stop; tokens only read; resume', async () => {
      const ran = await service.request('POST', '/events', { token: tenant.token, body: { type: 'ping', data: { n: 1 } } });
      assert.equal(ran.status, 202);
      await waitFor(async () => ((await executions()).length === 1 ? true : undefined), 'the first run');

      const suspended = await service.request('POST', `/super/accounts/${tenant.accountId}/suspend`, { body: { reason: 'unpaid invoice' } });
      assert.equal(suspended.status, 200, JSON.stringify(suspended.body));
      assert.equal(suspended.body.suspended, true);
      assert.equal(suspended.body.suspension.reason, 'unpaid invoice');

      assert.equal(await devices.refusal('tenant-dev', PASSWORD), NOT_AUTHORIZED, 'the suspended account’s device');
      const fine = await devices.connect('other-dev', PASSWORD);
      await fine.endAsync();

      // Its tokens read but change nothing; a Super-Admin still acts in it (here: posts an event, which is stored).
      assert.equal((await service.request('GET', '/endpoints', { token: tenant.token })).status, 200);
      assertError(await service.request('POST', '/events', { token: tenant.token, body: { type: 'ping', data: { n: 2 } } }), 403, 'IOTB_ACCOUNT_SUSPENDED', 'a change by its token');
      const stored = await service.request('POST', '/events', { account: tenant.accountId, body: { type: 'ping', data: { n: 3 } } });
      assert.equal(stored.status, 202, JSON.stringify(stored.body));
      // Handled (skipped) before the resume: the bus cursor passes it.
      await waitFor(async () => {
        const { body } = await service.request('GET', '/super/events');
        return body.lag.handledThrough >= body.lag.lastSeq ? true : undefined;
      }, 'the event handled');
      const history = await service.request('GET', '/history?type=ping', { token: tenant.token });
      assert.ok(history.body.items.some((event: any) => event.id === stored.body.id), 'the event is stored');

      const resumed = await service.request('POST', `/super/accounts/${tenant.accountId}/resume`);
      assert.equal(resumed.body.suspended, false);
      const again = await service.request('POST', '/events', { token: tenant.token, body: { type: 'ping', data: { n: 4 } } });
      assert.equal(again.status, 202);
      const runs = await waitFor(async () => {
        const list = await executions();
        return list.length === 2 ? list : undefined;
      }, 'the run after the resume');
      assert.deepEqual(runs.map((run) => run.eventId).sort(), [ran.body.id, again.body.id].sort(), 'the event posted while suspended never ran');
      const connected = await devices.connect('tenant-dev', PASSWORD);
      await connected.endAsync();

      const audit = await waitFor(async () => (await logOf(undefined, 'source=audit&text=/suspend')).find((entry) => entry.data?.targetAccountId === tenant.accountId && entry.data.status === 200), 'the suspension in the root log');
      assert.equal(audit.data.tokenAccountId, service.rootAccountId);
    });

    it('limits: the N+1th endpoint is refused, a burst of events gets 429; cleared with null', async () => {
      const set = await service.request('PUT', `/super/accounts/${other.accountId}/limits`, { body: { maxEndpoints: 3, eventsPerSecond: 2 } });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.deepEqual(set.body.limits, { maxEndpoints: 3, eventsPerSecond: 2, scriptCpuMsPerMinute: null });
      const serviceId = (await service.request('GET', '/services', { token: other.token })).body.items[0].id;
      await createEndpoint(service, other.token, { key: 'third', serviceId });
      const refused = await service.request('POST', '/endpoints', { token: other.token, body: { key: 'fourth', serviceId } });
      assertError(refused, 409, 'IOTB_ACCOUNT_ENDPOINT_LIMIT', 'the 4th endpoint');
      assert.deepEqual(refused.body.error.details, { maxEndpoints: 3, endpoints: 3 });
      assert.equal((await service.request('POST', '/endpoints', { token: tenant.token, body: { key: 'tenant-fourth', serviceId: (await service.request('GET', '/services', { token: tenant.token })).body.items[0].id } })).status, 201, 'another account is not limited');

      const burst = await Promise.all(Array.from({ length: 12 }, (_, n) => service.request('POST', '/events', { token: other.token, body: { type: 'burst', data: { n } } })));
      const statuses = burst.map((response) => response.status);
      assert.ok(statuses.includes(202) && statuses.includes(429), statuses.join(','));
      assertError(burst.find((response) => response.status === 429)!, 429, 'IOTB_ACCOUNT_EVENT_RATE', 'over the rate');
      assert.ok((await limitsOf(other.accountId)).usage.refusedApiEvents >= 1);

      const cleared = await service.request('PUT', `/super/accounts/${other.accountId}/limits`, { body: { eventsPerSecond: null } });
      assert.deepEqual(cleared.body.limits, { maxEndpoints: 3, eventsPerSecond: null, scriptCpuMsPerMinute: null }, 'only the one given changed');
      const unlimited = await Promise.all(Array.from({ length: 12 }, () => service.request('POST', '/events', { token: other.token, body: { type: 'burst' } })));
      assert.ok(unlimited.every((response) => response.status === 202));
    });

    it('script time: over the budget the account’s triggers are skipped, and its log says so once', async () => {
      const before = (await executions()).length;
      const set = await service.request('PUT', `/super/accounts/${tenant.accountId}/limits`, { body: { scriptCpuMsPerMinute: 0 } });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      for (const n of [5, 6]) assert.equal((await service.request('POST', '/events', { token: tenant.token, body: { type: 'ping', data: { n } } })).status, 202);
      await waitFor(async () => {
        const { body } = await service.request('GET', '/super/events');
        return body.lag.handledThrough >= body.lag.lastSeq ? true : undefined;
      }, 'the events handled');
      assert.equal((await executions()).length, before, 'no run over the budget');
      assert.ok((await limitsOf(tenant.accountId)).usage.skippedScriptRuns >= 2);
      const told = await waitFor(async () => {
        const found = await logOf(tenant.token, 'source=script&text=script time limit');
        return found.length > 0 ? found : undefined;
      }, 'the log line');
      assert.equal(told.length, 1, 'once per minute');
      await service.request('PUT', `/super/accounts/${tenant.accountId}/limits`, { body: { scriptCpuMsPerMinute: null } });
    });

    it('suspension and limits survive a restart', async () => {
      await service.request('POST', `/super/accounts/${tenant.accountId}/suspend`, { body: { reason: 'kept across restarts' } });
      service = await service.restart();
      const tenantState = await limitsOf(tenant.accountId);
      assert.equal(tenantState.suspended, true);
      assert.equal(tenantState.suspension.reason, 'kept across restarts');
      assert.equal((await limitsOf(other.accountId)).limits.maxEndpoints, 3);
      assert.equal(await devices.refusal('tenant-dev', PASSWORD), NOT_AUTHORIZED, 'still refused after the restart');
      const serviceId = (await service.request('GET', '/services', { token: other.token })).body.items[0].id;
      assertError(await service.request('POST', '/endpoints', { token: other.token, body: { key: 'fifth', serviceId } }), 409, 'IOTB_ACCOUNT_ENDPOINT_LIMIT', 'still limited');
      await service.request('POST', `/super/accounts/${tenant.accountId}/resume`);
    });

    it('impersonation: a short-lived token of the account, not Super-Admin, audited in both logs', async () => {
      const issued = await service.request('POST', '/super/impersonate', { body: { accountId: other.accountId, minutes: 5 } });
      assert.equal(issued.status, 201, JSON.stringify(issued.body));
      assert.equal(issued.body.superAdmin, false);
      assert.equal(issued.body.accountId, other.accountId);
      const lifetime = Date.parse(issued.body.expiresAt) - Date.now();
      assert.ok(lifetime > 0 && lifetime <= 5 * 60_000);
      const token = issued.body.token as string;
      const me = await service.request('GET', '/auth/whoami', { token });
      assert.equal(me.body.accountId, other.accountId);
      assert.equal(me.body.superAdmin, false);
      assert.match(me.body.impersonatedBy, /token/);
      assert.equal((await service.request('GET', '/endpoints', { token })).body.total, 3, 'it sees the account');
      assertError(await service.request('GET', '/endpoints', { token, account: tenant.accountId }), 403, 'IOTB_AUTH_ACCOUNT_FORBIDDEN', 'not another account');
      assertError(await service.request('GET', '/super/accounts', { token }), 403, 'IOTB_AUTH_FORBIDDEN', 'not Super-Admin');

      const inTarget = await waitFor(async () => (await logOf(other.token, 'source=audit&text=support access by')).at(0), 'the entry in the account’s log');
      assert.equal(inTarget.data.tokenId, issued.body.id);
      const inRoot = await waitFor(async () => (await logOf(undefined, 'source=audit&text=/super/impersonate')).find((entry) => entry.data?.status === 201), 'the entry in the root log');
      assert.equal(inRoot.data.targetAccountId, other.accountId);

      // As one of the account's users: only a user of that account.
      const asUser = await service.request('POST', '/super/impersonate', { body: { accountId: child.accountId, userId: (await service.request('GET', '/users', { token: child.token })).body.items[0].id } });
      assert.equal(asUser.status, 201, JSON.stringify(asUser.body));
      assert.equal(asUser.body.type, 'user');
      assertError(await service.request('POST', '/super/impersonate', { body: { accountId: other.accountId, userId: asUser.body.userId } }), 404, 'IOTB_USER_NOT_FOUND', 'a user of another account');
    });

    it('bad input: unknown account 404, bad limits 400, suspending root 409', async () => {
      assertError(await service.request('POST', '/super/accounts/no-such-account/suspend', { body: { reason: 'x' } }), 404, 'IOTB_ACCOUNT_NOT_FOUND', 'unknown account');
      assertError(await service.request('PUT', '/super/accounts/no-such-account/limits', { body: { maxEndpoints: 1 } }), 404, 'IOTB_ACCOUNT_NOT_FOUND', 'unknown account limits');
      assertError(await service.request('POST', '/super/impersonate', { body: { accountId: 'no-such-account' } }), 404, 'IOTB_ACCOUNT_NOT_FOUND', 'impersonating nobody');
      for (const body of [{ maxEndpoints: -1 }, { eventsPerSecond: 'fast' }, { maxEndpoints: 1.5 }, { cpu: 5 }]) {
        assertError(await service.request('PUT', `/super/accounts/${other.accountId}/limits`, { body }), 400, 'IOTB_REQUEST_VALIDATION', JSON.stringify(body));
      }
      assertError(await service.request('POST', `/super/accounts/${other.accountId}/suspend`, { body: {} }), 400, 'IOTB_REQUEST_VALIDATION', 'no reason');
      assertError(await service.request('POST', '/super/impersonate', { body: { accountId: other.accountId, minutes: 61 } }), 400, 'IOTB_REQUEST_VALIDATION', 'over an hour');
      assertError(await service.request('POST', `/super/accounts/${service.rootAccountId}/suspend`, { body: { reason: 'x' } }), 409, 'IOTB_ACCOUNT_ROOT_PROTECTED', 'the root account');
    });
  });
}
