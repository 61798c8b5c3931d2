// Issue 21, solution templates: the catalogue (CRUD, 409 on name and version, uploads from the file repository as
// JSON or zip), install with typed parameters through the Importer, a trigger's once-event delivered exactly once
// (again after a restart and after kill -9), an upgrade that keeps what the user edited, an uninstall that removes
// only unedited created items, the history, other accounts refused, a sub-account install.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { crc32, deflateRawSync } from 'node:zlib';
import { waitFor } from '../helpers/devices.js';
import { assertError, createAccount, type TestAccount } from '../helpers/fixtures.js';
import { FuzzService, fuzzAccount, poll } from '../helpers/fuzz.js';
import { CrashTestStorage } from '../helpers/crash-storage.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';
import { openDatabase } from '../../src/store/database.js';
import { SqlSolutionStore } from '../../src/store/solution-store.js';

type Doc = Record<string, any>;

const SETUP_SCRIPT = "log('set up');";

/** Version `version` of the "greenhouse" template: a service, endpoints, a once-event trigger and a report. */
function template(version: string, changes: { endpoints?: Doc[]; reportRetention?: number } = {}): Doc {
  return {
    name: 'greenhouse',
    version,
    description: 'Sensors of a greenhouse',
    parameters: {
      serviceName: { type: 'string', title: 'Service name', required: true },
      threshold: { type: 'number', default: 5, description: 'Alarm above' },
      mode: { type: 'string', enum: ['eco', 'full'], default: 'eco' },
    },
    document: {
      format: 'iotbridge-export',
      version: 1,
      services: [{ name: '{{serviceName}}', type: 'mqtt' }],
      endpoints: changes.endpoints ?? [{ key: 'sensor-1', service: '{{serviceName}}', tags: ['greenhouse'], parameters: { threshold: '{{threshold}}', label: 'mode {{mode}}' } }],
      triggers: [{ name: 'setup', events: ['once-event'], script: SETUP_SCRIPT }],
      reports: [{ name: 'readings', description: 'from the template', retentionDays: changes.reportRetention ?? 30 }],
    },
  };
}

/** Waits until an event posted now was handled (events without an endpoint are handled in order). */
async function settleOn(service: TestService, token: string): Promise<void> {
  const marker = await service.request('POST', '/triggers', { token, body: { name: `marker-${Date.now()}`, events: ['settle'], script: 'log(0);' } });
  assert.equal((await service.request('POST', '/events', { token, body: { type: 'settle' } })).status, 202);
  await waitFor(async () => ((await service.request('GET', `/executions?triggerId=${marker.body.id}`, { token })).body.items.length > 0 ? true : undefined), 'the settle event', 20_000);
}

/** A zip archive holding `files` (deflated), as a zip tool writes one (APPNOTE.TXT 4.3). */
function zip(files: Record<string, string>): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const [name, text] of Object.entries(files)) {
    const content = Buffer.from(text);
    const packed = deflateRawSync(content);
    const nameBytes = Buffer.from(name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(crc32(content), 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(content.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const entry = Buffer.alloc(46);
    entry.writeUInt32LE(0x02014b50, 0);
    entry.writeUInt16LE(20, 4);
    entry.writeUInt16LE(20, 6);
    entry.writeUInt16LE(8, 10);
    entry.writeUInt32LE(crc32(content), 16);
    entry.writeUInt32LE(packed.length, 20);
    entry.writeUInt32LE(content.length, 24);
    entry.writeUInt16LE(nameBytes.length, 28);
    entry.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, packed);
    central.push(entry, nameBytes);
    offset += 30 + nameBytes.length + packed.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(files).length, 8);
  end.writeUInt16LE(Object.keys(files).length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

for (const dialect of DIALECTS) {
  describe(`solution templates (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let owner: TestAccount;
    let other: TestAccount;
    let templateId: string;
    let installationId: string;

    const executions = async (token: string, triggerId: string): Promise<number> => {
      const page = await service.request('GET', `/executions?triggerId=${triggerId}&limit=100`, { token });
      assert.equal(page.status, 200, JSON.stringify(page.body));
      return (page.body.items as unknown[]).length;
    };
    const triggerId = async (token: string, name: string): Promise<string> => {
      const page = await service.request('GET', '/triggers?limit=1000', { token });
      const found = (page.body.items as Doc[]).find((trigger) => trigger.name === name);
      assert.ok(found, `trigger ${name}`);
      return found.id as string;
    };
    /** Posts a `marker` event and waits for the account's `marker` trigger to have run `count` times: events without an endpoint are handled in order, so what came before it is handled too. */
    const settle = async (token: string, markerId: string, count: number) => {
      assert.equal((await service.request('POST', '/events', { token, body: { type: 'marker' } })).status, 202);
      await waitFor(async () => ((await executions(token, markerId)) >= count ? true : undefined), 'the marker trigger', 20_000);
    };

    before(async () => {
      service = await startService(dialect.name);
      owner = await createAccount(service, 'solutions-owner');
      other = await createAccount(service, 'solutions-other');
    });
    after(async () => service?.stop());

    it('keeps a catalogue: create, list, read, replace; the same name and version twice is 409', async () => {
      const created = await service.request('POST', '/solutions/templates', { token: owner.token, body: template('1.0.0') });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      templateId = created.body.id;
      assert.deepEqual([created.body.name, created.body.version, created.body.inherited], ['greenhouse', '1.0.0', false]);
      assert.equal(created.body.parameters.threshold.default, 5);
      assertError(await service.request('POST', '/solutions/templates', { token: owner.token, body: template('1.0.0') }), 409, 'IOTB_TEMPLATE_TAKEN', 'same name and version');
      const listed = await service.request('GET', '/solutions/templates', { token: owner.token });
      assert.equal(listed.status, 200);
      assert.deepEqual(listed.body.items.map((t: Doc) => [t.name, t.version]), [['greenhouse', '1.0.0']]);
      assert.equal(listed.body.items[0].document, undefined, 'the list leaves documents out');
      const replaced = await service.request('PUT', `/solutions/templates/${templateId}`, { token: owner.token, body: { ...template('1.0.0'), description: 'Greenhouse sensors' } });
      assert.equal(replaced.status, 200, JSON.stringify(replaced.body));
      const read = await service.request('GET', `/solutions/templates/${templateId}`, { token: owner.token });
      assert.equal(read.body.description, 'Greenhouse sensors');
      assert.equal(read.body.document.services[0].name, '{{serviceName}}');
      const scratch = await service.request('POST', '/solutions/templates', { token: owner.token, body: { ...template('9.9.9'), name: 'scratch' } });
      assert.equal((await service.request('DELETE', `/solutions/templates/${scratch.body.id}`, { token: owner.token })).status, 204);
      assertError(await service.request('GET', `/solutions/templates/${scratch.body.id}`, { token: owner.token }), 404, 'IOTB_TEMPLATE_NOT_FOUND', 'deleted');
    });

    it('refuses templates that are not usable (400, one error body)', async () => {
      const wrongFormat = { ...template('2.0.0'), document: { format: 'something-else', version: 1 } };
      assertError(await service.request('POST', '/solutions/templates', { token: owner.token, body: wrongFormat }), 400, 'IOTB_TEMPLATE_INVALID', 'not an import document');
      const badDefault = { ...template('2.0.0'), parameters: { threshold: { type: 'number', default: 'high' } } };
      assertError(await service.request('POST', '/solutions/templates', { token: owner.token, body: badDefault }), 400, 'IOTB_TEMPLATE_INVALID', 'a default of another type');
      assertError(await service.request('POST', '/solutions/templates', { token: owner.token, body: { ...template('2.0.0'), version: 'latest' } }), 400, 'IOTB_REQUEST_VALIDATION', 'a version that is not numbers');
      assertError(await service.request('POST', '/solutions/templates', { token: owner.token, body: { file: 'missing.json' } }), 404, 'IOTB_FILE_NOT_FOUND', 'no such file');
    });

    it('adds templates from the file repository, as JSON and as a zip holding template.json', async () => {
      const put = (name: string, body: Buffer | string, type: string) =>
        fetch(`${service.baseUrl}/file/${name}/content`, { method: 'PUT', headers: { authorization: `Bearer ${owner.token}`, 'content-type': type }, body });
      assert.equal((await put('tpl.json', JSON.stringify({ ...template('1.0.0'), name: 'from-json' }), 'application/json')).status, 201);
      assert.equal((await put('tpl.zip', zip({ 'readme.txt': 'hello', 'greenhouse/template.json': JSON.stringify({ ...template('1.0.0'), name: 'from-zip' }) }), 'application/zip')).status, 201);
      assert.equal((await put('junk.zip', 'not a zip at all', 'application/zip')).status, 201);
      const fromJson = await service.request('POST', '/solutions/templates', { token: owner.token, body: { file: 'tpl.json' } });
      assert.equal(fromJson.status, 201, JSON.stringify(fromJson.body));
      assert.equal(fromJson.body.name, 'from-json');
      const fromZip = await service.request('POST', '/solutions/templates', { token: owner.token, body: { fileId: 'tpl.zip' } });
      assert.equal(fromZip.status, 201, JSON.stringify(fromZip.body));
      assert.deepEqual([fromZip.body.name, fromZip.body.document.triggers[0].script], ['from-zip', SETUP_SCRIPT]);
      assertError(await service.request('POST', '/solutions/templates', { token: owner.token, body: { file: 'junk.zip' } }), 400, 'IOTB_TEMPLATE_INVALID', 'not a zip');
      assertError(await service.request('POST', '/solutions/templates', { token: other.token, body: { file: 'tpl.json' } }), 404, 'IOTB_FILE_NOT_FOUND', "another account's file");
    });

    it('refuses parameter values that do not fit (400, nothing installed)', async () => {
      const install = (parameters: Doc) => service.request('POST', '/solutions/install', { token: owner.token, body: { templateId, parameters } });
      assertError(await install({ threshold: 3 }), 400, 'IOTB_TEMPLATE_PARAMETERS', 'a required one missing');
      assertError(await install({ serviceName: 'gh', colour: 'red' }), 400, 'IOTB_TEMPLATE_PARAMETERS', 'an unknown one');
      assertError(await install({ serviceName: 'gh', threshold: 'seven' }), 400, 'IOTB_TEMPLATE_PARAMETERS', 'a string for a number');
      assertError(await install({ serviceName: 'gh', mode: 'turbo' }), 400, 'IOTB_TEMPLATE_PARAMETERS', 'outside the enum');
      assert.equal((await service.request('GET', '/solutions/history', { token: owner.token })).body.items.length, 0);
      assert.equal((await service.request('GET', '/services', { token: owner.token })).body.items.length, 0);
    });

    it('installs with typed parameters; the once-event trigger runs exactly once, and no other trigger gets it', async () => {
      const marker = await service.request('POST', '/triggers', { token: owner.token, body: { name: 'marker', events: ['marker'], script: 'log(1);' } });
      const bystander = await service.request('POST', '/triggers', { token: owner.token, body: { name: 'bystander', events: ['once-event'], script: 'log(2);' } });
      assert.equal(bystander.status, 201, JSON.stringify(bystander.body));
      const installed = await service.request('POST', '/solutions/install', { token: owner.token, body: { templateId, parameters: { serviceName: 'gh', threshold: 7 } } });
      assert.equal(installed.status, 200, JSON.stringify(installed.body));
      installationId = installed.body.installationId;
      assert.equal(installed.body.action, 'install');
      assert.equal(installed.body.outcome, 'done');
      assert.deepEqual(installed.body.counts, { created: 4, updated: 0, unchanged: 0, refusedCount: 0 });
      assert.deepEqual(installed.body.onceEvents, ['setup']);
      const sensor = await service.request('GET', '/endpoints/k.sensor-1', { token: owner.token });
      assert.deepEqual(sensor.body.parameters, { threshold: 7, label: 'mode eco' }, 'a whole placeholder keeps the type; defaults fill in');

      const setupId = await triggerId(owner.token, 'setup');
      await settle(owner.token, marker.body.id, 1);
      assert.equal(await executions(owner.token, setupId), 1);
      assert.equal(await executions(owner.token, bystander.body.id), 0, 'the once-event names its trigger');

      // The same version again (a retried install): applied, nothing changes, no second once-event.
      const again = await service.request('POST', '/solutions/install', { token: owner.token, body: { templateId, parameters: { serviceName: 'gh', threshold: 7 } } });
      assert.equal(again.status, 200, JSON.stringify(again.body));
      assert.deepEqual([again.body.action, again.body.outcome, again.body.counts.unchanged, again.body.onceEvents], ['upgrade', 'done', 4, []]);

      service = await service.restart();
      await settle(owner.token, marker.body.id, 2);
      assert.equal(await executions(owner.token, setupId), 1, 'not again after a restart');
      const listed = await service.request('GET', '/solutions/installations', { token: owner.token });
      assert.deepEqual(listed.body.items.map((i: Doc) => [i.id, i.template, i.version]), [[installationId, 'greenhouse', '1.0.0']]);
    });

    it('upgrades to 1.1.0: what the user edited stays, the rest takes the new values, no once-event for an unchanged script', async () => {
      const edited = await service.request('PATCH', '/reports/readings', { token: owner.token, body: { description: 'my own words' } });
      assert.equal(edited.status, 200, JSON.stringify(edited.body));
      const next = template('1.1.0', {
        reportRetention: 60,
        endpoints: [
          { key: 'sensor-1', service: '{{serviceName}}', tags: ['greenhouse', 'v1.1'], parameters: { threshold: '{{threshold}}', label: 'mode {{mode}}' } },
          { key: 'sensor-2', service: '{{serviceName}}', tags: ['greenhouse'] },
        ],
      });
      const created = await service.request('POST', '/solutions/templates', { token: owner.token, body: next });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const upgraded = await service.request('POST', '/solutions/install', { token: owner.token, body: { templateId: created.body.id, parameters: { serviceName: 'gh', threshold: 9 } } });
      assert.equal(upgraded.status, 200, JSON.stringify(upgraded.body));
      assert.deepEqual([upgraded.body.action, upgraded.body.outcome, upgraded.body.previousVersion, upgraded.body.installationId], ['upgrade', 'done', '1.0.0', installationId]);
      assert.deepEqual(upgraded.body.kept.map((k: Doc) => [k.section, k.item]), [['reports', 'readings']]);
      assert.deepEqual(upgraded.body.onceEvents, []);
      const report = await service.request('GET', '/reports/readings', { token: owner.token });
      assert.deepEqual([report.body.description, report.body.retentionDays], ['my own words', 30], 'the edited report is left alone');
      const sensor = await service.request('GET', '/endpoints/k.sensor-1', { token: owner.token });
      assert.deepEqual([sensor.body.tags, sensor.body.parameters.threshold], [['greenhouse', 'v1.1'], 9]);
      assert.equal((await service.request('GET', '/endpoints/k.sensor-2', { token: owner.token })).status, 200);
      const outdated = await service.request('POST', '/solutions/install', { token: owner.token, body: { templateId, parameters: { serviceName: 'gh' } } });
      assertError(outdated, 409, 'IOTB_TEMPLATE_DOWNGRADE', 'an older version');
    });

    it('uninstalls: created items go, the edited report stays; the history lists every action with who and when', async () => {
      const uninstalled = await service.request('DELETE', `/solutions/installations/${installationId}`, { token: owner.token });
      assert.equal(uninstalled.status, 200, JSON.stringify(uninstalled.body));
      assert.equal(uninstalled.body.outcome, 'done');
      assert.deepEqual(uninstalled.body.removed.map((r: Doc) => r.item).sort(), ['gh', 'gh/sensor-1', 'gh/sensor-2', 'setup']);
      assert.deepEqual(uninstalled.body.kept.map((k: Doc) => k.item), ['readings']);
      assertError(await service.request('GET', '/endpoints/k.sensor-1', { token: owner.token }), 404, 'IOTB_ENDPOINT_NOT_FOUND', 'removed');
      assert.equal((await service.request('GET', '/reports/readings', { token: owner.token })).status, 200);
      assert.ok((await service.request('GET', '/triggers', { token: owner.token })).body.items.some((t: Doc) => t.name === 'bystander'), "the account's own trigger stays");
      assertError(await service.request('POST', '/solutions/uninstall', { token: owner.token, body: { installationId } }), 404, 'IOTB_TEMPLATE_INSTALLATION_NOT_FOUND', 'twice');

      const history = await service.request('GET', '/solutions/history', { token: owner.token });
      assert.equal(history.status, 200);
      assert.deepEqual(
        history.body.items.map((h: Doc) => [h.template, h.version, h.action, h.outcome]),
        [
          ['greenhouse', '1.1.0', 'uninstall', 'done'],
          ['greenhouse', '1.1.0', 'upgrade', 'done'],
          ['greenhouse', '1.0.0', 'upgrade', 'done'],
          ['greenhouse', '1.0.0', 'install', 'done'],
        ],
      );
      for (const entry of history.body.items as Doc[]) {
        assert.equal(typeof entry.by, 'string');
        assert.ok(!Number.isNaN(Date.parse(entry.at)));
        assert.equal(entry.accountId, owner.accountId);
      }
      assert.deepEqual(history.body.items[3].parameters, { serviceName: 'gh', threshold: 7, mode: 'eco' });
      const paged = await service.request('GET', '/solutions/history?limit=1&offset=1', { token: owner.token });
      assert.deepEqual([paged.body.total, paged.body.items[0].action, paged.body.items[0].version], [4, 'upgrade', '1.1.0']);
    });

    it("does not show, install, change or tell the history of another account's private template", async () => {
      assertError(await service.request('GET', `/solutions/templates/${templateId}`, { token: other.token }), 404, 'IOTB_TEMPLATE_NOT_FOUND', 'read');
      assert.deepEqual((await service.request('GET', '/solutions/templates', { token: other.token })).body.items, []);
      assertError(await service.request('POST', '/solutions/install', { token: other.token, body: { templateId, parameters: { serviceName: 'x' } } }), 404, 'IOTB_TEMPLATE_NOT_FOUND', 'install');
      assertError(await service.request('PUT', `/solutions/templates/${templateId}`, { token: other.token, body: template('1.0.0') }), 404, 'IOTB_TEMPLATE_NOT_FOUND', 'replace');
      assertError(await service.request('DELETE', `/solutions/templates/${templateId}`, { token: other.token }), 404, 'IOTB_TEMPLATE_NOT_FOUND', 'delete');
      assert.deepEqual((await service.request('GET', '/solutions/history', { token: other.token })).body.items, []);
      const intoOwner = await service.request('POST', '/solutions/install', { token: other.token, body: { templateId, accountId: owner.accountId, parameters: { serviceName: 'x' } } });
      assertError(intoOwner, 403, 'IOTB_AUTH_ACCOUNT_FORBIDDEN', 'into an account it cannot reach');
      assertError(await service.request('POST', '/solutions/install', { token: owner.token, body: { templateId, parameters: 'none' } }), 400, 'IOTB_REQUEST_VALIDATION', 'a bad body');
    });

    it('installs into a sub-account, which sees the inherited template but cannot change it', async () => {
      const child = await createAccount(service, 'solutions-child', { token: owner.token });
      const installed = await service.request('POST', '/solutions/install', { token: owner.token, body: { templateId, accountId: child.accountId, parameters: { serviceName: 'child-gh' } } });
      assert.equal(installed.status, 200, JSON.stringify(installed.body));
      assert.equal(installed.body.outcome, 'done');
      assert.equal((await service.request('GET', '/endpoints/k.sensor-1', { token: child.token })).status, 200);
      const seen = await service.request('GET', '/solutions/templates?name=greenhouse', { token: child.token });
      assert.deepEqual(seen.body.items.map((t: Doc) => [t.version, t.inherited]), [['1.0.0', true], ['1.1.0', true]]);
      assertError(await service.request('DELETE', `/solutions/templates/${templateId}`, { token: child.token }), 403, 'IOTB_TEMPLATE_INHERITED', 'a parent account owns it');
      const history = await service.request('GET', '/solutions/history', { token: child.token });
      assert.deepEqual(history.body.items.map((h: Doc) => [h.action, h.accountId]), [['install', child.accountId]]);
      assert.equal((await service.request('GET', '/solutions/history', { token: owner.token })).body.total, 4, "the sub-account's install is its own");
    });
  });

  describe(`once-event claimed by a process that died before publishing it (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    after(async () => service?.stop());

    it('is published by the next sweep with the id it was claimed with, unless the history already has it; never twice', async () => {
      service = await startService(dialect.name);
      const account = await createAccount(service, 'solutions-resume');
      const trigger = await service.request('POST', '/triggers', { token: account.token, body: { name: 'late', events: ['once-event'], script: 'log(3);' } });
      const runs = async () => ((await service.request('GET', `/executions?triggerId=${trigger.body.id}`, { token: account.token })).body.items as unknown[]).length;
      const posted = await service.request('POST', '/events', { token: account.token, body: { type: 'something' } });
      // The claims as a dead process left them: written long enough ago, never marked emitted.
      const database = openDatabase(service.bridge.config);
      try {
        const store = new SqlSolutionStore(database.db);
        const claim = { triggerId: trigger.body.id, accountId: account.accountId, data: { triggerId: trigger.body.id }, claimedAt: new Date(Date.now() - 120_000).toISOString(), emittedAt: null };
        assert.equal(await store.claimOnce({ ...claim, claimKey: 'dead:1', eventId: 'resume-event-1' }), true);
        assert.equal(await store.claimOnce({ ...claim, claimKey: 'dead:1', eventId: 'another' }), false, 'the unique key refuses a second claim');
        assert.equal(await store.claimOnce({ ...claim, claimKey: 'dead:2', eventId: posted.body.id }), true);
        const { onceEvents } = service.bridge.domain.solutions;
        assert.equal(await onceEvents.resume(), 2);
        assert.equal(await onceEvents.resume(), 0, 'both are marked emitted');
        assert.deepEqual(await store.unemitted(new Date(Date.now() + 1000).toISOString(), 10), []);
      } finally {
        await database.close();
      }
      await waitFor(async () => ((await runs()) === 1 ? true : undefined), 'the resumed once-event', 20_000);
      const event = await service.request('GET', '/history/resume-event-1', { token: account.token });
      assert.equal(event.status, 200, JSON.stringify(event.body));
      assert.deepEqual([event.body.type, event.body.data], ['once-event', { triggerId: trigger.body.id }], 'published with the claimed id');
      service = await service.restart();
      await settleOn(service, account.token);
      assert.equal(await runs(), 1, 'the claim whose event was in the history is not published again; nothing after a restart');
    });
  });

  describe(`once-event across kill -9 (${dialect.name})`, { skip: dialect.skip, timeout: 180_000 }, () => {
    let storage: CrashTestStorage;
    let service: FuzzService;

    before(async () => {
      storage = await CrashTestStorage.create(dialect.name, 'solutions-restart');
      service = await storage.start();
    });
    after(async () => {
      await service?.stop();
      await storage?.remove();
    });

    it('a template trigger listening to once-event has run once, and still once after the process is killed and started again', async () => {
      const { token } = await fuzzAccount(service, 'solutions-restart');
      const executions = async (id: string) => ((await service.request('GET', `/executions?triggerId=${id}&limit=100`, { token })).json.items as unknown[]).length;
      const marker = await service.request('POST', '/triggers', { token, body: { name: 'marker', events: ['marker'], script: 'log(1);' } });
      const created = await service.request('POST', '/solutions/templates', { token, body: template('1.0.0') });
      assert.equal(created.status, 201, created.text);
      const installed = await service.request('POST', '/solutions/install', { token, body: { templateId: created.json.id, parameters: { serviceName: 'gh' } } });
      assert.equal(installed.status, 200, installed.text);
      assert.deepEqual(installed.json.onceEvents, ['setup']);
      const setup = ((await service.request('GET', '/triggers', { token })).json.items as Doc[]).find((t) => t.name === 'setup')!;
      await poll(async () => ((await executions(setup.id)) === 1 ? true : undefined), 'the once-event run', 20_000);

      await CrashTestStorage.kill(service);
      service = await storage.start();

      // Events without an endpoint are handled in order: once the marker ran, a resent once-event would have too.
      assert.equal((await service.request('POST', '/events', { token, body: { type: 'marker' } })).status, 202);
      await poll(async () => ((await executions(marker.json.id)) === 1 ? true : undefined), 'the marker run', 20_000);
      assert.equal(await executions(setup.id), 1);
      const again = await service.request('POST', '/solutions/install', { token, body: { templateId: created.json.id, parameters: { serviceName: 'gh' } } });
      assert.deepEqual(again.json.onceEvents, [], 'a retried install after the restart claims nothing new');
    });
  });
}
