import type { ServiceOptions } from '../domain/services.js';
import { keyPrefixOption, type KeyPrefix } from '../devices/device-keys.js';
import { boolOption, bytesOption, enumOption, intOption } from '../devices/service-options.js';
import type { Framing } from './framing.js';

export const TCP_KEY_RULES = ['login', 'prefix'] as const;
export type TcpKeyRule = (typeof TCP_KEY_RULES)[number];

/** Hard ceiling of `maxFrameBytes`: one frame is held in memory while it arrives. */
export const MAX_FRAME_CEILING = 16 * 1024 * 1024;

/** The options of a `tcp` service (docs/udp-tcp.md). */
export interface TcpOptions {
  readonly framing: Framing;
  /** Largest frame accepted (default 65536); a bigger one closes the connection. */
  readonly maxFrameBytes: number;
  /** `login` (default): the first frame is the device key and nothing else; `prefix`: every frame starts `<key><delimiter>`. */
  readonly keyRule: TcpKeyRule;
  /** How the key is read: the prefix rule's delimiter or length, and for both rules its encoding (`utf8` | `hex`). */
  readonly prefix: KeyPrefix;
  /** Bytes written back, unframed, once a login frame is accepted (e.g. `01` for trackers that wait for it). */
  readonly loginReply: Buffer | undefined;
  readonly autoProvision: boolean;
}

export function tcpOptions(options: ServiceOptions): TcpOptions {
  const framing: Framing =
    enumOption(options, 'framing', ['delimiter', 'length'] as const, 'delimiter') === 'delimiter'
      ? { kind: 'delimiter', delimiter: bytesOption(options, 'delimiter', Buffer.from('\n'))! }
      : { kind: 'length', bytes: enumOption(options, 'lengthBytes', [1, 2, 4] as const, 2), includesHeader: boolOption(options, 'lengthIncludesHeader', false) };
  return {
    framing,
    maxFrameBytes: intOption(options, 'maxFrameBytes', 1, MAX_FRAME_CEILING, 65_536),
    keyRule: enumOption(options, 'keyRule', TCP_KEY_RULES, 'login'),
    prefix: keyPrefixOption(options),
    loginReply: bytesOption(options, 'loginReply', undefined),
    autoProvision: boolOption(options, 'autoProvision', false),
  };
}

