import type { ServiceTypeInfo } from '../api/service-types.js';
import type { ProtocolRoutes } from '../api/server.js';
import type { DeviceServer, DeviceServerContext } from '../devices/device-server.js';
import { CORE_NAMESPACES } from '../triggers/namespaces/index.js';
import type { Namespace } from '../triggers/namespaces/namespace.js';
import { httpProtocol } from './http.js';
import { loraProtocol } from './lora.js';
import { lwm2mProtocol } from './lwm2m.js';
import { mqttProtocol } from './mqtt.js';
import type { ProtocolModule } from './protocol-module.js';
import { tcpProtocol } from './tcp.js';
import { udpProtocol } from './udp.js';

/** The device protocols this service speaks, in the order forms offer their types; servers start in this order. */
export const PROTOCOLS: readonly ProtocolModule[] = [lwm2mProtocol, mqttProtocol, udpProtocol, tcpProtocol, loraProtocol, httpProtocol];

/** Every service type with the JSON Schema of its options (`GET /services/types`). */
export const SERVICE_TYPES: readonly ServiceTypeInfo[] = PROTOCOLS.flatMap((protocol) => protocol.serviceTypes);

/** Every namespace scripts can call in the service: the platform's and each protocol's. */
export const SERVICE_NAMESPACES: readonly Namespace[] = [...CORE_NAMESPACES, ...PROTOCOLS.flatMap((protocol) => protocol.namespaces)];

/** The protocols' HTTP routes. */
export const PROTOCOL_ROUTES: readonly ProtocolRoutes[] = PROTOCOLS.flatMap((protocol) => (protocol.routes ? [protocol.routes] : []));

/** The device servers this process runs, in start order. */
export function deviceServers(context: DeviceServerContext): DeviceServer[] {
  return PROTOCOLS.flatMap((protocol) => (protocol.server ? [protocol.server(context)] : []));
}
