import { AppError } from '../errors.js';

/**
 * Where one device may publish and subscribe: the service's `topicPattern` with `{key}` replaced by the
 * device's key. A pattern is `/`-separated literal levels and one whole `{key}` level, optionally ending in
 * `#` (default `{key}/#`: the key's level and everything below it).
 */
export interface TopicSpace {
  /** The literal levels every topic of the space starts with. */
  readonly prefix: readonly string[];
  /** Whether topics below the prefix belong to it (the pattern ends in `#`); otherwise it is the one topic. */
  readonly subtree: boolean;
  /** The prefix as a topic (`dev-1`, `devices/dev-1`): a publication's topic is compared with it, unsplit. */
  readonly topic: string;
}

export const DEFAULT_TOPIC_PATTERN = '{key}/#';
const KEY = '{key}';

/** Checks a service's pattern; throws a 400 naming the option when it could not confine a device. */
export function checkTopicPattern(pattern: string): void {
  const levels = pattern.split('/');
  const invalid = (why: string) => new AppError('IOTB_REQUEST_VALIDATION', `options.topicPattern ${why}`, { option: 'topicPattern', value: pattern });
  if (levels.filter((level) => level === KEY).length !== 1) throw invalid('must have exactly one whole level {key}, e.g. "devices/{key}/#"');
  if (pattern.startsWith('$')) throw invalid('must not start with $ (reserved for the broker)');
  levels.forEach((level, index) => {
    if (level === '#' && index !== levels.length - 1) throw invalid('may have # only as its last level');
    if (level !== '#' && level !== KEY && /[+#{}]/.test(level)) throw invalid('may hold no wildcard other than a final # and no braces other than {key}');
    if (level === '' && index !== levels.length - 1) throw invalid('must not have empty levels');
  });
}

/**
 * The device's space, or undefined when its key cannot name a topic level safely (a key with `/`, `+`,
 * `#`, a leading `$` or nothing at all would widen or break the space): such a device may not log in.
 */
export function topicSpace(pattern: string, key: string): TopicSpace | undefined {
  if (key === '' || /[/+#]/.test(key) || key.includes('\0')) return undefined;
  const levels = pattern.split('/');
  const subtree = levels.at(-1) === '#';
  const prefix = (subtree ? levels.slice(0, -1) : levels).map((level) => (level === KEY ? key : level));
  if (prefix[0]?.startsWith('$')) return undefined;
  return { prefix, subtree, topic: prefix.join('/') };
}

/** The space as a topic filter a user reads (`dev-1/#`). */
export function spaceFilter(space: TopicSpace): string {
  return space.subtree ? [...space.prefix, '#'].join('/') : space.prefix.join('/');
}

/**
 * Whether a device may publish to `topic` (a topic name: no wildcards; the broker checks those). No prefix level
 * holds a `/` (the key may not), so matching the prefix's levels one by one is matching its text up to a `/`:
 * once per message, without splitting the topic.
 */
export function mayPublish(space: TopicSpace, topic: string): boolean {
  if (!topic.startsWith(space.topic)) return false;
  if (topic.length === space.topic.length) return true;
  return space.subtree && topic.charCodeAt(space.topic.length) === SLASH;
}

const SLASH = 0x2f;

/** Whether every topic `filter` matches lies in the space, so subscribing cannot reach another device. */
export function maySubscribe(space: TopicSpace, filter: string): boolean {
  return covers(space, filter.split('/'));
}

function covers(space: TopicSpace, levels: string[]): boolean {
  const { prefix, subtree } = space;
  // Each prefix level must be matched literally: a `+` or `#` there would match other devices' levels.
  for (let index = 0; index < prefix.length; index++) {
    if (levels[index] !== prefix[index]) return false;
  }
  if (levels.length === prefix.length) return true;
  if (!subtree) return false;
  // Below the prefix anything goes, provided a `#` is last (malformed filters are the broker's to refuse).
  const rest = levels.slice(prefix.length);
  return rest.every((level, index) => level !== '#' || index === rest.length - 1);
}
