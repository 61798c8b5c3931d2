import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import mqttPacket from 'mqtt-packet';
import { createAccount, createService } from '../helpers/fixtures.js';
import { startService, type TestService } from '../helpers/service.js';

const CONNECTIONS = 150;

/** Opens a connection to `port`, writes `bytes`, and resolves when the service closes it. */
function refusedConnection(port: number, bytes: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
    socket.on('close', () => resolve());
    socket.setTimeout(10_000, () => reject(new Error('the service kept a refused connection open')));
  });
}

/**
 * Anyone can open connections to the device ports: 20,000 refused MQTT and TCP connections wrote 18,990 log
 * lines. Refusals are logged at most once per reason in 10 s, each line counting the ones left out.
 */
describe('refused device connections are logged sparingly', () => {
  let service: TestService;
  const lines: Record<string, unknown>[] = [];

  before(async () => {
    service = await startService('sqlite', {}, { logLines: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
    const account = await createAccount(service, 'refusals');
    await createService(service, account.token, { name: 'lines', type: 'tcp' });
    await createService(service, account.token, { name: 'mqtt', type: 'mqtt' });
  });
  after(() => service?.stop());

  const matching = (pattern: RegExp) => lines.filter((line) => pattern.test(String(line.msg)));

  it(`${CONNECTIONS} unknown TCP devices and ${CONNECTIONS} bad MQTT log-ins write a few lines, not one each`, async () => {
    const tcp = Array.from({ length: CONNECTIONS }, (_, i) => refusedConnection(service.ports.tcp!, Buffer.from(`nobody-${i}\n`)));
    const mqtt = Array.from({ length: CONNECTIONS }, (_, i) =>
      refusedConnection(service.ports.mqtt!, mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clientId: `c${i}`, clean: true, keepalive: 30, username: `nobody-${i}`, password: Buffer.from('wrong') })),
    );
    await Promise.all([...tcp, ...mqtt]);

    const tcpLines = matching(/^TCP connection closed: unknown device/);
    const mqttLines = matching(/^MQTT log-in refused/);
    assert.ok(tcpLines.length >= 1 && tcpLines.length <= 2, `${tcpLines.length} TCP lines`);
    assert.ok(mqttLines.length >= 1 && mqttLines.length <= 2, `${mqttLines.length} MQTT lines`);
    // The line after a window counts the ones left out; nothing is lost from the count.
    await new Promise((resolve) => setTimeout(resolve, 10_100));
    await refusedConnection(service.ports.tcp!, Buffer.from('nobody-last\n'));
    const all = matching(/^TCP connection closed: unknown device/);
    assert.equal(all.length, tcpLines.length + 1, 'a line once the window has passed');
    assert.equal(all.reduce((sum, line) => sum + 1 + Number(line.refusedSinceLastLine), 0), CONNECTIONS + 1, 'every refusal counted');
  });
});
