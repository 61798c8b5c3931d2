import type { Kysely } from 'kysely';
import type { DomainStores } from '../domain/domain.js';
import { SqlAccountStore } from './account-store.js';
import { SqlEndpointStore } from './endpoint-store.js';
import { SqlEventStore } from './event-store.js';
import type { Schema } from './schema.js';
import { SqlServiceStore } from './service-store.js';
import { SqlTokenStore } from './token-store.js';
import { SqlExecutionStore, SqlTriggerStore } from './trigger-store.js';
import { SqlUserStore } from './user-store.js';

/** Every domain store on one Kysely database (SQLite or PostgreSQL alike). */
export function sqlStores(db: Kysely<Schema>): DomainStores {
  return {
    accounts: new SqlAccountStore(db),
    tokens: new SqlTokenStore(db),
    users: new SqlUserStore(db),
    services: new SqlServiceStore(db),
    endpoints: new SqlEndpointStore(db),
    events: new SqlEventStore(db),
    triggers: new SqlTriggerStore(db),
    executions: new SqlExecutionStore(db),
  };
}
