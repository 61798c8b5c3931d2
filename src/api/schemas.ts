import { BootstrapConfigBody } from '../lwm2m/bootstrap/config.js';
import { Type, type TSchema } from 'typebox';
import { ERRORS, type ErrorCode } from '../errors.js';
import { DEVICE_PASSWORD_MAX_LENGTH } from '../domain/device-credentials.js';
import { KEEP_ALIVE_MODES, SERVICE_TYPES } from '../domain/services.js';
import { PAGE_DEFAULT_LIMIT, PAGE_MAX_LIMIT } from '../domain/pagination.js';
import { PROVISION_BATCH_MAX } from '../domain/endpoint-provisioning.js';
import { LOGIN_CANDIDATES_MAX, PASSWORD_MIN_LENGTH } from '../domain/users.js';
import { PLATFORM_EVENT_TYPES } from '../events/event.js';
import { FILTER_TYPES } from '../triggers/filters.js';

/** Shared JSON Schemas of the HTTP API: they validate requests, shape responses and make the OpenAPI document. */

export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Type.Enum(Object.keys(ERRORS) as ErrorCode[], { description: 'Stable code, see docs/errors.md' }),
      message: Type.String(),
      details: Type.Optional(Type.Unknown()),
    }),
  },
  { description: 'The one error body of the API' },
);

/** Error responses most routes can give, for the OpenAPI document. */
export const ERROR_RESPONSES = {
  400: ErrorBody,
  401: ErrorBody,
  403: ErrorBody,
  404: ErrorBody,
  409: ErrorBody,
} as const;

export const PageQuery = {
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: PAGE_MAX_LIMIT, default: PAGE_DEFAULT_LIMIT, description: `Page size (default ${PAGE_DEFAULT_LIMIT}, at most ${PAGE_MAX_LIMIT})` }),
  ),
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0, description: 'Items to skip' })),
};

export function List<T extends TSchema>(item: T) {
  return Type.Object({
    items: Type.Array(item),
    total: Type.Integer({ description: 'Items matching, over all pages' }),
    limit: Type.Integer(),
    offset: Type.Integer(),
  });
}

const Id = Type.String({ minLength: 1, maxLength: 64 });
export const Timestamp = Type.String({ format: 'date-time' });
const Name = Type.String({ minLength: 1, maxLength: 200 });
/** Free-form JSON object (status details, parameters, options). */
const JsonObject = Type.Record(Type.String(), Type.Unknown());

export const IdParams = Type.Object({ id: Id });

// Accounts

const ExternalRefs = Type.Record(Type.String({ maxLength: 100 }), Type.String({ maxLength: 500 }), {
  description: 'References to this account in other systems (CRM, billing, …): name → id',
});

export const Account = Type.Object({
  accountId: Id,
  name: Type.String(),
  parentId: Type.Union([Id, Type.Null()]),
  externalRefs: ExternalRefs,
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const AccountCreate = Type.Object(
  { name: Name, parentId: Type.Optional(Id), externalRefs: Type.Optional(ExternalRefs) },
  { additionalProperties: false },
);
export const AccountUpdate = Type.Object({ name: Type.Optional(Name), externalRefs: Type.Optional(ExternalRefs) }, { additionalProperties: false });

// Tokens and users

const TokenType = Type.Union([Type.Literal('api'), Type.Literal('app'), Type.Literal('user')]);

export const TokenInfo = Type.Object({
  id: Id,
  name: Type.String(),
  type: TokenType,
  accountId: Id,
  superAdmin: Type.Boolean(),
  userId: Type.Union([Id, Type.Null()]),
  createdAt: Timestamp,
  expiresAt: Type.Union([Timestamp, Type.Null()]),
  impersonatedBy: Type.Optional(Type.String({ description: 'A support token (`POST /super/impersonate`): who issued it' })),
});

export const IssuedToken = Type.Object({
  ...TokenInfo.properties,
  token: Type.String({ description: 'The secret: shown this once, send it as `Authorization: Bearer <token>`' }),
});

export const TokenCreate = Type.Object(
  {
    name: Name,
    type: Type.Optional(Type.Union([Type.Literal('api'), Type.Literal('app')], { description: 'api (default) or app: an app token acts only in this account, cannot manage tokens or users, and is what another account presents for cross-account calls' })),
    superAdmin: Type.Optional(Type.Boolean({ description: 'Super-Admin: only a Super-Admin acting in the root account may set it' })),
    expiresIn: Type.Optional(Type.Integer({ minimum: 60, description: 'Lifetime in seconds; without it the token does not expire' })),
  },
  { additionalProperties: false },
);

export const User = Type.Object({
  id: Id,
  accountId: Id,
  email: Type.String(),
  name: Type.String(),
  superAdmin: Type.Boolean(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

const Email = Type.String({ minLength: 3, maxLength: 254, pattern: '^[^@\\s]+@[^@\\s]+$' });
const Password = Type.String({ minLength: PASSWORD_MIN_LENGTH, maxLength: 1024 });

export const UserCreate = Type.Object(
  { email: Email, password: Password, name: Type.Optional(Name), superAdmin: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
export const UserUpdate = Type.Object({ name: Type.Optional(Name), password: Type.Optional(Password) }, { additionalProperties: false });
export const Login = Type.Object(
  {
    email: Type.String({ maxLength: 254 }),
    password: Type.String({ maxLength: 1024 }),
    accountId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description:
          `The account of the user signing in: an email is unique per account only. Without it the users with this email are tried oldest first (at most ${LOGIN_CANDIDATES_MAX}); users past them need it`,
      }),
    ),
  },
  { additionalProperties: false },
);

// Services

const ServiceType = Type.Enum([...SERVICE_TYPES]);

export const ServiceOptions = Type.Object(
  {
    forceQueueMode: Type.Optional(Type.Boolean({ description: 'Treat every LWM2M device as in queue mode; reapplied on each registration update (default false)' })),
    keepAliveMode: Type.Optional(Type.Enum([...KEEP_ALIVE_MODES], { description: 'What a keep-alive does (default statusDetail)' })),
    coapMaxMessageSize: Type.Optional(Type.Integer({ minimum: 16, maximum: 65_507, description: 'Largest CoAP payload sent before block-wise transfer is used (default 1024)' })),
    preferredFormat: Type.Optional(
      Type.Enum(['tlv', 'senml-cbor', 'senml-json', 'json', 'cbor', 'text'], {
        description: 'LwM2M: the content format requests to devices use first when the caller names none (default: what each device announced; see docs/lwm2m.md "Content formats")',
      }),
    ),
    allowNoSec: Type.Optional(
      Type.Boolean({ description: 'LwM2M/CoAP: accept devices over plain CoAP, without DTLS (default true; unsafe: anyone who knows an endpoint name can speak for it)' }),
    ),
    trustedCertificates: Type.Optional(
      Type.Array(Type.String({ maxLength: 20_000 }), { maxItems: 20, description: 'LwM2M/CoAP over DTLS: PEM CA certificates that issue the certificates of devices in X.509 mode (docs/dtls.md)' }),
    ),
    publicHost: Type.Optional(
      Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9.:-]+$', description: "LwM2M: the host name or address the service's devices reach this service at, put into FOTA Package URIs (default IOTBRIDGE_PUBLIC_HOST; docs/fota.md)" }),
    ),
    bootstrap: Type.Optional(
      Type.Union([BootstrapConfigBody, Type.Null()], { description: "LwM2M: the bootstrap configuration of the service's devices that have none of their own (PUT /endpoints/{ref}/bootstrap)" }),
    ),
  },
  { additionalProperties: true, description: 'Common options; protocol-specific options sit beside them' },
);

export { ServiceType };

export const Service = Type.Object({
  id: Id,
  accountId: Id,
  name: Type.String(),
  type: ServiceType,
  options: ServiceOptions,
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const ServiceWrite = Type.Object({ name: Name, type: ServiceType, options: Type.Optional(ServiceOptions) }, { additionalProperties: false });

// Endpoints

const EndpointKey = Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000-\\u001f]+$' });
export const Tag = Type.String({ minLength: 1, maxLength: 385, description: '`name` or `name:value`' });
export const Tags = Type.Array(Tag, { maxItems: 100 });

const StatusDetails = Type.Object(
  {
    dateLastKeepAlive: Type.Optional(Timestamp),
    remoteAddr: Type.Optional(Type.String()),
    lifetime: Type.Optional(Type.Integer({ minimum: 0 })),
    secondsBeforeMissing: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: true, description: 'Key/value status of the device; the named ones are set by the platform' },
);

/** In a merge patch every detail may also be `null` (remove it). */
const StatusDetailsPatch = Type.Record(Type.String(), Type.Unknown(), { description: 'JSON Merge Patch (RFC 7396): null removes a key' });

export const Endpoint = Type.Object({
  id: Id,
  key: Type.String(),
  serviceId: Id,
  accountId: Id,
  tags: Type.Array(Type.String()),
  statusDetails: JsonObject,
  parameters: JsonObject,
  trace: Type.Boolean(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  state: Type.Enum(['connected', 'unavailable'], { description: 'Set by the device protocols: connected after a registration, connect or message; unavailable when it went silent or disconnected' }),
  lastSeenAt: Type.Union([Timestamp, Type.Null()], { description: 'When the device was last heard from' }),
});

const Parameters = Type.Object(
  { client_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'MQTT client identifier ("Client ID")' })) },
  { additionalProperties: true },
);

export const EndpointWrite = Type.Object(
  {
    key: EndpointKey,
    serviceId: Id,
    tags: Type.Optional(Tags),
    statusDetails: Type.Optional(StatusDetails),
    parameters: Type.Optional(Parameters),
    trace: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const EndpointPatch = Type.Object(
  {
    key: Type.Optional(EndpointKey),
    serviceId: Type.Optional(Id),
    tags: Type.Optional(Tags),
    addTags: Type.Optional(Tags),
    removeTags: Type.Optional(Tags),
    statusDetails: Type.Optional(StatusDetailsPatch),
    parameters: Type.Optional(StatusDetailsPatch),
    trace: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const EndpointFilterQuery = {
  serviceId: Type.Optional(Id),
  tag: Type.Optional(Type.Array(Tag, { description: 'Repeatable; `name` matches any value, `name:value` exactly; all must match' })),
  keyPrefix: Type.Optional(Type.String({ maxLength: 256 })),
  hasStatusDetail: Type.Optional(Type.Array(Type.String({ maxLength: 100 }), { description: 'Repeatable; the status detail must be set' })),
  missingStatusDetail: Type.Optional(Type.Array(Type.String({ maxLength: 100 }), { description: 'Repeatable; the status detail must be unset' })),
};

export const EndpointBulkUpdate = Type.Object(
  {
    secondsBeforeMissing: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'Sets, or with null removes, the status detail' })),
    addTags: Type.Optional(Tags),
    removeTags: Type.Optional(Tags),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const EndpointRefParams = Type.Object({ ref: Type.String({ minLength: 1, maxLength: 300, description: 'Endpoint id, or `k.<key>`' }) });
export const EndpointRefQuery = Type.Object({ serviceId: Type.Optional(Type.String({ description: 'Chooses among endpoints of several services that share a key' })) });

export const StorageParams = Type.Object({ ...EndpointRefParams.properties, name: Type.String({ minLength: 1, maxLength: 200 }) });
export const StoredObject = Type.Object({ name: Type.String(), value: Type.Unknown(), updatedAt: Timestamp });

export const EndpointCredentials = Type.Object({
  passwordSet: Type.Boolean({ description: 'Whether the device has a password to log in with (MQTT: username = endpoint key)' }),
  kind: Type.Optional(Type.Union([Type.Literal('generated'), Type.Literal('chosen')], { description: '`generated` by the service, or `chosen` by someone; absent when none is set' })),
  updatedAt: Type.Optional(Type.String({ format: 'date-time', description: 'When the password was last set; absent when none is set' })),
});
const ChosenPassword = Type.Object(
  {
    password: Type.String({
      minLength: PASSWORD_MIN_LENGTH,
      maxLength: DEVICE_PASSWORD_MAX_LENGTH,
      description: `A password someone chose, ${PASSWORD_MIN_LENGTH} to ${DEVICE_PASSWORD_MAX_LENGTH} characters; stored only as a PBKDF2 hash`,
    }),
  },
  { additionalProperties: false },
);
const GeneratedPassword = Type.Object(
  { generate: Type.Literal(true, { description: 'The service generates a secret of 192 random bits, answers it this once, and keeps only its hash' }) },
  { additionalProperties: false },
);
export const EndpointCredentialsWrite = Type.Union([ChosenPassword, GeneratedPassword]);
export const EndpointCreate = Type.Object(
  { ...EndpointWrite.properties, credentials: Type.Optional(EndpointCredentialsWrite) },
  { additionalProperties: false, description: 'An endpoint, and optionally its device password (chosen, or generated and answered once)' },
);
export const GeneratedCredentials = Type.Object({
  password: Type.String({ description: 'The generated secret (32 URL-safe characters). Shown in this answer only: store it in the device now' }),
});
export const EndpointCreated = Type.Object({
  ...Endpoint.properties,
  credentials: Type.Optional(Type.Object({ password: Type.Optional(Type.String({ description: 'The generated secret, shown this once' })) })),
});

export const EndpointBulkCreate = Type.Object(
  { items: Type.Array(EndpointCreate, { minItems: 1, maxItems: PROVISION_BATCH_MAX }) },
  { additionalProperties: false, description: `Up to ${PROVISION_BATCH_MAX} endpoints, each with optional credentials` },
);
export const EndpointBulkCreated = Type.Object({
  created: Type.Integer({ description: 'Items created' }),
  failed: Type.Integer({ description: 'Items refused; the others are created all the same' }),
  items: Type.Array(
    Type.Object({
      index: Type.Integer({ description: 'Position of the item in the request' }),
      status: Type.Integer({ description: '201, or the HTTP status the error alone would have' }),
      endpoint: Type.Optional(EndpointCreated),
      error: Type.Optional(ErrorBody.properties.error),
    }),
  ),
});

// Events

export const Event = Type.Object({
  id: Id,
  type: Type.String(),
  accountId: Id,
  serviceId: Type.Union([Id, Type.Null()]),
  endpointId: Type.Union([Id, Type.Null()]),
  endpointKey: Type.Union([Type.String(), Type.Null()]),
  time: Timestamp,
  data: Type.Unknown(),
});

export const EventPost = Type.Object(
  {
    type: Type.String({ minLength: 1, maxLength: 100, pattern: '^[^\\u0000-\\u001f]+$', description: `Event type: a platform type (${PLATFORM_EVENT_TYPES.join(', ')}) or your own` }),
    endpoint: Type.Optional(Type.String({ minLength: 1, maxLength: 300, description: 'Endpoint id or k.<key>' })),
    data: Type.Optional(Type.Unknown({ description: 'Any JSON payload' })),
    awaitReply: Type.Optional(Type.Boolean({ description: 'Wait for a trigger to answer with trigger.reply(data); the answer carries it as `reply`' })),
    replyTimeoutMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 30_000, default: 5000, description: 'How long to wait for the reply (ms)' })),
  },
  { additionalProperties: false },
);

export const PostedEvent = Type.Object({ ...Event.properties, reply: Type.Optional(Type.Unknown({ description: 'With awaitReply: what a trigger replied, or null' })) });

// Triggers

const Filter = Type.Object(
  {
    type: Type.Enum([...FILTER_TYPES]),
    field: Type.Optional(Type.String({ maxLength: 200, description: 'Dotted path into the event, e.g. data.temperature' })),
    value: Type.Optional(Type.Unknown()),
    values: Type.Optional(Type.Array(Type.Unknown(), { maxItems: 1000 })),
  },
  { additionalProperties: false },
);

const GlobalVariable = Type.Object({ value: Type.Unknown(), protected: Type.Boolean({ default: false, description: 'An import leaves the current value alone' }) }, { additionalProperties: false });

export const Trigger = Type.Object({
  id: Id,
  accountId: Id,
  name: Type.String(),
  events: Type.Array(Type.String()),
  filters: Type.Array(Filter),
  script: Type.String(),
  enabled: Type.Boolean(),
  library: Type.Boolean(),
  globals: Type.Record(Type.String(), GlobalVariable),
  form: Type.Unknown(),
  version: Type.Integer(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const TriggerWrite = Type.Object(
  {
    name: Name,
    events: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 100, description: 'Event types it runs on' }),
    filters: Type.Optional(Type.Array(Filter, { maxItems: 50 })),
    script: Type.String({ maxLength: 256 * 1024 }),
    enabled: Type.Optional(Type.Boolean()),
    library: Type.Optional(Type.Boolean()),
    globals: Type.Optional(Type.Record(Type.String(), GlobalVariable)),
    form: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);

export const Execution = Type.Object({
  id: Id,
  accountId: Id,
  triggerId: Id,
  eventId: Id,
  eventType: Type.String(),
  startedAt: Timestamp,
  durationMs: Type.Number(),
  status: Type.Enum(['success', 'failed']),
  error: Type.Union([Type.String(), Type.Null()]),
  line: Type.Union([Type.Integer(), Type.Null()]),
  logs: Type.Array(Type.String()),
  test: Type.Boolean(),
  context: Type.Record(Type.String(), Type.Unknown(), { description: 'What the script added with trigger.addContext' }),
  groups: Type.Array(Type.String(), { description: 'What the script added with trigger.addGroup' }),
});
