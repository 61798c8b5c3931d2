// Issue 21, import/export: an account's configuration exported as one document (names and keys, no ids, no
// secrets), imported into another account as it was, a second import changing nothing, a dry run writing nothing,
// 10,000 endpoints with invalid ones among them imported as a job with every refusal named, protected globals kept
// by POST /import, bad documents and other accounts refused.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../helpers/devices.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { connackCode, setPassword } from '../helpers/mqtt.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

type Doc = Record<string, any>;

for (const dialect of DIALECTS) {
  describe(`import and export (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let source: TestAccount;
    let target: TestAccount;
    let other: TestAccount;
    let exported: Doc;
    /** Another installation (its own database), where the same device keys are free. */
    let elsewhereService: TestService;
    let elsewhere: TestAccount;

    const importDoc = async (token: string, doc: unknown, query = '', on: TestService = service) =>
      on.request('POST', `/imex/import${query}`, { token, body: doc as Record<string, unknown> });
    const finished = async (token: string, answer: { status: number; body: Doc }, on: TestService = service) => {
      if (answer.status === 200) return answer.body;
      assert.equal(answer.status, 202, JSON.stringify(answer.body));
      return waitFor(async () => {
        const job = (await on.request('GET', `/imex/jobs/${answer.body.jobId}`, { token })).body;
        return job.state === 'running' ? undefined : job;
      }, 'the import job', 300_000);
    };

    before(async () => {
      service = await startService(dialect.name, { importMaxBytes: 4 * 1024 * 1024 });
      source = await createAccount(service, 'imex-source');
      target = await createAccount(service, 'imex-target');
      other = await createAccount(service, 'imex-other');
      elsewhereService = await startService(dialect.name);
      elsewhere = await createAccount(elsewhereService, 'imex-elsewhere');
      const meters = await createService(service, source.token, { name: 'meters', type: 'mqtt' });
      await createService(service, source.token, { name: 'field', type: 'lwm2m', options: { forceQueueMode: true } });
      await createEndpoint(service, source.token, { key: 'm-1', serviceId: meters, tags: ['site:north', 'battery'], statusDetails: { firmwareVersion: '1.2' }, parameters: { interval: 60 } });
      await createEndpoint(service, source.token, { key: 'm-2', serviceId: meters });
      assert.equal((await service.request('PUT', '/endpoints/k.m-1/storage/calibration', { token: source.token, body: { offset: 2.5 } })).status, 200);
      const trigger = await service.request('POST', '/triggers', {
        token: source.token,
        body: { name: 'decode', events: ['mqtt-publish'], script: 'log(1);', globals: { threshold: { value: 8, protected: true }, label: { value: 'north', protected: false } } },
      });
      assert.equal(trigger.status, 201, JSON.stringify(trigger.body));
      await service.request('POST', '/triggers', { token: source.token, body: { name: 'helpers', events: [], library: true, script: 'export const x = 1;' } });
      await service.request('POST', '/reports', { token: source.token, body: { name: 'energy', description: 'kWh per meter', retentionDays: 30, columns: [{ name: 'kwh', type: 'number' }] } });
      const rule = await service.request('POST', '/alert-rules', {
        token: source.token,
        body: { name: 'decoder failing', severity: 'major', tags: ['ops'], condition: { type: 'trigger-failures', minutes: 10, percent: 20, triggerId: trigger.body.id }, notify: { email: ['ops@example.com'] } },
      });
      assert.equal(rule.status, 201, JSON.stringify(rule.body));
    });

    after(async () => {
      await elsewhereService?.stop();
      await service?.stop();
    });

    it('exports the configuration by names and keys: no ids, no secrets, platform details left out', async () => {
      const answer = await fetch(`${service.baseUrl}/imex/export`, { headers: { authorization: `Bearer ${source.token}` } });
      assert.equal(answer.status, 200);
      assert.match(answer.headers.get('content-disposition') ?? '', /attachment; filename="iotbridge-export-.*\.json"/);
      const text = await answer.text();
      exported = JSON.parse(text) as Doc;
      assert.deepEqual([exported.format, exported.version], ['iotbridge-export', 1]);
      assert.deepEqual(exported.services.map((s: Doc) => [s.name, s.type]).sort(), [['field', 'lwm2m'], ['meters', 'mqtt']]);
      const m1 = exported.endpoints.find((e: Doc) => e.key === 'm-1');
      assert.deepEqual(m1, { key: 'm-1', service: 'meters', tags: ['site:north', 'battery'], statusDetails: { firmwareVersion: '1.2' }, parameters: { interval: 60 }, trace: false, storage: { calibration: { offset: 2.5 } } });
      const decode = exported.triggers.find((t: Doc) => t.name === 'decode');
      assert.deepEqual(decode.globals, { threshold: { value: 8, protected: true }, label: { value: 'north', protected: false } });
      assert.ok(exported.triggers.some((t: Doc) => t.name === 'helpers' && t.library === true));
      assert.deepEqual(exported.reports, [{ name: 'energy', description: 'kWh per meter', columns: [{ name: 'kwh', type: 'number' }], retentionDays: 30 }]);
      assert.equal(exported.alertRules[0].condition.trigger, 'decode', 'the trigger named, not its id');
      for (const id of [source.accountId, decode.id]) if (id) assert.ok(!text.includes(id), `no id ${id} in the document`);
    });

    it('imports into another installation as it was; a second import changes nothing', async () => {
      const first = await finished(elsewhere.token, await importDoc(elsewhere.token, exported, '', elsewhereService), elsewhereService);
      assert.equal(first.state, 'done', JSON.stringify(first));
      assert.deepEqual([first.created, first.updated, first.unchanged, first.refusedCount], [2 + 2 + 2 + 1 + 1, 0, 0, 0], JSON.stringify(first.refused));
      const m1 = (await elsewhereService.request('GET', '/endpoints/k.m-1', { token: elsewhere.token })).body;
      assert.deepEqual([m1.tags, m1.statusDetails.firmwareVersion, m1.parameters], [['site:north', 'battery'], '1.2', { interval: 60 }]);
      assert.deepEqual((await elsewhereService.request('GET', '/endpoints/k.m-1/storage/calibration', { token: elsewhere.token })).body.value, { offset: 2.5 });
      const rules = (await elsewhereService.request('GET', '/alert-rules', { token: elsewhere.token })).body.items;
      const triggers = (await elsewhereService.request('GET', '/triggers', { token: elsewhere.token })).body.items as Doc[];
      assert.equal(rules[0].condition.triggerId, triggers.find((t) => t.name === 'decode')!.id, 'the rule points at the imported trigger');
      const history = (await elsewhereService.request('GET', '/history?type=imex-import', { token: elsewhere.token })).body.items;
      assert.equal(history[0].data.created, 8);

      const again = await finished(elsewhere.token, await importDoc(elsewhere.token, exported, '', elsewhereService), elsewhereService);
      assert.deepEqual([again.created, again.updated, again.unchanged, again.refusedCount], [0, 0, 8, 0], JSON.stringify(again.refused));
    });

    it('a dry run reports what would change and writes nothing', async () => {
      const changed = structuredClone(exported);
      changed.endpoints[0].tags = ['moved'];
      const dry = await finished(elsewhere.token, await importDoc(elsewhere.token, changed, '?dryRun=true', elsewhereService), elsewhereService);
      assert.deepEqual([dry.dryRun, dry.updated, dry.unchanged], [true, 1, 7]);
      assert.notDeepEqual((await elsewhereService.request('GET', `/endpoints/k.${changed.endpoints[0].key}`, { token: elsewhere.token })).body.tags, ['moved']);
      const fresh = await finished(other.token, await importDoc(other.token, exported, '?dryRun=true'));
      assert.equal(fresh.created, 8);
      assert.equal((await service.request('GET', '/endpoints', { token: other.token })).body.total, 0);
    });

    it('into another account of the same installation: device keys stay with their account, the rest is imported', async () => {
      const job = await finished(target.token, await importDoc(target.token, exported));
      assert.equal(job.state, 'done', JSON.stringify(job));
      assert.deepEqual([job.created, job.refusedCount], [6, 2], JSON.stringify(job.refused));
      for (const refusal of job.refused) assert.match(refusal.reason, /^IOTB_ENDPOINT_KEY_IN_USE/);
      assert.equal((await service.request('GET', '/endpoints/k.m-1', { token: source.token })).status, 200, 'the source keeps its device');
    });

    it('imports 10,000 endpoints as a job in bulk mode, naming every refused one', async () => {
      const endpoints: Doc[] = [];
      for (let i = 0; i < 10_000; i++) endpoints.push({ key: `bulk-${String(i).padStart(5, '0')}`, service: 'meters', tags: ['bulk'], parameters: { n: i } });
      endpoints[10] = { key: 'bad-tag', service: 'meters', tags: [':no name'] };
      endpoints[700] = { key: 'no-service', service: 'nowhere' };
      endpoints[5000] = { service: 'meters' };
      endpoints[9000] = { key: 'bulk-00001', service: 'meters' };
      const doc = { format: 'iotbridge-export', version: 1, services: [{ name: 'meters', type: 'mqtt' }], endpoints };
      const job = await finished(target.token, await importDoc(target.token, doc));
      assert.equal(job.state, 'done', JSON.stringify(job));
      assert.equal(job.processed, 10_001);
      assert.equal(job.created, 9_996, JSON.stringify(job.refused));
      assert.deepEqual(job.refused.map((r: Doc) => r.item).sort(), ['#5002', 'bad-tag', 'bulk-00001', 'no-service'].sort());
      assert.match(job.refused.find((r: Doc) => r.item === 'no-service').reason, /no service "nowhere"/);
      assert.equal((await service.request('GET', '/endpoints?tag=bulk&limit=1', { token: target.token })).body.total, 9_996);
      assertError(await service.request('GET', `/imex/jobs/${job.jobId}`, { token: other.token }), 404, 'IOTB_IMPORT_JOB_NOT_FOUND', 'another account reads the job');
    });

    it('POST /import keeps the values of globals protected in the account', async () => {
      const doc = structuredClone(exported);
      const decode = doc.triggers.find((t: Doc) => t.name === 'decode');
      decode.globals = { threshold: { value: 99, protected: false }, label: { value: 'south', protected: false } };
      const result = (await service.request('POST', '/import', { token: target.token, body: doc })).body;
      assert.equal(result.state, 'done', JSON.stringify(result));
      const triggers = (await service.request('GET', '/triggers', { token: target.token })).body.items as Doc[];
      assert.deepEqual(triggers.find((t) => t.name === 'decode')!.globals, { threshold: { value: 8, protected: true }, label: { value: 'south', protected: false } });
    });

    it('exports secrets only sealed with a passphrase; another installation takes them and the device logs in with its password', async () => {
      const lwm2m = (await service.request('GET', '/services', { token: source.token })).body.items.find((s: Doc) => s.name === 'field').id as string;
      const sensor = await createEndpoint(service, source.token, { key: 'sealed-1', serviceId: lwm2m });
      const psk = '000102030405060708090a0b0c0d0e0f';
      assert.equal((await service.request('PUT', `/endpoints/${sensor.id}/security`, { token: source.token, body: { mode: 'psk', identity: 'sealed-dev', key: psk } })).status, 200);
      const bootstrapKey = 'a0a1a2a3a4a5a6a7a8a9aaabacadaeaf';
      const bootstrap = await service.request('PUT', `/endpoints/${sensor.id}/bootstrap`, {
        token: source.token,
        body: { servers: [{ uri: 'coaps://127.0.0.1:5684', shortServerId: 2, securityMode: 'psk', pskIdentity: 'sealed-dev', pskKey: bootstrapKey }] },
      });
      assert.equal(bootstrap.status, 200, JSON.stringify(bootstrap.body));
      const m1 = (await service.request('GET', '/endpoints/k.m-1', { token: source.token })).body.id as string;
      await setPassword(service, source.token, m1, 'meter-one-password');
      const geofence = await service.request('POST', '/geofences', { token: source.token, body: { name: 'Depot', tags: ['depot'], circle: { lat: 52.5, lon: 13.3, radius: 500 } } });
      assert.equal(geofence.status, 201, JSON.stringify(geofence.body));

      const exportWith = (headers: Record<string, string>, query = '?secrets=true') => fetch(`${service.baseUrl}/imex/export${query}`, { headers: { authorization: `Bearer ${source.token}`, ...headers } });
      for (const headers of [{}, { 'x-iotbridge-passphrase': 'short' }] as Record<string, string>[]) {
        const refused = await exportWith(headers);
        assert.equal(refused.status, 400);
        assert.equal(((await refused.json()) as Doc).error.code, 'IOTB_IMEX_PASSPHRASE');
      }
      const plain = await (await exportWith({}, '')).text();
      for (const secret of [psk, bootstrapKey, 'pbkdf2-sha512']) assert.ok(!plain.includes(secret), `no ${secret} without secrets=true`);
      const plainDoc = JSON.parse(plain) as Doc;
      assert.equal(plainDoc.endpoints.find((e: Doc) => e.key === 'sealed-1').security, undefined, 'a PSK is not exported without secrets');
      assert.deepEqual(plainDoc.geofences, [{ name: 'Depot', description: null, tags: ['depot'], circle: { lat: 52.5, lon: 13.3, radius: 500 } }]);

      const passphrase = 'correct horse battery staple';
      const text = await (await exportWith({ 'x-iotbridge-passphrase': passphrase })).text();
      for (const secret of [psk, bootstrapKey, 'pbkdf2-sha512']) assert.ok(!text.includes(secret), `${secret} is sealed`);
      const sealed = JSON.parse(text) as Doc;
      assert.equal(sealed.secrets.kdf, 'scrypt');
      assert.ok(sealed.endpoints.find((e: Doc) => e.key === 'm-1').credentials.passwordHash.$sealed);

      const installation = await startService(dialect.name);
      try {
        const account = await createAccount(installation, 'imex-sealed');
        const send = (headers: Record<string, string>) =>
          fetch(`${installation.baseUrl}/imex/import`, { method: 'POST', headers: { authorization: `Bearer ${account.token}`, 'content-type': 'application/json', ...headers }, body: text });
        for (const headers of [{}, { 'x-iotbridge-passphrase': 'not the passphrase at all' }] as Record<string, string>[]) {
          const refused = await send(headers);
          assert.equal(refused.status, 400);
          assert.equal(((await refused.json()) as Doc).error.code, 'IOTB_IMEX_PASSPHRASE');
        }
        assert.equal((await installation.request('GET', '/endpoints', { token: account.token })).body.total, 0, 'nothing imported with a wrong passphrase');
        const answer = await send({ 'x-iotbridge-passphrase': passphrase });
        const done = await finished(account.token, { status: answer.status, body: (await answer.json()) as Doc }, installation);
        assert.equal(done.state, 'done', JSON.stringify(done));
        assert.equal(done.refusedCount, 0, JSON.stringify(done.refused));
        assert.equal(await connackCode(installation.ports.mqtt!, { key: 'm-1', password: 'meter-one-password' }), 0, 'the device logs in with its password');
        assert.notEqual(await connackCode(installation.ports.mqtt!, { key: 'm-1', password: 'another-password' }), 0, 'and only with it');
        const security = (await installation.request('GET', '/endpoints/k.sealed-1/security', { token: account.token })).body;
        assert.deepEqual([security.mode, security.identity, security.keySet], ['psk', 'sealed-dev', true]);
        const config = (await installation.request('GET', '/endpoints/k.sealed-1/bootstrap', { token: account.token })).body.config;
        assert.equal(config.servers[0].pskKeySet, true);
        const fences = (await installation.request('GET', '/geofences', { token: account.token })).body.items;
        assert.deepEqual(fences.map((f: Doc) => f.name), ['Depot']);
        const again = await send({ 'x-iotbridge-passphrase': passphrase });
        const second = await finished(account.token, { status: again.status, body: (await again.json()) as Doc }, installation);
        assert.deepEqual([second.created, second.updated, second.refusedCount], [0, 0, 0], JSON.stringify(second));
      } finally {
        await installation.stop();
      }
    });

    it('refuses a password hash that would make log-ins cost more than the service own ones', async () => {
      const doc = {
        format: 'iotbridge-export',
        version: 1,
        services: [{ name: 'meters', type: 'mqtt' }],
        endpoints: [{ key: 'slow-hash', service: 'meters', credentials: { passwordHash: `pbkdf2-sha512$1000000000$${'A'.repeat(22)}$${'B'.repeat(43)}` } }],
      };
      const job = await finished(elsewhere.token, await importDoc(elsewhere.token, doc, '?dryRun=true', elsewhereService), elsewhereService);
      assert.equal(job.refusedCount, 1, JSON.stringify(job));
      assert.match(job.refused[0].reason, /pbkdf2-sha512\$<1000–10000>/);
    });

    it('refuses what is not an import document, and documents past the size limit', async () => {
      const raw = async (body: string) => fetch(`${service.baseUrl}/imex/import`, { method: 'POST', headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/json' }, body });
      const notJson = await raw('{"format": "iotbridge-export", "version": 1, "services": [');
      assert.equal(notJson.status, 400);
      assert.equal(((await notJson.json()) as Doc).error.code, 'IOTB_IMPORT_DOCUMENT');
      assertError(await importDoc(target.token, { format: 'something-else', version: 1 }), 400, 'IOTB_IMPORT_DOCUMENT', 'another format');
      assertError(await importDoc(target.token, { format: 'iotbridge-export', version: 2 }), 400, 'IOTB_IMPORT_DOCUMENT', 'a newer version');
      const notList = await finished(target.token, await importDoc(target.token, { format: 'iotbridge-export', version: 1, services: { name: 'x' } }));
      assert.equal(notList.refused[0].section, 'document');
      assert.match(notList.refused[0].reason, /"services" is not a list/);
      const big = await raw(JSON.stringify({ format: 'iotbridge-export', version: 1, endpoints: [], padding: 'x'.repeat(5 * 1024 * 1024) }));
      assert.equal(big.status, 413);
      assertError(await service.request('GET', '/imex/export', { token: null }), 401, 'IOTB_AUTH_TOKEN_MISSING', 'no token');
    });
  });
}
