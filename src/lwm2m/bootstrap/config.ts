/**
 * What a Bootstrap-Server writes into a device (OMA LwM2M Core 1.1/1.2 "Bootstrap Interface", "Bootstrap
 * Information"): one LwM2M Server Account per server, i.e. a Security Object (0) instance and a Server Object
 * (1) instance paired by Short Server ID, plus how to write them. `BootstrapConfigBody` is the HTTP API body;
 * `normalizeBootstrapConfig` checks what a JSON Schema cannot (URIs, uniqueness, key lengths, instance ranges)
 * and fills the defaults, giving the `BootstrapConfig` that src/lwm2m/bootstrap/plan.ts turns into requests.
 *
 * Security modes (Security Object resource 2, Core Appendix E.1 and Transport 1.1 "UDP Channel Security"): NoSec
 * (3), Pre-Shared Key (0) and Certificate (2); Raw Public Key and EST are refused. PSK per Transport 1.1 "Pre-Shared
 * Keys": resource 3 holds the PSK identity (RFC 4279), resource 5 the key, resource 4 is not used. Certificate:
 * resource 3 the device's certificate, 4 this server's, 5 the device's key (PKCS#8 DER).
 */
import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { AppError } from '../../errors.js';
import { CONTENT_FORMATS } from '../model.js';

/** At most this many LwM2M Server Accounts in one configuration. */
export const BOOTSTRAP_MAX_SERVERS = 8;
/** Largest Object Instance id (65535 is reserved, Core "Identifiers"). */
const MAX_INSTANCE_ID = 65_534;
/** Security resource 0 "LwM2M Server URI" is a string of 0..255 characters (object 0 definition). */
const MAX_URI_LENGTH = 255;
/** PSK identities up to 128 bytes (RFC 7925 4.2 recommends keeping them short; 128 is what devices store). */
const MAX_PSK_IDENTITY_BYTES = 128;
const MAX_PSK_KEY_BYTES = 64;
/** Lifetime, periods: kept within a signed 32-bit integer, which every client's integer type holds. */
const MAX_SECONDS = 2_147_483_647;

export const SECURITY_MODES = ['nosec', 'psk', 'x509'] as const;
export type SecurityModeName = (typeof SECURITY_MODES)[number];
/** The Security Mode resource (/0/x/2) value of each mode: 0 Pre-Shared Key, 3 NoSec (Core Appendix E.1). */
export const SECURITY_MODE_VALUES: Readonly<Record<SecurityModeName, number>> = { psk: 0, x509: 2, nosec: 3 };

export const WRITE_AS = ['instances', 'resources'] as const;
export type WriteAs = (typeof WRITE_AS)[number];
export const WRITE_ENCODINGS = ['tlv', 'text', 'senml_cbor', 'senml_json'] as const;
export type WriteEncoding = (typeof WRITE_ENCODINGS)[number];

const Seconds = (description: string, minimum: number) => Type.Integer({ minimum, maximum: MAX_SECONDS, description });
const InstanceId = (description: string) => Type.Integer({ minimum: 0, maximum: MAX_INSTANCE_ID, description });

export const BootstrapServerBody = Type.Object(
  {
    uri: Type.String({
      minLength: 1,
      maxLength: MAX_URI_LENGTH,
      description: 'LwM2M Server URI: coap://host[:port] for securityMode nosec, coaps://host[:port] for psk and x509',
    }),
    shortServerId: Type.Integer({ minimum: 1, maximum: 65_534, description: 'Short Server ID, unique in the configuration' }),
    lifetime: Type.Optional(Seconds('Registration lifetime in seconds (default 300)', 1)),
    binding: Type.Optional(Type.String({ minLength: 1, maxLength: 5, description: 'Binding: letters of U, T, S, N, Q, e.g. U, UQ, T (default U)' })),
    securityMode: Type.Enum([...SECURITY_MODES], { description: 'nosec; psk with pskIdentity and pskKey; or x509 with certificate and privateKey' }),
    pskIdentity: Type.Optional(Type.String({ minLength: 1, description: `PSK identity (psk only), at most ${MAX_PSK_IDENTITY_BYTES} bytes of UTF-8` })),
    pskKey: Type.Optional(Type.String({ minLength: 2, description: `PSK (psk only) in hex, 1 to ${MAX_PSK_KEY_BYTES} bytes` })),
    certificate: Type.Optional(Type.String({ maxLength: 20_000, description: "x509 only: the device's certificate (PEM, EC P-256), written to Security resource 3" })),
    privateKey: Type.Optional(Type.String({ maxLength: 20_000, description: "x509 only: the device's private key (PEM), written to resource 5 as PKCS#8 DER; write-only" })),
    notificationStoring: Type.Optional(Type.Boolean({ description: 'Notification Storing When Disabled or Offline (default true)' })),
    defaultMinPeriod: Type.Optional(Seconds('Default Minimum Period, seconds', 0)),
    defaultMaxPeriod: Type.Optional(Seconds('Default Maximum Period, seconds', 1)),
  },
  { additionalProperties: false },
);

export const BootstrapConfigBody = Type.Object(
  {
    servers: Type.Array(BootstrapServerBody, { minItems: 1, maxItems: BOOTSTRAP_MAX_SERVERS, description: 'The LwM2M Server Accounts to write' }),
    serverInstance: Type.Optional(InstanceId('Server Object Instance id of the first server; server i gets serverInstance + i (default 1)')),
    securityInstance: Type.Optional(InstanceId('Security Object Instance id of the first server; server i gets securityInstance + i (default 1)')),
    writeAs: Type.Optional(Type.Enum([...WRITE_AS], { description: 'One Bootstrap-Write per object instance (default) or per resource' })),
    writeEncoding: Type.Optional(
      Type.Enum([...WRITE_ENCODINGS], {
        description: 'Content format of the writes; default: the pct of the Bootstrap-Request when SenML JSON, SenML CBOR or TLV, else TLV. text writes one resource per request',
      }),
    ),
    tuning: Type.Optional(
      Type.Object(
        {
          dontWriteNoSecSecRecs: Type.Optional(
            Type.Boolean({ description: 'Write no Security instance for NoSec servers, and keep /0 (no Bootstrap-Delete of /0): the device keeps the NoSec records it has (default false)' }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    deleteFirst: Type.Optional(Type.Boolean({ description: 'Bootstrap-Delete /0 and /1 before writing (default true); the Bootstrap-Server account itself is never deleted' })),
  },
  { additionalProperties: false, description: 'LwM2M bootstrap configuration of an endpoint' },
);

export type BootstrapConfigBodyType = Static<typeof BootstrapConfigBody>;

/** One LwM2M Server Account, defaults applied. */
export interface BootstrapServerConfig {
  readonly uri: string;
  readonly shortServerId: number;
  readonly lifetime: number;
  readonly binding: string;
  readonly securityMode: SecurityModeName;
  /** PSK identity (psk only). */
  readonly pskIdentity?: string | undefined;
  /** The PSK as lower-case hex (psk only). */
  readonly pskKey?: string | undefined;
  /** x509: the device's certificate and private key (PEM). The server's own certificate is written beside them. */
  readonly certificate?: string | undefined;
  readonly privateKey?: string | undefined;
  readonly notificationStoring: boolean;
  readonly defaultMinPeriod?: number | undefined;
  readonly defaultMaxPeriod?: number | undefined;
}

/** A checked configuration with its defaults; plain JSON, so it can be stored and normalized again unchanged. */
export interface BootstrapConfig {
  readonly servers: readonly BootstrapServerConfig[];
  readonly serverInstance: number;
  readonly securityInstance: number;
  readonly writeAs: WriteAs;
  /** Absent: the plan picks from the device's `pct` (see plan.ts). */
  readonly writeEncoding?: WriteEncoding | undefined;
  readonly tuning: { readonly dontWriteNoSecSecRecs: boolean };
  readonly deleteFirst: boolean;
}

const BINDING_LETTERS = /^[UTSNQ]+$/;
const HEX = /^(?:[0-9a-fA-F]{2})+$/;

/**
 * Checks a body (anything: a request body already validated by `BootstrapConfigBody`, or a stored configuration)
 * and applies the defaults: lifetime 300, binding U, notificationStoring true, serverInstance 1,
 * securityInstance 1, writeAs instances, deleteFirst true, dontWriteNoSecSecRecs false.
 * @throws AppError IOTB_REQUEST_VALIDATION naming the field (`servers[0].pskKey: …`), with `details.field`
 */
export function normalizeBootstrapConfig(body: unknown): BootstrapConfig {
  if (!Value.Check(BootstrapConfigBody, body)) {
    const [first] = Value.Errors(BootstrapConfigBody, body);
    // additionalProperties: false reports the stray field itself as "schema is false".
    const problem = first === undefined ? 'is not a bootstrap configuration' : first.keyword === 'boolean' ? 'is not a known field' : first.message;
    throw invalid(first ? fieldName(first.instancePath) : 'body', problem);
  }
  const servers = body.servers.map((server, index) => normalizeServer(server, `servers[${index}]`));
  const seen = new Map<number, number>();
  servers.forEach((server, index) => {
    const other = seen.get(server.shortServerId);
    if (other !== undefined) throw invalid(`servers[${index}].shortServerId`, `${server.shortServerId} is also the shortServerId of servers[${other}]; each server needs its own`);
    seen.set(server.shortServerId, index);
  });
  const serverInstance = body.serverInstance ?? 1;
  const securityInstance = body.securityInstance ?? 1;
  const last = servers.length - 1;
  if (serverInstance + last > MAX_INSTANCE_ID) throw invalid('serverInstance', `${serverInstance} + ${last} (one instance per server) is past ${MAX_INSTANCE_ID}`);
  if (securityInstance + last > MAX_INSTANCE_ID) throw invalid('securityInstance', `${securityInstance} + ${last} (one instance per server) is past ${MAX_INSTANCE_ID}`);
  return {
    servers,
    serverInstance,
    securityInstance,
    writeAs: body.writeAs ?? 'instances',
    ...(body.writeEncoding !== undefined && { writeEncoding: body.writeEncoding }),
    tuning: { dontWriteNoSecSecRecs: body.tuning?.dontWriteNoSecSecRecs ?? false },
    deleteFirst: body.deleteFirst ?? true,
  };
}

function normalizeServer(server: BootstrapConfigBodyType['servers'][number], at: string): BootstrapServerConfig {
  checkUri(server.uri, server.securityMode, `${at}.uri`);
  const binding = server.binding ?? 'U';
  if (!BINDING_LETTERS.test(binding) || new Set(binding).size !== binding.length || !/[UTSN]/.test(binding)) {
    throw invalid(`${at}.binding`, `"${binding}" is not a binding: each of U, T, S, N, Q at most once, with at least one of U, T, S, N`);
  }
  if (server.defaultMinPeriod !== undefined && server.defaultMaxPeriod !== undefined && server.defaultMinPeriod > server.defaultMaxPeriod) {
    throw invalid(`${at}.defaultMinPeriod`, `${server.defaultMinPeriod} is above defaultMaxPeriod ${server.defaultMaxPeriod}`);
  }
  let psk: { pskIdentity: string; pskKey: string } | undefined;
  let x509: { certificate: string; privateKey: string } | undefined;
  if (server.securityMode !== 'x509' && (server.certificate !== undefined || server.privateKey !== undefined)) throw invalid(`${at}.certificate`, 'is only for securityMode x509');
  if (server.securityMode === 'psk') {
    if (server.pskIdentity === undefined) throw invalid(`${at}.pskIdentity`, 'is required with securityMode psk');
    if (server.pskKey === undefined) throw invalid(`${at}.pskKey`, 'is required with securityMode psk');
    const identityBytes = Buffer.byteLength(server.pskIdentity, 'utf8');
    if (identityBytes > MAX_PSK_IDENTITY_BYTES) throw invalid(`${at}.pskIdentity`, `is ${identityBytes} bytes of UTF-8, at most ${MAX_PSK_IDENTITY_BYTES}`);
    if (!HEX.test(server.pskKey)) throw invalid(`${at}.pskKey`, 'is not hex (an even number of 0-9, a-f)');
    if (server.pskKey.length / 2 > MAX_PSK_KEY_BYTES) throw invalid(`${at}.pskKey`, `is ${server.pskKey.length / 2} bytes, at most ${MAX_PSK_KEY_BYTES}`);
    psk = { pskIdentity: server.pskIdentity, pskKey: server.pskKey.toLowerCase() };
  } else if (server.securityMode === 'x509') {
    if (server.pskIdentity !== undefined || server.pskKey !== undefined) throw invalid(`${at}.pskIdentity`, 'is only for securityMode psk');
    psk = undefined;
    x509 = checkDeviceCertificate(server.certificate, server.privateKey, at);
  } else {
    // Leshan's ConfigurationChecker.checkNoSec: a NoSec account carries no keys.
    if (server.pskIdentity !== undefined) throw invalid(`${at}.pskIdentity`, 'is only for securityMode psk');
    if (server.pskKey !== undefined) throw invalid(`${at}.pskKey`, 'is only for securityMode psk');
  }
  return {
    uri: server.uri,
    shortServerId: server.shortServerId,
    lifetime: server.lifetime ?? 300,
    binding,
    securityMode: server.securityMode,
    ...psk,
    ...x509,
    notificationStoring: server.notificationStoring ?? true,
    ...(server.defaultMinPeriod !== undefined && { defaultMinPeriod: server.defaultMinPeriod }),
    ...(server.defaultMaxPeriod !== undefined && { defaultMaxPeriod: server.defaultMaxPeriod }),
  };
}

/** x509: a P-256 certificate and the private key that matches it, both PEM (Transport 1.1 "Certificate Mode"). */
function checkDeviceCertificate(certificate: string | undefined, privateKey: string | undefined, at: string): { certificate: string; privateKey: string } {
  if (certificate === undefined) throw invalid(`${at}.certificate`, 'is required with securityMode x509');
  if (privateKey === undefined) throw invalid(`${at}.privateKey`, 'is required with securityMode x509');
  let parsed: X509Certificate;
  try {
    parsed = new X509Certificate(certificate);
  } catch {
    throw invalid(`${at}.certificate`, 'is not a PEM X.509 certificate');
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(privateKey);
  } catch {
    throw invalid(`${at}.privateKey`, 'is not a PEM private key');
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') throw invalid(`${at}.privateKey`, 'is not an EC P-256 key');
  if (!parsed.checkPrivateKey(key)) throw invalid(`${at}.privateKey`, 'does not match the certificate');
  return { certificate, privateKey };
}

/**
 * A CoAP URI with a host and an optional port, nothing else (RFC 7252 6.1); `coaps` exactly when the mode needs
 * DTLS (Transport 1.1 "UDP Channel Security": the scheme selects DTLS), so a PSK account is never plain CoAP.
 */
function checkUri(text: string, mode: SecurityModeName, field: string): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid(field, `"${text}" is not a URI (coap://host[:port] or coaps://host[:port])`);
  }
  const scheme = url.protocol.slice(0, -1);
  if (scheme !== 'coap' && scheme !== 'coaps') throw invalid(field, `"${text}": the scheme must be coap or coaps`);
  if (url.hostname === '') throw invalid(field, `"${text}" has no host`);
  if (url.username !== '' || url.password !== '') throw invalid(field, `"${text}": no user information in an LwM2M Server URI`);
  if ((url.pathname !== '' && url.pathname !== '/') || url.search !== '' || url.hash !== '') throw invalid(field, `"${text}": only scheme, host and port (no path, query or fragment)`);
  if (url.port === '0') throw invalid(field, `"${text}": port 0 cannot be connected to`);
  const wanted = mode === 'nosec' ? 'coap' : 'coaps';
  if (scheme !== wanted) throw invalid(field, `"${text}": securityMode ${mode} needs a ${wanted}:// URI`);
}

/** `/servers/0/pskKey` → `servers[0].pskKey`. */
function fieldName(instancePath: string): string {
  const parts = instancePath.split('/').filter(Boolean);
  if (parts.length === 0) return 'body';
  return parts.map((part, index) => (/^\d+$/.test(part) ? `[${part}]` : `${index === 0 ? '' : '.'}${part}`)).join('');
}

function invalid(field: string, problem: string): AppError {
  return new AppError('IOTB_REQUEST_VALIDATION', `${field}: ${problem}`, { field });
}

/** The Content-Format number of a write encoding name. */
export const WRITE_ENCODING_FORMATS: Readonly<Record<WriteEncoding, number>> = {
  tlv: CONTENT_FORMATS.tlv,
  text: CONTENT_FORMATS.text,
  senml_cbor: CONTENT_FORMATS.senmlCbor,
  senml_json: CONTENT_FORMATS.senmlJson,
};
