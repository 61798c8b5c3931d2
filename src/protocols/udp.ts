import { udpNamespace } from '../triggers/namespaces/udp.js';
import { UDP_OPTIONS_SCHEMA } from '../udp/udp-options.js';
import { UdpServer } from '../udp/udp-server.js';
import type { ProtocolModule } from './protocol-module.js';

/** Raw UDP datagrams on one port shared by every UDP service. */
export const udpProtocol: ProtocolModule = {
  name: 'udp',
  serviceTypes: [{ type: 'udp', description: 'Raw UDP datagrams, the device named by a key prefix, the source address or a script (docs/udp-tcp.md)', options: UDP_OPTIONS_SCHEMA }],
  server: (context) => new UdpServer(context),
  namespaces: [udpNamespace],
};
