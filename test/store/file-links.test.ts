import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { AppError } from '../../src/errors.js';
import { FileLinks, type FileLinkStore } from '../../src/domain/file-links.js';
import { Files } from '../../src/domain/files.js';
import { hashTokenSecret } from '../../src/domain/secrets.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { sqlStores } from '../../src/store/stores.js';
import { DIALECTS, throwAwayPostgres } from '../helpers/service.js';

const code = (expected: string) => (error: unknown) => {
  assert.ok(error instanceof AppError, `expected AppError ${expected}, got ${String(error)}`);
  assert.equal(error.code, expected, error.message);
  return true;
};

async function readAll(stream: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

for (const dialect of DIALECTS) {
  describe(`download links: FileLinks over the SQL store (${dialect.name})`, { skip: dialect.skip }, () => {
    const A = 'links-a';
    const B = 'links-b';
    let dataDir: string;
    let database: Database;
    let dropDatabase = async () => {};
    let store: FileLinkStore;
    let files: Files;
    let links: FileLinks;
    let clock = Date.parse('2026-03-01T00:00:00.000Z');

    const addAccount = (id: string) =>
      database.db.insertInto('accounts').values({ id, name: id, parent_id: null, path: `/${id}/`, external_refs: '{}', created_at: clock, updated_at: clock }).execute();
    const put = (account: string, name: string, content: string) => files.replace(account, { name }, Readable.from([Buffer.from(content)]), { maxBytes: 1000 });
    const rows = () => database.db.selectFrom('file_links').selectAll().execute();

    before(async () => {
      dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-file-links-'));
      let databaseUrl: string | undefined;
      if (dialect.name === 'postgres') ({ url: databaseUrl, drop: dropDatabase } = await throwAwayPostgres());
      database = openDatabase({ dataDir, databaseUrl });
      await migrateToLatest(database);
      await addAccount(A);
      await addAccount(B);
      const stores = sqlStores(database, { dataDir });
      store = stores.fileLinks;
      files = new Files(stores.files);
      // No memory cache: every call reaches the store (a second instance below tests the cache).
      links = new FileLinks(store, files, { now: () => clock, cacheTtlMs: 1 });
      await put(A, 'fw/app.bin', 'image of A');
      await put(B, 'fw/app.bin', 'image of B');
    });
    after(async () => {
      try {
        await database?.close();
      } finally {
        await dropDatabase();
        await rm(dataDir, { recursive: true, force: true });
      }
    });

    it('makes a link pinning the content; only the hash of its 192-bit token is stored', async () => {
      const link = await links.create(A, 'fw/app.bin', { ttlSeconds: 60, createdBy: 'user-1' });
      assert.match(link.token, /^[A-Za-z0-9_-]{32}$/);
      assert.deepEqual({ ...link, token: '' }, {
        token: '',
        accountId: A,
        name: 'fw/app.bin',
        sha256: (await files.info(A, 'fw/app.bin')).sha256,
        size: 10,
        expiresAt: new Date(clock + 60_000).toISOString(),
        createdAt: new Date(clock).toISOString(),
      });
      const stored = (await rows()).find((row) => row.token_hash === hashTokenSecret(link.token));
      assert.ok(stored);
      assert.equal(stored.created_by, 'user-1');
      assert.ok(!JSON.stringify(await rows()).includes(link.token), 'the token itself is nowhere in the table');
      assert.deepEqual(await links.resolve(link.token), { ...link, token: '' });
      assert.equal((await readAll((await links.read(link.token)).stream)).toString(), 'image of A');
      assert.equal((await readAll((await links.read(link.token, { start: 6, end: 7 })).stream)).toString(), 'of');
      await assert.rejects(links.read(link.token, { start: 10 }), code('IOTB_FILE_RANGE_NOT_SATISFIABLE'));
      const tokens = new Set(await Promise.all(Array.from({ length: 50 }, async () => (await links.create(A, 'fw/app.bin', { ttlSeconds: 1 })).token)));
      assert.equal(tokens.size, 50);
    });

    it('refuses what cannot be linked: unknown files, another account\'s file, ttl out of range', async () => {
      await assert.rejects(links.create(A, 'nope.bin', { ttlSeconds: 60 }), code('IOTB_FILE_NOT_FOUND'));
      await assert.rejects(links.create(B, 'fw/../fw/app.bin', { ttlSeconds: 60 }), code('IOTB_FILE_NOT_FOUND'));
      for (const ttlSeconds of [0, -5, 1.5, Number.NaN, 30 * 24 * 3600 + 1]) {
        await assert.rejects(links.create(A, 'fw/app.bin', { ttlSeconds }), code('IOTB_REQUEST_VALIDATION'), String(ttlSeconds));
      }
      assert.ok(await links.create(A, 'fw/app.bin', { ttlSeconds: 30 * 24 * 3600 }));
    });

    it('forgets unknown and malformed tokens without an error', async () => {
      for (const token of ['', 'x', 'A'.repeat(32), 'A'.repeat(33), '../../etc/passwd', '\u0000'.repeat(32), 'é'.repeat(32)]) {
        assert.equal(await links.resolve(token), undefined, token);
        await assert.rejects(links.read(token), code('IOTB_FILE_LINK_INVALID'));
        assert.equal(await links.revoke(A, token), false);
      }
    });

    it('expires links (checked at each use, removed lazily and by the sweep)', async () => {
      const link = await links.create(A, 'fw/app.bin', { ttlSeconds: 5 });
      clock += 4_999;
      assert.ok(await links.resolve(link.token));
      clock += 1;
      assert.equal(await links.resolve(link.token), undefined);
      await assert.rejects(links.read(link.token), code('IOTB_FILE_LINK_INVALID'));
      // Removed lazily once seen expired.
      for (let i = 0; i < 50 && (await rows()).some((row) => row.token_hash === hashTokenSecret(link.token)); i++) await new Promise((r) => setTimeout(r, 10));
      assert.ok(!(await rows()).some((row) => row.token_hash === hashTokenSecret(link.token)));
      // Others that expired unseen go with the sweep (at most once a minute, started by a create or a look-up).
      const unseen = await links.create(A, 'fw/app.bin', { ttlSeconds: 1 });
      clock += 61_000;
      await links.create(A, 'fw/app.bin', { ttlSeconds: 60 });
      for (let i = 0; i < 50 && (await rows()).some((row) => Number(row.expires_at) <= clock); i++) await new Promise((r) => setTimeout(r, 10));
      assert.ok(!(await rows()).some((row) => Number(row.expires_at) <= clock), 'expired rows swept');
      assert.ok(!(await rows()).some((row) => row.token_hash === hashTokenSecret(unseen.token)));
    });

    it('goes stale when the file is replaced or removed, and serves again the pinned content only', async () => {
      await put(A, 'stale.bin', 'first');
      const link = await links.create(A, 'stale.bin', { ttlSeconds: 600 });
      await put(A, 'stale.bin', 'second, longer');
      await assert.rejects(links.read(link.token), code('IOTB_FILE_LINK_STALE'));
      await assert.rejects(links.read(link.token, { start: 0, end: 2 }), code('IOTB_FILE_LINK_STALE'));
      await put(A, 'stale.bin', 'sec');
      await assert.rejects(links.read(link.token, { start: 4 }), code('IOTB_FILE_LINK_STALE'), 'a shorter new content is stale too, not a 416');
      await put(A, 'stale.bin', 'first');
      assert.equal((await readAll((await links.read(link.token)).stream)).toString(), 'first');
      await files.remove(A, 'stale.bin');
      await assert.rejects(links.read(link.token), code('IOTB_FILE_LINK_STALE'));
      assert.ok(await links.resolve(link.token), 'a stale link still resolves: it is not unknown');
    });

    it('keeps accounts apart: a link reads its own account\'s file; revoking takes the owner', async () => {
      const ofA = await links.create(A, 'fw/app.bin', { ttlSeconds: 600 });
      const ofB = await links.create(B, 'fw/app.bin', { ttlSeconds: 600 });
      assert.equal((await readAll((await links.read(ofA.token)).stream)).toString(), 'image of A');
      assert.equal((await readAll((await links.read(ofB.token)).stream)).toString(), 'image of B');
      assert.equal(await links.revoke(B, ofA.token), false);
      assert.ok(await links.resolve(ofA.token));
      assert.equal(await links.revokeAllFor(B, 'fw/app.bin'), 1);
      assert.ok(await links.resolve(ofA.token), 'B revoking its own file\'s links leaves A\'s');
      assert.equal(await links.resolve(ofB.token), undefined);
      assert.equal(await links.revoke(A, ofA.token), true);
      assert.equal(await links.revoke(A, ofA.token), false);
      assert.equal(await links.resolve(ofA.token), undefined);
    });

    it('caches look-ups briefly (one store read for many blocks); revocation on this node is immediate', async () => {
      let finds = 0;
      const counting: FileLinkStore = { ...store, insert: (l) => store.insert(l), remove: (a, h) => store.remove(a, h), removeFor: (a, n) => store.removeFor(a, n), removeExpired: (n) => store.removeExpired(n), find: (hash) => (finds++, store.find(hash)) };
      const cached = new FileLinks(counting, files, { now: () => clock, cacheTtlMs: 60_000 });
      const link = await cached.create(A, 'fw/app.bin', { ttlSeconds: 600 });
      for (let i = 0; i < 20; i++) assert.ok(await cached.resolve(link.token));
      for (let i = 0; i < 20; i++) assert.equal(await cached.resolve('Z'.repeat(32)), undefined);
      assert.equal(finds, 2);
      // Expiry is checked on every use, cached or not.
      clock += 600_000;
      assert.equal(await cached.resolve(link.token), undefined);
      clock -= 600_000;
      const other = await cached.create(A, 'fw/app.bin', { ttlSeconds: 600 });
      assert.ok(await cached.resolve(other.token));
      assert.equal(await cached.revoke(A, other.token), true);
      assert.equal(await cached.resolve(other.token), undefined);
    });

    it('goes with its account', async () => {
      await addAccount('links-gone');
      await put('links-gone', 'x.bin', 'x');
      const link = await links.create('links-gone', 'x.bin', { ttlSeconds: 600 });
      await database.db.deleteFrom('accounts').where('id', '=', 'links-gone').execute();
      assert.equal(await links.resolve(link.token), undefined);
    });
  });
}
