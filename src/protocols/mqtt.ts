import { MQTT_OPTIONS_SCHEMA } from '../mqtt/mqtt-options.js';
import { MqttServer } from '../mqtt/mqtt-server.js';
import { mqttNamespace } from '../triggers/namespaces/mqtt.js';
import type { ProtocolModule } from './protocol-module.js';

/** MQTT 3.1.1 and 5 devices on the built-in broker (aedes), each service its own topic space. */
export const mqttProtocol: ProtocolModule = {
  name: 'mqtt',
  serviceTypes: [{ type: 'mqtt', description: 'MQTT 3.1.1 and 5 devices on the built-in broker, each in its own topic space (docs/mqtt.md)', options: MQTT_OPTIONS_SCHEMA }],
  server: (context) => new MqttServer(context),
  namespaces: [mqttNamespace],
};
