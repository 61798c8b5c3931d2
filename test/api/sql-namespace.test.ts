import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAccount, type TestAccount } from '../helpers/fixtures.js';
import { runScript } from '../helpers/scripts.js';
import { startService, type TestService } from '../helpers/service.js';

describe('script namespace: sql (a database private to each account)', () => {
  let service: TestService;
  let account: TestAccount;
  let other: TestAccount;
  const run = (script: string) => runScript(service, account.token, script);

  before(async () => {
    service = await startService('sqlite', { scriptWallTimeoutMs: 1500 });
    account = await createAccount(service, 'sql');
    other = await createAccount(service, 'other');
  });
  after(() => service?.stop());

  it('creates tables, writes with parameters and reads rows back, across runs', async () => {
    const setup = await run(`
      sql.execute('create table readings (device text, value real, note text)');
      log(JSON.stringify(sql.execute('insert into readings values (?, ?, ?)', ['dev-1', 21.5, 'please attach the file'])));
      sql.execute('insert into readings values (:device, :value, null)', { device: 'dev-2', value: 19 });
    `);
    assert.equal(setup.status, 'success', `${setup.error} line ${setup.line}`);
    assert.deepEqual(setup.logs, ['{"changes":1,"lastInsertRowid":1}']);
    const read = await run(`log(JSON.stringify(sql.select('select device, value from readings where value > ? order by device', [0])));`);
    assert.deepEqual(read.logs, ['[{"device":"dev-1","value":21.5},{"device":"dev-2","value":19}]']);
  });

  it("cannot reach another account's database, nor the service's files", async () => {
    const theirs = await runScript(service, other.token, `try { sql.select('select * from readings'); } catch (e) { log(e.message); }`);
    assert.deepEqual(theirs.logs, ['sql.select: no such table: readings']);
    const attempts = await run(`
      var tries = [
        "attach database '../iotbridge.sqlite' as svc",
        "ATTACH '../${other.accountId}.sqlite' AS theirs",
        "vacuum into '/tmp/copy.sqlite'",
        "pragma writable_schema = on",
        "select load_extension('x')",
      ];
      tries.forEach(function (t) { try { sql.execute(t); log('ran: ' + t); } catch (e) { log(e.message); } });
      try { sql.execute('select 1; select 2'); } catch (e) { log('multi: ' + e.message); }
      try { sql.select('delete from readings'); } catch (e) { log(e.message); }
    `);
    assert.equal(attempts.status, 'success', `${attempts.error}`);
    assert.equal(attempts.logs.filter((l) => l.includes('are not allowed')).length, 5, JSON.stringify(attempts.logs));
    assert.match(attempts.logs[5] ?? '', /^multi: sql\.execute: .*more than one statement/);
    assert.equal(attempts.logs[6], 'sql.select: select reads; use sql.execute to change data');
  });

  it('a runaway query costs only its run: the stuck worker is replaced and the service keeps answering', async () => {
    const stuck = run(`sql.select('with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c');`);
    assert.equal((await service.request('GET', '/health')).status, 200, 'the API answers while a worker is stuck');
    const result = await stuck;
    assert.equal(result.status, 'failed');
    assert.match(result.error ?? '', /script worker died \(SIGKILL\)/);
    assert.deepEqual((await run(`log(sql.select('select count(*) as n from readings')[0].n);`)).logs, ['2']);
  });
});
