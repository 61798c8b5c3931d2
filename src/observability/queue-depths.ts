export interface QueueDepth {
  readonly queue: 'lwm2m' | 'udp' | 'mqtt';
  readonly depth: number;
}

/**
 * What waits for devices, counted where it is kept (each of these queues is durable), at each scrape:
 * `lwm2m` held requests (lwm2m_queue: asynchronous API requests, `lwm2m.proxy_send`, requests with a context;
 * a synchronous API call waiting for a sleeping device is not held there), `udp` unexpired `udp.queue`
 * messages, `mqtt` QoS 1/2 messages queued for persistent sessions (offline or not acknowledged yet).
 */
export interface QueueDepthStore {
  deviceQueueDepths(now?: number): Promise<QueueDepth[]>;
}
