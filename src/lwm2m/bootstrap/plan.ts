/**
 * The requests a Bootstrap-Server sends after a Bootstrap-Request, as a pure list (OMA LwM2M Core 1.1/1.2
 * "Bootstrap Interface" → "Bootstrap Operations"; CoAP mapping in Transport 1.1 "Bootstrap Interface", Table
 * "Operation to Method and URI Mapping"): Bootstrap-Delete = DELETE path, Bootstrap-Write = PUT path with a
 * Content-Format, Bootstrap-Finish = POST /bs with an empty payload.
 *
 * What is written follows Leshan's BootstrapUtil.toSecurityInstance / toServerInstance (eclipse-leshan/leshan,
 * leshan-server-core): the Security instance carries 0 LwM2M Server URI, 1 Bootstrap-Server (false),
 * 2 Security Mode, 3 Public Key or Identity, 4 Server Public Key, 5 Secret Key, 10 Short Server ID; the Server
 * instance 0 Short Server ID, 1 Lifetime, 2/3 Default Min/Max Period (when set), 6 Notification Storing,
 * 7 Binding. Integers are typed `integer` as in Leshan (newIntegerResource): a signed TLV integer of a positive
 * value reads the same as unsigned, so it suits both the 1.0 (Integer) and 1.2 (Unsigned) Lifetime definitions.
 *
 * Order: Bootstrap-Delete /0 and /1 (when `deleteFirst`; Core "Bootstrap-Delete Operation": the Bootstrap-Server
 * Account and the Device instance survive any Bootstrap-Delete, so deleting /0 never removes the account the
 * device reached us through), then for each server its Security write(s) and its Server write(s), then
 * Bootstrap-Finish.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { encode } from '../codecs/index.js';
import { CONTENT_FORMATS, type Lwm2mRecord, type ModelLookup } from '../model.js';
import { SECURITY_MODE_VALUES, WRITE_ENCODING_FORMATS, type BootstrapConfig, type BootstrapServerConfig, type WriteEncoding } from './config.js';

export type BootstrapStep =
  | { readonly operation: 'delete'; readonly method: 'DELETE'; readonly path: string }
  | {
      readonly operation: 'write';
      readonly method: 'PUT';
      /** `/0/1` (writeAs instances) or `/0/1/0` (writeAs resources, and always for text). */
      readonly path: string;
      readonly contentFormat: number;
      readonly payload: Uint8Array;
      /** What the payload carries, with absolute paths (for events and logs; secret keys included). */
      readonly records: readonly Lwm2mRecord[];
    }
  | { readonly operation: 'finish'; readonly method: 'POST'; readonly path: '/bs' };

/** What the server knows of the device when it plans. */
export interface BootstrapDevice {
  /** The `pct` (Preferred Content Format) of its Bootstrap-Request, if any. */
  readonly pct?: number | undefined;
  /** Its object definitions; handed to the codecs. */
  readonly models?: ModelLookup | undefined;
  /** The CoAPS server certificate (DER), written to resource 4 of certificate-mode accounts. */
  readonly serverCertificate?: Buffer | undefined;
}

/** pct values the plan follows (Core 1.1 "Bootstrap-Request Operation" allows these; see docs/status.md). */
const PCT_ENCODINGS = new Map<number, WriteEncoding>([
  [CONTENT_FORMATS.senmlJson, 'senml_json'],
  [CONTENT_FORMATS.senmlCbor, 'senml_cbor'],
  [CONTENT_FORMATS.tlv, 'tlv'],
]);

/**
 * The encoding the writes use: the configured one, else the device's `pct` when it is SenML JSON (110), SenML
 * CBOR (112) or TLV (11542), else TLV (what Leshan's DefaultBootstrapSession falls back to; every 1.0 client
 * takes it).
 */
export function bootstrapEncoding(config: Pick<BootstrapConfig, 'writeEncoding'>, pct?: number): WriteEncoding {
  return config.writeEncoding ?? (pct === undefined ? undefined : PCT_ENCODINGS.get(pct)) ?? 'tlv';
}

/**
 * The Bootstrap-Delete, Bootstrap-Write and Bootstrap-Finish requests for a configuration, in order.
 *
 * `writeAs: 'instances'` writes each object instance in one PUT (`/0/1` with all its resources); `'resources'`
 * one PUT per resource (`/0/1/0`, `/0/1/1`, …). Plain text carries a single value (Core "Plain Text"), so
 * `text` always writes per resource; opaque values then travel as base64 (Core 1.1 7.4.1 / Appendix C, which is
 * what src/lwm2m/codecs/text.ts writes: RFC 4648 section 4, padded; an empty key is an empty payload). TLV and
 * SenML are encoded for the request path (TLV resource TLVs directly under an instance path, SenML with the
 * path in its names).
 *
 * `tuning.dontWriteNoSecSecRecs`: NoSec servers get no Security instance write, only their Server instance;
 * and because the device must then keep the NoSec Security instances it has (they make its server accounts
 * whole), /0 is not deleted first whenever a NoSec server is in the configuration (/1 still is). The device
 * must already hold a NoSec Security instance with each such server's Short Server ID, or it answers the
 * Bootstrap-Finish 4.06 Not Acceptable (Core "Bootstrap and Configuration Consistency").
 */
export function bootstrapPlan(config: BootstrapConfig, device: BootstrapDevice = {}): BootstrapStep[] {
  const encoding = bootstrapEncoding(config, device.pct);
  const contentFormat = WRITE_ENCODING_FORMATS[encoding];
  const perResource = config.writeAs === 'resources' || encoding === 'text';
  const skipNoSec = config.tuning.dontWriteNoSecSecRecs;
  const keepSecurity = skipNoSec && config.servers.some((server) => server.securityMode === 'nosec');

  const steps: BootstrapStep[] = [];
  if (config.deleteFirst) {
    if (!keepSecurity) steps.push({ operation: 'delete', method: 'DELETE', path: '/0' });
    steps.push({ operation: 'delete', method: 'DELETE', path: '/1' });
  }
  const write = (instancePath: string, records: readonly Lwm2mRecord[]) => {
    const groups = perResource ? records.map((record) => ({ path: record.path, records: [record] })) : [{ path: instancePath, records }];
    for (const group of groups) {
      const payload = encode(contentFormat, group.records, { basePath: group.path, models: device.models });
      steps.push({ operation: 'write', method: 'PUT', path: group.path, contentFormat, payload, records: group.records });
    }
  };
  config.servers.forEach((server, index) => {
    if (!(skipNoSec && server.securityMode === 'nosec')) {
      const id = config.securityInstance + index;
      write(`/0/${id}`, securityRecords(server, id, device.serverCertificate));
    }
    const id = config.serverInstance + index;
    write(`/1/${id}`, serverRecords(server, id));
  });
  steps.push({ operation: 'finish', method: 'POST', path: '/bs' });
  return steps;
}

/**
 * The Security Object instance of a server account (resources 0-5 and 10, as Leshan writes them). Certificate
 * mode (Transport 1.1 "Certificate Mode"): 3 the device's certificate (DER), 4 the server's certificate
 * (`serverCertificate`, DER: what the device verifies the server with), 5 the device's key (PKCS#8 DER).
 */
export function securityRecords(server: BootstrapServerConfig, instanceId: number, serverCertificate?: Buffer): Lwm2mRecord[] {
  const at = (resourceId: number) => `/0/${instanceId}/${resourceId}`;
  const opaque = (bytes: Buffer | undefined) => new Uint8Array(bytes ?? Buffer.alloc(0));
  let identity: Buffer | undefined;
  let serverKey: Buffer | undefined;
  let secret: Buffer | undefined;
  if (server.securityMode === 'psk') {
    identity = Buffer.from(server.pskIdentity ?? '', 'utf8');
    secret = Buffer.from(server.pskKey ?? '', 'hex');
  } else if (server.securityMode === 'x509') {
    identity = Buffer.from(new X509Certificate(server.certificate!).raw);
    serverKey = serverCertificate;
    secret = createPrivateKey(server.privateKey!).export({ type: 'pkcs8', format: 'der' });
  }
  return [
    { path: at(0), type: 'string', value: server.uri },
    { path: at(1), type: 'boolean', value: false },
    { path: at(2), type: 'integer', value: SECURITY_MODE_VALUES[server.securityMode] },
    { path: at(3), type: 'opaque', value: opaque(identity) },
    { path: at(4), type: 'opaque', value: opaque(serverKey) },
    { path: at(5), type: 'opaque', value: opaque(secret) },
    { path: at(10), type: 'integer', value: server.shortServerId },
  ];
}

/** The Server Object instance of a server account (resources 0, 1, 2/3 when set, 6, 7). */
export function serverRecords(server: BootstrapServerConfig, instanceId: number): Lwm2mRecord[] {
  const at = (resourceId: number) => `/1/${instanceId}/${resourceId}`;
  return [
    { path: at(0), type: 'integer', value: server.shortServerId },
    { path: at(1), type: 'integer', value: server.lifetime },
    ...(server.defaultMinPeriod === undefined ? [] : [{ path: at(2), type: 'integer', value: server.defaultMinPeriod } as const]),
    ...(server.defaultMaxPeriod === undefined ? [] : [{ path: at(3), type: 'integer', value: server.defaultMaxPeriod } as const]),
    { path: at(6), type: 'boolean', value: server.notificationStoring },
    { path: at(7), type: 'string', value: server.binding },
  ];
}
