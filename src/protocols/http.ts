import { Type } from 'typebox';
import type { ProtocolModule } from './protocol-module.js';

/** Devices that call the HTTP API with their own credentials: the API is their server. */
export const httpProtocol: ProtocolModule = {
  name: 'http',
  serviceTypes: [{ type: 'http', description: 'Devices that call the HTTP API with their own credentials', options: Type.Object({}, { additionalProperties: true }) }],
  namespaces: [],
};
