import { QUEUE_TTL_SECONDS } from '../../udp/udp-channel.js';
import { deviceCall, deviceChannel, endpointRef, numberArg, objectArg, payloadArg, ScriptArgumentError, type Namespace } from './namespace.js';

/**
 * `udp.*`: send to devices of the account's UDP services. An endpoint argument is an id or `"k.<key>"`
 * (`null`: the event's endpoint); a payload is a hex string unless `options.encoding` says `base64` or
 * `utf8`, or an array of bytes.
 */
export const udpNamespace: Namespace = {
  name: 'udp',
  functions: {
    /**
     * udp.send(endpoint, payload, {encoding}?) sends one datagram to the address the device last sent from →
     * {remoteAddr, bytes}. Fails (nothing sent) with IOTB_DEVICE_ADDRESS_UNKNOWN before the device was heard
     * from, IOTB_DEVICE_ADDRESS_REFUSED, or IOTB_DEVICE_SEND_RATE_LIMITED over the send caps.
     */
    send: async (context, args) => {
      const options = objectArg(args, 2, 'options');
      const payload = payloadArg(args, 1, options);
      return deviceCall(() => deviceChannel(context, 'udp').send(context.scope, endpointRef(context, args[0]), payload));
    },
    /**
     * udp.queue(endpoint, payload, {encoding, ttl}?) holds the datagram until the device next sends (devices
     * behind NAT), then sends it right after → {queued: messages now held}. ttl: seconds, default and at most 604800.
     */
    queue: async (context, args) => {
      const options = objectArg(args, 2, 'options');
      const ttl = numberArg([options.ttl], 0, 'ttl', QUEUE_TTL_SECONDS);
      if (!Number.isInteger(ttl) || ttl < 1 || ttl > QUEUE_TTL_SECONDS) throw new ScriptArgumentError(`ttl is whole seconds from 1 to ${QUEUE_TTL_SECONDS}`);
      const payload = payloadArg(args, 1, options);
      return deviceCall(() => deviceChannel(context, 'udp').queue(context.scope, endpointRef(context, args[0]), payload, ttl));
    },
  },
};
