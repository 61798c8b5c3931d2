import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULTS, ENV_NAMES, type Config } from './config-settings.js';
import {
  ConfigError,
  flag,
  integer,
  licencePublicKeys,
  mqttTls,
  nonNegativeInt,
  oidc,
  optionalPort,
  optionalString,
  outboundAllow,
  port,
  positiveInt,
  readConfigFile,
  trustProxy,
  type Source,
} from './config-values.js';
import { DEVICE_PASSWORD_MAX_LENGTH } from './domain/device-credentials.js';
import { PASSWORD_MIN_LENGTH } from './domain/users.js';

export { ConfigError } from './config-values.js';
export { DEFAULTS, ENV_NAMES, type Config } from './config-settings.js';

/** `dist/ui` of this package, from src/ (run from source) and from dist/src/ (built) alike. */
const DEFAULT_UI_DIR = fileURLToPath(new URL(existsSync(new URL('../package.json', import.meta.url)) ? '../dist/ui' : '../ui', import.meta.url));

/**
 * Reads configuration: defaults, then the JSON file named by `IOTBRIDGE_CONFIG` (keys as in {@link Config}),
 * then environment variables, then `overrides` (used by tests and embedders).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const file = env.IOTBRIDGE_CONFIG ? readConfigFile(env.IOTBRIDGE_CONFIG) : {};
  const fromEnv: Source = {};
  for (const [field, name] of Object.entries(ENV_NAMES) as [keyof Config, string][]) {
    const value = env[name];
    if (value !== undefined && value !== '') fromEnv[field] = value;
  }
  const merged: Source = { ...DEFAULTS, ...file, ...fromEnv, ...overrides };

  const databaseUrl = optionalString(merged, 'databaseUrl');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError(`${ENV_NAMES.databaseUrl} must be a postgres:// URL (leave it unset for embedded SQLite)`);
  }
  // nodemailer is loaded at the first message (src/triggers/mailer.ts): a URL it cannot read is refused here, at start.
  const smtpUrl = optionalString(merged, 'smtpUrl');
  if (smtpUrl !== undefined && !(/^smtps?:\/\//.test(smtpUrl) && URL.canParse(smtpUrl))) {
    throw new ConfigError(`${ENV_NAMES.smtpUrl} must be an smtp:// or smtps:// URL (leave it unset to turn email off)`);
  }
  const redisUrl = optionalString(merged, 'redisUrl');
  if (redisUrl !== undefined && !/^rediss?:\/\//.test(redisUrl)) {
    throw new ConfigError(`${ENV_NAMES.redisUrl} must be a redis:// or rediss:// URL (leave it unset to keep shared state in this process)`);
  }
  const adminToken = optionalString(merged, 'adminToken');
  if (adminToken !== undefined && !/^AT:[A-Za-z0-9_-]{16,}$/.test(adminToken)) {
    throw new ConfigError(
      `${ENV_NAMES.adminToken} must be "AT:" followed by at least 16 characters from [A-Za-z0-9_-]`,
    );
  }
  return {
    httpPort: port(merged, 'httpPort'),
    httpHost: optionalString(merged, 'httpHost') ?? DEFAULTS.httpHost,
    trustProxy: trustProxy(merged.trustProxy),
    coapPort: port(merged, 'coapPort'),
    coapHost: optionalString(merged, 'coapHost'),
    coapsPort: merged.coapsPort === -1 || merged.coapsPort === '-1' ? -1 : port(merged, 'coapsPort'),
    coapsCert: optionalString(merged, 'coapsCert'),
    coapsKey: optionalString(merged, 'coapsKey'),
    lwm2mAwakeMs: positiveInt(merged, 'lwm2mAwakeMs'),
    coapPeerRate: integer(merged, 'coapPeerRate', 0, 1_000_000),
    lwm2mBootstrapStepTimeoutMs: positiveInt(merged, 'lwm2mBootstrapStepTimeoutMs'),
    lwm2mSweepMs: positiveInt(merged, 'lwm2mSweepMs'),
    udpPort: port(merged, 'udpPort'),
    tcpPort: port(merged, 'tcpPort'),
    mqttPort: port(merged, 'mqttPort'),
    mqttHost: optionalString(merged, 'mqttHost'),
    ...mqttTls(merged),
    mqttWsPort: optionalPort(merged, 'mqttWsPort'),
    mqttMaxPacketBytes: integer(merged, 'mqttMaxPacketBytes', 64, 256 * 1024 * 1024 - 1),
    outboundAllow: outboundAllow(merged.outboundAllow),
    endpointSendRate: integer(merged, 'endpointSendRate', 1, 1_000_000),
    endpointSendBytes: integer(merged, 'endpointSendBytes', 1, 2 ** 31 - 1),
    accountSendRate: integer(merged, 'accountSendRate', 1, 1_000_000),
    accountSendBytes: integer(merged, 'accountSendBytes', 1, 2 ** 31 - 1),
    dataDir: path.resolve(optionalString(merged, 'dataDir') ?? DEFAULTS.dataDir),
    fileMaxBytes: integer(merged, 'fileMaxBytes', 0, Number.MAX_SAFE_INTEGER),
    importMaxBytes: integer(merged, 'importMaxBytes', 1024, Number.MAX_SAFE_INTEGER),
    publicHost: optionalString(merged, 'publicHost'),
    databaseUrl,
    redisUrl,
    nodeId: optionalString(merged, 'nodeId') ?? `${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
    adminToken,
    adminEmail: optionalString(merged, 'adminEmail'),
    adminPassword: optionalString(merged, 'adminPassword'),
    userTokenTtlSeconds: positiveInt(merged, 'userTokenTtlSeconds'),
    tokenCacheTtlSeconds: nonNegativeInt(merged, 'tokenCacheTtlSeconds'),
    endpointCacheSize: integer(merged, 'endpointCacheSize', 0, 10_000_000),
    devicePasswordMinLength: integer(merged, 'devicePasswordMinLength', PASSWORD_MIN_LENGTH, DEVICE_PASSWORD_MAX_LENGTH),
    devicePasswordMaxWaitMs: integer(merged, 'devicePasswordMaxWaitMs', 0, 600_000),
    eventParallelism: integer(merged, 'eventParallelism', 1, 10_000),
    eventBacklogInMemory: integer(merged, 'eventBacklogInMemory', 1, 10_000_000),
    eventStreamsPerAccount: integer(merged, 'eventStreamsPerAccount', 0, 100_000),
    eventStreamsMax: integer(merged, 'eventStreamsMax', 0, 1_000_000),
    eventStreamQueueBytes: integer(merged, 'eventStreamQueueBytes', 1024, 2 ** 31 - 1),
    historyRetentionDays: nonNegativeInt(merged, 'historyRetentionDays'),
    locationCacheSeconds: integer(merged, 'locationCacheSeconds', 0, 31_536_000),
    locationProviderTimeoutMs: integer(merged, 'locationProviderTimeoutMs', 100, 120_000),
    geofencesMax: integer(merged, 'geofencesMax', 0, 10_000_000),
    metricsFieldsMaxAgeSeconds: integer(merged, 'metricsFieldsMaxAgeSeconds', 0, 86_400),
    prometheusPort: merged.prometheusPort === undefined || merged.prometheusPort === '' ? undefined : port(merged, 'prometheusPort'),
    prometheusHost: optionalString(merged, 'prometheusHost') ?? '127.0.0.1',
    scriptMetrics: flag(merged, 'scriptMetrics'),
    scriptMetricsMax: integer(merged, 'scriptMetricsMax', 0, 100_000),
    scriptMetricsSeriesMax: integer(merged, 'scriptMetricsSeriesMax', 1, 1_000_000),
    executionRetentionDays: nonNegativeInt(merged, 'executionRetentionDays'),
    logRetentionDays: nonNegativeInt(merged, 'logRetentionDays'),
    alertCheckSeconds: integer(merged, 'alertCheckSeconds', 1, 3600),
    scriptWorkers: integer(merged, 'scriptWorkers', 1, 64),
    scriptTimeoutMs: integer(merged, 'scriptTimeoutMs', 1, 600_000),
    scriptWallTimeoutMs: integer(merged, 'scriptWallTimeoutMs', 1, 3_600_000),
    scriptMemoryMb: integer(merged, 'scriptMemoryMb', 8, 4096),
    smtpUrl,
    smtpFrom: optionalString(merged, 'smtpFrom') ?? DEFAULTS.smtpFrom,
    logLevel: optionalString(merged, 'logLevel') ?? DEFAULTS.logLevel,
    uiDir: path.resolve(optionalString(merged, 'uiDir') ?? DEFAULT_UI_DIR),
    licensing: flag(merged, 'licensing'),
    licencePublicKeys: licencePublicKeys(merged.licencePublicKeys),
    licenceFile: optionalString(merged, 'licenceFile'),
    ...oidc(merged),
  };
}
