import { Type } from 'typebox';
import { bootstrapRoutes } from '../api/routes/bootstrap.js';
import { coapsRoutes } from '../api/routes/coaps.js';
import { endpointSecurityRoutes } from '../api/routes/endpoint-security.js';
import { fotaRoutes } from '../api/routes/fota.js';
import { lwm2mRoutes } from '../api/routes/lwm2m.js';
import { objectRoutes } from '../api/routes/objects.js';
import { ServiceOptions } from '../api/schemas.js';
import { lwm2mServer } from '../lwm2m/index.js';
import { coapNamespace } from '../triggers/namespaces/coap.js';
import { lwm2mNamespace } from '../triggers/namespaces/lwm2m.js';
import type { ProtocolModule } from './protocol-module.js';

const common = ServiceOptions.properties;

const COAP_OPTIONS_SCHEMA = Type.Object(
  { keepAliveMode: common.keepAliveMode, coapMaxMessageSize: common.coapMaxMessageSize, allowNoSec: common.allowNoSec, trustedCertificates: common.trustedCertificates },
  { additionalProperties: true },
);

const LWM2M_OPTIONS_SCHEMA = Type.Object(
  { ...COAP_OPTIONS_SCHEMA.properties, forceQueueMode: common.forceQueueMode, preferredFormat: common.preferredFormat, publicHost: common.publicHost, bootstrap: common.bootstrap },
  { additionalProperties: true },
);

/** LwM2M and plain CoAP devices on the CoAP and CoAPS ports: device management, bootstrap, FOTA, DTLS security. */
export const lwm2mProtocol: ProtocolModule = {
  name: 'lwm2m',
  serviceTypes: [
    { type: 'lwm2m', description: 'LwM2M 1.0–1.2 devices over CoAP and CoAPS: registration, device management, bootstrap, FOTA (docs/lwm2m.md)', options: LWM2M_OPTIONS_SCHEMA },
    { type: 'coap', description: 'Plain CoAP devices posting to /d/<key>/… over CoAP and CoAPS (docs/coap.md)', options: COAP_OPTIONS_SCHEMA },
  ],
  server: lwm2mServer,
  namespaces: [coapNamespace, lwm2mNamespace],
  routes: async (app, { domain, devices, objects, bootstrapConfigs, serverCertificate }) => {
    await app.register(objectRoutes, { objects });
    await app.register(lwm2mRoutes, { domain, devices });
    await app.register(bootstrapRoutes, { domain, bootstrapConfigs });
    await app.register(endpointSecurityRoutes, { domain });
    await app.register(fotaRoutes, { devices });
    await app.register(coapsRoutes, { serverCertificate });
  },
};
