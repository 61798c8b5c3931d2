import { Type } from 'typebox';
import type { ServiceOptions } from '../domain/services.js';
import { stringOption } from '../devices/service-options.js';
import { checkTopicPattern, DEFAULT_TOPIC_PATTERN } from './topic-space.js';

/** The options of an `mqtt` service (docs/mqtt.md). */
export interface MqttOptions {
  /** Where each device may publish and subscribe; `{key}` is the device's key. Default `{key}/#`. */
  readonly topicPattern: string;
}

/** What `mqttOptions` accepts, as the API publishes it (GET /services/types); the check below is the authority. */
export const MQTT_OPTIONS_SCHEMA = Type.Object(
  {
    topicPattern: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        default: DEFAULT_TOPIC_PATTERN,
        examples: ['devices/{key}/#'],
        description: 'Where each device may publish and subscribe: exactly one whole level {key} (the device key), a final # for its subtree',
      }),
    ),
  },
  { additionalProperties: true },
);

export function mqttOptions(options: ServiceOptions): MqttOptions {
  const topicPattern = stringOption(options, 'topicPattern', 1024) ?? DEFAULT_TOPIC_PATTERN;
  checkTopicPattern(topicPattern);
  return { topicPattern };
}
