// GET /services/types publishes each service type's options as JSON Schema; POST /services checks them with each
// protocol's own code. This holds the two to the same answers: for every option of every type, values the
// schema allows are accepted and values it forbids are refused with a 400 naming the option. An option the
// service did not actually check, or a schema that drifted from the check, fails here.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertError, createAccount, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

interface PropertySchema {
  readonly type?: string;
  readonly enum?: readonly (string | number)[];
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly pattern?: string;
  readonly default?: unknown;
  readonly examples?: readonly unknown[];
  readonly items?: PropertySchema;
  readonly description?: string;
}

interface TypeInfo {
  readonly type: string;
  readonly description: string;
  readonly options: { readonly properties?: Record<string, PropertySchema> };
}

/** Options whose values need a real certificate or a nested document: their own suites check them (dtls, bootstrap). */
const CHECKED_ELSEWHERE = new Set(['trustedCertificates', 'bootstrap']);

/** What an accepted value needs beside it (the script rule reads the key by a script, from claimed networks only). */
const COMPANIONS: Record<string, Record<string, unknown>> = {
  'udp.keyRule=script': { keyScript: 'return datagram.text;', sources: ['127.0.0.0/8'] },
};

function accepted(schema: PropertySchema): unknown[] {
  if (schema.enum) return [...schema.enum];
  switch (schema.type) {
    case 'boolean':
      return [true, false];
    case 'integer':
      return [schema.minimum ?? 0, schema.maximum ?? 1000].filter((value, index, all) => all.indexOf(value) === index);
    case 'string':
      return [schema.examples?.[0] ?? schema.default ?? 'x'.repeat(schema.minLength ?? 1)];
    case 'array':
      return [[schema.items?.examples?.[0] ?? 'x']];
    default:
      throw new Error(`no sample for ${JSON.stringify(schema)}`);
  }
}

function refused(schema: PropertySchema): unknown[] {
  if (schema.enum) return [typeof schema.enum[0] === 'number' ? 3 : 'no-such-choice'];
  switch (schema.type) {
    case 'boolean':
      return ['yes'];
    case 'integer':
      return [1.5, ...(schema.minimum === undefined ? [] : [schema.minimum - 1]), ...(schema.maximum === undefined ? [] : [schema.maximum + 1])];
    case 'string':
      // (Not a number: the API's validator turns 42 into "42" where the flat schema names the option, as for query strings.)
      return [
        ...(schema.minLength ? ['x'.repeat(schema.minLength - 1)] : []),
        ...(schema.maxLength === undefined ? [] : ['x'.repeat(schema.maxLength + 1)]),
        ...(schema.pattern === undefined ? [] : ['#']),
      ];
    case 'array':
      return ['not a list', ...(schema.minItems ? [[]] : [])];
    default:
      return [];
  }
}

for (const dialect of DIALECTS) {
  describe(`service types and their options (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let types: TypeInfo[];

    before(async () => {
      service = await startService(dialect.name);
      tenant = await createAccount(service, 'service-types');
      const listed = await service.request('GET', '/services/types', { token: tenant.token });
      assert.equal(listed.status, 200, JSON.stringify(listed.body));
      types = listed.body.items as TypeInfo[];
    });

    after(() => service?.stop());

    it('lists every service type with a description and the schema of its options', async () => {
      assert.deepEqual(types.map((info) => info.type), ['lwm2m', 'coap', 'mqtt', 'udp', 'tcp', 'lora', 'http']);
      for (const info of types) assert.ok(info.description.length > 10, info.type);
      const options = (type: string) => Object.keys(types.find((info) => info.type === type)?.options.properties ?? {});
      assert.deepEqual(options('mqtt'), ['topicPattern']);
      assert.ok(options('udp').includes('keyRule') && options('udp').includes('sources') && options('udp').includes('keyDelimiterHex'));
      assert.ok(options('tcp').includes('framing') && options('tcp').includes('loginReplyHex') && options('tcp').includes('keyEncoding'));
      assert.ok(options('lwm2m').includes('forceQueueMode') && !options('coap').includes('forceQueueMode'), 'queue mode is LwM2M only');
      assert.ok(!options('mqtt').includes('keepAliveMode'), 'CoAP keep-alives are not MQTT options');
      // The same rule name means different things per type: each type has its own choices.
      const udpRule = types.find((info) => info.type === 'udp')!.options.properties!.keyRule!;
      const tcpRule = types.find((info) => info.type === 'tcp')!.options.properties!.keyRule!;
      assert.deepEqual([udpRule.enum, tcpRule.enum], [['prefix', 'address', 'script'], ['login', 'prefix']]);

      const one = await service.request('GET', '/services/types?type=tcp', { token: tenant.token });
      assert.deepEqual((one.body.items as TypeInfo[]).map((info) => info.type), ['tcp']);
    });

    it('accepts what each schema allows and refuses what it forbids, naming the option', async () => {
      let checked = 0;
      for (const info of types) {
        for (const [name, schema] of Object.entries(info.options.properties ?? {})) {
          if (CHECKED_ELSEWHERE.has(name)) continue;
          for (const value of accepted(schema)) {
            const options = { [name]: value, ...COMPANIONS[`${info.type}.${name}=${String(value)}`] };
            const created = await service.request('POST', '/services', { token: tenant.token, body: { name: `${info.type} ${name}`, type: info.type, options } });
            assert.equal(created.status, 201, `${info.type} ${name}=${JSON.stringify(value)}: ${JSON.stringify(created.body)}`);
            assert.deepEqual(created.body.options[name], value, `${info.type} ${name} stored as given`);
            checked++;
          }
          for (const value of refused(schema)) {
            const what = `${info.type} ${name}=${JSON.stringify(value).slice(0, 40)}`;
            const response = await service.request('POST', '/services', { token: tenant.token, body: { name: 'bad', type: info.type, options: { [name]: value } } });
            assertError(response, 400, 'IOTB_REQUEST_VALIDATION', what);
            assert.match(JSON.stringify(response.body), new RegExp(name), `${what}: the error names the option`);
            checked++;
          }
        }
      }
      assert.ok(checked > 100, `${checked} values checked`);
    });

    it('stores the CoAP defaults on LwM2M and CoAP services only', async () => {
      const mqtt = await service.request('POST', '/services', { token: tenant.token, body: { name: 'broker', type: 'mqtt' } });
      assert.deepEqual(mqtt.body.options, {});
      const coap = await service.request('POST', '/services', { token: tenant.token, body: { name: 'coap', type: 'coap' } });
      assert.deepEqual(coap.body.options, { forceQueueMode: false, keepAliveMode: 'statusDetail', coapMaxMessageSize: 1024 });
    });

    it('refuses a bad type filter and a request without a token', async () => {
      assertError(await service.request('GET', '/services/types?type=zigbee', { token: tenant.token }), 400, 'IOTB_REQUEST_VALIDATION', 'unknown type');
      assertError(await service.request('GET', '/services/types', { token: null }), 401, 'IOTB_AUTH_TOKEN_MISSING', 'no token');
    });
  });
}
