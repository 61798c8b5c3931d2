import { QUEUE_TTL_SECONDS } from '../../udp/udp-server.js';
import { deviceChannel, endpointRef, numberArg, objectArg, payloadArg, ScriptArgumentError, type Namespace } from './namespace.js';

/**
 * `udp.*`: send to devices of the account's UDP services. An endpoint argument is an id or `"k.<key>"`
 * (`null`: the event's endpoint); a payload is a hex string unless `options.encoding` says `base64` or
 * `utf8`, or an array of bytes.
 */
export const udpNamespace: Namespace = {
  name: 'udp',
  functions: {
    /** udp.send(endpoint, payload, {encoding}?) sends one datagram to the device's last address → {remoteAddr, bytes}. */
    send: async (context, args) => {
      const options = objectArg(args, 2, 'options');
      return deviceChannel(context, 'udp').send(context.scope, endpointRef(context, args[0]), payloadArg(args, 1, options));
    },
    /**
     * udp.queue(endpoint, payload, {encoding, ttl}?) holds the datagram until the device next sends (devices
     * behind NAT), then sends it right after → {queued: messages now held}. ttl: seconds, default and at most 604800.
     */
    queue: async (context, args) => {
      const options = objectArg(args, 2, 'options');
      const ttl = numberArg([options.ttl], 0, 'ttl', QUEUE_TTL_SECONDS);
      if (!Number.isInteger(ttl) || ttl < 1 || ttl > QUEUE_TTL_SECONDS) throw new ScriptArgumentError(`ttl is whole seconds from 1 to ${QUEUE_TTL_SECONDS}`);
      return deviceChannel(context, 'udp').queue(context.scope, endpointRef(context, args[0]), payloadArg(args, 1, options), ttl);
    },
  },
};
