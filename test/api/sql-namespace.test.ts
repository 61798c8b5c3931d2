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
    service = await startService('sqlite');
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

  it('refuses the table-valued pragma functions however their name is written (they show files of the service)', async () => {
    const names = ['pragma_database_list', '"pragma_database_list"', '`pragma_database_list`', '[pragma_database_list]', 'main.PRAGMA_DATABASE_LIST', 'Pragma_Compile_Options'];
    const result = await run(`
      ${JSON.stringify(names)}.forEach(function (name) { try { log(JSON.stringify(sql.select('select * from ' + name))); } catch (e) { log(e.message); } });
      try { sql.select("select * from pragma_table_info('readings')"); } catch (e) { log(e.message); }
      log(JSON.stringify(sql.select("select 'pragma_database_list' as quoted, name from sqlite_master where type = 'table'")));
    `);
    assert.equal(result.status, 'success', `${result.error}`);
    assert.equal(result.logs.length, names.length + 2, JSON.stringify(result.logs));
    for (const line of result.logs.slice(0, -1)) assert.match(line, /^sql\.select: .*names beginning with "pragma" are not allowed/);
    assert.equal(result.logs.at(-1), '[{"quoted":"pragma_database_list","name":"readings"}]', 'a string that says pragma is only a string');
    assert.ok(!result.logs.some((line) => line.includes('.sqlite')), 'no path of the service shows');
  });

  it('answers bad input with a script error and keeps the account usable', async () => {
    const result = await run(`
      var tries = [
        function () { return sql.select(42); },
        function () { return sql.select('   '); },
        function () { return sql.select('select ?', 'not parameters'); },
        function () { return sql.select('select ?', [{ an: 'object' }]); },
        function () { return sql.select("select 'unterminated"); },
        function () { return sql.select('select * from readings where device = ?'); },
        function () { return sql.execute('insert into readings values (?, ?, ?)', ['tab\\there', 1, 'line\\nbreak ' + String.fromCharCode(0)]); },
        function () { return sql.select('select note from readings where device = ?', ['tab\\there']); },
        function () { return sql.execute('delete from readings where value = 1'); },
      ];
      tries.forEach(function (t) { try { log(JSON.stringify(t())); } catch (e) { log(e.message); } });
    `);
    assert.equal(result.status, 'success', `${result.error}`);
    assert.deepEqual(result.logs.slice(0, 3), ['sql.select: give one SQL statement', 'sql.select: give one SQL statement', 'sql.select: parameters are an array or an object']);
    for (const line of result.logs.slice(3, 6)) assert.match(line, /^sql\.select: \S/);
    assert.deepEqual(result.logs.slice(6), ['{"changes":1,"lastInsertRowid":3}', '[{"note":"line\\nbreak \\u0000"}]', '{"changes":1,"lastInsertRowid":3}']);
  });

  it('a runaway query costs only its run: it is stopped at the CPU limit, and the worker goes on', async () => {
    const stuck = run(`sql.select('with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c');`);
    assert.equal((await service.request('GET', '/health')).status, 200, 'the API answers meanwhile');
    const result = await stuck;
    assert.equal(result.status, 'failed');
    assert.match(result.error ?? '', /^timeout: the run used more than 1000 ms of CPU time/);
    assert.deepEqual((await run(`log(sql.select('select count(*) as n from readings')[0].n);`)).logs, ['2']);
  });
});
