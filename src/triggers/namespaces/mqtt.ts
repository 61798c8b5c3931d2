import { deviceChannel, endpointRef, objectArg, payloadArg, ScriptArgumentError, stringArg, type Namespace } from './namespace.js';

function qosOf(options: Record<string, unknown>): 0 | 1 | 2 {
  const qos = options.qos ?? 0;
  if (qos !== 0 && qos !== 1 && qos !== 2) throw new ScriptArgumentError('qos is 0, 1 or 2');
  return qos;
}

/**
 * `mqtt.*`: reach devices of the account's MQTT services. An endpoint argument is an id or `"k.<key>"`
 * (`null`: the event's endpoint); topics lie in that device's topic space (`<key>/#` by default).
 */
export const mqttNamespace: Namespace = {
  name: 'mqtt',
  functions: {
    /**
     * mqtt.publish(endpoint, topic, payload, {qos, retain, encoding}?) → {topic, qos, retain, bytes, connected}.
     * payload: text (sent as UTF-8 unless encoding is "hex" or "base64"), an array of bytes, or an object
     * (sent as JSON). QoS 1/2 messages wait in a persistent session while the device is offline.
     */
    publish: async (context, args) => {
      const options = objectArg(args, 3, 'options');
      const value = args[2];
      const payload =
        value !== null && typeof value === 'object' && !Array.isArray(value)
          ? Buffer.from(JSON.stringify(value))
          : payloadArg(args, 2, { encoding: 'utf8', ...options });
      if (options.retain !== undefined && typeof options.retain !== 'boolean') throw new ScriptArgumentError('retain is true or false');
      const message = { topic: stringArg(args, 1, 'topic'), payload, qos: qosOf(options), retain: options.retain === true };
      return deviceChannel(context, 'mqtt').publish(context.scope, endpointRef(context, args[0]), message);
    },
    /**
     * mqtt.subscribe(endpoint, topicFilter, {qos}?) → {topic, qos, connected}: subscribes the device's session
     * as if the device had sent SUBSCRIBE (kept across reconnects for persistent sessions).
     */
    subscribe: async (context, args) => {
      const options = objectArg(args, 2, 'options');
      return deviceChannel(context, 'mqtt').subscribe(context.scope, endpointRef(context, args[0]), stringArg(args, 1, 'topic'), qosOf(options));
    },
  },
};
