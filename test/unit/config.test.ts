import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parseBearer } from '../../src/api/auth.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { AppError } from '../../src/errors.js';

describe('configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    assert.equal(config.httpPort, 8080);
    assert.equal(config.dataDir, path.resolve('data'));
    assert.equal(config.databaseUrl, undefined);
    assert.equal(config.userTokenTtlSeconds, 86_400);
    assert.deepEqual([config.udpPort, config.tcpPort], [5700, 5700]);
  });

  it('reads IOTBRIDGE_TRUST_PROXY as none, any, a hop count or an address list', () => {
    assert.equal(loadConfig({}).trustProxy, false);
    assert.equal(loadConfig({ IOTBRIDGE_TRUST_PROXY: 'true' }).trustProxy, true);
    assert.equal(loadConfig({ IOTBRIDGE_TRUST_PROXY: 'false' }).trustProxy, false);
    assert.equal(loadConfig({ IOTBRIDGE_TRUST_PROXY: '2' }).trustProxy, 2);
    assert.equal(loadConfig({ IOTBRIDGE_TRUST_PROXY: '10.0.0.1,10.1.0.0/16' }).trustProxy, '10.0.0.1,10.1.0.0/16');
  });

  it('reads environment over the config file', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'iotbridge-config-'));
    const file = path.join(dir, 'c.json');
    await writeFile(file, JSON.stringify({ httpPort: 9000, dataDir: '/var/lib/iotbridge', logLevel: 'debug' }));
    try {
      const config = loadConfig({ IOTBRIDGE_CONFIG: file, IOTBRIDGE_HTTP_PORT: '0', IOTBRIDGE_DATABASE_URL: 'postgres://db/iot' });
      assert.deepEqual([config.httpPort, config.dataDir, config.logLevel, config.databaseUrl], [0, '/var/lib/iotbridge', 'debug', 'postgres://db/iot']);
      await writeFile(file, JSON.stringify({ httpport: 1 }));
      assert.throws(() => loadConfig({ IOTBRIDGE_CONFIG: file }), /unknown keys: httpport/);
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it('names the variable to fix', () => {
    assert.throws(() => loadConfig({ IOTBRIDGE_HTTP_PORT: '70000' }), (e: Error) => e instanceof ConfigError && /IOTBRIDGE_HTTP_PORT/.test(e.message));
    assert.throws(() => loadConfig({ IOTBRIDGE_USER_TOKEN_TTL: '0' }), /IOTBRIDGE_USER_TOKEN_TTL/);
    assert.throws(() => loadConfig({ IOTBRIDGE_UDP_PORT: '-1' }), /IOTBRIDGE_UDP_PORT/);
    assert.throws(() => loadConfig({ IOTBRIDGE_TCP_PORT: 'x' }), /IOTBRIDGE_TCP_PORT/);
    assert.throws(() => loadConfig({ IOTBRIDGE_ADMIN_TOKEN: 'AT:short' }), /IOTBRIDGE_ADMIN_TOKEN/);
    // nodemailer reads it only at the first message: a URL it cannot read stops the start instead.
    for (const url of ['mail.example.com:25', 'http://mail.example.com', 'smtp://mail example.com', 'smtp://[::1']) {
      assert.throws(() => loadConfig({ IOTBRIDGE_SMTP_URL: url }), (e: Error) => e instanceof ConfigError && /IOTBRIDGE_SMTP_URL must be an smtp:\/\/ or smtps:\/\/ URL/.test(e.message), url);
    }
    assert.equal(loadConfig({ IOTBRIDGE_SMTP_URL: 'smtps://user:pass@127.0.0.1:465' }).smtpUrl, 'smtps://user:pass@127.0.0.1:465');
  });

  it('turns MQTT over TLS on only with a certificate and a key', () => {
    const names = (e: Error, ...wanted: string[]) => e instanceof ConfigError && wanted.every((name) => e.message.includes(name));
    assert.throws(() => loadConfig({ IOTBRIDGE_MQTT_TLS_PORT: '8883' }), (e: Error) => names(e, 'IOTBRIDGE_MQTT_TLS_PORT', 'IOTBRIDGE_MQTT_TLS_CERT', 'IOTBRIDGE_MQTT_TLS_KEY'));
    assert.throws(() => loadConfig({ IOTBRIDGE_MQTT_TLS_PORT: '8883', IOTBRIDGE_MQTT_TLS_KEY: '/etc/key.pem' }), (e: Error) => names(e, 'IOTBRIDGE_MQTT_TLS_CERT'));
    assert.throws(() => loadConfig({ IOTBRIDGE_MQTT_TLS_PORT: '8883', IOTBRIDGE_MQTT_TLS_CERT: '/etc/cert.pem' }), (e: Error) => names(e, 'IOTBRIDGE_MQTT_TLS_KEY'));
    assert.throws(() => loadConfig({}, { mqttTlsPort: 0 }), (e: Error) => names(e, 'IOTBRIDGE_MQTT_TLS_CERT'), 'overrides are checked the same way');
    assert.throws(() => loadConfig({ IOTBRIDGE_MQTT_TLS_PORT: 'x', IOTBRIDGE_MQTT_TLS_CERT: 'c', IOTBRIDGE_MQTT_TLS_KEY: 'k' }), /IOTBRIDGE_MQTT_TLS_PORT/);
    const on = loadConfig({ IOTBRIDGE_MQTT_TLS_PORT: '8883', IOTBRIDGE_MQTT_TLS_CERT: '/etc/cert.pem', IOTBRIDGE_MQTT_TLS_KEY: '/etc/key.pem', IOTBRIDGE_MQTT_WS_PORT: '8080' });
    assert.deepEqual([on.mqttTlsPort, on.mqttTlsCert, on.mqttTlsKey, on.mqttWsPort], [8883, '/etc/cert.pem', '/etc/key.pem', 8080]);
    const off = loadConfig({ IOTBRIDGE_MQTT_TLS_CERT: '/etc/cert.pem' });
    assert.deepEqual([off.mqttPort, off.mqttTlsPort, off.mqttWsPort, off.mqttMaxPacketBytes], [1883, undefined, undefined, 262_144], 'TLS and WebSocket are off by default');
    assert.throws(() => loadConfig({ IOTBRIDGE_MQTT_MAX_PACKET_BYTES: '63' }), /IOTBRIDGE_MQTT_MAX_PACKET_BYTES/);
    assert.throws(() => loadConfig({ IOTBRIDGE_MQTT_MAX_PACKET_BYTES: String(268_435_456) }), /IOTBRIDGE_MQTT_MAX_PACKET_BYTES/, 'no packet is longer than 268435455 bytes of remaining length');
  });
});

describe('bearer header', () => {
  it('splits the token and the sub-account (SPEC Authentication 4)', () => {
    assert.deepEqual(parseBearer('Bearer AT:abc_DEF-123'), { token: 'AT:abc_DEF-123', accountId: undefined });
    assert.deepEqual(parseBearer('Bearer UT:abc:acc-1'), { token: 'UT:abc', accountId: 'acc-1' });
  });

  it('rejects anything else with a catalogue error', () => {
    assert.throws(() => parseBearer(undefined), (e: AppError) => e.code === 'IOTB_AUTH_TOKEN_MISSING');
    for (const header of ['AT:abc', 'Bearer abc', 'Bearer AT:abc:x:y', 'Bearer AT:a b', 'Bearer ZT:abc']) {
      assert.throws(() => parseBearer(header), (e: AppError) => e.code === 'IOTB_AUTH_TOKEN_INVALID', header);
    }
  });
});
