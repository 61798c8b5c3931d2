import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CLI } from '../helpers/repo.js';

/** The real command-line entry point, as `npm start` runs it, in its own process. */

interface Running {
  readonly child: ChildProcess;
  readonly port: number;
  readonly stderr: () => string;
}

function run(args: string[], env: Record<string, string>): ChildProcess {
  const { IOTBRIDGE_DATABASE_URL: _ignored, ...inherited } = process.env;
  return spawn(process.execPath, [...CLI, ...args], { env: { ...inherited, IOTBRIDGE_HTTP_HOST: '127.0.0.1', IOTBRIDGE_UDP_PORT: '0', IOTBRIDGE_TCP_PORT: '0', IOTBRIDGE_COAP_PORT: '0', IOTBRIDGE_COAPS_PORT: '0', IOTBRIDGE_MQTT_PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Starts `iotbridge serve` and waits for the log line that names the bound HTTP port. */
async function serve(env: Record<string, string>): Promise<Running> {
  const child = run(['serve'], { IOTBRIDGE_HTTP_PORT: '0', ...env });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line in time; stderr: ${stderr}`)), 30_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      for (const line of stdout.split('\n')) {
        if (!line.includes('"ports"')) continue;
        clearTimeout(timer);
        resolve((JSON.parse(line) as { ports: { http: number } }).ports.http);
      }
    });
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${stderr}`)));
  });
  return { child, port, stderr: () => stderr };
}

async function stop(running: Running): Promise<number | null> {
  const exited = once(running.child, 'exit');
  running.child.kill('SIGTERM');
  const [code] = (await exited) as [number | null];
  return code;
}

async function finish(child: ChildProcess): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

describe('iotbridge command line', () => {
  let dataDir: string;

  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-cli-'));
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  it('on first start generates a root token, prints it once, and serves /health on the logged port', async () => {
    const first = await serve({ IOTBRIDGE_DATA_DIR: dataDir });
    try {
      // The token is written to stderr right after the ready line goes to stdout: wait for it.
      for (let i = 0; i < 100 && !first.stderr().includes('Bearer AT:'); i++) await new Promise((resolve) => setTimeout(resolve, 50));
      const token = /Bearer (AT:[A-Za-z0-9_-]+)/.exec(first.stderr())?.[1];
      assert.ok(token, `no token in: ${first.stderr()}`);
      const health = await fetch(`http://127.0.0.1:${first.port}/health`);
      assert.equal(health.status, 200);
      const whoami = await fetch(`http://127.0.0.1:${first.port}/auth/whoami`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(whoami.status, 200);
      assert.equal(((await whoami.json()) as { superAdmin: boolean }).superAdmin, true);
    } finally {
      assert.equal(await stop(first), 0, 'SIGTERM stops cleanly');
    }
    const second = await serve({ IOTBRIDGE_DATA_DIR: dataDir });
    assert.doesNotMatch(second.stderr(), /AT:/, 'the token is shown only on first start');
    assert.equal(await stop(second), 0);
  });

  it('takes IOTBRIDGE_ADMIN_TOKEN and the IOTBRIDGE_CONFIG file', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'iotbridge-cli-'));
    const configFile = path.join(dir, 'config.json');
    await writeFile(configFile, JSON.stringify({ dataDir: path.join(dir, 'data'), logLevel: 'warn' }));
    const running = await serve({ IOTBRIDGE_CONFIG: configFile, IOTBRIDGE_ADMIN_TOKEN: 'AT:my-own-admin-token-123', IOTBRIDGE_LOG_LEVEL: 'info' });
    try {
      const services = await fetch(`http://127.0.0.1:${running.port}/services`, { headers: { authorization: 'Bearer AT:my-own-admin-token-123' } });
      assert.equal(services.status, 200);
      assert.doesNotMatch(running.stderr(), /shown only this once/);
    } finally {
      await stop(running);
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('stops with a message naming IOTBRIDGE_HTTP_PORT when the port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const result = await finish(run(['serve'], { IOTBRIDGE_DATA_DIR: dataDir, IOTBRIDGE_HTTP_PORT: String(port) }));
      assert.equal(result.code, 1);
      assert.match(result.stderr, new RegExp(`HTTP port ${port} is already in use: set IOTBRIDGE_HTTP_PORT`));
    } finally {
      blocker.close();
    }
  });

  it('stops with a message naming IOTBRIDGE_UDP_PORT, IOTBRIDGE_TCP_PORT, IOTBRIDGE_COAP_PORT or IOTBRIDGE_MQTT_PORT when a device port is taken', async () => {
    const udp = createSocket('udp4');
    await new Promise<void>((resolve) => udp.bind(0, '0.0.0.0', resolve));
    const tcp = createServer();
    await new Promise<void>((resolve) => tcp.listen(0, '0.0.0.0', resolve));
    try {
      const udpPort = udp.address().port;
      const tcpPort = (tcp.address() as { port: number }).port;
      for (const [env, message] of [
        [{ IOTBRIDGE_UDP_PORT: String(udpPort) }, `UDP port ${udpPort} is already in use: set IOTBRIDGE_UDP_PORT`],
        [{ IOTBRIDGE_TCP_PORT: String(tcpPort) }, `TCP port ${tcpPort} is already in use: set IOTBRIDGE_TCP_PORT`],
        [{ IOTBRIDGE_COAP_PORT: String(udpPort) }, `CoAP port ${udpPort} is already in use: set IOTBRIDGE_COAP_PORT`],
        [{ IOTBRIDGE_COAPS_PORT: String(udpPort) }, `CoAPS port ${udpPort} is already in use: set IOTBRIDGE_COAPS_PORT`],
        [{ IOTBRIDGE_MQTT_PORT: String(tcpPort) }, `MQTT port ${tcpPort} is already in use: set IOTBRIDGE_MQTT_PORT`],
      ] as const) {
        const result = await finish(run(['serve'], { IOTBRIDGE_DATA_DIR: dataDir, ...env }));
        assert.equal(result.code, 1);
        assert.ok(result.stderr.includes(message), result.stderr);
      }
    } finally {
      udp.close();
      tcp.close();
    }
  });

  it('rejects bad configuration with a clear message', async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ IOTBRIDGE_HTTP_PORT: 'eighty' }, /IOTBRIDGE_HTTP_PORT must be an integer from 0 to 65535/],
      [{ IOTBRIDGE_DATABASE_URL: 'mysql://x' }, /IOTBRIDGE_DATABASE_URL must be a postgres:\/\/ URL/],
      [{ IOTBRIDGE_ADMIN_TOKEN: 'secret' }, /IOTBRIDGE_ADMIN_TOKEN must be "AT:"/],
    ];
    for (const [env, message] of cases) {
      const result = await finish(run(['serve'], { IOTBRIDGE_DATA_DIR: dataDir, ...env }));
      assert.equal(result.code, 1, JSON.stringify(env));
      assert.match(result.stderr, message);
    }
  });

  it('issues a recovery token with `token create`', async () => {
    const result = await finish(run(['token', 'create', 'recovery'], { IOTBRIDGE_DATA_DIR: dataDir }));
    assert.equal(result.code, 0, result.stderr);
    const token = result.stdout.trim();
    assert.match(token, /^AT:/);
    const running = await serve({ IOTBRIDGE_DATA_DIR: dataDir });
    try {
      const response = await fetch(`http://127.0.0.1:${running.port}/tokens`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(response.status, 200);
      assert.ok(((await response.json()) as { items: { name: string }[] }).items.some((t) => t.name === 'recovery'));
    } finally {
      await stop(running);
    }
  });
});
