import { TTS_PRIORITIES, type TtsPriority } from '../../lora/lora-channel.js';
import { deviceChannel, endpointRef, numberArg, objectArg, payloadArg, ScriptArgumentError, stringField, type Namespace } from './namespace.js';

/** `lora.*`: downlinks to devices of the account's LoRa services, through their network server. */
export const loraNamespace: Namespace = {
  name: 'lora',
  functions: {
    /**
     * lora.downlink(endpoint, payload, {port, confirmed, priority, encoding}?) enqueues a downlink at the
     * service's network server (ChirpStack or The Things Stack) → {network, id} (id: ChirpStack's queue item
     * id, null for TTS). port: FPort 1..223, default 1; confirmed: default false; priority (TTS): default
     * "NORMAL"; payload: hex unless encoding says otherwise, at most 242 bytes. Example:
     * `lora.downlink(null, '0101', { port: 10, confirmed: true })`.
     */
    downlink: async (context, args) => {
      const options = objectArg(args, 2, 'options');
      const port = numberArg([options.port], 0, 'port', 1);
      if (!Number.isInteger(port) || port < 1 || port > 223) throw new ScriptArgumentError('port is an FPort from 1 to 223');
      if (options.confirmed !== undefined && typeof options.confirmed !== 'boolean') throw new ScriptArgumentError('confirmed must be true or false');
      const priority = stringField(options, 'priority') ?? 'NORMAL';
      if (!(TTS_PRIORITIES as readonly string[]).includes(priority)) throw new ScriptArgumentError(`priority must be one of ${TTS_PRIORITIES.join(', ')}`);
      return deviceChannel(context, 'lora').downlink(context.scope, endpointRef(context, args[0]), payloadArg(args, 1, options), {
        port,
        confirmed: options.confirmed === true,
        priority: priority as TtsPriority,
      });
    },
  },
};
