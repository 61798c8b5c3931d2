/**
 * Tells the other nodes of a cluster that something they may cache changed (an account's triggers, the services, a
 * revoked token), so their caches stay true (docs/cluster.md). One process needs none: its caches are told directly.
 */
export interface ChangeNotices {
  /** Says to the other nodes that `key` of `topic` changed; never to this node's own listeners. */
  publish(topic: ChangeTopic, key: string): void;
  /** `listener` is called with the keys other nodes published on `topic`. */
  listen(topic: ChangeTopic, listener: (key: string) => void): void;
  close(): void;
}

/**
 * What changed: an account's triggers, a service, a revoked token; an MQTT service's persistent session's
 * subscriptions (key "<serviceId> <clientId>") or retained message (key "<serviceId> <topic>"); an LwM2M device
 * registered with or taken up by another node (key: its endpoint id).
 */
export type ChangeTopic = 'triggers' | 'services' | 'tokens' | 'mqtt-subscriptions' | 'mqtt-retained' | 'lwm2m-registrations';

/** Connects the domain's caches to the other nodes: local changes are published, theirs are forgotten here. */
export interface SharedCaches {
  readonly triggers: { onChange(listener: (accountId: string, elsewhere: boolean) => void): void; changedElsewhere(accountId: string): void };
  readonly services: { onChange(listener: (service: { id: string }, elsewhere: boolean) => void): void; changedElsewhere(serviceId: string): void };
  readonly tokens: { onRevoke(listener: (tokenId: string | undefined) => void): void; forgetCached(tokenId?: string): void };
}

export function shareCaches(caches: SharedCaches, notices: ChangeNotices): void {
  caches.triggers.onChange((accountId, elsewhere) => elsewhere || notices.publish('triggers', accountId));
  notices.listen('triggers', (accountId) => caches.triggers.changedElsewhere(accountId));
  caches.services.onChange((service, elsewhere) => elsewhere || notices.publish('services', service.id));
  notices.listen('services', (serviceId) => caches.services.changedElsewhere(serviceId));
  // `*`: every cached principal (an account tree was deleted).
  caches.tokens.onRevoke((tokenId) => notices.publish('tokens', tokenId ?? '*'));
  notices.listen('tokens', (tokenId) => caches.tokens.forgetCached(tokenId === '*' ? undefined : tokenId));
}
