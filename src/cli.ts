#!/usr/bin/env -S node --max-semi-space-size=64
import { createReadStream } from 'node:fs';
import { parseArgs } from 'node:util';
import { createGunzip } from 'node:zlib';
import { ConfigError, loadConfig } from './config.js';
import type { Domain } from './domain/domain.js';
import { AppError } from './errors.js';

const USAGE = `Usage: iotbridge [command]

Commands:
  serve                 run the service (default)
  migrate               bring the database schema up to date and exit
  token create [name]   issue a new Super-Admin API token of the root account and print it (recovery)
  location import <serviceId> <file.csv> [--account <id>] [--format opencellid|wifi] [--replace]
                        import cell (OpenCelliD CSV; .gz read as gzip) or Wi-Fi positions into an embedded
                        location service, printing progress (docs/location.md)

Configuration comes from IOTBRIDGE_* environment variables and the optional JSON file named by
IOTBRIDGE_CONFIG; see README.md.`;

// The service's modules are loaded once the configuration was read: `--help` and a bad setting answer at once.
async function serve(): Promise<void> {
  const config = loadConfig();
  const { IotBridge } = await import('./app.js');
  const bridge = new IotBridge(config);
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    bridge.logger.info({ signal }, 'stopping');
    bridge.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        bridge.logger.error({ err: error }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
  const started = await bridge.start();
  if (started.generatedRootToken) {
    // Also on stderr in plain text, so a person starting the service sees it among JSON logs.
    process.stderr.write(
      `\nRoot account Super-Admin API token (shown only this once):\n\n  ${started.generatedRootToken}\n\n` +
        `Use it as "Authorization: Bearer ${started.generatedRootToken}". Set IOTBRIDGE_ADMIN_TOKEN to choose your own.\n\n`,
    );
  }
}

/** Opens storage without servers, for the maintenance commands. */
async function withStorage<T>(work: (domain: Domain) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const [{ openDatabase }, { migrateToLatest }, { sqlStores }, { DurableEventBus }, { createLogger }, { createDomain }] = await Promise.all([
    import('./store/database.js'),
    import('./store/migrate.js'),
    import('./store/stores.js'),
    import('./events/event-bus.js'),
    import('./logger.js'),
    import('./domain/domain.js'),
  ]);
  const database = openDatabase(config);
  try {
    await migrateToLatest(database);
    const stores = sqlStores(database, { dataDir: config.dataDir });
    // Maintenance commands publish no events; the bus is never started.
    const bus = new DurableEventBus(stores.events, { parallelism: 1, logger: createLogger('warn') });
    const domain = createDomain(stores, bus, config);
    return await work(domain);
  } finally {
    await database.close();
  }
}

/** `location import`: the same import as POST /location/services/{id}/import, from a file, in the root account or `--account`. */
async function importLocations(domain: Domain, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { account: { type: 'string' }, format: { type: 'string', default: 'opencellid' }, replace: { type: 'boolean', default: false } } });
  const [serviceId, file] = positionals;
  const format = values.format;
  if (!serviceId || !file || (format !== 'opencellid' && format !== 'wifi')) throw new ConfigError(`location import <serviceId> <file.csv> [--account <id>] [--format opencellid|wifi] [--replace]`);
  const { account: root } = await domain.accounts.ensureRoot();
  const principal = { tokenId: 'cli', kind: 'api' as const, accountId: root.accountId, accountPath: root.path, superAdmin: true, userId: null, expiresAt: null };
  const scope = await domain.accounts.scopeFor(principal, values.account);
  const raw = createReadStream(file);
  const input = file.endsWith('.gz') ? raw.pipe(createGunzip()) : raw;
  const started = Date.now();
  const timer = setInterval(() => {
    void domain.location.services.get(scope, serviceId).then((service) => {
      if (service.import) process.stderr.write(`${service.import.rows} rows, ${service.import.rejected} rejected, ${Math.round((Date.now() - started) / 1000)} s\n`);
    });
  }, 5000);
  try {
    const result = await domain.location.services.import(scope, serviceId, input, { format, replace: values.replace });
    process.stdout.write(`${JSON.stringify({ ...result, seconds: Math.round((Date.now() - started) / 100) / 10 })}\n`);
  } finally {
    clearInterval(timer);
  }
}

async function main(args: string[]): Promise<void> {
  const [command = 'serve', ...rest] = args;
  switch (command) {
    case 'serve':
      return serve();
    case 'migrate':
      return withStorage(async () => {
        process.stdout.write('database schema is up to date\n');
      });
    case 'token':
      if (rest[0] !== 'create') break;
      return withStorage(async (domain) => {
        const { account } = await domain.accounts.ensureRoot();
        const issued = await domain.tokens.issueRootToken(account.accountId, rest[1] ?? 'root (iotbridge token create)');
        process.stdout.write(`${issued.token}\n`);
      });
    case 'location':
      if (rest[0] !== 'import') break;
      return withStorage((domain) => importLocations(domain, rest.slice(1)));
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      return;
  }
  process.stderr.write(`unknown command: ${args.join(' ')}\n\n${USAGE}\n`);
  process.exitCode = 2;
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof AppError) {
    process.stderr.write(`iotbridge: ${error.message}\n`);
  } else {
    process.stderr.write(`iotbridge: failed to start: ${(error as Error).stack ?? String(error)}\n`);
  }
  process.exit(1);
});
