import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAccount, createService, type TestAccount } from '../helpers/fixtures.js';
import { connackCode } from '../helpers/mqtt.js';
import { startService, type TestService } from '../helpers/service.js';

const BUSY_V5 = 0x89;
const BAD_CREDENTIALS_V5 = 0x86;
const THROTTLED_V5 = 0x9f;
const SERVER_UNAVAILABLE_V3 = 3;

/**
 * Log-in storms (issue "device log-ins at fleet scale"). The service runs with no wait allowed in the line of
 * chosen-password checks (IOTBRIDGE_DEVICE_PASSWORD_MAX_WAIT_MS=0), so that a few dozen log-ins at once
 * already fill it: what a fleet of thousands does to the default 10 s line.
 */
describe('device log-in storms', () => {
  let service: TestService;
  let stormy: TestAccount;
  let fleet: TestAccount;
  const port = () => service.ports.mqtt!;
  const chosen = (i: number) => ({ key: `storm-${i}`, password: `chosen-password-${i}` });
  let generated: { key: string; password: string }[] = [];

  before(async () => {
    service = await startService('sqlite', { devicePasswordMaxWaitMs: 0 });
    stormy = await createAccount(service, 'stormy tenant');
    fleet = await createAccount(service, 'quiet tenant');
    const stormyService = await createService(service, stormy.token, { name: 'meters', type: 'mqtt' });
    const fleetService = await createService(service, fleet.token, { name: 'meters', type: 'mqtt' });
    // One item at a time through the line: provisioning is never told busy, even with no wait allowed.
    const stormyItems = Array.from({ length: 40 }, (_, i) => ({ key: chosen(i).key, serviceId: stormyService, credentials: { password: chosen(i).password } }));
    const created = await service.request('POST', '/endpoints/bulk', { token: stormy.token, body: { items: stormyItems } });
    assert.equal(created.body.created, 40, JSON.stringify(created.body));
    const fleetItems = Array.from({ length: 30 }, (_, i) => ({ key: `fleet-${i}`, serviceId: fleetService, credentials: { generate: true } }));
    const secrets = await service.request('POST', '/endpoints/bulk', { token: fleet.token, body: { items: fleetItems } });
    generated = secrets.body.items.map((item: { endpoint: { key: string; credentials: { password: string } } }) => ({ key: item.endpoint.key, password: item.endpoint.credentials.password }));
  });
  after(() => service?.stop());

  /** Tries each log-in again, one at a time, until it is let in (at most 20 rounds). */
  async function retryUntilIn(logins: { key: string; password: string; version: 4 | 5 }[]): Promise<void> {
    for (const login of logins) {
      let code = -1;
      for (let attempt = 0; attempt < 20 && code !== 0; attempt++) code = await connackCode(port(), login);
      assert.equal(code, 0, `${login.key} got in at last`);
    }
  }

  it('tells the devices the line has no room for that the server is busy (MQTT 5 0x89, 3.1.1 CONNACK 3), lets the others in, and each gets in when it tries again', async () => {
    // Devices not yet let in (a device let in once is remembered, and not checked by the KDF again).
    for (const [version, first] of [[5, 0], [4, 20]] as const) {
      const logins = Array.from({ length: 20 }, (_, i) => ({ ...chosen(first + i), version }));
      const codes = await Promise.all(logins.map((login) => connackCode(port(), login)));
      const busyCode = version === 5 ? BUSY_V5 : SERVER_UNAVAILABLE_V3;
      assert.deepEqual([...new Set(codes)].filter((code) => code !== 0 && code !== busyCode), [], `MQTT ${version}: only in or busy, got ${codes.join(',')}`);
      assert.ok(codes.filter((code) => code === busyCode).length >= 1, `MQTT ${version}: some were told busy (${codes.join(',')})`);
      assert.ok(codes.filter((code) => code === 0).length >= 2, `MQTT ${version}: the line's two places were used (${codes.join(',')})`);
      await retryUntilIn(logins.filter((_, i) => codes[i] !== 0));
    }
    assert.equal((await service.request('GET', '/health', { token: null })).status, 200, 'the service kept answering');
  });

  it('keeps throttling a guessing address during the storm, before any password check', async () => {
    const guesser = { key: chosen(0).key, version: 5 as const, localAddress: '127.0.0.9' };
    // Five wrong guesses are checked and refused as such; the per address + key bucket is then empty.
    for (let i = 0; i < 5; i++) assert.equal(await connackCode(port(), { ...guesser, password: `wrong-guess-${i}` }), BAD_CREDENTIALS_V5);
    // The storm, and meanwhile the guesser again, now even with the right password: throttled, not busy, not in.
    const storm = Array.from({ length: 30 }, (_, i) => connackCode(port(), { ...chosen(i), version: 5 }));
    const [wrong, right] = await Promise.all([
      connackCode(port(), { ...guesser, password: 'wrong-guess-6' }),
      connackCode(port(), { ...guesser, password: chosen(0).password }),
    ]);
    assert.deepEqual([wrong, right], [THROTTLED_V5, THROTTLED_V5]);
    const codes = await Promise.all(storm);
    assert.ok(codes.every((code) => code === 0 || code === BUSY_V5), codes.join(','));
    // Another address is not held back by the guesser's failures.
    await retryUntilIn([{ ...chosen(0), version: 5 }]);
  });

  it("does not keep another tenant's devices out: generated secrets never wait in the line the storm fills", async () => {
    // The stormy tenant's devices hammer the line with wrong passwords from ten addresses (no throttle trips:
    // three guesses per address and key); the quiet tenant's whole fleet logs in at the same moment.
    const storm = Array.from({ length: 90 }, (_, i) =>
      connackCode(port(), { key: chosen(i % 30).key, password: `not-the-password-${i}`, version: 5, localAddress: `127.0.0.${20 + (i % 10)}` }),
    );
    const fleetCodes = await Promise.all(generated.map((login) => connackCode(port(), { ...login, version: 5 })));
    assert.deepEqual(fleetCodes, generated.map(() => 0), 'every generated-secret device got in at its first try');
    const stormCodes = await Promise.all(storm);
    assert.ok(stormCodes.every((code) => code === BAD_CREDENTIALS_V5 || code === BUSY_V5), stormCodes.join(','));
    assert.ok(stormCodes.includes(BUSY_V5), 'the storm did fill the line');
  });
});
