// Issue 20, alerts over state: an MQTT device that disconnects stays unavailable and opens an `unavailable` alert
// that closes when it connects again; a tagged device that goes quiet opens a `no-data` alert that closes when it
// publishes; a trigger whose runs fail opens a `trigger-failures` alert that closes when runs succeed again;
// scripts raise and close alerts (de-duplicated per name and endpoint); bad conditions and cross-tenant answers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../helpers/devices.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { MqttDevices, setPassword } from '../helpers/mqtt.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

const PASSWORD = 'device-password-1';

for (const dialect of DIALECTS) {
  describe(`alert conditions over state (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    const devices = new MqttDevices(() => service.ports.mqtt!);

    const alertsOf = async (ruleId: string, state = 'open') => (await service.request('GET', `/alerts?ruleId=${ruleId}&state=${state}`, { token: tenant.token })).body.items as Array<Record<string, any>>;
    const rule = async (body: Record<string, unknown>) => {
      const created = await service.request('POST', '/alert-rules', { token: tenant.token, body: { severity: 'major', ...body } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      return created.body.id as string;
    };

    before(async () => {
      service = await startService(dialect.name, { alertCheckSeconds: 1 });
      tenant = await createAccount(service, 'alert-state');
      other = await createAccount(service, 'alert-state-other');
      const mqttService = await createService(service, tenant.token, { name: 'trackers', type: 'mqtt' });
      for (const [key, tags] of [['truck-1', ['fleet']], ['truck-2', ['fleet', 'site:north']], ['bench-1', []]] as const) {
        const endpoint = await createEndpoint(service, tenant.token, { key, serviceId: mqttService, tags });
        await setPassword(service, tenant.token, endpoint.id, PASSWORD);
      }
    });

    after(async () => {
      await devices.closeAll();
      await service?.stop();
    });

    it('unavailable: a device that disconnected opens an alert after the time, and it closes when the device is back', async () => {
      const ruleId = await rule({ name: 'truck offline', tags: ['ops'], condition: { type: 'unavailable', minutes: 0.1, tags: ['fleet'] } });
      const truck = await devices.connect('truck-1', PASSWORD, { clientId: 'truck-1' });
      const bench = await devices.connect('bench-1', PASSWORD, { clientId: 'bench-1' });
      await truck.endAsync();
      await bench.endAsync(); // unavailable too, but without the rule's tag
      const open = await waitFor(async () => {
        const found = await alertsOf(ruleId);
        return found[0];
      }, 'the unavailable alert', 20_000);
      assert.equal(open.endpointKey, 'truck-1');
      assert.deepEqual(open.tags, ['ops']);
      assert.match(open.value.lastSeenAt, /^\d{4}-/);
      assert.deepEqual((await alertsOf(ruleId)).map((alert) => alert.endpointKey), ['truck-1'], 'truck-2 never connected, bench-1 lacks the tag');

      // Still unavailable: the next checks keep the one alert.
      await new Promise((resolve) => setTimeout(resolve, 2500));
      assert.equal((await alertsOf(ruleId)).length, 1);

      await devices.connect('truck-1', PASSWORD, { clientId: 'truck-1' });
      const closed = await waitFor(async () => {
        const alert = (await service.request('GET', `/alerts/${open.id}`, { token: tenant.token })).body;
        return alert.state === 'closed' ? alert : undefined;
      }, 'the alert closed by the rule', 20_000);
      assert.deepEqual(closed.history.map((change: { state: string; by: string }) => [change.state, change.by]), [['open', 'rule'], ['closed', 'rule']]);
      await service.request('DELETE', `/alert-rules/${ruleId}`, { token: tenant.token });
    });

    it('no-data: a connected device with the tags that stops publishing opens an alert; a publication closes it', async () => {
      const truck = await devices.connect('truck-2', PASSWORD, { clientId: 'truck-2' });
      const ruleId = await rule({ name: 'north silent', condition: { type: 'no-data', minutes: 0.1, tags: ['site:north'] } });
      const open = await waitFor(async () => {
        const found = await alertsOf(ruleId);
        return found[0];
      }, 'the no-data alert', 20_000);
      assert.equal(open.endpointKey, 'truck-2');
      const endpoint = (await service.request('GET', '/endpoints/k.truck-2', { token: tenant.token })).body;
      assert.equal(endpoint.state, 'connected', 'no-data watches silence, not the state');

      // The service notes a connected device as seen at most once a minute: reconnecting is a fresh "heard from".
      await truck.endAsync();
      await devices.connect('truck-2', PASSWORD, { clientId: 'truck-2' });
      await waitFor(async () => ((await alertsOf(ruleId)).length === 0 ? true : undefined), 'the alert closed', 20_000);
      await service.request('DELETE', `/alert-rules/${ruleId}`, { token: tenant.token });
    });

    it('trigger-failures: a failing trigger opens an alert with the counts; successful runs close it', async () => {
      const created = await service.request('POST', '/triggers', {
        token: tenant.token,
        body: { name: 'parse', events: ['raw'], script: "if (event.data.bad) throw new Error('cannot parse'); log('ok');" },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const triggerId = created.body.id;
      const ruleId = await rule({ name: 'parser failing', condition: { type: 'trigger-failures', minutes: 0.2, percent: 50, minRuns: 3, triggerId } });
      for (let i = 0; i < 4; i++) await service.request('POST', '/events', { token: tenant.token, body: { type: 'raw', data: { bad: true } } });
      const open = await waitFor(async () => {
        const found = await alertsOf(ruleId);
        return found[0];
      }, 'the failure-rate alert', 20_000);
      assert.equal(open.endpointId, null);
      assert.deepEqual(open.value, { runs: 4, failed: 4, percent: 100, triggerId });

      // The failed runs age out of the 12-second window while good runs come in.
      const deadline = Date.now() + 30_000;
      let closed: Record<string, any> | undefined;
      while (!closed && Date.now() < deadline) {
        await service.request('POST', '/events', { token: tenant.token, body: { type: 'raw', data: { bad: false } } });
        await new Promise((resolve) => setTimeout(resolve, 500));
        const alert = (await service.request('GET', `/alerts/${open.id}`, { token: tenant.token })).body;
        if (alert.state === 'closed') closed = alert;
      }
      assert.ok(closed, 'the alert closed when the share of failures fell');
    });

    it('scripts raise and close alerts: one per name and endpoint while open, on the event\'s endpoint by default', async () => {
      const raise = "var a = alert.raise({name: 'battery low', severity: 'minor', tags: ['power'], value: 7, endpoint: 'k.truck-1'}); log(JSON.stringify(a));";
      const first = await runScript(service, tenant.token, raise);
      assert.equal(first.status, 'success', first.error ?? '');
      const raised = JSON.parse(first.logs[0]!);
      assert.deepEqual([raised.name, raised.state, raised.severity, raised.endpointKey, raised.occurrences], ['battery low', 'open', 'minor', 'truck-1', 1]);
      const again = await runScript(service, tenant.token, raise);
      assert.equal(JSON.parse(again.logs[0]!).id, raised.id);
      assert.equal(JSON.parse(again.logs[0]!).occurrences, 2);
      const listed = await service.request('GET', '/alerts?tag=power', { token: tenant.token });
      assert.deepEqual(listed.body.items.map((alert: { id: string; ruleId: string | null }) => [alert.id, alert.ruleId]), [[raised.id, null]]);
      const history = await service.request('GET', '/history?type=alert', { token: tenant.token });
      assert.ok(history.body.items.some((event: { data: { alert: { id: string } } }) => event.data.alert.id === raised.id), 'an alert event for triggers');

      const closing = await runScript(service, tenant.token, "log(JSON.stringify(alert.close({name: 'battery low', endpoint: 'k.truck-1', note: 'charged'}))); log(JSON.stringify(alert.close({name: 'battery low', endpoint: 'k.truck-1'})));");
      assert.equal(closing.status, 'success', closing.error ?? '');
      assert.equal(JSON.parse(closing.logs[0]!).state, 'closed');
      assert.equal(closing.logs[1], 'null', 'nothing open any more');
      const stored = (await service.request('GET', `/alerts/${raised.id}`, { token: tenant.token })).body;
      assert.deepEqual(stored.history.at(-1), { ...stored.history.at(-1), state: 'closed', by: 'script', note: 'charged' });

      const byId = await runScript(service, tenant.token, "var a = alert.raise({name: 'door open', endpoint: null}); log(alert.close(a.id).state);");
      assert.deepEqual(byId.logs, ['closed']);

      // Each change is in the account's log too (source alert), the newest first.
      const logged = await waitFor(async () => {
        const found = (await service.request('GET', '/log?source=alert&text=battery', { token: tenant.token })).body.items as Array<Record<string, any>>;
        return found.length === 2 ? found : undefined;
      }, 'the alert log entries');
      assert.deepEqual(logged.map((entry) => [entry.level, entry.message, entry.endpointKey]), [
        ['info', '[minor] battery low on truck-1: closed', 'truck-1'],
        ['warn', '[minor] battery low on truck-1: opened', 'truck-1'],
      ]);
      assert.equal(logged[0]!.data.alertId, raised.id);
    });

    it('refuses bad conditions and arguments with the field named', async () => {
      const bad: Array<[unknown, string]> = [
        [{ type: 'unavailable', minutes: 0 }, 'minutes'],
        [{ type: 'unavailable', minutes: 1e9 }, 'minutes'],
        [{ type: 'no-data', minutes: 5 }, 'tags'],
        [{ type: 'no-data', minutes: 5, tags: [] }, 'tags'],
        [{ type: 'trigger-failures', minutes: 5, percent: 0 }, 'percent'],
        [{ type: 'trigger-failures', minutes: 5, percent: 50, minRuns: 0 }, 'minRuns'],
        [{ type: 'offline', minutes: 5 }, 'type'],
        [{ type: 'unavailable', minutes: 5, extra: true }, 'condition'],
      ];
      for (const [condition] of bad) {
        const refused = await service.request('POST', '/alert-rules', { token: tenant.token, body: { name: 'bad', severity: 'info', condition } });
        assertError(refused, 400, 'IOTB_REQUEST_VALIDATION', JSON.stringify(condition));
      }
      for (const script of ["alert.raise({name: ''})", "alert.raise({name: 'x', severity: 'meh'})", "alert.raise({name: 'x', endpoint: 'k.nobody'})", "alert.raise({name: 'x', tags: 'power'})", 'alert.close(42)']) {
        const run = await runScript(service, tenant.token, script);
        assert.equal(run.status, 'failed', script);
        assert.match(run.error ?? '', /^alert\.(raise|close): /, script);
      }
    });

    it('keeps accounts apart: another account neither sees nor closes the alerts, nor raises them on the endpoints', async () => {
      const raised = await runScript(service, tenant.token, "log(alert.raise({name: 'private', endpoint: null}).id);");
      const id = raised.logs[0]!;
      assertError(await service.request('GET', `/alerts/${id}`, { token: other.token }), 404, 'IOTB_ALERT_NOT_FOUND', 'another account reads');
      const closing = await runScript(service, other.token, `log(JSON.stringify(alert.close('${id}')));`);
      assert.deepEqual(closing.logs, ['null']);
      assert.equal((await service.request('GET', `/alerts/${id}`, { token: tenant.token })).body.state, 'open');
      const foreign = await runScript(service, other.token, "alert.raise({name: 'x', endpoint: 'k.truck-1'})");
      assert.equal(foreign.status, 'failed');
      assert.match(foreign.error ?? '', /IOTB_ENDPOINT_NOT_FOUND/);
      const theirs = await service.request('GET', '/alerts', { token: other.token });
      assert.equal(theirs.body.total, 0);
    });
  });
}
