import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoapEndpoint, OptionNumber, uriPathOptions, uriQueryOptions, type CoapMessage, type Peer } from '../../src/coap/index.js';
import { coapClient, LIBCOAP_SKIP } from '../helpers/coap.js';
import { createTrigger, eventsArrive, executionsOf, waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

for (const dialect of DIALECTS) {
  describe(`plain CoAP devices (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let serviceId: string;
    let replyingServiceId: string;
    let server: Peer;
    const devices: CoapEndpoint[] = [];

    /** A device of our own: a CoAP endpoint that also serves requests the service sends it. */
    const device = async (serve: (request: CoapMessage) => { code: '2.04' | '2.05'; payload?: string } = () => ({ code: '2.04' })) => {
      const made = new CoapEndpoint({ host: '127.0.0.1', port: 0, rateLimit: false });
      made.onRequest((request) => serve(request));
      await made.start();
      devices.push(made);
      return made;
    };
    const url = (path: string) => `coap://127.0.0.1:${server.port}${path}`;

    before(async () => {
      service = await startService(dialect.name);
      server = { address: '127.0.0.1', port: service.ports.coap! };
      tenant = await createAccount(service, 'coap-fleet');
      other = await createAccount(service, 'coap-other');
      serviceId = await createService(service, tenant.token, { name: 'coap', type: 'coap' });
      // Only where a trigger answers: every other request would wait out the reply time before its 2.04.
      replyingServiceId = await createService(service, tenant.token, { name: 'coap-replies', type: 'coap', options: { replyTimeoutMs: 3000 } });
    });
    after(async () => {
      for (const made of devices) await made.stop();
      await service?.stop();
    });

    it('a POST from coap-client becomes a coap-request event and marks the device connected', { skip: LIBCOAP_SKIP }, async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'meter-1', serviceId });
      await coapClient(['-m', 'post', '-e', 'reading=42', url('/telemetry?ep=meter-1')]);
      const [event] = await eventsArrive(service, tenant.token, ['coap-request'], 1, endpoint.id);
      assert.deepEqual([event?.data.method, event?.data.path, event?.data.text], ['POST', '/telemetry', 'reading=42']);
      const seen = await service.request('GET', `/endpoints/${endpoint.id}`, { token: tenant.token });
      assert.equal(seen.body.state, 'connected');
      assert.match(seen.body.statusDetails.remoteAddr, /^127\.0\.0\.1:\d+$/);
    });

    it('a trigger answers the device with trigger.reply (bi-directional), block-wise for a large body', { skip: LIBCOAP_SKIP }, async () => {
      await createEndpoint(service, tenant.token, { key: 'meter-2', serviceId: replyingServiceId });
      await createTrigger(service, tenant.token, 'config', ['coap-request'], `
        if (event.data.path === '/config') trigger.reply({ interval: 60, device: event.endpointKey, got: event.data.payload.length / 2 });
      `);
      const answer = await coapClient(['-m', 'get', url('/d/meter-2/config')]);
      assert.deepEqual(JSON.parse(answer.trim()), { interval: 60, device: 'meter-2', got: 0 });
      // 2 kB uploaded in 64-byte blocks (RFC 7959 Block1), answered with what the trigger saw.
      const body = 'x'.repeat(2000);
      const big = await coapClient(['-m', 'put', '-b', '64', '-e', body, url('/d/meter-2/config')]);
      assert.equal(JSON.parse(big.trim()).got, 2000);
    });

    it('refuses unknown devices with 4.03 and requests that name none with 4.04', async () => {
      const client = await device();
      const unknown = await client.request(server, { code: '0.02', options: [...uriPathOptions('/x'), ...uriQueryOptions(['ep=nobody'])], payload: 'x' });
      assert.equal(unknown.code, '4.03');
      const anonymous = await client.request(server, { code: '0.02', options: uriPathOptions('/x'), payload: 'x' });
      assert.equal(anonymous.code, '4.04');
    });

    it('takes a key in the options as it is: `%` is part of it, not an escape (no 5.00 for bad percent-encoding)', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'meter%E0%A4%A', serviceId });
      const client = await device();
      const byQuery = await client.request(server, { code: '0.02', options: [...uriPathOptions('/x'), ...uriQueryOptions(['ep=meter%E0%A4%A'])], payload: 'q' });
      assert.equal(byQuery.code, '2.04');
      const byPath = await client.request(server, { code: '0.02', options: uriPathOptions('/d/meter%E0%A4%A/y'), payload: 'p' });
      assert.equal(byPath.code, '2.04');
      const events = await eventsArrive(service, tenant.token, ['coap-request'], 2, endpoint.id);
      assert.deepEqual(events.map((e) => e.data.text).sort(), ['p', 'q']);
      const malformed = await client.request(server, { code: '0.02', options: [...uriPathOptions('/x'), ...uriQueryOptions(['ep=%'])], payload: 'x' });
      assert.equal(malformed.code, '4.03', 'an unknown key, like any other');
    });

    it('coap.send reaches the device at its last address and returns its answer', async () => {
      const endpoint = await createEndpoint(service, tenant.token, { key: 'actuator', serviceId });
      const received: string[] = [];
      const actuator = await device((request) => {
        received.push(`${request.code} ${request.options.filter((o) => o.number === OptionNumber.UriPath).map((o) => o.value.toString()).join('/')} ${request.payload.toString()}`);
        return { code: '2.05', payload: 'done' };
      });
      const trigger = await createTrigger(service, tenant.token, 'command', ['coap-request'], `
        if (event.endpointKey === 'actuator') {
          var answer = coap.send(null, '/cmd/valve', 'open', { encoding: 'utf8', method: 'PUT' });
          log(answer.code + ' ' + answer.text);
        }
      `);
      const hello = await actuator.request(server, { code: '0.02', options: [...uriPathOptions('/hello'), ...uriQueryOptions(['ep=actuator'])], payload: 'hi' });
      assert.equal(hello.code, '2.04');
      const [execution] = await executionsOf(service, tenant.token, trigger);
      assert.equal(execution?.status, 'success', execution?.error ?? '');
      assert.deepEqual(execution?.logs, ['2.05 done']);
      assert.deepEqual(received, ['0.03 cmd/valve open']);
      assert.equal((await service.request('GET', `/endpoints/${endpoint.id}`, { token: tenant.token })).body.state, 'connected');
    });

    it('coap.notify sends to the observers the device registered', async () => {
      await createEndpoint(service, tenant.token, { key: 'watcher', serviceId });
      const watcher = await device();
      const notifications: string[] = [];
      const observation = await watcher.observe(server, { code: '0.01', options: [...uriPathOptions('/d/watcher/alerts')] }, (n) => notifications.push(n.payload.toString()));
      assert.equal(observation.response.code, '2.05');
      const trigger = await createTrigger(service, tenant.token, 'alert', ['alarm'], `var sent = coap.notify('k.watcher', '/alerts', 'fire', { encoding: 'utf8' }); log(sent.notified);`);
      assert.equal((await service.request('POST', '/events', { token: tenant.token, body: { type: 'alarm', endpoint: 'k.watcher' } })).status, 202);
      const [execution] = await executionsOf(service, tenant.token, trigger);
      assert.deepEqual([execution?.status, execution?.logs], ['success', ['1']]);
      await waitFor(async () => (notifications.length > 0 ? true : undefined), 'a notification');
      assert.deepEqual(notifications, ['fire']);
      await observation.cancel();
    });

    it("another account's trigger cannot reach the device", async () => {
      await createEndpoint(service, tenant.token, { key: 'private-dev', serviceId });
      const received: string[] = [];
      const privateDevice = await device((request) => {
        received.push(request.code);
        return { code: '2.04' };
      });
      await privateDevice.request(server, { code: '0.02', options: [...uriPathOptions('/hi'), ...uriQueryOptions(['ep=private-dev'])], payload: '' });
      const trigger = await createTrigger(service, other.token, 'intruder', ['probe'], `coap.send('k.private-dev', '/cmd', 'ff');`);
      assert.equal((await service.request('POST', '/events', { token: other.token, body: { type: 'probe' } })).status, 202);
      const [execution] = await executionsOf(service, other.token, trigger);
      assert.equal(execution?.status, 'failed');
      assert.match(execution?.error ?? '', /coap\.send/);
      assert.deepEqual(received, []);
      // And the event of the device is not in the other account's history.
      const foreign = await service.request('GET', '/history?type=coap-request', { token: other.token });
      assert.equal(foreign.body.items.length, 0);
    });
  });
}
