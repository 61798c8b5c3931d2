import type { ProtocolRoutes } from '../api/server.js';
import type { ServiceTypeInfo } from '../api/service-types.js';
import type { DeviceServer, DeviceServerContext } from '../devices/device-server.js';
import type { Namespace } from '../triggers/namespaces/namespace.js';

/**
 * One device protocol as the service composes it: the service types it serves with their options, its device
 * server, the script namespaces that reach its devices, and its HTTP routes. app.ts, the API and the trigger
 * engine take these from PROTOCOLS (./index.ts); adding a protocol is a module here and a line there.
 */
export interface ProtocolModule {
  readonly name: string;
  /** Its service types, each with the JSON Schema of its options (`GET /services/types`), in the order a form offers them. */
  readonly serviceTypes: readonly ServiceTypeInfo[];
  /** Its device server, given the process's shared parts; none for devices that call the HTTP API themselves. */
  readonly server?: (context: DeviceServerContext) => DeviceServer;
  /** The script namespaces that reach its devices. */
  readonly namespaces: readonly Namespace[];
  /** Its HTTP routes, registered with the API's own. */
  readonly routes?: ProtocolRoutes;
}
