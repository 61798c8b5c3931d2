import type { ChangeNotices } from '../domain/change-notices.js';
import type { TopicEmitter } from './prefixed-emitter.js';

/** What the MQTT server of a cluster node shares with the others (docs/cluster.md, "MQTT"); built in app.ts. */
export interface MqttCluster {
  /** Messages between each service's brokers on every node. */
  emitterFor(serviceId: string): TopicEmitter;
  /** Persistent sessions' subscriptions and retained messages another node changed. */
  readonly notices: ChangeNotices;
}
