import type { Kysely, Migration } from 'kysely';

/**
 * Cluster mode: which node last heard each device (docs/cluster.md, "Routing device calls"). The node whose
 * socket a device talks to is where `udp.send`, `tcp.send`, `lwm2m.*` and the LwM2M routes must run; it is
 * written in the same statement as the address the device was heard from, so it costs no write of its own. And
 * LwM2M registrations by address, for a node that takes a registration up at the device's Send.
 */
export function heardNode(): Migration {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema.alterTable('endpoints').addColumn('heard_node', 'text').execute();
      // A Send from an address this node holds no registration for is looked up by the address (LwM2M takeover).
      await db.schema.createIndex('lwm2m_registrations_peer').on('lwm2m_registrations').columns(['peer_address', 'peer_port']).execute();
    },
  };
}
