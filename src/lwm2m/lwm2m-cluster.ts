import type { ChangeNotices } from '../domain/change-notices.js';

/** What the LwM2M server of a cluster node shares with the others (docs/cluster.md, "LwM2M"); built in app.ts. */
export interface Lwm2mCluster {
  /** This node's id: the registrations it restores at start are those of the devices it heard last. */
  readonly node: string;
  /** A device registered with or taken up by another node: this node lets go of what it held for it. */
  readonly notices: ChangeNotices;
  /** `listener` hears of a node that died (its bus leases were taken after they expired). */
  onNodeLost(listener: (node: string) => void): void;
  /** True on the one node that does the cluster's periodic work now (it holds the event bus's shard 0). */
  leads(): boolean;
}
