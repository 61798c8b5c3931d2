// The import/export document (docs/imex.md): an account's configuration as one versioned JSON object whose items
// refer to each other by names and keys, never by ids, so it imports into another account or installation.
import { Type, type Static } from 'typebox';
import { ServiceWrite, Tag, TriggerWrite } from '../api/schemas.js';
import { COLUMN_TYPES } from '../reports/model.js';
import { SecretsHeader } from './sealing.js';

/** The document's format version: an import refuses a newer one. */
export const DOCUMENT_VERSION = 1;
export const DOCUMENT_FORMAT = 'iotbridge-export';

const Json = Type.Record(Type.String(), Type.Unknown());

export const ServiceItem = ServiceWrite;

export const EndpointItem = Type.Object(
  {
    key: Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000-\\u001f]+$' }),
    service: Type.String({ minLength: 1, maxLength: 200, description: 'The name of a service of the document or the account' }),
    tags: Type.Optional(Type.Array(Tag, { maxItems: 100 })),
    statusDetails: Type.Optional(Json),
    parameters: Type.Optional(Json),
    trace: Type.Optional(Type.Boolean()),
    storage: Type.Optional(Type.Record(Type.String({ minLength: 1, maxLength: 200 }), Type.Unknown(), { description: 'Stored objects by name' })),
    credentials: Type.Optional(
      Type.Object({ passwordHash: Type.String({ maxLength: 300, description: 'The stored hash of the device password, never the password (sealed)' }) }, { additionalProperties: false, description: 'Exported with ?secrets=true only' }),
    ),
    security: Type.Optional(
      Type.Union([
        Type.Object({ mode: Type.Literal('psk'), identity: Type.String({ minLength: 1, maxLength: 128 }), key: Type.String({ maxLength: 200, description: 'Hex (sealed)' }) }, { additionalProperties: false }),
        Type.Object({ mode: Type.Literal('x509') }, { additionalProperties: false }),
      ], { description: 'DTLS security (docs/dtls.md); psk only with ?secrets=true' }),
    ),
    bootstrap: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: "The endpoint's own LwM2M bootstrap configuration, as PUT /endpoints/{ref}/bootstrap takes it; keys sealed" })),
  },
  { additionalProperties: false },
);

export const TriggerItem = TriggerWrite;

export const ReportItem = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Null()])),
    columns: Type.Optional(Type.Array(Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }), type: Type.Enum([...COLUMN_TYPES]) }, { additionalProperties: false }), { maxItems: 200 })),
    retentionDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 36_500 })),
  },
  { additionalProperties: false },
);

export const AlertRuleItem = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    severity: Type.String(),
    tags: Type.Optional(Type.Array(Tag, { maxItems: 50 })),
    condition: Type.Record(Type.String(), Type.Unknown(), { description: 'As in POST /alert-rules; trigger-failures names its trigger by `trigger` (name) instead of `triggerId`' }),
    notify: Type.Optional(
      Type.Object(
        { email: Type.Optional(Type.Array(Type.String(), { maxItems: 20 })), webhook: Type.Optional(Type.Object({ url: Type.String({ maxLength: 2000 }), secret: Type.Optional(Type.String({ maxLength: 500 })) })) },
        { additionalProperties: false },
      ),
    ),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const GeofenceItem = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Null()])),
    tags: Type.Optional(Type.Array(Tag, { maxItems: 100 })),
    geometry: Type.Optional(Json),
    circle: Type.Optional(Json),
  },
  { additionalProperties: false, description: 'As POST /geofences takes it' },
);

/** Information only: file contents are not in the document (an import reports the files it does not have). */
export const FileItem = Type.Object({ name: Type.String(), size: Type.Integer(), sha256: Type.String(), contentType: Type.String(), version: Type.Union([Type.String(), Type.Null()]) });

export const ExportDocument = Type.Object(
  {
    format: Type.Literal(DOCUMENT_FORMAT),
    version: Type.Integer({ minimum: 1, description: `${DOCUMENT_VERSION} today; an import refuses newer ones` }),
    exportedAt: Type.Optional(Type.String({ format: 'date-time' })),
    services: Type.Optional(Type.Array(ServiceItem)),
    triggers: Type.Optional(Type.Array(TriggerItem, { description: 'Library triggers too (`library: true`); globals with their `protected` flag' })),
    secrets: Type.Optional(SecretsHeader),
    endpoints: Type.Optional(Type.Array(EndpointItem)),
    geofences: Type.Optional(Type.Array(GeofenceItem)),
    reports: Type.Optional(Type.Array(ReportItem)),
    alertRules: Type.Optional(Type.Array(AlertRuleItem, { description: 'Webhook secrets are not exported: an imported rule keeps the secret of the rule of its name, if any' })),
    files: Type.Optional(Type.Array(FileItem)),
  },
  { additionalProperties: true, description: 'An account\'s configuration (docs/imex.md); sections an import does not know are reported and skipped' },
);

export type ServiceItem = Static<typeof ServiceItem>;
export type EndpointItem = Static<typeof EndpointItem>;
export type TriggerItem = Static<typeof TriggerItem>;
export type ReportItem = Static<typeof ReportItem>;
export type AlertRuleItem = Static<typeof AlertRuleItem>;
export type GeofenceItem = Static<typeof GeofenceItem>;

/** Sections in the order an import applies them: what later items refer to comes first. */
export const SECTIONS = ['services', 'triggers', 'endpoints', 'geofences', 'reports', 'alertRules'] as const;
export type Section = (typeof SECTIONS)[number];
