import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { runScript, type ScriptResult } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

const WALL_MS = 4000;

for (const dialect of DIALECTS) {
  describe(`script namespace lwm2m (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let serviceId: string;
    const devices = new SimulatedDevices(() => service.ports.coap!);

    const client = async (endpointName: string, register = true) => {
      const made = await devices.start(endpointName, { lwm2mVersion: '1.1' });
      if (register) assert.equal(await made.register(), '2.01');
      return made;
    };
    const run = (script: string, endpoint: string, token = tenant.token) => runScript(service, token, script, { endpoint });
    const ok = (result: ScriptResult) => assert.equal(result.status, 'success', `${result.error} line ${result.line}`);

    before(async () => {
      service = await startService(dialect.name, { scriptWallTimeoutMs: WALL_MS });
      tenant = await createAccount(service, 'lwm2m-ns');
      other = await createAccount(service, 'lwm2m-ns-other');
      serviceId = await createService(service, tenant.token, { name: 'lwm2m', type: 'lwm2m' });
    });
    after(async () => {
      await devices.stopAll();
      await service?.stop();
    });

    it("a trigger on the device's on-connect reads a resource and writes another on the device", async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'ns-connect', serviceId });
      const trigger = await service.request('POST', '/triggers', {
        token: tenant.token,
        body: {
          name: 'provision-on-connect',
          events: ['on-connect'],
          script: `
            var battery = lwm2m.read(null, '/3/0/9');
            log(battery.code, battery.values[0].path, battery.values[0].value);
            var written = lwm2m.write(event.endpointId, '/3/0/14', '+05:30', { format: 'text' });
            log(written.code, written.operation);
            log(JSON.stringify(lwm2m.lastKnown(null, '/3/0/9')));
          `,
        },
      });
      assert.equal(trigger.status, 201, JSON.stringify(trigger.body));
      const device = await client('ns-connect');
      let execution: ScriptResult & { eventType: string } | undefined;
      for (let i = 0; i < 500 && !execution; i++) {
        execution = (await service.request('GET', `/executions?triggerId=${trigger.body.id}`, { token: tenant.token })).body.items[0];
        if (!execution) await sleep(20);
      }
      await service.request('DELETE', `/triggers/${trigger.body.id}`, { token: tenant.token });
      assert.ok(execution, 'the trigger ran');
      assert.equal(execution.eventType, 'on-connect');
      ok(execution);
      assert.deepEqual(execution.logs, ['2.05 /3/0/9 95', '2.04 write', '[{"path":"/3/0/9","type":"integer","value":95}]']);
      assert.equal(device.values.get('/3/0/14')?.value, '+05:30');
      assert.deepEqual(device.received.slice(-2), ['0.01 /3/0/9', '0.03 /3/0/14']);
      // The read emitted lwm2m-data like the HTTP API's.
      const history = await service.request('GET', `/history?endpoint=${endpoint.id}&limit=20`, { token: tenant.token });
      assert.ok((history.body.items as { type: string }[]).some((e) => e.type === 'lwm2m-data'));
    });

    it('writeMulti, exec, execWithArgs, create, delete and lastKnown', async () => {
      await createEndpoint(service, tenant.token, { key: 'ns-ops', serviceId });
      const device = await client('ns-ops');
      ok(await run(`log(JSON.stringify(lwm2m.lastKnown(null)), JSON.stringify(lwm2m.lastKnown('k.ns-ops', '/3303')));`, 'k.ns-ops'));
      const result = await run(
        `
        log(JSON.stringify(lwm2m.lastKnown(null)));
        log(lwm2m.writeMulti(null, { '/3303/0/5701': 'Far', '/3303/0/5700': 70.25 }).code);
        log(lwm2m.exec(null, '/3/0/4').code);
        log(lwm2m.execWithArgs('k.ns-ops', '/3/0/5', { 0: 'soft', 1: null }).code);
        var made = lwm2m.create(null, '/3303', { '/3303/7/5700': 12.5, '/3303/7/5701': 'Cel' });
        log(made.code, made.location);
        var read = lwm2m.read(null, '/3303', { format: 'senml-json', timeout: 2000 });
        log(read.values.length);
        log(lwm2m.delete(null, '/3303/7').code);
        var known = lwm2m.lastKnown(null, '/3303/0');
        log(known.map(function (v) { return v.path + '=' + v.value; }).join(' '));
        log(lwm2m.lastKnown(null, '/1'));
        try { lwm2m.writeMulti(null, { '/3/0/14': 'x', '/3303/0/5701': 'y' }); } catch (e) { log(e.message); }
      `,
        'k.ns-ops',
      );
      ok(result);
      assert.deepEqual(result.logs, [
        'null',
        '2.04',
        '2.04',
        '2.04',
        '2.01 /3303/7',
        '4',
        '2.02',
        '/3303/0/5700=70.25 /3303/0/5701=Far',
        'null',
        'lwm2m.writeMulti: values are resources of one object instance, by absolute path: {"/3/0/14": …, "/3/0/15": …}',
      ]);
      assert.equal(device.values.get('/3303/0/5700')?.value, 70.25);
      assert.equal(device.values.get('/3/0/9')?.value, 95, 'writeMulti is a partial update');
      assert.deepEqual(device.executed, [
        { path: '/3/0/4', args: '' },
        { path: '/3/0/5', args: "0='soft',1" },
      ]);
      assert.equal(device.values.has('/3303/7/5700'), false);
    });

    it("a device error fails the execution with the error's code and message; try/catch sees it", async () => {
      await createEndpoint(service, tenant.token, { key: 'ns-error', serviceId });
      await client('ns-error');
      const failed = await run(`lwm2m.read(null, '/9999/0');`, 'k.ns-error');
      assert.equal(failed.status, 'failed');
      assert.match(failed.error ?? '', /IOTB_LWM2M_DEVICE_NOT_FOUND: .*\(CoAP 4\.04\)/);
      const caught = await run(`try { lwm2m.exec(null, '/3/0/9'); } catch (e) { log(e.message); }`, 'k.ns-error');
      ok(caught);
      assert.match(caught.logs[0] ?? '', /^lwm2m\.exec: IOTB_LWM2M_DEVICE_NOT_ALLOWED: .*CoAP 4\.05/);
      const bad = await run(`lwm2m.write(null, '/3/0/9', 'not a number');`, 'k.ns-error');
      assert.equal(bad.status, 'failed');
      assert.match(bad.error ?? '', /IOTB_LWM2M_REQUEST_INVALID/);
    });

    it('a silent device times out inside the wall time; so does a request waiting for an unregistered one', async () => {
      await createEndpoint(service, tenant.token, { key: 'ns-silent', serviceId });
      const device = await client('ns-silent');
      await device.stop();
      const started = Date.now();
      const silent = await run(`try { lwm2m.read(null, '/3/0/9'); } catch (e) { log(e.message); } log('went on');`, 'k.ns-silent');
      ok(silent);
      assert.match(silent.logs[0] ?? '', /IOTB_LWM2M_TIMEOUT/);
      assert.equal(silent.logs[1], 'went on');
      assert.ok(Date.now() - started < WALL_MS + 2000);
      const short = await run(`try { lwm2m.read(null, '/3/0/9', { timeout: 300 }); } catch (e) { log(e.message); }`, 'k.ns-silent');
      assert.match(short.logs[0] ?? '', /IOTB_LWM2M_TIMEOUT/);

      // Never registered (unavailable): the request waits in the device queue (SPEC States) and times out.
      await createEndpoint(service, tenant.token, { key: 'ns-never', serviceId });
      const never = await run(`lwm2m.read(null, '/3/0/9', { timeout: 300 });`, 'k.ns-never');
      assert.equal(never.status, 'failed');
      assert.match(never.error ?? '', /IOTB_LWM2M_TIMEOUT/);
    });

    it("a trigger of another account cannot reach the device: the call fails and nothing reaches it", async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'ns-private', serviceId });
      const device = await client('ns-private');
      const before = device.received.length;
      const otherService = await createService(service, other.token, { name: 'theirs', type: 'udp' });
      await createEndpoint(service, other.token, { key: 'their-device', serviceId: otherService });
      for (const ref of [endpoint.id, 'k.ns-private']) {
        const read = await run(`lwm2m.read('${ref}', '/3/0/9');`, 'k.their-device', other.token);
        assert.equal(read.status, 'failed');
        assert.match(read.error ?? '', /IOTB_ENDPOINT_NOT_FOUND/);
        const write = await run(`lwm2m.write('${ref}', '/3/0/14', 'x');`, 'k.their-device', other.token);
        assert.match(write.error ?? '', /IOTB_ENDPOINT_NOT_FOUND/);
        const known = await run(`lwm2m.lastKnown('${ref}');`, 'k.their-device', other.token);
        assert.match(known.error ?? '', /IOTB_ENDPOINT_NOT_FOUND/);
      }
      assert.equal(device.received.length, before, 'nothing reached the device');
    });
  });
}
