// The service types and the JSON Schema of each one's options (GET /services/types): what a form or a tool
// needs to offer the right options per type. Each protocol module lists its own (src/protocols/). POST and PUT
// /services validate the common options by the flat `ServiceOptions` schema and each protocol's options by its own
// check (src/<protocol>/<protocol>-options.ts), which every schema stands beside; test/api/service-types.test.ts
// holds the two to the same answers.
import type { TObject } from 'typebox';
import type { ServiceType } from '../domain/services.js';

export interface ServiceTypeInfo {
  readonly type: ServiceType;
  readonly description: string;
  readonly options: TObject;
}
