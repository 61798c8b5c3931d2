// Regression tests for "tenants can send UDP from the service to any address": a PATCH of the remoteAddr
// status detail aimed udp.send / coap.send (and coap.notify) at any host:port, and one script could flood it.
// Every socket here is on 127.0.0.1; nothing is ever sent anywhere else.
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { CoapEndpoint, uriPathOptions, uriQueryOptions, type CoapMessage, type Peer } from '../../src/coap/index.js';
import type { Endpoint } from '../../src/domain/endpoints.js';
import { eventsArrive, UdpDevice, waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/** Low caps, so a flood is visibly cut: bursts of twice these. */
const CAPS = { endpointSendRate: 20, accountSendRate: 30 };

for (const dialect of DIALECTS) {
  describe(`sends to devices go only where the device was heard from (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let a: TestAccount;
    let b: TestAccount;
    let udpA: string;
    let udpB: string;
    let coapA: string;
    let coapB: string;
    const sockets: UdpDevice[] = [];
    const coapDevices: CoapEndpoint[] = [];
    const listener = async () => {
      const opened = await UdpDevice.open(service.ports.udp!);
      sockets.push(opened);
      return opened;
    };
    /** A CoAP device on 127.0.0.1 that answers 2.04 and notes every request it gets. */
    const coapDevice = async () => {
      const received: CoapMessage[] = [];
      const made = new CoapEndpoint({ host: '127.0.0.1', port: 0, rateLimit: false });
      made.onRequest((request) => {
        received.push(request);
        return { code: '2.04' };
      });
      await made.start();
      coapDevices.push(made);
      return { endpoint: made, received, address: `127.0.0.1:${made.address().port}` };
    };
    const coapServer = (): Peer => ({ address: '127.0.0.1', port: service.ports.coap! });
    const hello = (device: CoapEndpoint, key: string) =>
      device.request(coapServer(), { code: '0.02', options: [...uriPathOptions('/hello'), ...uriQueryOptions([`ep=${key}`])], payload: 'hi' });
    const refusedPatch = async (token: string, ref: string, remoteAddr: string) => {
      const patched = await service.request('PATCH', `/endpoints/${ref}`, { token, body: { statusDetails: { remoteAddr } } });
      assert.equal(patched.status, 400, JSON.stringify(patched.body));
      assert.equal(patched.body.error.code, 'IOTB_ENDPOINT_STATUS_DETAIL_READ_ONLY');
    };

    before(async () => {
      service = await startService(dialect.name, CAPS);
      a = await createAccount(service, 'sends-a');
      b = await createAccount(service, 'sends-b');
      udpA = await createService(service, a.token, { name: 'udp', type: 'udp' });
      udpB = await createService(service, b.token, { name: 'udp', type: 'udp' });
      coapA = await createService(service, a.token, { name: 'coap', type: 'coap' });
      coapB = await createService(service, b.token, { name: 'coap', type: 'coap' });
    });
    after(async () => {
      for (const socket of sockets) socket.close();
      for (const device of coapDevices) await device.stop();
      await service?.stop();
    });

    it('a PATCH of remoteAddr is refused, and udp.send / coap.send to a device never heard from fail: nothing reaches the target', async () => {
      const target = await listener();
      const coapTarget = await coapDevice();
      await createEndpoint(service, a.token, { key: 'never-heard', serviceId: udpA });
      await createEndpoint(service, a.token, { key: 'never-heard-coap', serviceId: coapA });
      await refusedPatch(a.token, 'k.never-heard', target.address);
      await refusedPatch(a.token, 'k.never-heard-coap', coapTarget.address);
      const viaScript = await runScript(service, a.token, `endpoint.update('k.never-heard', { statusDetails: { remoteAddr: '${target.address}' } });`);
      assert.match(viaScript.error ?? '', /endpoint\.update: Status detail remoteAddr is written by the platform only/);
      const created = await service.request('POST', '/endpoints', { token: a.token, body: { key: 'born-aimed', serviceId: udpA, statusDetails: { remoteAddr: target.address } } });
      assert.equal(created.body.error?.code, 'IOTB_ENDPOINT_STATUS_DETAIL_READ_ONLY');

      const udp = await runScript(service, a.token, `udp.send('k.never-heard', 'ping', { encoding: 'utf8' });`);
      assert.equal(udp.status, 'failed');
      assert.match(udp.error ?? '', /^udp\.send: IOTB_DEVICE_ADDRESS_UNKNOWN: /);
      const coap = await runScript(service, a.token, `coap.send('k.never-heard-coap', '/cmd', 'ff', { timeout: 500 });`);
      assert.match(coap.error ?? '', /^coap\.send: IOTB_DEVICE_ADDRESS_UNKNOWN: /);
      await sleep(300);
      assert.equal(target.received.length, 0, 'no datagram reached the UDP listener');
      assert.equal(coapTarget.received.length, 0, 'no request reached the CoAP listener');
    });

    it('a device heard from a loopback socket gets the datagram there, whatever remoteAddr says, and after a restart', async () => {
      const device = await listener();
      const elsewhere = await listener();
      const echo = await createEndpoint(service, a.token, { key: 'echo-heard', serviceId: udpA });
      await device.send('echo-heard:hello');
      await eventsArrive(service, a.token, ['udp-message'], 1, echo.id);
      const sent = await runScript(service, a.token, `log(JSON.stringify(udp.send('k.echo-heard', 'pong', { encoding: 'utf8' })));`);
      assert.equal(sent.status, 'success', sent.error ?? '');
      assert.deepEqual(sent.logs, [JSON.stringify({ remoteAddr: device.address, bytes: 4 })]);
      assert.equal((await device.nth(1)).toString(), 'pong');

      // Even a remoteAddr written by other means (data from before this fix, a platform bug) decides nothing.
      await service.bridge.presence.setDetails(echo as Endpoint, { remoteAddr: elsewhere.address });
      assert.equal((await runScript(service, a.token, `udp.send('k.echo-heard', 'again', { encoding: 'utf8' });`)).status, 'success');
      assert.equal((await device.nth(2)).toString(), 'again');

      service = await service.restart();
      const later = await runScript(service, a.token, `udp.send('${echo.id}', 'after restart', { encoding: 'utf8' });`);
      assert.equal(later.status, 'success', later.error ?? '');
      assert.equal((await device.nth(3)).toString(), 'after restart');
      assert.equal(elsewhere.received.length, 0);
    });

    it('a plain CoAP device heard from a loopback socket gets coap.send, also after a restart', async () => {
      const actuator = await coapDevice();
      await createEndpoint(service, a.token, { key: 'valve-heard', serviceId: coapA });
      assert.equal((await hello(actuator.endpoint, 'valve-heard')).code, '2.04');
      const first = await runScript(service, a.token, `log(coap.send('k.valve-heard', '/cmd', 'open', { encoding: 'utf8', method: 'PUT' }).code);`);
      assert.deepEqual([first.status, first.logs], ['success', ['2.04']], first.error ?? '');
      service = await service.restart();
      const later = await runScript(service, a.token, `log(coap.send('k.valve-heard', '/cmd', 'shut', { encoding: 'utf8', method: 'PUT' }).code);`);
      assert.deepEqual([later.status, later.logs], ['success', ['2.04']], later.error ?? '');
      assert.deepEqual(actuator.received.filter((r) => r.code === '0.03').map((r) => r.payload.toString()), ['open', 'shut']);
    });

    it("a device heard 'from' one of the service's own ports is never sent to (a spoof or a loop)", async () => {
      const looped = await createEndpoint(service, a.token, { key: 'looped', serviceId: udpA });
      // As if a datagram had come from the service's own UDP port on loopback (the kernel lets nobody else bind it).
      await service.bridge.presence.heard(looped as Endpoint, { protocol: 'udp', remoteAddr: `127.0.0.1:${service.ports.udp}` });
      const sent = await runScript(service, a.token, `udp.send('k.looped', '00');`);
      assert.match(sent.error ?? '', /^udp\.send: IOTB_DEVICE_ADDRESS_REFUSED: /);
    });

    it("a device whose UDP port has the number of one of the service's TCP ports (HTTP, MQTT) is sent to: datagrams cannot loop there", async () => {
      // UDP and TCP ports are apart: the kernel lets a UDP socket take the port number the service's HTTP listens on.
      const twin = dgram.createSocket('udp4');
      await new Promise<void>((resolve) => twin.bind(service.ports.http, '127.0.0.1', resolve));
      const received: Buffer[] = [];
      twin.on('message', (message) => received.push(message));
      try {
        const device = await createEndpoint(service, a.token, { key: 'tcp-port-twin', serviceId: udpA });
        await new Promise<void>((resolve, reject) => twin.send('tcp-port-twin:hello', service.ports.udp, '127.0.0.1', (error) => (error ? reject(error) : resolve())));
        await eventsArrive(service, a.token, ['udp-message'], 1, device.id);
        const sent = await runScript(service, a.token, `udp.send('k.tcp-port-twin', 'back', { encoding: 'utf8' });`);
        assert.equal(sent.status, 'success', sent.error ?? '');
        await waitFor(async () => received[0], 'the answer on the port HTTP also uses');
        assert.equal(received[0]!.toString(), 'back');
      } finally {
        twin.close();
      }
    });

    it('one script flooding is cut at the endpoint cap, several endpoints at the account cap; what was refused never left', async () => {
      /** An account whose UDP devices `<name>-0…` have each been heard from a loopback socket of their own. */
      const fleet = async (name: string, devices: number) => {
        const account = await createAccount(service, name);
        const udp = await createService(service, account.token, { name: 'udp', type: 'udp' });
        const sinks: UdpDevice[] = [];
        for (let i = 0; i < devices; i++) {
          const sink = await listener();
          const endpoint = await createEndpoint(service, account.token, { key: `${name}-${i}`, serviceId: udp });
          await sink.send(`${name}-${i}:here`);
          await eventsArrive(service, account.token, ['udp-message'], 1, endpoint.id);
          sinks.push(sink);
        }
        return { name, token: account.token, sinks };
      };
      /** One script sends `rounds` datagrams to each device in turn; what was sent to each, which caps refused, how long it took. */
      const flood = async ({ name, token, sinks }: Awaited<ReturnType<typeof fleet>>, rounds: number) => {
        const started = Date.now();
        const result = await runScript(service, token, `
          var sent = [], caps = {};
          for (var d = 0; d < ${sinks.length}; d++) sent.push(0);
          for (var i = 0; i < ${rounds}; i++) {
            for (d = 0; d < ${sinks.length}; d++) {
              try { udp.send('k.${name}-' + d, 'x' + i, { encoding: 'utf8' }); sent[d]++; }
              catch (e) { var cap = /^udp\\.send: IOTB_DEVICE_SEND_RATE_LIMITED: The (\\w+)'s send rate cap/.exec(e.message); caps[cap ? cap[1] : e.message] = true; }
            }
          }
          log(JSON.stringify({ sent: sent, caps: Object.keys(caps) }));
        `);
        const seconds = (Date.now() - started) / 1000;
        assert.equal(result.status, 'success', result.error ?? '');
        const { sent, caps } = JSON.parse(result.logs[0]!) as { sent: number[]; caps: string[] };
        await waitFor(async () => (sinks.every((sink, i) => sink.received.length >= sent[i]!) ? true : undefined), `${name}: the allowed datagrams`);
        await sleep(200);
        assert.deepEqual(sinks.map((sink) => sink.received.length), sent, `${name}: exactly the allowed datagrams arrived`);
        return { sent, caps, seconds, total: sent.reduce((sum, n) => sum + n, 0) };
      };

      // One endpoint (its account's cap is higher): a burst of 2 s of the endpoint's rate, then that rate.
      const solo = await flood(await fleet('solo', 1), 300);
      assert.deepEqual(solo.caps, ['endpoint']);
      assert.ok(solo.total < 300 && solo.total <= 2 * CAPS.endpointSendRate + CAPS.endpointSendRate * solo.seconds + 1, `${solo.total} sent in ${solo.seconds} s`);
      // Three endpoints in turn: together they reach the account's cap before any reaches its own.
      const many = await flood(await fleet('many', 3), 100);
      assert.deepEqual(many.caps, ['account']);
      assert.ok(many.total < 300 && many.total <= 2 * CAPS.accountSendRate + CAPS.accountSendRate * many.seconds + 1, `${many.total} sent in ${many.seconds} s`);
    });

    it("another account can neither send to a device nor aim its own endpoints at one (udp.send, coap.send, coap.notify)", async () => {
      const meter = await listener();
      const meterEndpoint = await createEndpoint(service, a.token, { key: 'a-meter', serviceId: udpA });
      await meter.send('a-meter:1');
      await eventsArrive(service, a.token, ['udp-message'], 1, meterEndpoint.id);
      const watcher = await coapDevice();
      const notified: string[] = [];
      await createEndpoint(service, a.token, { key: 'a-watch', serviceId: coapA });
      const observation = await watcher.endpoint.observe(coapServer(), { code: '0.01', options: [...uriPathOptions('/alerts'), ...uriQueryOptions(['ep=a-watch'])] }, (n) =>
        notified.push(n.payload.toString()),
      );
      assert.equal(observation.response.code, '2.05');

      // B's own endpoints cannot be pointed at A's devices.
      await createEndpoint(service, b.token, { key: 'b-decoy', serviceId: udpB });
      await createEndpoint(service, b.token, { key: 'b-decoy-coap', serviceId: coapB });
      await refusedPatch(b.token, 'k.b-decoy', meter.address);
      await refusedPatch(b.token, 'k.b-decoy-coap', watcher.address);
      assert.match((await runScript(service, b.token, `udp.send('k.b-decoy', '00');`)).error ?? '', /IOTB_DEVICE_ADDRESS_UNKNOWN/);
      assert.match((await runScript(service, b.token, `coap.notify('k.b-decoy-coap', '/alerts', 'forged', { encoding: 'utf8' });`)).error ?? '', /IOTB_DEVICE_ADDRESS_UNKNOWN/);

      // Endpoint references resolve in the caller's account only.
      for (const ref of [meterEndpoint.id, 'k.a-meter']) {
        const foreign = await runScript(service, b.token, `udp.send('${ref}', '00');`);
        assert.match(foreign.error ?? '', /^udp\.send: IOTB_ENDPOINT_NOT_FOUND: /);
        assert.equal((await service.request('PATCH', `/endpoints/${ref}`, { token: b.token, body: { statusDetails: { note: 'x' } } })).status, 404);
      }
      assert.match((await runScript(service, b.token, `coap.send('k.a-watch', '/x', 'ff', { timeout: 500 });`)).error ?? '', /^coap\.send: IOTB_ENDPOINT_NOT_FOUND: /);
      assert.match((await runScript(service, b.token, `coap.notify('k.a-watch', '/alerts', 'ff');`)).error ?? '', /^coap\.notify: IOTB_ENDPOINT_NOT_FOUND: /);
      assert.equal((await service.request('GET', `/endpoints/${meterEndpoint.id}`, { token: b.token, account: a.accountId })).status, 403);
      await sleep(300);
      assert.equal(meter.received.length, 0, "nothing reached A's UDP device");
      assert.deepEqual(notified, [], "no notification reached A's CoAP device");
      assert.deepEqual(watcher.received.map((r) => r.code), [], "no request reached A's CoAP device");
      await observation.cancel();
    });
  });
}
