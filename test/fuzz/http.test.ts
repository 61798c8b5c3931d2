/**
 * HTTP fuzzing (docs/security.md "Fuzzing"): mutated JSON bodies to the API's main routes (services, endpoints,
 * bulk updates, storage, credentials, events, triggers, accounts, tokens, users, log-in, LwM2M objects and
 * operations) and to the LoRa network-server webhooks (ChirpStack v4 and The Things Stack v3): deep nesting,
 * huge numbers, wrong types, prototype-pollution keys, invalid UTF-8, odd content types. Every answer must be
 * 2xx, or 4xx with {"error":{"code","message"}}; a 500 (IOTB_INTERNAL) is a finding.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventSeen, FUZZ_ADMIN_TOKEN, fuzzAccount, fuzzEndpoint, fuzzService, Fuzzer, hex, mutateBytes, mutatedJsonBody, poll, Rng, type FuzzService, type RoundSpec } from '../helpers/fuzz.js';

const CONCURRENCY = 4;
const LORA_SECRET = 'fuzz-lora-webhook-secret-0123456789';
const TTS_SECRET = 'fuzz-tts-webhook-secret-0123456789';
const CONTROL_EUI = 'c0c0c0c0c0c0c0c0';

/** 5xx answers the API documents for some routes (a device that does not answer, an overloaded password check): not findings. */
const DOCUMENTED_5XX = new Set(['IOTB_LWM2M_TIMEOUT', 'IOTB_LWM2M_DEVICE_ERROR', 'IOTB_LORA_DOWNLINK_FAILED', 'IOTB_AUTH_BUSY']);

/** What setup made, by name: cases carry `@@name@@` in paths and bodies, replaced when sent, so a case replays on a fresh process. */
const ID_NAMES = ['udp', 'mqtt', 'lwm2m', 'putTarget', 'endpoint', 'mqttEndpoint', 'lwm2mEndpoint', 'trigger', 'user', 'subAccount', 'accountId', 'chirpstack', 'tts'] as const;
type IdName = (typeof ID_NAMES)[number];
const id = (name: IdName) => `@@${name}@@`;

interface Context {
  readonly service: FuzzService;
  readonly token: string;
  readonly ids: Readonly<Record<IdName, string>>;
  readonly lora: { readonly token: string; readonly controlId: string };
}

interface HttpCase {
  /** The route as the summary counts it. */
  readonly label: string;
  readonly method: string;
  readonly path: string;
  readonly token: 'account' | 'admin' | 'none';
  readonly headers: Record<string, string>;
  readonly body: Buffer | undefined;
  /** Requests that may legitimately wait (LwM2M operations queued for a device that is not registered). */
  readonly mayWait: boolean;
  /** What was sent, ids in place. */
  sent?: { path: string; body: Buffer | undefined };
}

// ---------------------------------------------------------------------------------------------------------
// Valid bodies

const DDF = `<?xml version="1.0" encoding="UTF-8"?>
<LWM2M xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <Object ObjectType="MODefinition">
    <Name>Fuzz Valve</Name>
    <Description1><![CDATA[A valve & its flow]]></Description1>
    <ObjectID>33077</ObjectID>
    <ObjectURN>urn:oma:lwm2m:x:33077</ObjectURN>
    <LWM2MVersion>1.1</LWM2MVersion>
    <ObjectVersion>1.0</ObjectVersion>
    <MultipleInstances>Multiple</MultipleInstances>
    <Mandatory>Optional</Mandatory>
    <Resources>
      <Item ID="1"><Name>Open</Name><Operations>RW</Operations><MultipleInstances>Single</MultipleInstances><Mandatory>Mandatory</Mandatory><Type>Boolean</Type><RangeEnumeration/><Units/><Description>Open or closed</Description></Item>
      <Item ID="2"><Name>Flow</Name><Operations>R</Operations><MultipleInstances>Single</MultipleInstances><Mandatory>Optional</Mandatory><Type>Float</Type><RangeEnumeration>0..100</RangeEnumeration><Units>l/min</Units><Description>Flow rate</Description></Item>
    </Resources>
  </Object>
</LWM2M>`;

const FILTER_TYPES = ['has-tag', 'missing-tag', 'has-status-detail', 'missing-status-detail', 'has-endpoint', 'one-of', 'contains', '==', '!=', '>', '>=', '<=', '<'];
const LWM2M_OPERATIONS = ['read', 'write', 'exec', 'create', 'delete', 'discover', 'writeAttributes', 'observe', 'cancelObserve', 'readComposite', 'writeMulti', 'observeComposite'];

function serviceOptions(rng: Rng, type: string): Record<string, unknown> {
  switch (type) {
    case 'udp':
      return rng.pick([{ keyRule: 'prefix', keyDelimiter: ':' }, { keyLength: 8, keyEncoding: 'hex' }, { keyRule: 'address', keyAddress: 'host:port' }, { keyDelimiterHex: '00', autoProvision: true, queueLimit: 10 }]);
    case 'tcp':
      return rng.pick([{ framing: 'length', lengthBytes: 2, loginReplyHex: '01', maxFrameBytes: 512 }, { delimiter: '\r\n', keyRule: 'prefix' }, { framing: 'length', lengthBytes: 4, lengthIncludesHeader: true }]);
    case 'mqtt':
      return rng.pick([{ topicPattern: 'meters/{key}/#' }, { topicPattern: '{key}/#' }, {}]);
    case 'lora':
      return { webhookSecret: 'a-secret-of-enough-length-0123', autoProvision: rng.chance(0.5) };
    case 'coap':
      return { replyTimeoutMs: 1000, autoProvision: false };
    default:
      return { forceQueueMode: rng.chance(0.5), keepAliveMode: rng.pick(['do-nothing', 'statusDetail', 'touch', 'event']), coapMaxMessageSize: 1024 };
  }
}

interface Route {
  readonly weight: number;
  /** What its valid body is answered (default: 2xx). */
  readonly expect?: readonly number[];
  readonly method: string;
  path(rng: Rng): string;
  body(rng: Rng): unknown;
  readonly token?: 'account' | 'none' | 'admin';
  readonly mayWait?: boolean;
  /** The body is sent as it is (XML), not as JSON. */
  readonly raw?: string;
}

const ROUTES: readonly Route[] = [
  {
    weight: 6,
    method: 'POST',
    path: () => '/services',
    body: (rng) => {
      const type = rng.pick(['udp', 'tcp', 'mqtt', 'lora', 'coap', 'lwm2m', 'http']);
      return { name: `svc-${rng.text(5)}`, type, options: serviceOptions(rng, type) };
    },
  },
  { weight: 4, method: 'PUT', path: () => `/services/${id('putTarget')}`, body: (rng) => ({ name: 'put-target', type: 'udp', options: serviceOptions(rng, 'udp') }) },
  {
    weight: 8,
    method: 'POST',
    path: () => '/endpoints',
    body: (rng) => ({
      key: `fzh-${rng.text(6)}`,
      serviceId: rng.pick([id('udp'), id('mqtt'), id('lwm2m')]),
      tags: ['site', 'floor:2'],
      statusDetails: { secondsBeforeMissing: 3600, custom: { x: 1, list: [1, 'a'] }, site: 'north' },
      parameters: { client_id: 'modem-1', interval: 60 },
      trace: false,
    }),
  },
  {
    weight: 5,
    method: 'PUT',
    path: () => `/endpoints/${id('endpoint')}`,
    body: () => ({ key: 'fzh-1', serviceId: id('udp'), tags: ['site'], statusDetails: { secondsBeforeMissing: 30 }, parameters: { p: 1 }, trace: true }),
  },
  {
    weight: 6,
    method: 'PATCH',
    path: (rng) => `/endpoints/${rng.chance(0.5) ? id('endpoint') : 'k.fzh-1'}`,
    body: () => ({ tags: ['a', 'b:c'], addTags: ['d'], removeTags: ['a'], statusDetails: { gone: null, nested: { a: { b: 1 } }, secondsBeforeMissing: 100 }, parameters: { interval: null, mode: 'x' }, trace: false }),
  },
  { weight: 4, method: 'PATCH', path: () => `/endpoints?serviceId=${id('udp')}&tag=site`, body: () => ({ secondsBeforeMissing: 60, addTags: ['bulk'], removeTags: ['old'] }) },
  { weight: 5, method: 'PUT', path: (rng) => `/endpoints/${id('endpoint')}/storage/${rng.pick(['config', 'state', 'a.b', 'x'])}`, body: () => ({ config: { interval: 60, list: [1, 2, { deep: true }] }, name: 'storage' }) },
  { weight: 1, method: 'PUT', path: () => `/endpoints/${id('mqttEndpoint')}/credentials`, body: () => ({ password: 'another-device-password-1' }) },
  {
    weight: 8,
    method: 'POST',
    path: () => '/events',
    body: (rng) => ({ type: rng.pick(['fuzz-event', 'fuzz-x', 'on-connect', 'mqtt-publish']), ...(rng.chance(0.5) ? { endpoint: rng.pick([id('endpoint'), 'k.fzh-1']) } : {}), data: { temperature: 21.5, nested: { a: [1, 2, { b: 'c' }] }, text: 'hello' } }),
  },
  {
    weight: 5,
    method: 'POST',
    path: () => '/triggers',
    body: (rng) => ({
      name: `trigger-${rng.text(5)}`,
      events: ['fuzz-x'],
      filters: [{ type: rng.pick(FILTER_TYPES), field: 'data.temperature', value: 20, values: [1, 2] }],
      script: rng.pick(['log(event.type);', 'var x = event.data; log(JSON.stringify(x));', 'trigger.reply({ ok: true });', 'if (event.data && event.data.t > 1) log("warm");']),
      enabled: false,
      library: false,
      globals: { g: { value: 1, protected: false } },
      form: { fields: [] },
    }),
  },
  { weight: 4, method: 'PUT', path: () => `/triggers/${id('trigger')}`, body: () => ({ name: 'fuzz-trigger', events: ['fuzz-x'], script: 'log(event.type);', enabled: false }) },
  { weight: 3, method: 'POST', path: () => `/triggers/${id('trigger')}/run`, body: () => ({ type: 'fuzz-x', data: { t: 2 } }) },
  { weight: 3, method: 'POST', path: () => '/accounts', body: (rng) => ({ name: `sub-${rng.text(5)}`, externalRefs: { crm: 'C-1', billing: 'B-2' } }) },
  { weight: 3, method: 'PUT', path: () => `/accounts/${id('subAccount')}`, body: () => ({ name: 'renamed', externalRefs: { crm: 'C-9' } }) },
  { weight: 3, method: 'POST', path: () => '/tokens', body: (rng) => ({ name: `token-${rng.text(4)}`, type: rng.pick(['api', 'app']), expiresIn: 3600 }) },
  { weight: 1, method: 'POST', path: () => '/users', body: (rng) => ({ email: `u-${rng.text(6)}@example.com`, password: 'fuzz-user-password-1', name: 'Fuzz User' }) },
  { weight: 1, method: 'PUT', path: () => `/users/${id('user')}`, body: () => ({ name: 'Fuzz Renamed' }) },
  { weight: 1, method: 'POST', path: () => '/auth/login', body: () => ({ email: 'fuzz-user@example.com', password: 'not-the-password' }), token: 'none', expect: [401] },
  { weight: 2, method: 'POST', path: () => '/lwm2m/objects', body: () => ({ xml: DDF }) },
  { weight: 2, method: 'POST', path: () => '/lwm2m/objects', body: () => DDF, raw: 'application/xml' },
  {
    weight: 3,
    method: 'POST',
    path: (rng) => `/endpoints/${id('lwm2mEndpoint')}/lwm2m/${rng.pick(LWM2M_OPERATIONS)}`,
    body: (rng) => ({ path: rng.pick(['/3/0/1', '/3303/0', '/', '/3/0/7/0']), timeout: 100, ...(rng.chance(0.5) ? { value: 'x', format: rng.pick(['text', 'tlv', 'senml-json', 'senml-cbor', 'json', 'cbor', 'opaque']) } : {}), ...(rng.chance(0.3) ? { attributes: { pmin: 1, pmax: 60 } } : {}), ...(rng.chance(0.2) ? { paths: ['/3/0/1', '/3/0/2'] } : {}) }),
    mayWait: true,
    // Not registered: the request waits in the device queue until its timeout (504), or is refused (400, 404 for cancelObserve).
    expect: [400, 404, 504],
  },
  { weight: 1, method: 'POST', path: () => '/events', body: () => ({ type: 'fuzz-event', data: { a: 1 } }), token: 'admin' },
  {
    weight: 3,
    method: 'POST',
    path: () => '/geofences',
    body: (rng) =>
      rng.pick([
        { name: 'depot', tags: ['depot'], circle: { lat: 52.5, lon: 13.4, radius: 500 } },
        { name: 'area', description: 'a square with a hole', geometry: { type: 'Polygon', coordinates: [[[13, 52], [14, 52], [14, 53], [13, 53], [13, 52]], [[13.4, 52.4], [13.6, 52.4], [13.6, 52.6], [13.4, 52.6], [13.4, 52.4]]] } },
        { name: 'fiji', geometry: { type: 'MultiPolygon', coordinates: [[[[179.5, -17], [180, -17], [180, -16], [179.5, -16], [179.5, -17]]], [[[-180, -17], [-179.5, -17], [-179.5, -16], [-180, -16], [-180, -17]]]] } },
      ]),
  },
  { weight: 3, method: 'POST', path: () => '/geofences/eval', body: (rng) => ({ endpoint: id('endpoint'), lat: rng.pick([52.5, 52.45, -16.5, 0]), lon: rng.pick([13.4, 13.5, 179.9, -179.9]), inside: rng.chance(0.5), tags: rng.chance(0.3) ? ['depot'] : undefined }) },
  { weight: 2, method: 'PUT', path: () => `/endpoints/${id('endpoint')}/position`, body: () => ({ lat: 48.1374, lon: 11.5755, accuracy: 25 }) },
  { weight: 2, method: 'POST', path: () => '/location/geolocate', body: () => ({ cells: [{ radioType: 'lte', mcc: 262, mnc: 1, tac: 100, cellId: 12345, signalStrength: -80 }], wifi: [{ macAddress: '00:11:22:33:44:55', signalStrength: -60 }] }), expect: [200, 404] },
  { weight: 1, method: 'POST', path: () => '/location/services', body: () => ({ name: 'cells', type: 'embedded' }), expect: [201, 400] },
  { weight: 2, method: 'POST', path: () => '/alert-rules', body: (rng) => ({ name: 'warm', severity: rng.pick(['major', 'info']), tags: ['fuzz'], condition: { type: 'threshold', event: 'fuzz-event', field: 'data.temperature', op: rng.pick(['>', '<=', '!=']), value: 20 } }) },
  { weight: 2, method: 'POST', path: () => '/reports', body: (rng) => ({ name: `report-${rng.text(5)}`, description: 'fuzz', columns: [{ name: 'a', type: 'number' }], retentionDays: 7 }) },
];

const TOTAL_WEIGHT = ROUTES.reduce((sum, route) => sum + route.weight, 0);

function pickRoute(rng: Rng): Route {
  let at = rng.int(TOTAL_WEIGHT);
  for (const route of ROUTES) {
    at -= route.weight;
    if (at < 0) return route;
  }
  return ROUTES[0]!;
}

const CONTENT_TYPES = ['application/json', 'application/json; charset=utf-8', 'application/json; charset=latin1', 'application/json; charset=utf-16', 'text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'application/merge-patch+json', 'application/json;;', ''];

/** A path segment replaced by something a router or a look-up may choke on. */
const NASTY_SEGMENTS = ['k.', 'k.%00', '%zz', 'k.%E0%A4%A', '..%2f..', 'x'.repeat(400), 'k.' + 'é'.repeat(50), '%2F', 'null', 'undefined', '__proto__', 'constructor', '0', '-1', '1e400'];

function routeLabel(route: Route): string {
  return `${route.method} ${route.path(new Rng(0)).split('?')[0]!.replace(/@@(\w+)@@/g, ':$1').replace(/\/lwm2m\/(?!objects$)\w+$/, '/lwm2m/:operation').replace(/\/storage\/[^/]+$/, '/storage/:name')}${route.raw ? ` (${route.raw})` : ''}`;
}

function apiCase(rng: Rng): HttpCase {
  const route = pickRoute(rng);
  let path = route.path(rng);
  if (rng.chance(0.07)) {
    const segments = path.split('/');
    const at = rng.range(1, segments.length - 1);
    segments[at] = rng.pick(NASTY_SEGMENTS);
    path = segments.join('/');
  }
  const value = route.body(rng);
  const headers: Record<string, string> = {};
  let body: Buffer | undefined;
  if (route.raw) {
    headers['content-type'] = route.raw;
    body = rng.chance(0.9) ? mutateBytes(rng, Buffer.from(value as string), 4) : Buffer.from(`<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "${'a'.repeat(100)}"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]><LWM2M>&b;</LWM2M>`);
  } else {
    body = mutatedJsonBody(rng, value);
    headers['content-type'] = rng.chance(0.9) ? 'application/json' : rng.pick(CONTENT_TYPES);
    if (rng.chance(0.02)) body = Buffer.alloc(0);
    if (rng.chance(0.01)) body = Buffer.concat([Buffer.from('{"a":"'), Buffer.alloc(1_100_000, 0x61), Buffer.from('"}')]);
  }
  if (headers['content-type'] === '') delete headers['content-type'];
  return { label: routeLabel(route), method: route.method, path, token: route.token ?? 'account', headers, body, mayWait: route.mayWait === true };
}

// ---------------------------------------------------------------------------------------------------------
// LoRa webhook bodies (test/api/lora.test.ts shows them in full)

function chirpStackBody(rng: Rng, event: string, devEui: string): Record<string, unknown> {
  const deviceInfo = { tenantId: '52f14cd4-c6f1-4fbd-8f87-4025e1d49242', tenantName: 'ChirpStack', applicationId: '17c82e96-be03-4f38-aef3-f83d48582d97', applicationName: 'Meters', deviceProfileId: '14855bf7-d10d-4aee-b618-ebfcb64dc7ad', deviceProfileName: 'EU868', deviceName: 'meter', devEui, deviceClassEnabled: 'CLASS_A', tags: { site: 'berlin' } };
  const time = '2026-11-22T09:34:15.775023242+00:00';
  switch (event) {
    case 'join':
      return { deduplicationId: 'c9dbe358-2578-4fb7-b295-66b44edc45a6', time, deviceInfo, devAddr: '01fa3b2c' };
    case 'ack':
      return { deduplicationId: 'x', time, deviceInfo, queueItemId: '5f1f6a6a-6b6e-4c69-9c1e-2b1e0b1b4d43', acknowledged: true, fCntDown: 7 };
    case 'txack':
      return { downlinkId: 3190848400, time, deviceInfo, queueItemId: '5f1f6a6a-6b6e-4c69-9c1e-2b1e0b1b4d43', fCntDown: 7, gatewayId: '0016c001f153a14c', txInfo: { frequency: 869525000, power: 14 } };
    case 'status':
      return { deduplicationId: 'y', time, deviceInfo, margin: 7, batteryLevel: 87.5, externalPowerSource: false };
    case 'log':
      return { time, deviceInfo, level: 'ERROR', code: 'UPLINK_CODEC', description: 'codec failed', context: { deduplication_id: 'z' } };
    case 'location':
      return { deduplicationId: 'l', time, deviceInfo, location: { latitude: 52.52, longitude: 13.405, altitude: 40, source: 'GEO_RESOLVER_TDOA', accuracy: 20 } };
    case 'integration':
      return { deduplicationId: 'i', time, deviceInfo, integrationName: 'loracloud', eventType: 'geolocation', object: { a: 1 } };
    default:
      return {
        deduplicationId: '3ac7e3c4-4401-4b8d-9386-a5c902f9202d',
        time,
        deviceInfo,
        devAddr: '00189440',
        adr: true,
        dr: 5,
        fCnt: rng.int(100_000),
        fPort: 10,
        confirmed: false,
        data: rng.bytes(rng.range(0, 24)).toString('base64'),
        object: { temperature: 21.5 },
        rxInfo: [
          { gatewayId: '0016c001f153a14c', uplinkId: 4217106255, nsTime: '2026-11-22T09:34:15.7Z', rssi: -101, snr: -3.5, channel: 2, rfChain: 1, location: {}, context: 'E3OWOQ==', metadata: { region_config_id: 'eu868' }, crcStatus: 'CRC_OK' },
          { gatewayId: '0016c001f1500001', uplinkId: 17, gwTime: '2026-11-22T09:34:15.701Z', rssi: -57, snr: 9.25, channel: 2, rfChain: 1, location: { latitude: 52.52, longitude: 13.405, altitude: 40 }, context: 'AAECAw==', crcStatus: 'CRC_OK' },
        ],
        txInfo: { frequency: 868500000, modulation: { lora: { bandwidth: 125000, spreadingFactor: 7, codeRate: 'CR_4_5' } } },
      };
  }
}

function ttsBody(rng: Rng, devEui: string): Record<string, unknown> {
  const ids = { device_id: `eui-${devEui}`, application_ids: { application_id: 'parking-sensors' }, dev_eui: devEui.toUpperCase(), join_eui: '0000000000000000', dev_addr: '260B1234' };
  const base = { end_device_ids: ids, correlation_ids: ['as:up:01HZQ9W5R2'], received_at: '2026-11-22T09:40:01.123456789Z' };
  switch (rng.int(5)) {
    case 0:
      return { ...base, join_accept: { session_key_id: 'AYZ2TFuWDQ==', received_at: '2026-11-22T09:40:01.05Z' } };
    case 1:
      return { ...base, downlink_ack: { session_key_id: 'AYZ2', f_port: 1, f_cnt: 3, frm_payload: 'AQ==', confirmed: true, priority: 'NORMAL', correlation_ids: ['x'] } };
    case 2:
      return { ...base, downlink_nack: { f_port: 1, frm_payload: 'AQ==' } };
    default:
      return {
        ...base,
        uplink_message: {
          session_key_id: 'AYZ2TFuWDQ==',
          f_port: 2,
          f_cnt: rng.int(100_000),
          frm_payload: rng.bytes(rng.range(0, 24)).toString('base64'),
          decoded_payload: { occupied: true },
          rx_metadata: [{ gateway_ids: { gateway_id: 'rooftop-gw', eui: 'B827EBFFFE123456' }, time: '2026-11-22T09:40:00.987Z', timestamp: 2463457000, rssi: -88, channel_rssi: -88, snr: 7.5, location: { latitude: 48.137, longitude: 11.575, altitude: 520, source: 'SOURCE_REGISTRY' }, uplink_token: 'ChIKEAoOcm9vZnRvcC1ndw==', channel_index: 4 }],
          settings: { data_rate: { lora: { bandwidth: 125000, spreading_factor: 9, coding_rate: '4/5' } }, frequency: '867500000', timestamp: 2463457000 },
          received_at: '2026-11-22T09:40:01.05Z',
          confirmed: true,
          consumed_airtime: '0.205824s',
          network_ids: { net_id: '000013', tenant_id: 'ttn', cluster_id: 'eu1' },
        },
      };
  }
}

const CHIRPSTACK_EVENTS = ['up', 'up', 'up', 'join', 'ack', 'txack', 'status', 'log', 'location', 'integration'];

function loraCase(rng: Rng, slot: number): HttpCase {
  const devEui = rng.pick([`0f0f0f0f0f0f0f0${slot}`, CONTROL_EUI.replace(/c0$/, `0${slot}`), rng.bytes(8).toString('hex')]);
  const chirpstack = rng.chance(0.6);
  const event = rng.chance(0.95) ? rng.pick(CHIRPSTACK_EVENTS) : rng.pick(['mystery', '', 'UP', 'up&event=join', '%00']);
  const value = chirpstack ? chirpStackBody(rng, event, devEui) : ttsBody(rng, devEui);
  const secret = rng.chance(0.95) ? (chirpstack ? LORA_SECRET : TTS_SECRET) : rng.pick(['', 'wrong', chirpstack ? TTS_SECRET : LORA_SECRET]);
  const headers: Record<string, string> = { 'content-type': rng.chance(0.95) ? 'application/json' : rng.pick(CONTENT_TYPES) };
  if (secret !== '') headers['x-webhook-secret'] = secret;
  if (headers['content-type'] === '') delete headers['content-type'];
  const path = chirpstack ? `/lora/${id('chirpstack')}/chirpstack?event=${encodeURIComponent(event)}` : `/lora/${id('tts')}/tts`;
  return { label: chirpstack ? 'POST /lora/:id/chirpstack' : 'POST /lora/:id/tts', method: 'POST', path, token: 'none', headers, body: mutatedJsonBody(rng, value), mayWait: false };
}

// ---------------------------------------------------------------------------------------------------------

/** `bytes` with every `@@name@@` replaced by the id setup made. */
function withIds(bytes: Buffer, context: Context): Buffer {
  let text = bytes.toString('latin1');
  for (const name of ID_NAMES) text = text.split(id(name)).join(context.ids[name]);
  return Buffer.from(text, 'latin1');
}

function show(input: HttpCase): string {
  const path = input.sent?.path ?? input.path;
  const sentBody = input.sent ? input.sent.body : input.body;
  let body = '(no body)';
  if (sentBody) {
    const text = sentBody.toString('utf8');
    const utf8 = Buffer.from(text, 'utf8').equals(sentBody);
    const shown = utf8 ? JSON.stringify(text.length > 4096 ? `${text.slice(0, 4096)}…` : text) : `hex ${hex(sentBody, 4096)}`;
    body = `${sentBody.length} bytes ${utf8 ? 'of text' : '(not UTF-8)'}: ${shown}`;
  }
  const token = input.token === 'none' ? 'none' : input.token === 'admin' ? 'the admin token acting in the account' : "the account's token";
  return `${input.method} ${path} ${JSON.stringify(input.headers)} with ${token}; body ${body}`;
}

/** Answers by route and status, for the round's summary. */
const tally = new Map<string, number>();
function count(what: string): void {
  tally.set(what, (tally.get(what) ?? 0) + 1);
}
function summary(): string {
  const byRoute = new Map<string, string[]>();
  for (const [what, n] of [...tally.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const at = what.lastIndexOf(' ');
    const route = what.slice(0, at);
    byRoute.set(route, [...(byRoute.get(route) ?? []), `${what.slice(at + 1)}×${n}`]);
  }
  tally.clear();
  return `answers by route: ${[...byRoute.entries()].map(([route, statuses]) => `${route}: ${statuses.join(' ')}`).join('; ')}`;
}

async function sendHttp(context: Context, input: HttpCase): Promise<string | undefined> {
  const { service } = context;
  const path = withIds(Buffer.from(input.path, 'latin1'), context).toString('latin1');
  const body = input.body && withIds(input.body, context);
  input.sent = { path, body };
  const token = input.token === 'none' ? null : input.token === 'admin' ? `${FUZZ_ADMIN_TOKEN}:${context.ids.accountId}` : context.token;
  let answer;
  try {
    answer = await service.request(input.method, path, { token, headers: input.headers, body, timeoutMs: input.mayWait ? 3000 : 12_000 });
  } catch (error) {
    const name = (error as Error).name;
    if (name === 'TimeoutError' || name === 'AbortError') return input.mayWait ? undefined : 'no answer within 12 s';
    const cause = (error as { cause?: { message?: string; code?: string } }).cause;
    // A body over the 1 MiB limit is answered 413 and the connection closed while the client may still be writing it.
    if (body && body.length > 1_048_576 && ['EPIPE', 'ECONNRESET', 'UND_ERR_SOCKET'].includes(cause?.code ?? '')) return undefined;
    return `no answer: ${(error as Error).message}${cause ? ` (${cause.code ?? ''} ${cause.message ?? ''})` : ''}`;
  }
  const { status, json, text } = answer;
  const code = json?.error?.code;
  count(`${input.label} ${status}`);
  if (status >= 500) {
    if (typeof code === 'string' && DOCUMENTED_5XX.has(code)) return undefined;
    return `answered ${status}: ${text.slice(0, 500)}`;
  }
  if (status >= 400) {
    if (typeof code !== 'string' || typeof json?.error?.message !== 'string') return `answered ${status} without the error shape {"error":{"code","message"}}: ${text.slice(0, 300)}`;
    return undefined;
  }
  if (json && typeof json === 'object' && ('polluted' in json || 'isAdmin' in json)) return `answered ${status} with a polluted object: ${text.slice(0, 300)}`;
  return undefined;
}

/** A custom event still goes through, the account's token still acts only as itself, nothing inherits polluted properties. */
async function apiControl(context: Context, service: FuzzService): Promise<void> {
  const nonce = `control ${Date.now()} ${Math.random()}`;
  const posted = await service.request('POST', '/events', { token: context.token, body: { type: 'fuzz-control', data: { nonce } } });
  assert.ok(posted.status === 201 || posted.status === 200 || posted.status === 202, posted.text);
  await poll(async () => {
    const found = await service.request('GET', '/history?type=fuzz-control&limit=20', { token: context.token });
    assert.equal(found.status, 200, found.text);
    return (found.json.items as { data: { nonce?: string } }[]).some((event) => event.data.nonce === nonce) ? true : undefined;
  }, 'the control event');
  const whoami = await service.request('GET', '/auth/whoami', { token: context.token });
  assert.equal(whoami.status, 200, whoami.text);
  assert.equal(whoami.json.superAdmin, false, 'the account token did not become Super-Admin');
  const services = await service.request('GET', '/services?limit=5', { token: context.token });
  assert.equal(services.status, 200, services.text);
  for (const item of services.json.items as Record<string, unknown>[]) assert.ok(!('polluted' in item) && !('isAdmin' in item), `a polluted service: ${JSON.stringify(item)}`);
}

async function loraControl(context: Context, service: FuzzService): Promise<void> {
  const body = chirpStackBody(new Rng(1), 'up', CONTROL_EUI);
  const nonce = Date.now() % 1_000_000_000;
  const accepted = await service.request('POST', `/lora/${context.ids.chirpstack}/chirpstack?event=up`, { token: null, headers: { 'x-webhook-secret': LORA_SECRET }, body: { ...body, fCnt: nonce } });
  assert.equal(accepted.status, 202, accepted.text);
  await eventSeen(service, context.lora.token, context.lora.controlId, 'LORA Uplink', (data) => data.fCnt === nonce);
}

describe('fuzz: HTTP API and LoRa webhook bodies (the service in its own process)', () => {
  const fuzzer = new Fuzzer<Context>({
    async setup(service) {
      const account = await fuzzAccount(service, 'fuzz-http');
      const { token } = account;
      const udp = await fuzzService(service, token, { name: 'http-udp', type: 'udp' });
      const mqtt = await fuzzService(service, token, { name: 'http-mqtt', type: 'mqtt' });
      const lwm2m = await fuzzService(service, token, { name: 'http-lwm2m', type: 'lwm2m' });
      const putTarget = await fuzzService(service, token, { name: 'put-target', type: 'udp' });
      const endpoint = await fuzzEndpoint(service, token, { key: 'fzh-1', serviceId: udp, tags: ['site'] });
      const mqttEndpoint = await fuzzEndpoint(service, token, { key: 'fzh-mqtt', serviceId: mqtt });
      const lwm2mEndpoint = await fuzzEndpoint(service, token, { key: 'fzh-lwm2m', serviceId: lwm2m });
      const trigger = await service.request('POST', '/triggers', { token, body: { name: 'fuzz-trigger', events: ['fuzz-x'], script: 'log(event.type);', enabled: false } });
      assert.equal(trigger.status, 201, trigger.text);
      const user = await service.request('POST', '/users', { token, body: { email: 'fuzz-user@example.com', password: 'fuzz-user-password-1', name: 'Fuzz' } });
      assert.equal(user.status, 201, user.text);
      const sub = await service.request('POST', '/accounts', { token, body: { name: 'fuzz-http-sub' } });
      assert.equal(sub.status, 201, sub.text);

      const lora = await fuzzAccount(service, 'fuzz-lora');
      const chirpstack = await fuzzService(service, lora.token, { name: 'chirpstack', type: 'lora', options: { webhookSecret: LORA_SECRET } });
      const tts = await fuzzService(service, lora.token, { name: 'tts', type: 'lora', options: { webhookSecret: TTS_SECRET, autoProvision: true } });
      const controlId = await fuzzEndpoint(service, lora.token, { key: CONTROL_EUI, serviceId: chirpstack });
      for (let slot = 0; slot < CONCURRENCY; slot++) await fuzzEndpoint(service, lora.token, { key: `0f0f0f0f0f0f0f0${slot}`, serviceId: chirpstack });
      return {
        service,
        token,
        ids: { udp, mqtt, lwm2m, putTarget, endpoint, mqttEndpoint, lwm2mEndpoint, trigger: trigger.json.id, user: user.json.id, subAccount: sub.json.accountId, accountId: account.accountId, chirpstack, tts },
        lora: { token: lora.token, controlId },
      };
    },
  });

  before(() => fuzzer.start());
  after(() => fuzzer.stop());

  const round = <I>(spec: RoundSpec<Context, I>) => fuzzer.test(spec);

  it('every route the fuzzer mutates accepts its valid body (the mutations start from valid requests)', async () => {
    const context = fuzzer.context;
    for (const route of ROUTES) {
      const rng = new Rng(7);
      const body = route.raw ? Buffer.from(route.body(rng) as string) : Buffer.from(JSON.stringify(route.body(rng)));
      const input: HttpCase = { label: routeLabel(route), method: route.method, path: route.path(rng), token: route.token ?? 'account', headers: { 'content-type': route.raw ?? 'application/json' }, body, mayWait: false };
      assert.equal(await sendHttp(context, input), undefined, show(input));
      const status = [...tally.keys()].at(-1)!.split(' ').at(-1)!;
      tally.clear();
      assert.ok((route.expect ?? [200, 201, 202, 204]).includes(Number(status)), `${show(input)}: answered ${status}`);
    }
  });

  it(
    'HTTP API: mutated JSON bodies (deep nesting, huge numbers, wrong types, __proto__, invalid UTF-8) to the main routes',
    round<HttpCase>({
      name: 'http-api',
      count: 700,
      concurrency: CONCURRENCY,
      generate: (rng) => apiCase(rng),
      show,
      send: sendHttp,
      control: apiControl,
      summary,
      timeoutMs: 20_000,
    }),
  );

  it(
    'LoRa webhooks: mutated ChirpStack v4 and The Things Stack v3 bodies',
    round<HttpCase>({
      name: 'lora-webhooks',
      count: 500,
      concurrency: CONCURRENCY,
      generate: (rng, _index, slot) => loraCase(rng, slot),
      show,
      send: sendHttp,
      control: loraControl,
      summary,
      timeoutMs: 20_000,
    }),
  );
});
