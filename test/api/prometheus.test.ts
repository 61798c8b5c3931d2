// Issue 20, Prometheus: GET /metrics for Super-Admin tokens and IOTBRIDGE_PROMETHEUS_PORT without a token, read
// by a Prometheus text-format parser: process metrics, HTTP requests by route pattern, events accepted and
// handled, trigger runs, connected devices per protocol; refused to other tokens; a taken port names its variable.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { waitFor } from '../helpers/devices.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { SimulatedDevices } from '../helpers/lwm2m-devices.js';
import { ADMIN_TOKEN, startService, type TestService } from '../helpers/service.js';

type Families = ReturnType<typeof parsePrometheusTextFormat>;

function value(families: Families, name: string, labels: Record<string, string> = {}): number {
  const family = families.find((candidate) => candidate.name === name);
  assert.ok(family, `${name} is exposed`);
  return family.metrics
    .filter((sample) => Object.entries(labels).every(([key, wanted]) => sample.labels?.[key] === wanted))
    .reduce((sum, sample) => sum + Number(sample.value ?? sample.count ?? 0), 0);
}

describe('Prometheus metrics (SQLite)', () => {
  let service: TestService;
  let tenant: TestAccount;
  const devices = new SimulatedDevices(() => service.ports.coap!);

  const scrape = async (): Promise<Families> => {
    const response = await fetch(`${service.baseUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    return parsePrometheusTextFormat(await response.text());
  };

  before(async () => {
    service = await startService('sqlite', { prometheusPort: 0 });
    tenant = await createAccount(service, 'prometheus');
  });
  after(async () => {
    await devices.stopAll();
    await service?.stop();
  });

  it('counts requests by route pattern, events accepted and handled, trigger runs, connected devices', async () => {
    const lwm2m = await createService(service, tenant.token, { name: 'meters', type: 'lwm2m' });
    await createEndpoint(service, tenant.token, { key: 'meter-1', serviceId: lwm2m });
    const trigger = await service.request('POST', '/triggers', { token: tenant.token, body: { name: 'count', events: ['reading'], script: 'log(event.data.n);' } });
    assert.equal(trigger.status, 201);
    const before = await scrape();
    for (let n = 0; n < 5; n++) assert.equal((await service.request('POST', '/events', { token: tenant.token, body: { type: 'reading', endpoint: 'k.meter-1', data: { n } } })).status, 202);
    for (let n = 0; n < 3; n++) assert.equal((await service.request('GET', '/endpoints/k.meter-1', { token: tenant.token })).status, 200);
    const device = await devices.start('meter-1');
    assert.equal(await device.register(), '2.01');

    const after = await waitFor(async () => {
      const families = await scrape();
      return value(families, 'iotbridge_trigger_runs_total', { status: 'success' }) - value(before, 'iotbridge_trigger_runs_total', { status: 'success' }) >= 5 ? families : undefined;
    }, 'five trigger runs counted');
    assert.ok(value(after, 'iotbridge_events_accepted_total') - value(before, 'iotbridge_events_accepted_total') >= 6, 'five readings and the on-connect');
    assert.ok(value(after, 'iotbridge_events_handled_total') - value(before, 'iotbridge_events_handled_total') >= 5);
    assert.equal(value(after, 'iotbridge_http_requests_total', { method: 'GET', route: '/endpoints/:ref', status_code: '200' }), 3, 'by route pattern, not by path');
    assert.ok(!JSON.stringify(after).includes('meter-1'), 'no endpoint key (nor any tenant value) in a label');
    assert.equal(value(after, 'iotbridge_devices_connected', { protocol: 'lwm2m' }), 1);
    assert.ok(value(after, 'iotbridge_trigger_run_duration_seconds') >= 5, 'the histogram counted the runs');
    assert.ok(value(after, 'process_cpu_seconds_total') > 0);
    assert.ok(value(after, 'iotbridge_script_workers') >= 1);
  });

  it('serves the same on IOTBRIDGE_PROMETHEUS_PORT without a token, and refuses other tokens on the API', async () => {
    const response = await fetch(`http://127.0.0.1:${service.ports.prometheus}/metrics`);
    assert.equal(response.status, 200);
    const families = parsePrometheusTextFormat(await response.text());
    assert.ok(families.some((family) => family.name === 'iotbridge_events_accepted_total'));
    assert.equal((await fetch(`http://127.0.0.1:${service.ports.prometheus}/other`)).status, 404);
    assertError(await service.request('GET', '/metrics', { token: tenant.token }), 403, 'IOTB_AUTH_FORBIDDEN', 'an account token');
    assertError(await service.request('GET', '/metrics', { token: null }), 401, 'IOTB_AUTH_TOKEN_MISSING', 'no token');
  });

  it('stops with a message naming IOTBRIDGE_PROMETHEUS_PORT when the port is taken', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      await assert.rejects(startService('sqlite', { prometheusPort: port }), /IOTBRIDGE_PROMETHEUS_PORT/);
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });
});
