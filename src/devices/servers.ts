import { LoraService } from '../lora/lora-service.js';
import { lwm2mServer } from '../lwm2m/index.js';
import { MqttServer } from '../mqtt/mqtt-server.js';
import { TcpServer } from '../tcp/tcp-server.js';
import { UdpServer } from '../udp/udp-server.js';
import type { DeviceServer, DeviceServerContext } from './device-server.js';

/** The device servers this process runs, in start order; each protocol adds one line. */
export function deviceServers(context: DeviceServerContext): DeviceServer[] {
  return [
    new UdpServer(context),
    new TcpServer(context),
    new LoraService(context),
    lwm2mServer(context),
    new MqttServer(context),
  ];
}
