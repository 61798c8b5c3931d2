import { sql, type Kysely } from 'kysely';

/**
 * Schema undo of the migrations newer than those the upgrade tests rewind. The migrator applies migrations in
 * name order and refuses a database that has run a later one but not an earlier one, so a test that makes a
 * database "of an earlier release" forgets these too and undoes what they created. A migration added later
 * joins this list (or, like 0021, runs again unchanged on its own shape).
 */
const LATER: ReadonlyArray<[name: string, undo: (db: Kysely<any>) => Promise<void>]> = [
  ['0019-endpoints-key-index', async (db) => void (await db.schema.dropIndex('endpoints_key').execute())],
  [
    '0020-endpoint-heard-from',
    async (db) => {
      for (const column of ['heard_protocol', 'heard_addr']) await db.schema.alterTable('endpoints').dropColumn(column).execute();
    },
  ],
  ['0021-users-email-per-account', async () => {}],
  ['0022-lwm2m-registrations', async (db) => void (await db.schema.dropTable('lwm2m_registrations').execute())],
  ['0023-lwm2m-last-known', async (db) => void (await db.schema.dropTable('lwm2m_last_known').execute())],
  ['0024-lwm2m-observations', async (db) => void (await db.schema.dropTable('lwm2m_observations').execute())],
  ['0025-lwm2m-queue', async (db) => void (await db.schema.dropTable('lwm2m_queue').execute())],
  ['0026-lwm2m-bootstrap-configs', async (db) => void (await db.schema.dropTable('lwm2m_bootstrap_configs').execute())],
  ['0027-endpoint-security', async (db) => void (await db.schema.dropTable('endpoint_security').execute())],
  [
    '0028-files',
    async (db) => {
      for (const table of ['file_tags', 'file_chunks', 'files']) await db.schema.dropTable(table).ifExists().execute();
    },
  ],
  ['0029-file-links', async (db) => void (await db.schema.dropTable('file_links').ifExists().execute())],
  [
    '0030-fota',
    async (db) => {
      for (const table of ['fota_devices', 'fota_jobs']) await db.schema.dropTable(table).ifExists().execute();
    },
  ],
  ['0031-dashboard-indexes', async (db) => void (await db.schema.dropIndex('endpoints_account_state_service').ifExists().execute())],
  [
    '0032-location',
    async (db) => {
      for (const table of ['location_usage', 'endpoint_positions', 'geofence_presence', 'geofences', 'location_wifi', 'location_cells', 'location_services']) {
        await db.schema.dropTable(table).ifExists().execute();
      }
    },
  ],
  [
    '0033-reports',
    async (db) => {
      for (const table of ['report_entries', 'reports']) await db.schema.dropTable(table).ifExists().execute();
    },
  ],
  [
    '0034-alerts',
    async (db) => {
      for (const table of ['alerts', 'alert_rules']) await db.schema.dropTable(table).ifExists().execute();
    },
  ],
  ['0035-logs', async (db) => void (await db.schema.dropTable('logs').ifExists().execute())],
  [
    '0036-metrics-indexes',
    async (db) => {
      for (const index of ['endpoints_account_seen', 'endpoints_service_seen', 'logs_endpoint_problems']) await db.schema.dropIndex(index).ifExists().execute();
    },
  ],
  [
    '0037-report-schedules',
    async (db) => {
      // Undone after 0033's undo when a test goes back before reports existed: nothing left to undo then.
      if (!(await db.introspection.getTables()).some((table) => table.name === 'reports')) return;
      await db.schema.dropIndex('reports_next_send').ifExists().execute();
      for (const column of ['schedule', 'next_send_at', 'last_sent_at']) await db.schema.alterTable('reports').dropColumn(column).execute();
    },
  ],
  ['0038-licence', async (db) => void (await db.schema.dropTable('licence').ifExists().execute())],
  [
    '0039-oidc',
    async (db) => {
      for (const table of ['oidc_identities', 'oidc_mapping']) await db.schema.dropTable(table).ifExists().execute();
    },
  ],
  [
    '0040-solutions',
    async (db) => {
      for (const table of ['once_events', 'solution_history', 'solution_installations', 'solution_templates']) await db.schema.dropTable(table).ifExists().execute();
    },
  ],
  [
    '0041-super-admin',
    async (db) => {
      await db.schema.dropTable('account_controls').ifExists().execute();
      if ((await db.introspection.getTables()).some((table) => table.name === 'tokens' && table.columns.some((column) => column.name === 'impersonated_by'))) {
        await db.schema.alterTable('tokens').dropColumn('impersonated_by').execute();
      }
    },
  ],
  ['0042-import-jobs', async (db) => void (await db.schema.dropTable('import_jobs').ifExists().execute())],
  [
    '0043-bus-shards',
    async (db) => {
      for (const table of ['bus_nodes', 'bus_shards']) await db.schema.dropTable(table).ifExists().execute();
      if ((await db.introspection.getTables()).some((table) => table.name === 'events' && table.columns.some((column) => column.name === 'bus_shard'))) {
        await db.schema.alterTable('events').dropColumn('bus_shard').execute();
      }
    },
  ],
  [
    '0044-heard-node',
    async (db) => {
      if ((await db.introspection.getTables()).some((table) => table.name === 'endpoints' && table.columns.some((column) => column.name === 'heard_node'))) {
        await db.schema.alterTable('endpoints').dropColumn('heard_node').execute();
      }
      await db.schema.dropIndex('lwm2m_registrations_peer').ifExists().execute();
    },
  ],
  [
    '0045-fota-job-node',
    async (db) => {
      if ((await db.introspection.getTables()).some((table) => table.name === 'fota_jobs' && table.columns.some((column) => column.name === 'node'))) {
        await db.schema.alterTable('fota_jobs').dropColumn('node').execute();
      }
    },
  ],
  ['0046-lean-executions', async () => {}],
  [
    '0047-mqtt-released',
    async (db) => {
      // Undone after 0013's undo when a test goes back before MQTT sessions existed: nothing left to undo then.
      if ((await db.introspection.getTables()).some((table) => table.name === 'mqtt_outgoing' && table.columns.some((column) => column.name === 'released'))) {
        await db.schema.alterTable('mqtt_outgoing').dropColumn('released').execute();
      }
    },
  ],
  [
    '0048-mqtt-subscription-options',
    async (db) => {
      const table = (await db.introspection.getTables()).find((candidate) => candidate.name === 'mqtt_subscriptions');
      for (const column of ['no_local', 'retain_handling']) {
        if (table?.columns.some((existing) => existing.name === column)) await db.schema.alterTable('mqtt_subscriptions').dropColumn(column).execute();
      }
    },
  ],
];

/**
 * Forgets `names` (their schema is the caller's to undo) and every migration in `LATER`, undoing those; returns
 * the names `migrateToLatest` is then expected to apply, in order.
 */
export async function rewindMigrations(db: Kysely<any>, names: string[]): Promise<string[]> {
  const later = LATER.filter(([name]) => !names.includes(name));
  await sql`delete from iotbridge_migrations where name in (${sql.join([...names, ...later.map(([name]) => name)])})`.execute(db);
  for (const [, undo] of later) await undo(db);
  return [...names, ...later.map(([name]) => name)].sort();
}
