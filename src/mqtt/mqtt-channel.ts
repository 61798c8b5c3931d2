import type { Scope } from '../domain/scope.js';

export type QoS = 0 | 1 | 2;

/** What scripts reach through `context.devices.mqtt` (`mqtt.publish`, `mqtt.subscribe`). Tenancy: `scope` must own the endpoint. */
export interface MqttChannel {
  /** Publishes into the device's topic space of its service's broker (delivered now, or queued for a persistent session). */
  publish(scope: Scope, ref: string, message: { topic: string; payload: Buffer; qos: QoS; retain: boolean }): Promise<{ topic: string; qos: QoS; retain: boolean; bytes: number; connected: boolean }>;
  /** Subscribes the device's session to `topic` (in its space) as if the device had. */
  subscribe(scope: Scope, ref: string, topic: string, qos: QoS): Promise<{ topic: string; qos: QoS; connected: boolean }>;
}
