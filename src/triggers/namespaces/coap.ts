import { deviceCall, deviceChannel, endpointRef, numberArg, objectArg, optionalString, payloadArg, ScriptArgumentError, stringArg, type Namespace } from './namespace.js';

/** SPEC "Limits": the trigger action timeout of coap.notify (and of coap.send here), in ms. */
export const COAP_ACTION_TIMEOUT_MS = 30_000;

function contentFormatOf(options: Record<string, unknown>): number | undefined {
  const value = options.contentFormat;
  if (value === undefined || value === null) return undefined;
  if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 65_535) throw new ScriptArgumentError('contentFormat is a CoAP Content-Format number, e.g. 0 (text) or 50 (JSON)');
  return value as number;
}

/**
 * `coap.*`: reach devices of the account over CoAP (plain CoAP devices and LwM2M devices alike). An endpoint
 * argument is an id or `"k.<key>"` (`null`: the event's endpoint); a payload is hex unless
 * `options.encoding` is `utf8` or `base64`, or an array of bytes.
 */
export const coapNamespace: Namespace = {
  name: 'coap',
  functions: {
    /**
     * coap.send(endpoint, path, payload, {method: 'POST'|'PUT'|'GET'|'DELETE', encoding, contentFormat, confirmable, timeout}?)
     * → {code, payload (hex), payloadBase64, text?}: the device's answer.
     */
    send: async (context, args) => {
      const options = objectArg(args, 3, 'options');
      const timeout = numberArg([options.timeout], 0, 'timeout', COAP_ACTION_TIMEOUT_MS);
      if (timeout < 100 || timeout > COAP_ACTION_TIMEOUT_MS) throw new ScriptArgumentError(`timeout is 100..${COAP_ACTION_TIMEOUT_MS} ms`);
      const payload = args[2] === undefined || args[2] === null ? Buffer.alloc(0) : payloadArg(args, 2, options);
      const request = {
        method: optionalString([options.method], 0, 'method') ?? 'POST',
        path: stringArg(args, 1, 'path'),
        payload,
        contentFormat: contentFormatOf(options),
        confirmable: options.confirmable !== false,
        timeoutMs: timeout,
      };
      return deviceCall(() => deviceChannel(context, 'coap').send(context.scope, endpointRef(context, args[0]), request));
    },
    /** coap.notify(endpoint, path, payload, {encoding, contentFormat}?) → {notified}: observers the device registered on `path`. */
    notify: async (context, args) => {
      const options = objectArg(args, 3, 'options');
      const [path, payload, format] = [stringArg(args, 1, 'path'), payloadArg(args, 2, options), contentFormatOf(options)];
      return deviceCall(() => deviceChannel(context, 'coap').notify(context.scope, endpointRef(context, args[0]), path, payload, format));
    },
  },
};
