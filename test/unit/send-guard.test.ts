// The send guard's address classification. Pure: no socket is opened and nothing is sent anywhere.
import assert from 'node:assert/strict';
import type { NetworkInterfaceInfo } from 'node:os';
import { describe, it } from 'node:test';
import { classifyAddress, SendGuard, type AddressKind } from '../../src/devices/send-guard.js';
import { AppError } from '../../src/errors.js';

const KINDS: Record<AddressKind, string[]> = {
  unspecified: ['0.0.0.0', '0.1.2.3', '::', '0:0:0:0:0:0:0:0', '::ffff:0.0.0.0', '::2' /* IPv4-compatible 0.0.0.2 */],
  loopback: ['127.0.0.1', '127.255.0.9', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', '::ffff:7f00:1', '[::1]'],
  'link-local': [
    '169.254.169.254', // cloud metadata services
    '169.254.0.1',
    '169.254.255.255',
    'fe80::1',
    'fe80::1%eth0',
    'febf:ffff::1',
    'FE80::ABCD',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe', // the same, in hex
    '0:0:0:0:0:ffff:a9fe:a9fe',
    '::169.254.169.254', // IPv4-compatible
    '64:ff9b::169.254.169.254', // NAT64
    '64:ff9b::a9fe:a9fe',
  ],
  multicast: ['224.0.0.1', '239.255.255.250', '230.1.2.3', 'ff02::1', 'ff05::fb', 'FF0E::1', '::ffff:224.0.0.251'],
  broadcast: ['255.255.255.255', '::ffff:255.255.255.255'],
  private: ['10.0.0.1', '10.255.255.255', '172.16.0.1', '172.31.255.254', '192.168.0.1', '192.168.255.255', '::ffff:10.1.2.3', '::ffff:192.168.1.1', '64:ff9b::10.0.0.1'],
  shared: ['100.64.0.1', '100.127.255.254', '::ffff:100.64.1.1'],
  'unique-local': ['fc00::1', 'fd12:3456:789a::1', 'fdff:ffff::1'],
  public: [
    '8.8.8.8',
    '1.1.1.1',
    '192.0.2.7', // documentation ranges are public as far as routing goes
    '203.0.113.9',
    '172.15.255.255', // just outside 172.16/12
    '172.32.0.0',
    '100.63.255.255', // just outside 100.64/10
    '100.128.0.0',
    '169.253.255.255', // just outside 169.254/16
    '223.255.255.255', // just below multicast
    '11.0.0.0',
    '2001:db8::7',
    '2606:4700:4700::1111',
    'fec0::1', // old site-local: routed like any other
    'fe7f::1', // just below fe80::/10
    'fec0::', // just above it
    'fbff::1', // just below fc00::/7
    '::ffff:8.8.8.8',
    '::ffff:808:808',
    '64:ff9b::8.8.8.8',
    '::8.8.4.4', // IPv4-compatible
  ],
  invalid: ['', 'localhost', 'example.com', '1.2.3', '256.1.1.1', '1.2.3.4.5', '::g', '1:2:3:4:5:6:7:8:9', '12345::', '127.0.0.1:80', 'fe80::1::2'],
};

/** A host with one Ethernet interface on 192.168.10.5/24 and a VPN address, besides loopback. */
const interfaces = (): NodeJS.Dict<NetworkInterfaceInfo[]> => ({
  lo: [
    { address: '127.0.0.1', netmask: '255.0.0.0', family: 'IPv4', mac: '00:00:00:00:00:00', internal: true, cidr: '127.0.0.1/8' },
    { address: '::1', netmask: 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', family: 'IPv6', mac: '00:00:00:00:00:00', internal: true, cidr: '::1/128', scopeid: 0 },
  ],
  eth0: [
    { address: '192.168.10.5', netmask: '255.255.255.0', family: 'IPv4', mac: '02:00:00:00:00:01', internal: false, cidr: '192.168.10.5/24' },
    { address: '2001:db8:10::5', netmask: 'ffff:ffff:ffff:ffff::', family: 'IPv6', mac: '02:00:00:00:00:01', internal: false, cidr: '2001:db8:10::5/64', scopeid: 0 },
  ],
  tun0: [{ address: '10.8.0.2', netmask: '255.255.255.255', family: 'IPv4', mac: '00:00:00:00:00:00', internal: false, cidr: '10.8.0.2/32' }],
});

describe('send guard', () => {
  it('classifies addresses (IPv4, IPv6, IPv4-mapped, -compatible and NAT64 as the IPv4 address inside)', () => {
    for (const [kind, addresses] of Object.entries(KINDS)) {
      for (const address of addresses) assert.equal(classifyAddress(address), kind, address);
    }
  });

  it('refuses what no device can be at, and allows loopback, private, shared (CGNAT), unique-local and public addresses', () => {
    const guard = new SendGuard({ interfaces });
    for (const kind of ['unspecified', 'link-local', 'multicast', 'broadcast', 'invalid'] as const) {
      for (const address of KINDS[kind]) assert.equal(guard.refusal(address, 5683), kind, address);
    }
    for (const kind of ['loopback', 'private', 'shared', 'unique-local', 'public'] as const) {
      for (const address of KINDS[kind]) assert.equal(guard.refusal(address, 5683), undefined, address);
    }
    for (const port of [0, -1, 65_536, 1.5, Number.NaN]) assert.equal(guard.refusal('192.0.2.7', port), 'port', String(port));
  });

  it("refuses the service's own ports on the host's own addresses only, and local networks' broadcast addresses", () => {
    const guard = new SendGuard({ interfaces });
    guard.addOwnPorts([5683, 5700, 8080, 0]);
    for (const host of ['127.0.0.1', '127.0.0.53', '::1', '::ffff:127.0.0.1', '192.168.10.5', '::ffff:192.168.10.5', '2001:db8:10::5', '2001:DB8:10:0::5', '10.8.0.2']) {
      for (const port of [5683, 5700, 8080]) assert.equal(guard.refusal(host, port), 'own-port', `${host}:${port}`);
      assert.equal(guard.refusal(host, 5684), undefined, `${host}:5684 is not the service's`);
    }
    // The same port on another host is an ordinary device (many CoAP devices send from 5683).
    for (const host of ['192.168.10.6', '10.8.0.3', '2001:db8:10::6', '198.51.100.1']) assert.equal(guard.refusal(host, 5683), undefined, host);
    assert.equal(guard.refusal('192.168.10.255', 9999), 'broadcast', 'eth0 directed broadcast');
    assert.equal(guard.refusal('::ffff:192.168.10.255', 9999), 'broadcast');
    assert.equal(guard.refusal('127.255.255.255', 9999), 'broadcast', 'lo directed broadcast');
    assert.equal(guard.refusal('10.8.0.2', 9999), undefined, 'a /32 has no broadcast address');
    assert.equal(guard.refusal('192.168.11.255', 9999), undefined, 'not a local network');
  });

  it('re-reads the interfaces after a while (addresses change with DHCP and VPNs)', () => {
    let now = 0;
    let address = '192.168.10.5';
    const guard = new SendGuard({
      now: () => now,
      interfaces: () => ({ eth0: [{ address, netmask: '255.255.255.0', family: 'IPv4', mac: '02:00:00:00:00:01', internal: false, cidr: `${address}/24` }] }),
    });
    guard.addOwnPorts([5700]);
    assert.equal(guard.refusal('192.168.10.5', 5700), 'own-port');
    address = '192.168.20.5';
    now = 60_000;
    assert.equal(guard.refusal('192.168.10.5', 5700), undefined);
    assert.equal(guard.refusal('192.168.20.5', 5700), 'own-port');
  });

  it('check() throws 409 IOTB_DEVICE_ADDRESS_REFUSED with the reason', () => {
    const guard = new SendGuard({ interfaces });
    assert.doesNotThrow(() => guard.check('127.0.0.1', 40_000));
    assert.throws(
      () => guard.check('::ffff:169.254.169.254', 80),
      (error: unknown) => error instanceof AppError && error.code === 'IOTB_DEVICE_ADDRESS_REFUSED' && error.status === 409 && (error.details as { reason: string }).reason === 'link-local',
    );
  });
});
