import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SessionCache, type SessionTicket } from '../../src/dtls/sessions.js';
import { MemoryPendingLogins, type PendingLogin } from '../../src/oidc/pending-logins.js';

const ticket = (n: number, identity?: string): SessionTicket => ({
  id: Buffer.from([n >> 8, n & 0xff]),
  master: Buffer.alloc(48, n),
  suite: 0xc0a8,
  identity: identity === undefined ? undefined : Buffer.from(identity),
  extendedMasterSecret: true,
});

describe('DTLS session cache', () => {
  it('holds at most max sessions, dropping the least recently used', () => {
    const cache = new SessionCache({ max: 3 });
    for (const n of [1, 2, 3]) cache.put(ticket(n));
    assert.ok(cache.get(ticket(1).id)); // 1 used: 2 is now the least recently used
    cache.put(ticket(4));
    assert.equal(cache.size, 3);
    assert.equal(cache.get(ticket(2).id), undefined);
    for (const n of [1, 3, 4]) assert.equal(cache.get(ticket(n).id)?.master[0], n);
  });

  it('keeps one entry per session id, the newest', () => {
    const cache = new SessionCache({ max: 3 });
    cache.put(ticket(1));
    cache.put({ ...ticket(1), suite: 0xc0ae });
    assert.equal(cache.size, 1);
    assert.equal(cache.get(ticket(1).id)?.suite, 0xc0ae);
  });

  it('forgets a session past its age, and the sessions of an identity', () => {
    const old = new SessionCache({ maxAgeMs: -1 });
    old.put(ticket(1));
    assert.equal(old.get(ticket(1).id), undefined);
    assert.equal(old.size, 0);

    const cache = new SessionCache();
    cache.put(ticket(1, 'device-a'));
    cache.put(ticket(2, 'device-b'));
    cache.put(ticket(3, 'device-a'));
    cache.forgetIdentity(Buffer.from('device-a'));
    assert.equal(cache.size, 1);
    assert.ok(cache.get(ticket(2).id));
  });

  it('stays bounded under a stream of new sessions far past max', () => {
    const cache = new SessionCache({ max: 1000 });
    for (let n = 0; n < 20_000; n++) cache.put(ticket(n));
    assert.equal(cache.size, 1000);
    assert.ok(cache.get(ticket(19_999).id));
    assert.equal(cache.get(ticket(18_999).id), undefined);
  });
});

describe('pending OIDC sign-ins in memory', () => {
  const login = (expiresAt: number): PendingLogin => ({ codeVerifier: 'v', nonce: 'n', redirectUri: 'http://127.0.0.1/cb', accountId: undefined, returnTo: undefined, browser: 'b', expiresAt });

  it('gives a sign-in once, and none once it expired', async () => {
    let now = 1_000;
    const logins = new MemoryPendingLogins({ clock: () => now });
    await logins.put('s1', login(2_000));
    await logins.put('s2', login(2_000));
    assert.equal((await logins.take('s1'))?.nonce, 'n');
    assert.equal(await logins.take('s1'), undefined);
    now = 3_000;
    assert.equal(await logins.take('s2'), undefined);
  });

  it('drops the oldest past max, and sweeps the expired ones (all share one lifetime) when a sign-in starts', async () => {
    let now = 1_000;
    const logins = new MemoryPendingLogins({ max: 3, clock: () => now });
    const put = (state: string) => logins.put(state, login(now + 1_000));
    for (const state of ['a', 'b', 'c', 'd']) await put(state);
    assert.equal(logins.size, 3);
    assert.equal(await logins.take('a'), undefined);
    assert.ok(await logins.take('b'));

    now = 1_500;
    await put('e');
    now = 2_100;
    await put('f');
    // c and d expired at 2,000 and were swept; e and f are live.
    assert.equal(logins.size, 2);
    assert.equal(await logins.take('c'), undefined);
    for (const state of ['e', 'f']) assert.ok(await logins.take(state));
  });
});
