import { loraRoutes } from '../api/routes/lora.js';
import { LORA_OPTIONS_SCHEMA } from '../lora/lora-options.js';
import { LoraService } from '../lora/lora-service.js';
import { loraNamespace } from '../triggers/namespaces/lora.js';
import type { ProtocolModule } from './protocol-module.js';

/** LoRaWAN devices through a network server's webhooks (uplinks in, downlinks out). */
export const loraProtocol: ProtocolModule = {
  name: 'lora',
  serviceTypes: [{ type: 'lora', description: 'LoRaWAN devices through ChirpStack or The Things Stack webhooks, with downlinks (docs/lora.md)', options: LORA_OPTIONS_SCHEMA }],
  server: (context) => new LoraService(context),
  namespaces: [loraNamespace],
  routes: async (app, { domain, presence }) => {
    await app.register(loraRoutes, { domain, presence });
  },
};
