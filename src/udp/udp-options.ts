import { Type } from 'typebox';
import type { ServiceOptions } from '../domain/services.js';
import { AppError } from '../errors.js';
import { KEY_PREFIX_OPTION_SCHEMAS, keyPrefixOption, type KeyPrefix } from '../devices/device-keys.js';
import { boolOption, enumOption, intOption, networksOption, stringOption, type Networks } from '../devices/service-options.js';

export const UDP_KEY_RULES = ['prefix', 'address', 'script'] as const;
export type UdpKeyRule = (typeof UDP_KEY_RULES)[number];

/** The options of a `udp` service (docs/udp-tcp.md). */
export interface UdpOptions {
  /** How a datagram names its device: `prefix` (default) `<key>:<payload>`, `address` (the source address is the key), `script`. */
  readonly keyRule: UdpKeyRule;
  readonly prefix: KeyPrefix;
  /** `address` rule: the key is the source `host` (default) or `host:port`. */
  readonly addressKey: 'host' | 'host:port';
  /** `script` rule: the body of `function (datagram) { … return key; }`, run in the account's sandbox. */
  readonly keyScript: string | undefined;
  /** Networks this service claims: datagrams from them go only to services claiming them. Required by `script`. */
  readonly sources: Networks | undefined;
  /** Create unknown devices on their first datagram instead of refusing it. */
  readonly autoProvision: boolean;
  /** Messages `udp.queue` holds per device at most (default 100). */
  readonly queueLimit: number;
}

/** The widest network a service may claim in `sources` (docs/udp-tcp.md "Routing"). */
export const WIDEST_CLAIM = { ipv4: 8, ipv6: 16 } as const;

/** What `udpOptions` accepts, as the API publishes it (GET /services/types); the check below is the authority. */
export const UDP_OPTIONS_SCHEMA = Type.Object(
  {
    keyRule: Type.Optional(
      Type.Enum([...UDP_KEY_RULES], { default: 'prefix', description: 'How a datagram names its device: prefix (<key>:<payload>), address (the source address is the key) or script (keyScript reads it)' }),
    ),
    ...KEY_PREFIX_OPTION_SCHEMAS,
    keyAddress: Type.Optional(Type.Enum(['host', 'host:port'], { default: 'host', description: 'address rule: the key is the source host, or host:port' })),
    keyScript: Type.Optional(
      Type.String({ minLength: 1, maxLength: 10_000, examples: ['return datagram.text.split(",")[0];'], description: 'script rule: the body of a function of datagram that returns the key (needs sources)' }),
    ),
    sources: Type.Optional(
      Type.Array(Type.String({ examples: ['10.20.0.0/16'] }), {
        minItems: 1,
        description: `Networks the service claims (addresses or CIDR blocks, each at most a /${WIDEST_CLAIM.ipv4} IPv4 or /${WIDEST_CLAIM.ipv6} IPv6): it then hears only these; required by the script rule`,
      }),
    ),
    autoProvision: Type.Optional(Type.Boolean({ default: false, description: 'Create an endpoint for an unknown key instead of refusing the datagram' })),
    queueLimit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: 100, description: 'Messages udp.queue holds per device' })),
  },
  { additionalProperties: true },
);

export function udpOptions(options: ServiceOptions): UdpOptions {
  const keyRule = enumOption(options, 'keyRule', UDP_KEY_RULES, 'prefix');
  const keyScript = stringOption(options, 'keyScript');
  // A claim narrows who may hear a network: claiming the whole address space is no device network.
  const sources = networksOption(options, 'sources', WIDEST_CLAIM);
  if (keyRule === 'script' && (keyScript === undefined || sources === undefined)) {
    // A script sees payloads before any device is known: only from networks the service claims (docs/udp-tcp.md).
    throw new AppError('IOTB_REQUEST_VALIDATION', 'options.keyRule "script" needs options.keyScript and options.sources', { option: 'keyScript' });
  }
  return {
    keyRule,
    prefix: keyPrefixOption(options),
    addressKey: enumOption(options, 'keyAddress', ['host', 'host:port'] as const, 'host'),
    keyScript,
    sources,
    autoProvision: boolOption(options, 'autoProvision', false),
    queueLimit: intOption(options, 'queueLimit', 1, 10_000, 100),
  };
}
