import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { splitKey } from '../../src/devices/device-keys.js';
import type { Endpoint } from '../../src/domain/endpoints.js';
import type { Service } from '../../src/domain/services.js';
import { udpOptions } from '../../src/udp/udp-options.js';
import { UdpRouter, type Datagram, type UdpService } from '../../src/udp/udp-router.js';

function service(id: string, accountId: string, options: Record<string, unknown> = {}): UdpService {
  const record = { id, accountId, name: id, type: 'udp', options: { forceQueueMode: false, keepAliveMode: 'statusDetail', coapMaxMessageSize: 1024, ...options }, createdAt: '', updatedAt: '' } as Service;
  return { service: record, options: udpOptions(record.options) };
}

function endpoint(key: string, target: UdpService): Endpoint {
  return { id: `${target.service.id}/${key}`, key, serviceId: target.service.id, accountId: target.service.accountId } as Endpoint;
}

function datagram(bytes: string | Buffer, host = '192.0.2.7', port = 40000): Datagram {
  return { bytes: Buffer.from(bytes), host, port, remoteAddr: `${host}:${port}` };
}

/** A router over these services and endpoints; key scripts answer from `scripts` (service id → key). */
function router(services: UdpService[], endpoints: Endpoint[], scripts: Record<string, string> = {}) {
  const ran: string[] = [];
  const instance = new UdpRouter({
    services: async () => services,
    findDevices: async (key) => endpoints.filter((e) => e.key === key),
    keyScript: async (target) => {
      ran.push(target.service.id);
      return scripts[target.service.id];
    },
  });
  return { route: (d: Datagram) => instance.route(d), ran };
}

describe('UDP routing on the shared port', () => {
  it('reads `<key><delimiter>` and hands over the rest as payload', async () => {
    const a = service('a', 'acc-a');
    const { route } = router([a], [endpoint('meter-1', a)]);
    const routed = await route(datagram('meter-1:21.5'));
    assert.equal(routed.kind, 'device');
    assert.equal(routed.kind === 'device' && routed.payload.toString(), '21.5');
    assert.deepEqual(await route(datagram('meter-2:1')), { kind: 'refused', reason: 'unknown', detail: { keys: ['meter-2'] } });
  });

  it('reads fixed-length binary keys as hex', () => {
    const split = splitKey(Buffer.from('0102030405060708ff', 'hex'), udpOptions({ keyLength: 8, keyEncoding: 'hex' }).prefix);
    assert.deepEqual(split && { key: split.key, rest: split.rest.toString('hex') }, { key: '0102030405060708', rest: 'ff' });
    assert.equal(splitKey(Buffer.from('\u0001bad:x'), udpOptions({}).prefix), undefined, 'control characters make no key');
  });

  it('the address rule takes the source host, or host:port', async () => {
    const byHost = service('h', 'acc-a', { keyRule: 'address' });
    const byPort = service('p', 'acc-b', { keyRule: 'address', keyAddress: 'host:port' });
    const { route } = router([byHost, byPort], [endpoint('192.0.2.7', byHost), endpoint('198.51.100.1:5000', byPort)]);
    assert.equal((await route(datagram('x'))).kind, 'device');
    const second = await route(datagram('y', '198.51.100.1', 5000));
    assert.equal(second.kind === 'device' && second.target.service.id, 'p');
  });

  it('a key that names devices of two accounts is refused, not guessed', async () => {
    const a = service('a', 'acc-a');
    const b = service('b', 'acc-b');
    const { route } = router([a, b], [endpoint('twin', a), endpoint('twin', b)]);
    assert.deepEqual(await route(datagram('twin:1')), { kind: 'refused', reason: 'ambiguous', detail: { serviceIds: ['a', 'b'] } });
  });

  it("an endpoint counts only when its own service's rule read its key", async () => {
    const colon = service('a', 'acc-a');
    const pipe = service('b', 'acc-b', { keyDelimiter: '|' });
    // "x|y:z": the ':' rule reads "x|y", the '|' rule reads "x". Account B's endpoint "x|y" is not named by B's rule.
    const { route } = router([colon, pipe], [endpoint('x|y', pipe), endpoint('x', pipe)]);
    const routed = await route(datagram('x|y:z'));
    assert.equal(routed.kind === 'device' && routed.endpoint.key, 'x');
  });

  it("a claimed network never hides another account's known devices; a claiming service hears only its networks", async () => {
    const open = service('open', 'acc-a');
    const claiming = service('claim', 'acc-b', { sources: ['10.0.0.0/8'] });
    const everything = service('everything', 'acc-c', { sources: ['192.0.0.0/8'], autoProvision: true });
    const { route } = router([open, claiming, everything], [endpoint('dev-a', open), endpoint('dev-b', claiming)]);
    const fromClaimed = await route(datagram('dev-a:1', '10.1.2.3'));
    assert.equal(fromClaimed.kind === 'device' && fromClaimed.target.service.id, 'open');
    const own = await route(datagram('dev-b:1', '10.1.2.3'));
    assert.equal(own.kind === 'device' && own.target.service.id, 'claim');
    assert.equal((await route(datagram('dev-b:1', '192.0.2.1'))).kind !== 'device', true, 'not from outside its networks');
    // An unknown key from 10/8 is account B's to provision or refuse (its claim is narrower than C's), not C's.
    assert.equal((await route(datagram('new-1:1', '10.1.2.3'))).kind, 'refused');
    assert.deepEqual(await route(datagram('new-2:1', '192.0.2.1')), { kind: 'provision', target: everything, key: 'new-2', payload: Buffer.from('1') });
  });

  it("only the closest claimant's key scripts see a datagram (longest prefix, then the oldest claim)", async () => {
    const wide = service('wide', 'acc-b', { keyRule: 'script', keyScript: 'return "w";', sources: ['10.0.0.0/8'] });
    const narrow = service('narrow', 'acc-c', { keyRule: 'script', keyScript: 'return "n";', sources: ['10.1.0.0/16'] });
    const greedy = service('greedy', 'acc-d', { keyRule: 'script', keyScript: 'return "g";', sources: ['8.0.0.0/8', '10.0.0.0/8', '192.0.0.0/8', '2001::/16'] });
    // The greedy account claimed 10/8 too, but after the wide one did.
    (wide.service as { createdAt: string }).createdAt = '2019-01-01T00:00:00.000Z';
    (greedy.service as { createdAt: string }).createdAt = '2022-01-01T00:00:00.000Z';
    const { route, ran } = router([greedy, wide, narrow], [], { wide: 'w', narrow: 'n', greedy: 'g' });
    await route(datagram('\x00', '10.1.2.3'));
    await route(datagram('\x00', '10.2.0.1'));
    await route(datagram('\x00', '192.0.2.1'));
    assert.deepEqual(ran, ['narrow', 'wide', 'greedy']);
    const older = service('older', 'acc-e', { keyRule: 'script', keyScript: 'return 1;', sources: ['10.1.0.0/16'] });
    (older.service as { createdAt: string }).createdAt = '2020-01-01T00:00:00.000Z';
    (narrow.service as { createdAt: string }).createdAt = '2021-01-01T00:00:00.000Z';
    const tie = router([narrow, older], []);
    await tie.route(datagram('\x00', '10.1.2.3'));
    assert.deepEqual(tie.ran, ['older'], 'the same prefix: the older claim');
  });

  it('key scripts run only for claimed networks, after the key rules found nothing', async () => {
    const prefix = service('prefix', 'acc-a', { sources: ['10.0.0.0/8'] });
    const scripted = service('script', 'acc-a', { keyRule: 'script', keyScript: 'return "s1";', sources: ['10.0.0.0/8'] });
    const { route, ran } = router([prefix, scripted], [endpoint('p1', prefix), endpoint('s1', scripted)], { script: 's1' });
    assert.equal(((await route(datagram('p1:x', '10.0.0.1'))) as { endpoint: Endpoint }).endpoint.key, 'p1');
    assert.deepEqual(ran, [], 'a key rule matched: no script ran');
    assert.equal(((await route(datagram('\x00\x01', '10.0.0.1'))) as { endpoint: Endpoint }).endpoint.key, 's1');
    assert.deepEqual(ran, ['script']);
    await route(datagram('\x00\x01', '192.0.2.1'));
    assert.deepEqual(ran, ['script'], 'no script for a network it does not claim');
    assert.throws(() => udpOptions({ keyRule: 'script', keyScript: 'return 1' }), /sources/);
    for (const wide of ['0.0.0.0/0', '10.0.0.0/7', '::/0', '2001::/15']) assert.throws(() => udpOptions({ sources: [wide] }), /at most \/8/, wide);
  });

  it('provisions in the one auto-provisioning service that read a key, never in two', async () => {
    const auto = service('auto', 'acc-a', { autoProvision: true });
    const plain = service('plain', 'acc-b', { keyDelimiter: '#' });
    const { route } = router([auto, plain], []);
    assert.deepEqual(await route(datagram('new-1:hello')), { kind: 'provision', target: auto, key: 'new-1', payload: Buffer.from('hello') });
    const second = service('auto2', 'acc-b', { autoProvision: true });
    assert.equal(((await router([auto, second], []).route(datagram('new-1:x'))) as { reason: string }).reason, 'ambiguous');
  });
});
