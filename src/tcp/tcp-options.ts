import { Type } from 'typebox';
import type { ServiceOptions } from '../domain/services.js';
import { bytesOptionSchemas, KEY_PREFIX_OPTION_SCHEMAS, keyPrefixOption, type KeyPrefix } from '../devices/device-keys.js';
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

/** What `tcpOptions` accepts, as the API publishes it (GET /services/types); the check below is the authority. */
export const TCP_OPTIONS_SCHEMA = Type.Object(
  {
    framing: Type.Optional(Type.Enum(['delimiter', 'length'], { default: 'delimiter', description: 'How the stream is cut into frames: at a delimiter, or by a length header' })),
    ...bytesOptionSchemas('delimiter', 'delimiter framing: the bytes each frame ends with (not part of it)', '\n'),
    lengthBytes: Type.Optional(Type.Enum([1, 2, 4], { default: 2, description: 'length framing: the size of the big-endian length header in bytes' })),
    lengthIncludesHeader: Type.Optional(Type.Boolean({ default: false, description: 'length framing: the length counts the header bytes too' })),
    maxFrameBytes: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_FRAME_CEILING, default: 65_536, description: 'The largest frame accepted; a bigger one closes the connection' })),
    keyRule: Type.Optional(
      Type.Enum([...TCP_KEY_RULES], { default: 'login', description: 'login: the first frame is the device key and nothing else; prefix: every frame is <key><keyDelimiter><payload>' }),
    ),
    ...KEY_PREFIX_OPTION_SCHEMAS,
    ...bytesOptionSchemas('loginReply', 'Bytes written back, unframed, once a login frame is accepted'),
    autoProvision: Type.Optional(Type.Boolean({ default: false, description: 'Create the device from its first frame instead of closing the connection' })),
  },
  { additionalProperties: true },
);

export function tcpOptions(options: ServiceOptions): TcpOptions {
  // Every framing option is checked whichever framing is chosen: a bad one would only show when it is switched.
  const delimiter = bytesOption(options, 'delimiter', Buffer.from('\n'))!;
  const lengthBytes = enumOption(options, 'lengthBytes', [1, 2, 4] as const, 2);
  const includesHeader = boolOption(options, 'lengthIncludesHeader', false);
  const framing: Framing =
    enumOption(options, 'framing', ['delimiter', 'length'] as const, 'delimiter') === 'delimiter'
      ? { kind: 'delimiter', delimiter }
      : { kind: 'length', bytes: lengthBytes, includesHeader };
  return {
    framing,
    maxFrameBytes: intOption(options, 'maxFrameBytes', 1, MAX_FRAME_CEILING, 65_536),
    keyRule: enumOption(options, 'keyRule', TCP_KEY_RULES, 'login'),
    prefix: keyPrefixOption(options),
    loginReply: bytesOption(options, 'loginReply', undefined),
    autoProvision: boolOption(options, 'autoProvision', false),
  };
}

