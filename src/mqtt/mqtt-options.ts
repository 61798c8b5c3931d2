import type { ServiceOptions } from '../domain/services.js';
import { stringOption } from '../devices/service-options.js';
import { checkTopicPattern, DEFAULT_TOPIC_PATTERN } from './topic-space.js';

/** The options of an `mqtt` service (docs/mqtt.md). */
export interface MqttOptions {
  /** Where each device may publish and subscribe; `{key}` is the device's key. Default `{key}/#`. */
  readonly topicPattern: string;
}

export function mqttOptions(options: ServiceOptions): MqttOptions {
  const topicPattern = stringOption(options, 'topicPattern', 1024) ?? DEFAULT_TOPIC_PATTERN;
  checkTopicPattern(topicPattern);
  return { topicPattern };
}
