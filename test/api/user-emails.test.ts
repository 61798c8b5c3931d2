import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { LOGIN_CANDIDATES_MAX } from '../../src/domain/users.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { assertError, createAccount, type TestAccount } from '../helpers/fixtures.js';
import { rewindMigrations } from '../helpers/migrations.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/** The one error body of the API: `{ error: { code, message, details? } }` and nothing else. */
/**
 * Emails are unique per account, not platform-wide: creating a user never tells whether another tenant uses an
 * email (it answered 409 before), and sign-in takes an optional accountId to say whose user it is.
 * Every test uses emails of its own: failed sign-ins are throttled per email (5 from one address).
 */
for (const dialect of DIALECTS) {
  describe(`user emails per account (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let a: TestAccount;
    let b: TestAccount;

    before(async () => {
      service = await startService(dialect.name);
      a = await createAccount(service, 'tenant-a');
      b = await createAccount(service, 'tenant-b');
    });
    after(() => service?.stop());

    const createUser = (account: TestAccount, email: string, password: string) => service.request('POST', '/users', { token: account.token, body: { email, password } });
    const login = (body: Record<string, unknown>) => service.request('POST', '/auth/login', { token: null, body });
    const whoami = async (token: string) => (await service.request('GET', '/auth/whoami', { token })).body as { accountId: string; userId: string; type: string };

    it("lets tenant B create a user with tenant A's email (201, not 409); within one account it stays 409", async () => {
      const mine = await createUser(a, 'shared@example.com', 'password of a');
      assert.equal(mine.status, 201, JSON.stringify(mine.body));
      const theirs = await createUser(b, 'Shared@Example.com', 'password of b');
      assert.equal(theirs.status, 201, `another account's email must not be refused: ${JSON.stringify(theirs.body)}`);
      assert.deepEqual([theirs.body.email, theirs.body.accountId], ['shared@example.com', b.accountId]);
      assert.notEqual(theirs.body.id, mine.body.id);

      assertError(await createUser(b, 'SHARED@example.com', 'another password'), 409, 'IOTB_USER_EMAIL_TAKEN', 'the same email twice in B');
      assertError(await createUser(a, 'shared@example.com', 'another password'), 409, 'IOTB_USER_EMAIL_TAKEN', 'the same email twice in A');
    });

    it('signs each user in with their own password, picks by accountId, and refuses wrong passwords for both', async () => {
      const userA = (await createUser(a, 'both@example.com', 'password of a')).body;
      const userB = (await createUser(b, 'both@example.com', 'password of b')).body;

      const asA = await login({ email: 'both@example.com', password: 'password of a' });
      assert.equal(asA.status, 200, JSON.stringify(asA.body));
      assert.equal(asA.body.accountId, a.accountId);
      const asB = await login({ email: 'BOTH@example.com', password: 'password of b' });
      assert.equal(asB.status, 200, JSON.stringify(asB.body));
      assert.equal(asB.body.accountId, b.accountId, 'the newer user signs in too when the password is theirs');
      const [whoA, whoB] = [await whoami(asA.body.token), await whoami(asB.body.token)];
      assert.deepEqual([whoA.accountId, whoA.userId, whoA.type], [a.accountId, userA.id, 'user']);
      assert.deepEqual([whoB.accountId, whoB.userId, whoB.type], [b.accountId, userB.id, 'user']);

      const withAccount = await login({ email: 'both@example.com', password: 'password of b', accountId: b.accountId });
      assert.equal(withAccount.status, 200);
      assert.equal((await whoami(withAccount.body.token)).userId, userB.id);

      const wrong = await login({ email: 'both@example.com', password: 'password of c' });
      assertError(wrong, 401, 'IOTB_AUTH_LOGIN_FAILED', 'a password of neither');
      assertError(await login({ email: 'both@example.com', password: 'password of a', accountId: b.accountId }), 401, 'IOTB_AUTH_LOGIN_FAILED', "A's password for B's user");
      assertError(await login({ email: 'both@example.com', password: 'password of b', accountId: a.accountId }), 401, 'IOTB_AUTH_LOGIN_FAILED', "B's password for A's user");
      const unknown = await login({ email: 'nobody-here@example.com', password: 'password of a' });
      assert.deepEqual(unknown.body, wrong.body, 'an unknown email and a wrong password look the same');
    });

    it('with the same password in two accounts, the oldest user signs in without accountId and accountId picks the other', async () => {
      const older = (await createUser(a, 'same-password@example.com', 'one password')).body;
      const newer = (await createUser(b, 'same-password@example.com', 'one password')).body;
      const plain = await login({ email: 'same-password@example.com', password: 'one password' });
      assert.equal((await whoami(plain.body.token)).userId, older.id);
      const picked = await login({ email: 'same-password@example.com', password: 'one password', accountId: b.accountId });
      assert.equal((await whoami(picked.body.token)).userId, newer.id);
    });

    it("keeps tenants apart: B never lists, reads, changes or signs in as A's user of the same email", async () => {
      const userA = (await createUser(a, 'apart@example.com', 'secret of a')).body;
      await createUser(b, 'apart@example.com', 'secret of b');

      const listed = await service.request('GET', '/users?limit=1000', { token: b.token });
      assert.equal(listed.status, 200);
      assert.ok(listed.body.items.every((user: { accountId: string }) => user.accountId === b.accountId), "B's list holds B's users only");
      assert.ok(!listed.body.items.some((user: { id: string }) => user.id === userA.id));
      assertError(await service.request('GET', `/users/${userA.id}`, { token: b.token }), 404, 'IOTB_USER_NOT_FOUND', "B reads A's user");
      assertError(await service.request('PUT', `/users/${userA.id}`, { token: b.token, body: { password: 'taken over!' } }), 404, 'IOTB_USER_NOT_FOUND', "B sets A's user's password");
      assertError(await service.request('DELETE', `/users/${userA.id}`, { token: b.token }), 404, 'IOTB_USER_NOT_FOUND', "B deletes A's user");

      // B knows its own user's password only: it gets B's user, never A's.
      const asB = await login({ email: 'apart@example.com', password: 'secret of b' });
      assert.equal(asB.body.accountId, b.accountId);
      assertError(await login({ email: 'apart@example.com', password: 'secret of b', accountId: a.accountId }), 401, 'IOTB_AUTH_LOGIN_FAILED', "B's password against A's account");
      const asA = await login({ email: 'apart@example.com', password: 'secret of a' });
      assert.equal((await whoami(asA.body.token)).userId, userA.id, "A's user still signs in with A's password");
    });

    it('answers an accountId without such a user (unknown, or a user of another email) with the same 401', async () => {
      await createUser(a, 'only-a@example.com', 'password of a');
      const wrong = await login({ email: 'only-a@example.com', password: 'not it at all' });
      assertError(wrong, 401, 'IOTB_AUTH_LOGIN_FAILED', 'wrong password');
      for (const accountId of [b.accountId, 'no-such-account-0', service.rootAccountId]) {
        const response = await login({ email: 'only-a@example.com', password: 'password of a', accountId });
        assert.deepEqual([response.status, response.body], [401, wrong.body], accountId);
      }
    });

    it('refuses bad sign-in bodies with 400 and the one error body', async () => {
      const bodies: [string, unknown][] = [
        ['no email', { password: 'password of a' }],
        ['no password', { email: 'a@example.com' }],
        ['empty body', {}],
        ['accountId an object', { email: 'a@example.com', password: 'password of a', accountId: { id: 'x' } }],
        ['accountId two strings', { email: 'a@example.com', password: 'password of a', accountId: ['x', 'y'] }],
        ['accountId empty', { email: 'a@example.com', password: 'password of a', accountId: '' }],
        ['accountId null', { email: 'a@example.com', password: 'password of a', accountId: null }],
        ['accountId too long', { email: 'a@example.com', password: 'password of a', accountId: 'x'.repeat(65) }],
        ['an unknown field', { email: 'a@example.com', password: 'password of a', account: 'x' }],
        ['email not a string', { email: { address: 'a@example.com' }, password: 'password of a' }],
        ['password too long', { email: 'a@example.com', password: 'x'.repeat(1025) }],
      ];
      for (const [what, body] of bodies) assertError(await login(body as Record<string, unknown>), 400, 'IOTB_REQUEST_VALIDATION', what);
      assertError(await service.request('POST', '/auth/login', { token: null, body: '{"email":' }), 400, 'IOTB_REQUEST_VALIDATION', 'not JSON');
    });

    it('throttles per email whether accountId is given or not', async () => {
      await createUser(a, 'throttled@example.com', 'password of a');
      await createUser(b, 'throttled@example.com', 'password of b');
      const attempts = [a.accountId, b.accountId, undefined, 'no-such-account-1', a.accountId];
      for (const [i, accountId] of attempts.entries()) {
        assertError(await login({ email: 'throttled@example.com', password: `guess ${i}`, ...(accountId ? { accountId } : {}) }), 401, 'IOTB_AUTH_LOGIN_FAILED', `attempt ${i + 1}`);
      }
      for (const accountId of [undefined, b.accountId, 'no-such-account-2']) {
        const throttled = await login({ email: 'Throttled@example.com', password: 'password of b', ...(accountId ? { accountId } : {}) });
        assertError(throttled, 429, 'IOTB_AUTH_LOGIN_THROTTLED', `after 5 failures, accountId ${accountId}`);
      }
    });

    it(`checks at most the ${LOGIN_CANDIDATES_MAX} oldest users of an email without accountId; later ones sign in with it`, async () => {
      const accounts: TestAccount[] = [];
      for (let i = 0; i <= LOGIN_CANDIDATES_MAX; i++) {
        const account = await createAccount(service, `crowd-${i}`, { token: b.token });
        assert.equal((await createUser(account, 'crowded@example.com', `password ${i}`)).status, 201);
        accounts.push(account);
      }
      const first = await login({ email: 'crowded@example.com', password: 'password 0' });
      assert.equal(first.body.accountId, accounts[0]!.accountId, 'the oldest is checked first');
      const last = accounts[LOGIN_CANDIDATES_MAX]!;
      assertError(await login({ email: 'crowded@example.com', password: `password ${LOGIN_CANDIDATES_MAX}` }), 401, 'IOTB_AUTH_LOGIN_FAILED', 'the 11th without accountId');
      const named = await login({ email: 'crowded@example.com', password: `password ${LOGIN_CANDIDATES_MAX}`, accountId: last.accountId });
      assert.equal(named.status, 200);
      assert.equal(named.body.accountId, last.accountId);
    });

    it('spends a password check on an unknown email too, about as long as on a wrong password', async () => {
      await createUser(a, 'timed@example.com', 'password of a');
      await createUser(a, 'timed-in-a@example.com', 'password of a');
      const took = async (body: Record<string, unknown>) => {
        const started = process.hrtime.bigint();
        assert.equal((await login(body)).status, 401);
        return Number(process.hrtime.bigint() - started) / 1e6;
      };
      const wrong: number[] = [];
      const unknown: number[] = [];
      for (let i = 0; i < 3; i++) {
        wrong.push(await took({ email: 'timed@example.com', password: `wrong ${i}` }));
        unknown.push(await took({ email: `timed-unknown-${i}@example.com`, password: 'wrong' }));
        unknown.push(await took({ email: 'timed-in-a@example.com', password: 'password of a', accountId: b.accountId }));
      }
      // scrypt takes tens of milliseconds; a sign-in without one a millisecond or two.
      assert.ok(Math.min(...unknown) >= Math.min(...wrong) / 2, `unknown ${unknown.map((ms) => ms.toFixed(1)).join(', ')} ms vs wrong ${wrong.map((ms) => ms.toFixed(1)).join(', ')} ms`);
    });

    it("creates the IOTBRIDGE_ADMIN_EMAIL Super-Admin in the root account even when a tenant's user has that email", async () => {
      const tenantUser = (await createUser(b, 'boot-admin@example.com', 'tenant password')).body;
      const { users } = service.bridge.domain;
      assert.equal(await users.ensure(service.rootAccountId, 'Boot-Admin@example.com', 'admin password'), true, "a tenant's user does not stop it");
      assert.equal(await users.ensure(service.rootAccountId, 'boot-admin@example.com', 'admin password'), false, 'once is enough');
      const admin = await login({ email: 'boot-admin@example.com', password: 'admin password' });
      assert.equal(admin.status, 200);
      assert.deepEqual([admin.body.accountId, admin.body.superAdmin], [service.rootAccountId, true]);
      const tenant = await login({ email: 'boot-admin@example.com', password: 'tenant password' });
      assert.deepEqual([tenant.body.accountId, tenant.body.superAdmin, (await whoami(tenant.body.token)).userId], [b.accountId, false, tenantUser.id]);
    });
  });

  describe(`users table upgrade to emails per account (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    /** A second connection to the same storage: what another process of the service would see and do. */
    let other: Database;

    before(async () => {
      service = await startService(dialect.name);
      other = openDatabase(service.bridge.config);
    });
    after(async () => {
      await other?.close();
      await service?.stop();
    });

    /** Puts the users table back as 0001 made it (email unique platform-wide), forgets 0021 and undoes later ones → the migrations to apply. */
    async function rewind(): Promise<string[]> {
      if (dialect.name === 'postgres') {
        await sql`alter table users drop constraint users_account_email`.execute(other.db);
        await sql`alter table users add constraint users_email_key unique (email)`.execute(other.db);
        await other.db.schema.dropIndex('users_email').execute();
      } else {
        await sql`pragma foreign_keys = off`.execute(other.db);
        try {
          await other.db.transaction().execute(async (trx) => {
            await sql`create table users_old (id text primary key, account_id text not null references accounts (id), email text not null unique, name text not null,
              password_hash text not null, super_admin integer default 0 not null, created_at integer not null, updated_at integer not null)`.execute(trx);
            await sql`insert into users_old select id, account_id, email, name, password_hash, super_admin, created_at, updated_at from users`.execute(trx);
            await sql`drop table users`.execute(trx);
            await sql`alter table users_old rename to users`.execute(trx);
          });
        } finally {
          await sql`pragma foreign_keys = on`.execute(other.db);
        }
      }
      await other.db.schema.createIndex('users_account').on('users').column('account_id').execute();
      return rewindMigrations(other.db, ['0021-users-email-per-account']);
    }

    async function indexesOfUsers(): Promise<string[]> {
      const { rows } =
        dialect.name === 'postgres'
          ? await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'users'`.execute(other.db)
          : await sql<{ name: string }>`select name from pragma_index_list('users')`.execute(other.db);
      return rows.map((row) => row.name).sort();
    }

    async function tokensReferenceUsers(): Promise<boolean> {
      if (dialect.name === 'postgres') {
        const { rows } = await sql<{ target: string }>`select confrelid::regclass::text as target from pg_constraint where conrelid = 'tokens'::regclass and contype = 'f'`.execute(other.db);
        return rows.some((row) => row.target === 'users');
      }
      const { rows } = await sql<{ table: string; from: string }>`select "table", "from" from pragma_foreign_key_list('tokens')`.execute(other.db);
      return rows.some((row) => row.table === 'users' && row.from === 'user_id');
    }

    it('upgrades a database of the release before with users and tokens: both keep working, tokens still reference users', async () => {
      const a = await createAccount(service, 'upgrade-a');
      const b = await createAccount(service, 'upgrade-b');
      const alice = (await service.request('POST', '/users', { token: a.token, body: { email: 'alice@example.com', password: 'alice password' } })).body;
      const bob = (await service.request('POST', '/users', { token: b.token, body: { email: 'bob@example.com', password: 'bob password' } })).body;
      // Signed in before the upgrade; not used until after it, so no cache answers for the database.
      const aliceSession = (await service.request('POST', '/auth/login', { token: null, body: { email: 'alice@example.com', password: 'alice password' } })).body.token as string;
      const bobSession = (await service.request('POST', '/auth/login', { token: null, body: { email: 'bob@example.com', password: 'bob password' } })).body.token as string;

      const pending = await rewind();
      assert.ok(await tokensReferenceUsers(), 'the rewound schema is the old one');
      const before = await other.db.selectFrom('users').selectAll().orderBy('id').execute();
      const tokensBefore = await other.db.selectFrom('tokens').selectAll().orderBy('id').execute();

      assert.deepEqual(await migrateToLatest(other), pending);
      assert.deepEqual(await migrateToLatest(other), [], 'nothing left to apply');

      assert.deepEqual(await other.db.selectFrom('users').selectAll().orderBy('id').execute(), before, 'every user row kept as it was');
      // Columns later migrations add (0041: impersonated_by, null on every existing token) are not part of the comparison.
      const tokensAfter = (await other.db.selectFrom('tokens').selectAll().orderBy('id').execute()).map(({ impersonated_by: _added, ...row }) => row);
      assert.deepEqual(tokensAfter, tokensBefore, 'every token row kept');
      assert.deepEqual(await indexesOfUsers(), dialect.name === 'postgres' ? ['users_account_email', 'users_email', 'users_pkey'] : ['sqlite_autoindex_users_1', 'sqlite_autoindex_users_2', 'users_email']);
      assert.ok(await tokensReferenceUsers(), 'tokens.user_id still references users');
      if (dialect.name === 'sqlite') {
        assert.equal((await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(other.db)).rows[0]?.foreign_keys, 1, 'foreign keys are on again');
        assert.deepEqual((await sql`pragma foreign_key_check`.execute(other.db)).rows, []);
      }
      // Run again on the new shape (a crash after SQLite's commit, or a test rewinding by forgetting it): no change.
      const rerun = await rewindMigrations(other.db, ['0021-users-email-per-account']);
      assert.deepEqual(await migrateToLatest(other), rerun);
      assert.deepEqual(await other.db.selectFrom('users').selectAll().orderBy('id').execute(), before);
      assert.deepEqual(await indexesOfUsers(), dialect.name === 'postgres' ? ['users_account_email', 'users_email', 'users_pkey'] : ['sqlite_autoindex_users_1', 'sqlite_autoindex_users_2', 'users_email']);
      assert.ok(await tokensReferenceUsers());

      await assert.rejects(
        other.db.insertInto('tokens').values({ id: 'orphan-token-0001', account_id: a.accountId, kind: 'user', name: 'orphan', secret_hash: 'orphan', super_admin: 0, user_id: 'no-such-user', expires_at: null, created_at: Date.now() }).execute(),
        /foreign key/i,
        'a token of a user that does not exist is still refused',
      );

      const aliceWho = await service.request('GET', '/auth/whoami', { token: aliceSession });
      assert.equal(aliceWho.status, 200, 'a session from before the upgrade still works');
      assert.deepEqual([aliceWho.body.accountId, aliceWho.body.userId], [a.accountId, alice.id]);
      assert.equal((await service.request('GET', '/auth/whoami', { token: bobSession })).body.userId, bob.id);
      const again = await service.request('POST', '/auth/login', { token: null, body: { email: 'alice@example.com', password: 'alice password' } });
      assert.equal(again.status, 200);

      // The new rule holds, and deleting a user with sessions still takes their tokens with them.
      assert.equal((await service.request('POST', '/users', { token: b.token, body: { email: 'alice@example.com', password: 'b alice password' } })).status, 201);
      assert.equal((await service.request('POST', '/users', { token: b.token, body: { email: 'ALICE@example.com', password: 'b alice password' } })).status, 409);
      assert.equal((await service.request('DELETE', `/users/${bob.id}`, { token: b.token })).status, 204);
      assert.equal((await service.request('GET', '/auth/whoami', { token: bobSession })).status, 401);
      assert.equal((await other.db.selectFrom('tokens').select('id').where('user_id', '=', bob.id).execute()).length, 0);
    });
  });
}
