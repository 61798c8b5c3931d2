import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { OutboundHttp } from '../../src/devices/outbound-http.js';
import { AppError } from '../../src/errors.js';

/** Tenant-set URLs (a LoRa apiUrl) reach only public addresses and those the operator allows; checked on the address connected to. */
describe('OutboundHttp', () => {
  let server: http.Server;
  let port: number;
  const received: string[] = [];

  before(async () => {
    server = http.createServer((request, response) => {
      received.push(request.url!);
      request.resume();
      request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const refusedWith = (reason: string) => (error: unknown) => error instanceof AppError && error.code === 'IOTB_OUTBOUND_ADDRESS_REFUSED' && (error.details as { reason: string }).reason === reason;

  it('classifies without connecting: only public addresses pass by default', () => {
    const guard = new OutboundHttp();
    for (const [address, reason] of [['127.0.0.1', 'loopback'], ['10.1.1.1', 'private'], ['169.254.169.254', 'link-local'], ['fe80::1', 'link-local'], ['::ffff:192.168.0.1', 'private'], ['224.0.0.1', 'multicast'], ['0.0.0.0', 'unspecified']]) {
      assert.equal(guard.refusal(address!), reason, address);
    }
    assert.equal(guard.refusal('93.184.216.34'), undefined);
    assert.equal(guard.refusal('2606:2800:220:1::1'), undefined);
  });

  it('lets the operator allow networks, and nothing beyond them', () => {
    const guard = new OutboundHttp(['10.20.0.0/16', '127.0.0.1']);
    assert.equal(guard.refusal('10.20.3.4'), undefined);
    assert.equal(guard.refusal('127.0.0.1'), undefined);
    assert.equal(guard.refusal('10.21.0.1'), 'private');
    assert.equal(guard.refusal('127.0.0.2'), 'loopback');
  });

  it('refuses a name that resolves to a refused address, in the connection itself (nothing arrives)', async () => {
    const before = received.length;
    await assert.rejects(new OutboundHttp().postJson(`http://localhost:${port}/x`, {}, {}, 2000), refusedWith('loopback'));
    await assert.rejects(new OutboundHttp().postJson(`http://127.0.0.1:${port}/x`, {}, {}, 2000), refusedWith('loopback'));
    assert.equal(received.length, before, 'no request reached the listener');
  });

  it('posts JSON to an allowed address, by name and by address', async () => {
    const guard = new OutboundHttp(['127.0.0.0/8', '::1/128']);
    const answer = await guard.postJson(`http://localhost:${port}/by-name`, { authorization: 'Bearer k' }, { a: 1 }, 2000);
    assert.deepEqual(answer, { status: 200, text: '{"ok":true}' });
    assert.equal((await guard.postJson(`http://127.0.0.1:${port}/by-address`, {}, {}, 2000)).status, 200);
    assert.deepEqual(received.slice(-2), ['/by-name', '/by-address']);
  });
});
