import { deviceCall, deviceChannel, endpointRef, objectArg, payloadArg, type Namespace } from './namespace.js';

/** `tcp.*`: write to devices connected to the account's TCP services. */
export const tcpNamespace: Namespace = {
  name: 'tcp',
  functions: {
    /**
     * tcp.send(endpoint, payload, {encoding}?) writes one frame (the service's framing) to the device's open
     * connection and emits `tcp-sent` → {bytes}. endpoint: id, "k.<key>" or null (the event's); payload: hex
     * unless encoding is "base64" or "utf8", or an array of bytes. Fails when the device is not connected.
     */
    send: async (context, args) => {
      const options = objectArg(args, 2, 'options');
      const payload = payloadArg(args, 1, options);
      return deviceCall(() => deviceChannel(context, 'tcp').send(context.scope, endpointRef(context, args[0]), payload));
    },
  },
};
