import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { createAccount, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/** A vendor object and an override of the shipped Device object (3). */
const UPLOAD = `<?xml version="1.0" encoding="UTF-8"?>
<LWM2M xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="http://openmobilealliance.org/tech/profiles/LWM2M.xsd">
  <Object ObjectType="MODefinition">
    <Name>Water Valve</Name>
    <Description1><![CDATA[A valve & its flow]]></Description1>
    <ObjectID>33001</ObjectID>
    <ObjectURN>urn:oma:lwm2m:x:33001</ObjectURN>
    <LWM2MVersion>1.1</LWM2MVersion>
    <ObjectVersion>1.0</ObjectVersion>
    <MultipleInstances>Multiple</MultipleInstances>
    <Mandatory>Optional</Mandatory>
    <Resources>
      <Item ID="1"><Name>Open</Name><Operations>RW</Operations><MultipleInstances>Single</MultipleInstances><Mandatory>Mandatory</Mandatory><Type>Boolean</Type><RangeEnumeration/><Units/><Description>Open or closed</Description></Item>
      <Item ID="2"><Name>Flow</Name><Operations>R</Operations><MultipleInstances>Single</MultipleInstances><Mandatory>Optional</Mandatory><Type>Float</Type><RangeEnumeration>0..100</RangeEnumeration><Units>l/min</Units><Description>Flow rate</Description></Item>
    </Resources>
  </Object>
  <Object ObjectType="MODefinition">
    <Name>Vendor Device</Name>
    <ObjectID>3</ObjectID>
    <ObjectVersion>1.2</ObjectVersion>
    <MultipleInstances>Single</MultipleInstances>
    <Mandatory>Mandatory</Mandatory>
    <Resources>
      <Item ID="9"><Name>Charge</Name><Operations>R</Operations><MultipleInstances>Single</MultipleInstances><Mandatory>Optional</Mandatory><Type>Integer</Type></Item>
    </Resources>
  </Object>
</LWM2M>`;

const xml = { 'content-type': 'application/xml' };
const shippedCount = (listed: { body: { total: number } }) => listed.body.total;

for (const dialect of DIALECTS) {
  describe(`LwM2M objects over HTTP (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let a: TestAccount;
    let b: TestAccount;
    let aChild: TestAccount;

    before(async () => {
      service = await startService(dialect.name);
      a = await createAccount(service, 'objects-a');
      b = await createAccount(service, 'objects-b');
      aChild = await createAccount(service, 'objects-a-child', { token: a.token });
    });
    after(() => service?.stop());

    it('lists the shipped objects with their source, in id order and in pages', async () => {
      const all = await service.request('GET', '/lwm2m/objects?limit=1000', { token: a.token });
      assert.equal(all.status, 200);
      assert.ok(all.body.total >= 28);
      const ids = all.body.items.map((item: { id: number }) => item.id);
      for (const id of [0, 1, 2, 3, 4, 5, 6, 7, 3200, 3303, 3347]) assert.ok(ids.includes(id), `object ${id} is listed`);
      assert.deepEqual(ids, [...ids].sort((x: number, y: number) => x - y));
      assert.deepEqual(all.body.items.find((item: { id: number }) => item.id === 3), {
        id: 3,
        name: 'Device',
        version: '1.2',
        lwm2mVersion: '1.1',
        urn: 'urn:oma:lwm2m:oma:3:1.2',
        multiple: false,
        mandatory: true,
        source: 'shipped',
      });
      const page = await service.request('GET', '/lwm2m/objects?limit=2&offset=1', { token: a.token });
      assert.deepEqual([page.body.items.length, page.body.total, page.body.limit, page.body.offset], [2, all.body.total, 2, 1]);
      assert.deepEqual(page.body.items.map((item: { id: number }) => item.id), ids.slice(1, 3));
    });

    it('returns one object with its resources', async () => {
      const device = await service.request('GET', '/lwm2m/objects/3', { token: a.token });
      assert.equal(device.status, 200);
      assert.equal(device.body.source, 'shipped');
      assert.equal(device.body.resources.length, 23);
      assert.deepEqual(device.body.resources.find((resource: { id: number }) => resource.id === 9), {
        id: 9,
        name: 'Battery Level',
        operations: 'R',
        multiple: false,
        mandatory: false,
        type: 'integer',
        rangeEnumeration: '0..100',
        units: '/100',
        description:
          'Contains the current battery level as a percentage (with a range from 0 to 100). This value is only valid for the Device internal Battery if present (one Available Power Sources Resource Instance is 1).',
      });
      const missing = await service.request('GET', '/lwm2m/objects/31999', { token: a.token });
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error.code, 'IOTB_LWM2M_OBJECT_NOT_FOUND');
      const bad = await service.request('GET', '/lwm2m/objects/70000', { token: a.token });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.code, 'IOTB_REQUEST_VALIDATION');
    });

    it('uploads DDF XML for the acting account (201) and serves it, overriding the shipped object', async () => {
      const created = await service.request('POST', '/lwm2m/objects', { token: a.token, body: UPLOAD, headers: xml });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.deepEqual(created.body.items.map((item: { id: number; source: string }) => [item.id, item.source]), [[33001, 'account'], [3, 'account']]);
      assert.equal(created.body.items[0].description, 'A valve & its flow');
      assert.deepEqual(created.body.items[0].resources[1], { id: 2, name: 'Flow', operations: 'R', multiple: false, mandatory: false, type: 'float', rangeEnumeration: '0..100', units: 'l/min', description: 'Flow rate' });

      const valve = await service.request('GET', '/lwm2m/objects/33001', { token: a.token });
      assert.equal(valve.status, 200);
      assert.deepEqual(valve.body, created.body.items[0]);
      const device = await service.request('GET', '/lwm2m/objects/3', { token: a.token });
      assert.deepEqual([device.body.name, device.body.source, device.body.resources.length], ['Vendor Device', 'account', 1]);
      const listed = await service.request('GET', '/lwm2m/objects?limit=1000', { token: a.token });
      const sources = Object.fromEntries(listed.body.items.map((item: { id: number; source: string }) => [item.id, item.source]));
      assert.deepEqual([sources[3], sources[33001], sources[4]], ['account', 'account', 'shipped']);
    });

    it('accepts text/xml and JSON {"xml": "..."} bodies too', async () => {
      const textXml = await service.request('POST', '/lwm2m/objects', { token: b.token, body: UPLOAD.replaceAll('33001', '33002'), headers: { 'content-type': 'text/xml; charset=utf-8' } });
      assert.equal(textXml.status, 201, JSON.stringify(textXml.body));
      const json = await service.request('POST', '/lwm2m/objects', { token: b.token, body: { xml: UPLOAD.replaceAll('33001', '33003') } });
      assert.equal(json.status, 201, JSON.stringify(json.body));
      assert.equal(json.body.items[0].id, 33003);
      for (const id of [33002, 33003, 3]) assert.equal((await service.request('DELETE', `/lwm2m/objects/${id}`, { token: b.token })).status, 204);
    });

    it('answers 400 with the error body for invalid definitions and stores nothing', async () => {
      const cases: [string, string, Record<string, string>, RegExp][] = [
        ['duplicate resource', UPLOAD.replace('<Item ID="2">', '<Item ID="1">'), xml, /resource 1 is defined twice/],
        ['unknown type', UPLOAD.replace('<Type>Float</Type>', '<Type>Decimal</Type>'), xml, /Decimal/],
        ['id out of range', UPLOAD.replace('<ObjectID>33001</ObjectID>', '<ObjectID>65536</ObjectID>'), xml, /out of range/],
        ['missing id', UPLOAD.replace('<ObjectID>33001</ObjectID>', ''), xml, /<ObjectID> is missing/],
        ['not XML', '<LWM2M><Object>', xml, /not well-formed/],
        ['entity declaration', `<!DOCTYPE x [<!ENTITY a "b">]>${UPLOAD.replace('<?xml version="1.0" encoding="UTF-8"?>', '')}`, xml, /DOCTYPE/],
        ['JSON with bad XML', JSON.stringify({ xml: '<nope/>' }), { 'content-type': 'application/json' }, /root element/],
      ];
      for (const [name, body, headers, message] of cases) {
        const response = await service.request('POST', '/lwm2m/objects', { token: b.token, body, headers });
        assert.equal(response.status, 400, name);
        assert.equal(response.body.error.code, 'IOTB_LWM2M_OBJECT_INVALID', name);
        assert.match(response.body.error.message, message, name);
        assert.equal(typeof response.body.error.details.what, 'string', name);
        assert.equal(typeof response.body.error.details.where, 'string', name);
      }
      const schema = await service.request('POST', '/lwm2m/objects', { token: b.token, body: { document: UPLOAD } });
      assert.equal(schema.status, 400);
      assert.equal(schema.body.error.code, 'IOTB_REQUEST_VALIDATION');
      const form = await service.request('POST', '/lwm2m/objects', { token: b.token, body: 'xml=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      assert.equal(form.status, 415);
      assert.equal(form.body.error.code, 'IOTB_REQUEST_UNSUPPORTED_MEDIA_TYPE');
      const large = await service.request('POST', '/lwm2m/objects', { token: b.token, body: `<LWM2M><!-- ${'x'.repeat(1024 * 1024)} --></LWM2M>`, headers: xml });
      assert.equal(large.status, 413);
      assert.equal(large.body.error.code, 'IOTB_REQUEST_BODY_TOO_LARGE');
      const listed = await service.request('GET', '/lwm2m/objects?limit=1000', { token: b.token });
      assert.ok(listed.body.items.every((item: { source: string }) => item.source === 'shipped'));
    });

    it('keeps XML off the other routes', async () => {
      const response = await service.request('POST', '/services', { token: a.token, body: '<service/>', headers: xml });
      assert.equal(response.status, 415);
    });

    it("keeps an account's definitions to itself: B, A's sub-account and other tenants see the shipped ones", async () => {
      for (const other of [b, aChild]) {
        assert.equal((await service.request('GET', '/lwm2m/objects/33001', { token: other.token })).status, 404);
        const device = await service.request('GET', '/lwm2m/objects/3', { token: other.token });
        assert.deepEqual([device.body.name, device.body.source], ['Device', 'shipped']);
        const listed = await service.request('GET', '/lwm2m/objects?limit=1000', { token: other.token });
        assert.ok(!JSON.stringify(listed.body).includes('Water Valve'));
        assert.ok(listed.body.items.every((item: { source: string }) => item.source === 'shipped'));
      }
      // A acting in its sub-account sees the sub-account's view, not its own uploads.
      const asChild = await service.request('GET', '/lwm2m/objects/33001', { token: a.token, account: aChild.accountId });
      assert.equal(asChild.status, 404);
    });

    it("does not let B delete A's definition, nor A's token act for B", async () => {
      const deleted = await service.request('DELETE', '/lwm2m/objects/33001', { token: b.token });
      assert.equal(deleted.status, 404);
      assert.equal(deleted.body.error.code, 'IOTB_LWM2M_OBJECT_NOT_FOUND');
      const shipped = await service.request('DELETE', '/lwm2m/objects/3', { token: b.token });
      assert.equal(shipped.status, 409, "B's delete of 3 hits the shipped definition, not A's upload");
      for (const [method, path, body] of [
        ['GET', '/lwm2m/objects'],
        ['GET', '/lwm2m/objects/3'],
        ['POST', '/lwm2m/objects', { xml: UPLOAD }],
        ['DELETE', '/lwm2m/objects/33001'],
      ] as [string, string, unknown?][]) {
        const response = await service.request(method, path, { token: a.token, account: b.accountId, body });
        assert.equal(response.status, 403, `${method} ${path}`);
        assert.equal(response.body.error.code, 'IOTB_AUTH_ACCOUNT_FORBIDDEN');
        const upwards = await service.request(method, path, { token: aChild.token, account: a.accountId, body });
        assert.equal(upwards.status, 403, `${method} ${path} from the sub-account`);
      }
      const unauthenticated = await service.request('GET', '/lwm2m/objects', { token: null });
      assert.equal(unauthenticated.status, 401);
      // A's definitions survived all of that.
      assert.equal((await service.request('GET', '/lwm2m/objects/33001', { token: a.token })).body.name, 'Water Valve');
      assert.equal((await service.request('GET', '/lwm2m/objects/3', { token: a.token })).body.name, 'Vendor Device');
    });

    it('keeps uploads across a restart', async () => {
      service = await service.restart();
      assert.equal((await service.request('GET', '/lwm2m/objects/33001', { token: a.token })).body.name, 'Water Valve');
      assert.equal((await service.request('GET', '/lwm2m/objects/3', { token: a.token })).body.source, 'account');
      assert.equal((await service.request('GET', '/lwm2m/objects/3', { token: b.token })).body.source, 'shipped');
    });

    it('deletes an upload (204), brings back the shipped object, and refuses to delete shipped ones (409)', async () => {
      assert.equal((await service.request('DELETE', '/lwm2m/objects/3', { token: a.token })).status, 204);
      const device = await service.request('GET', '/lwm2m/objects/3', { token: a.token });
      assert.deepEqual([device.body.name, device.body.source], ['Device', 'shipped']);
      const again = await service.request('DELETE', '/lwm2m/objects/3', { token: a.token });
      assert.equal(again.status, 409);
      assert.equal(again.body.error.code, 'IOTB_LWM2M_OBJECT_SHIPPED');
      assert.equal((await service.request('DELETE', '/lwm2m/objects/33001', { token: a.token })).status, 204);
      assert.equal((await service.request('GET', '/lwm2m/objects/33001', { token: a.token })).status, 404);
      assert.equal((await service.request('DELETE', '/lwm2m/objects/33001', { token: a.token })).status, 404);
    });

    it('re-uploads the shipped XML files unchanged', async () => {
      const body = readFileSync('src/lwm2m/objects/definitions/3303.xml', 'utf8');
      const created = await service.request('POST', '/lwm2m/objects', { token: a.token, body, headers: xml });
      assert.equal(created.status, 201);
      const shipped = await service.request('GET', '/lwm2m/objects/3303', { token: b.token });
      assert.deepEqual({ ...created.body.items[0], source: 'shipped' }, shipped.body);
    });

    it('refuses uploads past 1000 objects per account (409) and stores nothing of them', async () => {
      const heavy = await createAccount(service, 'objects-heavy');
      const object = (id: number) => `<Object><Name>O${id}</Name><ObjectID>${id}</ObjectID><MultipleInstances>Single</MultipleInstances><Mandatory>Optional</Mandatory></Object>`;
      const documentOf = (from: number) => `<LWM2M>${Array.from({ length: 100 }, (_, i) => object(from + i)).join('')}</LWM2M>`;
      for (let from = 40_000; from < 41_000; from += 100) {
        assert.equal((await service.request('POST', '/lwm2m/objects', { token: heavy.token, body: documentOf(from), headers: xml })).status, 201);
      }
      const over = await service.request('POST', '/lwm2m/objects', { token: heavy.token, body: `<LWM2M>${object(41_000)}</LWM2M>`, headers: xml });
      assert.equal(over.status, 409);
      assert.equal(over.body.error.code, 'IOTB_LWM2M_OBJECT_LIMIT');
      assert.equal(over.body.error.details.limit, 1000);
      const again = await service.request('POST', '/lwm2m/objects', { token: heavy.token, body: documentOf(40_000), headers: xml });
      assert.equal(again.status, 201, 'replacing existing ones is still allowed');
      const listed = await service.request('GET', '/lwm2m/objects?limit=1', { token: heavy.token });
      assert.equal(listed.body.total, 1000 + shippedCount(await service.request('GET', '/lwm2m/objects?limit=1000', { token: b.token })));
    });

    it('drops an account’s definitions with the account', async () => {
      const doomed = await createAccount(service, 'objects-doomed');
      assert.equal((await service.request('POST', '/lwm2m/objects', { token: doomed.token, body: UPLOAD, headers: xml })).status, 201);
      const removed = await service.request('DELETE', `/accounts/${doomed.accountId}?cascade=true`);
      assert.equal(removed.status, 204, JSON.stringify(removed.body));
    });
  });
}
