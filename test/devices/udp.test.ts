import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createTrigger, eventsArrive, executionsOf, history, UdpDevice, waitFor } from '../helpers/devices.js';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { runScript } from '../helpers/scripts.js';
import { ipv6Available } from '../helpers/coap.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

const IPV6 = await ipv6Available();

for (const dialect of DIALECTS) {
  describe(`UDP devices (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let a: TestAccount;
    let b: TestAccount;
    let udpA: string;
    let udpB: string;
    const devices: UdpDevice[] = [];
    const device = async (host?: string) => {
      const opened = await UdpDevice.open(service.ports.udp!, host);
      devices.push(opened);
      return opened;
    };

    before(async () => {
      service = await startService(dialect.name, { scriptWorkers: 1 });
      a = await createAccount(service, 'udp-a');
      b = await createAccount(service, 'udp-b');
      udpA = await createService(service, a.token, { name: 'udp', type: 'udp' });
      udpB = await createService(service, b.token, { name: 'udp', type: 'udp' });
    });
    after(async () => {
      for (const d of devices) d.close();
      await service?.stop();
    });

    it('a datagram "<key>:<payload>" is an event of its device, which is connected at its address', async () => {
      const meter = await createEndpoint(service, a.token, { key: 'meter-1', serviceId: udpA });
      const d = await device();
      await d.send('meter-1:21.5C');
      const [event] = await eventsArrive(service, a.token, ['udp-message'], 1, meter.id);
      assert.deepEqual(event!.data, { remoteAddr: d.address, payload: Buffer.from('21.5C').toString('hex'), payloadBase64: Buffer.from('21.5C').toString('base64'), text: '21.5C' });
      assert.equal(event!.serviceId, udpA);
      await d.send(Buffer.concat([Buffer.from('meter-1:'), Buffer.from([0xff, 0x00])]));
      const events = await eventsArrive(service, a.token, ['udp-message'], 2, meter.id);
      assert.deepEqual(events[1]!.data, { remoteAddr: d.address, payload: 'ff00', payloadBase64: '/wA=' }, 'binary payloads have no text');
      const stored = await service.request('GET', `/endpoints/${meter.id}`, { token: a.token });
      assert.equal(stored.body.state, 'connected');
      assert.equal(stored.body.statusDetails.remoteAddr, d.address);
      assert.deepEqual((await history(service, a.token, ['on-connect'], meter.id)).map((e) => e.data), [{ protocol: 'udp', remoteAddr: d.address }], 'one on-connect, not one per datagram');
      // NAT rebinding: the same device from another source port; remoteAddr follows, no new on-connect.
      const rebound = await device();
      await rebound.send('meter-1:moved');
      await eventsArrive(service, a.token, ['udp-message'], 3, meter.id);
      assert.equal((await service.request('GET', `/endpoints/${meter.id}`, { token: a.token })).body.statusDetails.remoteAddr, rebound.address);
      assert.equal((await history(service, a.token, ['on-connect'], meter.id)).length, 1);
      assert.deepEqual(await history(service, b.token, ['udp-message']), [], 'nothing reaches the other account');
    });

    it('refuses unknown devices; an autoProvision service creates them with on-create', async () => {
      const auto = await createService(service, a.token, { name: 'udp auto', type: 'udp', options: { autoProvision: true, keyDelimiter: '#' } });
      await createEndpoint(service, a.token, { key: 'probe-1', serviceId: udpA });
      const d = await device();
      await d.send('ghost-1:who is there');
      await d.send('probe-1:after');
      // Datagrams of one source are handled in order: once the probe arrived, the ghost was handled.
      await eventsArrive(service, a.token, ['udp-message'], 1, 'k.probe-1');
      assert.equal((await service.request('GET', '/endpoints/k.ghost-1', { token: a.token })).status, 404);
      await d.send('new-7#first words');
      const [created] = await eventsArrive(service, a.token, ['on-create'], 1, 'k.new-7');
      assert.equal(created!.serviceId, auto);
      const [message] = await eventsArrive(service, a.token, ['udp-message'], 1, 'k.new-7');
      assert.equal(message!.data.text, 'first words');
    });

    it('the address rule: the source host:port is the key', async () => {
      const byAddress = await createService(service, b.token, { name: 'udp by address', type: 'udp', options: { keyRule: 'address', keyAddress: 'host:port' } });
      const d = await device();
      const sensor = await createEndpoint(service, b.token, { key: d.address, serviceId: byAddress });
      await d.send('no key in here');
      const [event] = await eventsArrive(service, b.token, ['udp-message'], 1, sensor.id);
      assert.equal(event!.data.text, 'no key in here');
    });

    it("a key another account's UDP device holds cannot be taken; the device keeps reaching its own account", async () => {
      const twinA = await createEndpoint(service, a.token, { key: 'twin', serviceId: udpA });
      const twinB = await service.request('POST', '/endpoints', { token: b.token, body: { key: 'twin', serviceId: udpB } });
      assert.equal(twinB.body.error?.code, 'IOTB_ENDPOINT_KEY_IN_USE');
      const d = await device();
      await d.send('twin:for whom?');
      const [event] = await eventsArrive(service, a.token, ['udp-message'], 1, twinA.id);
      assert.equal(event!.data.text, 'for whom?');
    });

    it("a key script reads binary ids of the network its service claims; a wider claim of another account neither stops it nor sees it", async () => {
      const scripted = await createService(service, a.token, {
        name: 'udp binary',
        type: 'udp',
        options: { keyRule: 'script', sources: ['127.0.0.2'], keyScript: 'var r = convert.binReader(datagram.payload); return r.readBytes(4);' },
      });
      const tracker = await createEndpoint(service, a.token, { key: 'cafebabe', serviceId: scripted });
      const d = await device('127.0.0.2');
      await d.send(Buffer.from('cafebabe0102', 'hex'));
      const [event] = await eventsArrive(service, a.token, ['udp-message'], 1, tracker.id);
      assert.equal(event!.data.payload, 'cafebabe0102');

      // Account B claims all of 127/8 with a key script that would log what it sees, and provisions what it reads.
      const rival = await createService(service, b.token, {
        name: 'rival',
        type: 'udp',
        options: { keyRule: 'script', sources: ['127.0.0.0/8'], autoProvision: true, keyScript: 'log("saw " + datagram.payload); return "stolen-" + datagram.payload;' },
      });
      await d.send(Buffer.from('cafebabe0304', 'hex'));
      await eventsArrive(service, a.token, ['udp-message'], 2, tracker.id);
      const seenByB = await service.request('GET', '/endpoints?limit=100', { token: b.token });
      assert.ok(seenByB.body.items.every((e: { key: string }) => !e.key.startsWith('stolen-')), "B's script never ran on A's network");
      // Elsewhere in 127/8 the datagram is B's to read.
      const other = await device('127.0.0.3');
      await other.send(Buffer.from('0a0b', 'hex'));
      await waitFor(async () => ((await service.request('GET', '/endpoints/k.stolen-0a0b', { token: b.token })).status === 200 ? true : undefined), "B's own device");
      assert.equal((await service.request('DELETE', `/services/${rival}?cascade=true`, { token: b.token })).status, 204);
      const wide = await service.request('POST', '/services', { token: b.token, body: { name: 'all', type: 'udp', options: { sources: ['0.0.0.0/0'] } } });
      assert.equal(wide.status, 400, 'nobody claims the whole address space');
    });

    it('refuses service options it could not use, naming the option', async () => {
      const bad = await service.request('POST', '/services', { token: a.token, body: { name: 'bad', type: 'udp', options: { keyRule: 'script', keyScript: 'return 1;' } } });
      assert.equal(bad.status, 400);
      assert.match(bad.body.error.message, /sources/);
      const wrong = await service.request('POST', '/services', { token: a.token, body: { name: 'bad', type: 'udp', options: { sources: ['not-an-ip'] } } });
      assert.equal(wrong.status, 400);
      assert.equal(wrong.body.error.details.option, 'sources');
    });

    it('malformed datagrams are dropped and never stop the service', async () => {
      await createEndpoint(service, a.token, { key: 'probe-3', serviceId: udpA });
      const d = await device();
      for (const junk of [Buffer.alloc(0), Buffer.alloc(65_507, 0xaa), Buffer.from([0xff, 0xfe, 0x3a, 0x01]), Buffer.from(`${'k'.repeat(5000)}:x`), Buffer.from(':no key'), Buffer.from('\u0000\u0001:x')]) {
        await d.send(junk);
      }
      await d.send('probe-3:still here');
      const [event] = await eventsArrive(service, a.token, ['udp-message'], 1, 'k.probe-3');
      assert.equal(event!.data.text, 'still here');
    });

    it('udp.send answers a device at its last address; other accounts and other protocols cannot use it', async () => {
      const echo = await createEndpoint(service, a.token, { key: 'echo-1', serviceId: udpA });
      const trigger = await createTrigger(service, a.token, 'echo', ['udp-message'], `
        if (event.endpointKey === 'echo-1') log(JSON.stringify(udp.send(null, 'ack ' + event.data.text, { encoding: 'utf8' })));
      `);
      const d = await device();
      await d.send('echo-1:hello');
      assert.equal((await d.nth(1)).toString(), 'ack hello');
      const [run] = await executionsOf(service, a.token, trigger, 1);
      assert.deepEqual(run!.logs, [JSON.stringify({ remoteAddr: d.address, bytes: 9 })]);
      await service.request('DELETE', `/triggers/${trigger}`, { token: a.token });

      const sent = await runScript(service, a.token, `log(JSON.stringify(udp.send('${echo.id}', [1, 2, 3])));`);
      assert.equal(sent.status, 'success', sent.error ?? '');
      assert.deepEqual([...(await d.nth(2))], [1, 2, 3]);

      for (const ref of [echo.id, 'k.echo-1']) {
        const foreign = await runScript(service, b.token, `udp.send('${ref}', '00');`);
        assert.equal(foreign.status, 'failed');
        assert.match(foreign.error ?? '', /udp\.send: IOTB_ENDPOINT_NOT_FOUND: No such endpoint/);
      }
      await createEndpoint(service, a.token, { key: 'silent-1', serviceId: udpA });
      assert.match((await runScript(service, a.token, `udp.send('k.silent-1', '00');`)).error ?? '', /not been heard from/);
      const lwm2m = await createService(service, a.token, { name: 'lwm2m', type: 'lwm2m' });
      await createEndpoint(service, a.token, { key: 'lw-1', serviceId: lwm2m });
      assert.match((await runScript(service, a.token, `udp.send('k.lw-1', '00');`)).error ?? '', /not belong to a UDP service/);
      assert.match((await runScript(service, a.token, `udp.send('k.echo-1', 'xyz');`)).error ?? '', /not hex/);
      assert.equal(d.received.length, 2, 'nothing else was sent');
    });

    it('a silent device becomes unavailable after secondsBeforeMissing and connects again with its next datagram', async () => {
      const quiet = await createEndpoint(service, a.token, { key: 'quiet-1', serviceId: udpA, statusDetails: { secondsBeforeMissing: 1 } });
      const d = await device();
      await d.send('quiet-1:a');
      await eventsArrive(service, a.token, ['udp-message'], 1, quiet.id);
      assert.ok((await service.bridge.presence.sweep(new Date(Date.now() + 1500))) >= 1);
      await d.send('quiet-1:b');
      await eventsArrive(service, a.token, ['udp-message'], 2, quiet.id);
      const types = (await history(service, a.token, ['on-connect', 'on-disconnect', 'udp-message'], quiet.id)).map((e) => e.type);
      assert.deepEqual(types, ['on-connect', 'udp-message', 'on-disconnect', 'on-connect', 'udp-message']);
    });

    it('IPv6 devices are heard and answered', { skip: !IPV6 && 'no IPv6 loopback here' }, async () => {
      const v6 = await createEndpoint(service, a.token, { key: 'v6-1', serviceId: udpA });
      const d = await device('::1');
      await d.send('v6-1:over six');
      const [event] = await eventsArrive(service, a.token, ['udp-message'], 1, v6.id);
      assert.equal(event!.data.remoteAddr, d.address);
      assert.match(d.address, /^\[::1\]:\d+$/);
      assert.equal((await runScript(service, a.token, `udp.send('k.v6-1', 'pong', { encoding: 'utf8' });`)).status, 'success');
      assert.equal((await d.nth(1)).toString(), 'pong');
    });

    it('udp.queue holds messages until the next datagram, across a restart; with a ttl and a cap', async () => {
      const capped = await createService(service, a.token, { name: 'udp capped', type: 'udp', options: { keyDelimiter: '/', queueLimit: 2 } });
      const nat = await createEndpoint(service, a.token, { key: 'nat-1', serviceId: capped });
      const queued = await runScript(service, a.token, `
        log(udp.queue('k.nat-1', 'first', { encoding: 'utf8' }).queued, udp.queue('${nat.id}', '02').queued);
        try { udp.queue('k.nat-1', '03'); } catch (e) { log(e.message); }
      `);
      assert.deepEqual(queued.logs, ['1 2', "udp.queue: IOTB_DEVICE_QUEUE_FULL: The device already holds 2 queued messages (service option queueLimit)"]);
      assert.match((await runScript(service, b.token, `udp.queue('${nat.id}', '00');`)).error ?? '', /No such endpoint/, 'another account cannot queue for it');

      service = await service.restart();
      const d = await device();
      await d.send('nat-1/wake up');
      assert.equal((await d.nth(1)).toString(), 'first');
      assert.deepEqual([...(await d.nth(2))], [0x02]);
      await eventsArrive(service, a.token, ['udp-message'], 1, nat.id);
      await d.send('nat-1/again');
      await eventsArrive(service, a.token, ['udp-message'], 2, nat.id);
      assert.equal(d.received.length, 2, 'a queued message is sent once');

      await runScript(service, a.token, `udp.queue('k.nat-1', 'dd', { ttl: 1 });`);
      await sleep(1100);
      await d.send('nat-1/late');
      await eventsArrive(service, a.token, ['udp-message'], 3, nat.id);
      await sleep(100);
      assert.equal(d.received.length, 2, 'an expired message is not sent');
    });
  });
}

describe('UDP port', () => {
  it('a taken port stops the service with a message naming IOTBRIDGE_UDP_PORT', async () => {
    const holder = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => holder.bind(0, '0.0.0.0', resolve));
    try {
      await assert.rejects(startService('sqlite', { udpPort: holder.address().port }), /UDP port \d+ is already in use: set IOTBRIDGE_UDP_PORT/);
    } finally {
      holder.close();
    }
  });
});
