import { TCP_OPTIONS_SCHEMA } from '../tcp/tcp-options.js';
import { TcpServer } from '../tcp/tcp-server.js';
import { tcpNamespace } from '../triggers/namespaces/tcp.js';
import type { ProtocolModule } from './protocol-module.js';

/** Raw TCP streams on one port shared by every TCP service, cut into frames. */
export const tcpProtocol: ProtocolModule = {
  name: 'tcp',
  serviceTypes: [{ type: 'tcp', description: 'Raw TCP streams cut into frames by a delimiter or a length header (docs/udp-tcp.md)', options: TCP_OPTIONS_SCHEMA }],
  server: (context) => new TcpServer(context),
  namespaces: [tcpNamespace],
};
