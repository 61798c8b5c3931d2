// Issue 20, Prometheus: the script `prometheus` class (IOTBRIDGE_SCRIPT_METRICS=true): Counter, Gauge and
// Histogram defined and updated by triggers appear in GET /metrics (read by a Prometheus text-format parser)
// with the account's id as a label; two accounts' series apart; limits on metrics and series per account;
// bad names, labels and values refused; the class throws while the switch is off. Also the device queue
// depth and store query time families.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { runScript } from '../helpers/scripts.js';
import { ADMIN_TOKEN, DIALECTS, startService, type TestService } from '../helpers/service.js';

type Families = ReturnType<typeof parsePrometheusTextFormat>;
type Family = Families[number];

async function scrapeText(service: TestService): Promise<string> {
  const response = await fetch(`${service.baseUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  assert.equal(response.status, 200);
  return response.text();
}

async function scrape(service: TestService): Promise<Families> {
  return parsePrometheusTextFormat(await scrapeText(service));
}

interface HistogramSeries {
  readonly labels: Record<string, string>;
  readonly buckets: Record<string, number>;
  count: number;
  sum: number;
}

/**
 * A histogram's series by their labels. parse-prometheus-text-format folds every series of a labelled
 * histogram into one sample (it keeps only the last `le` map), so these lines are read here; the text as a
 * whole still goes through the parser in the same tests.
 */
function histogram(text: string, name: string): HistogramSeries[] {
  const series = new Map<string, HistogramSeries>();
  const line = new RegExp(`^${name}_(bucket|sum|count)\\{([^}]*)\\} (\\S+)$`);
  for (const match of text.split('\n').map((l) => line.exec(l))) {
    if (!match) continue;
    const labels = Object.fromEntries([...match[2]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]));
    const le = labels.le;
    delete labels.le;
    const key = JSON.stringify(Object.entries(labels).sort());
    let found = series.get(key);
    if (!found) series.set(key, (found = { labels, buckets: {}, count: 0, sum: 0 }));
    if (match[1] === 'bucket') found.buckets[le!] = Number(match[3]);
    else found[match[1] as 'sum' | 'count'] = Number(match[3]);
  }
  return [...series.values()];
}

function family(families: Families, name: string): Family {
  const found = families.find((candidate) => candidate.name === name);
  assert.ok(found, `${name} is exposed`);
  return found;
}

/** The samples of an account in a family, without the account label. */
function samplesOf(families: Families, name: string, accountId: string): Array<{ labels: Record<string, string>; sample: Family['metrics'][number] }> {
  return family(families, name)
    .metrics.filter((sample) => sample.labels?.account === accountId)
    .map((sample) => {
      const { account: _account, ...labels } = sample.labels ?? {};
      return { labels, sample };
    });
}

for (const dialect of DIALECTS) {
  describe(`script metrics (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;

    before(async () => {
      service = await startService(dialect.name, { scriptMetrics: true });
      tenant = await createAccount(service, 'metrics');
      other = await createAccount(service, 'metrics-other');
    });

    after(() => service?.stop());

    it('a script’s Counter, Gauge and Histogram appear in /metrics with the account’s id as a label, and survive across runs', async () => {
      const run = await runScript(
        service,
        tenant.token,
        `var opens = new prometheus.Counter({name: 'door_opens_total', help: 'Door openings'});
         opens.inc(); opens.inc(2);
         var temperature = new prometheus.Gauge({name: 'room_temperature_celsius', help: 'Room temperature', labelNames: ['room']});
         temperature.set({room: 'kitchen'}, 21.5);
         temperature.labels({room: 'hall'}).set(18); temperature.inc({room: 'hall'}, 2); temperature.dec({room: 'hall'});
         var sizes = new prometheus.Histogram({name: 'payload_bytes', help: 'Payload sizes', buckets: [10, 100, 1000]});
         sizes.observe(5); sizes.observe(50); sizes.labels({}).observe(500);
         var messages = new prometheus.Counter({name: 'messages_total', help: 'Messages by type', labelNames: ['type', 'ok']});
         messages.labels({type: 'status', ok: true}).inc(); messages.inc({type: 'alarm', ok: false}, 3);
         var work = new prometheus.Histogram({name: 'work_seconds', help: 'Work'});
         var end = work.startTimer(); log(end() >= 0, opens.name);`,
      );
      assert.equal(run.status, 'success', run.error ?? '');
      assert.deepEqual(run.logs, ['true door_opens_total']);

      const text = await scrapeText(service);
      const families = parsePrometheusTextFormat(text);
      const opens = family(families, 'iotbridge_script_door_opens_total');
      assert.equal(opens.type, 'COUNTER');
      assert.equal(opens.help, 'Door openings');
      assert.deepEqual(samplesOf(families, 'iotbridge_script_door_opens_total', tenant.accountId).map(({ labels, sample }) => [labels, sample.value]), [[{}, '3']]);
      assert.equal(family(families, 'iotbridge_script_room_temperature_celsius').type, 'GAUGE');
      assert.deepEqual(
        Object.fromEntries(samplesOf(families, 'iotbridge_script_room_temperature_celsius', tenant.accountId).map(({ labels, sample }) => [labels.room, sample.value])),
        { kitchen: '21.5', hall: '19' },
      );
      assert.equal(family(families, 'iotbridge_script_payload_bytes').type, 'HISTOGRAM');
      assert.deepEqual(
        histogram(text, 'iotbridge_script_payload_bytes').filter(({ labels }) => labels.account === tenant.accountId),
        [{ labels: { account: tenant.accountId }, buckets: { '10': 1, '100': 2, '1000': 3, '+Inf': 3 }, count: 3, sum: 555 }],
      );
      assert.deepEqual(
        samplesOf(families, 'iotbridge_script_messages_total', tenant.accountId).map(({ labels, sample }) => [labels, sample.value]).sort(),
        [[{ type: 'alarm', ok: 'false' }, '3'], [{ type: 'status', ok: 'true' }, '1']].sort(),
      );
      assert.equal(histogram(text, 'iotbridge_script_work_seconds').find(({ labels }) => labels.account === tenant.accountId)!.count, 1);

      // The next run defines them again (the same metrics, no error) and goes on counting.
      const again = await runScript(service, tenant.token, `new prometheus.Counter({name: 'door_opens_total', help: 'Door openings'}).inc();`);
      assert.equal(again.status, 'success', again.error ?? '');
      assert.equal(samplesOf(await scrape(service), 'iotbridge_script_door_opens_total', tenant.accountId)[0]!.sample.value, '4');
    });

    it('two accounts’ series of one name are apart; a definition that differs is refused; an account cannot write another’s series', async () => {
      // The shape that must work as written: a bare `new prometheus.Counter({name, help})` is exported (at 0).
      const bare = await runScript(service, other.token, `new prometheus.Counter({name: 'door_opens_total', help: 'Door openings'});`);
      assert.equal(bare.status, 'success', bare.error ?? '');
      let families = await scrape(service);
      assert.equal(samplesOf(families, 'iotbridge_script_door_opens_total', other.accountId)[0]!.sample.value, '0');
      const tenantBefore = samplesOf(families, 'iotbridge_script_door_opens_total', tenant.accountId)[0]!.sample.value;

      const attempts = await runScript(
        service,
        other.token,
        `new prometheus.Counter({name: 'door_opens_total', help: 'Door openings'}).inc(5);
         try { new prometheus.Gauge({name: 'door_opens_total', help: 'x'}); } catch (e) { log(e.message); }
         try { new prometheus.Gauge({name: 'room_temperature_celsius', help: 'x', labelNames: ['floor']}); } catch (e) { log(e.message); }
         try { prometheus.update('gauge', 'room_temperature_celsius', 'set', 99, {room: 'kitchen'}); } catch (e) { log(e.message); }
         var messages = new prometheus.Counter({name: 'messages_total', help: 'Messages by type', labelNames: ['type', 'ok']});
         try { messages.inc({type: 'alarm', account: '${tenant.accountId}'}, 100); } catch (e) { log(e.message); }`,
      );
      assert.equal(attempts.status, 'success', attempts.error ?? '');
      assert.equal(attempts.logs.length, 4, attempts.logs.join('\n'));
      assert.match(attempts.logs[0]!, /^prometheus\.define: metric "door_opens_total" is already defined on this service as a counter with no labels; it cannot be a gauge too/);
      assert.match(attempts.logs[1]!, /already defined on this service as a gauge with labels \[room\]; its labelNames must be the same/);
      assert.match(attempts.logs[2]!, /^prometheus\.update: no metric "room_temperature_celsius" defined by this account/);
      assert.match(attempts.logs[3]!, /the label "account" is reserved/);

      families = await scrape(service);
      assert.equal(samplesOf(families, 'iotbridge_script_door_opens_total', other.accountId)[0]!.sample.value, '5');
      assert.equal(samplesOf(families, 'iotbridge_script_door_opens_total', tenant.accountId)[0]!.sample.value, tenantBefore, 'the tenant’s series is untouched');
      assert.equal(samplesOf(families, 'iotbridge_script_room_temperature_celsius', tenant.accountId).find(({ labels }) => labels.room === 'kitchen')!.sample.value, '21.5');
      assert.deepEqual(samplesOf(families, 'iotbridge_script_messages_total', other.accountId), [], 'nothing written for the refused update');
      assertError(await service.request('GET', '/metrics', { token: tenant.token }), 403, 'IOTB_AUTH_FORBIDDEN', 'an account reads no exposition');
    });

    it('refuses the 51st metric and the 1,001st series of an account with a clear error; the exposition does not grow', async () => {
      const limited = await createAccount(service, 'metrics-limits');
      const fifty = await runScript(
        service,
        limited.token,
        `for (var i = 0; i < 50; i++) new prometheus.Gauge({name: 'limit_' + i, help: 'one of fifty'});
         new prometheus.Gauge({name: 'limit_0', help: 'one of fifty'}).set(7);
         new prometheus.Gauge({name: 'limit_50', help: 'one too many'});`,
      );
      assert.equal(fifty.status, 'failed');
      assert.match(fifty.error ?? '', /prometheus\.define: the account has 50 script metrics already, as many as it may \(IOTBRIDGE_SCRIPT_METRICS_MAX\)/);
      let families = await scrape(service);
      assert.equal(families.filter((f) => f.name.startsWith('iotbridge_script_limit_') && f.metrics.some((s) => s.labels?.account === limited.accountId)).length, 50);
      assert.ok(!families.some((f) => f.name === 'iotbridge_script_limit_50'));
      assert.equal(samplesOf(families, 'iotbridge_script_limit_0', limited.accountId)[0]!.sample.value, '7');

      // removeMetric frees one: its series leave the exposition.
      const freed = await runScript(service, limited.token, `log(prometheus.removeMetric('limit_0')); new prometheus.Gauge({name: 'limit_50', help: 'now it fits'}).set(1);`);
      assert.equal(freed.status, 'success', freed.error ?? '');
      families = await scrape(service);
      assert.ok(!families.some((f) => f.name === 'iotbridge_script_limit_0'), 'no account has limit_0 any more');
      assert.equal(samplesOf(families, 'iotbridge_script_limit_50', limited.accountId)[0]!.sample.value, '1');

      const series = await createAccount(service, 'metrics-series');
      const thousand = await runScript(
        service,
        series.token,
        `var perDevice = new prometheus.Counter({name: 'per_device_total', help: 'Per device', labelNames: ['device']});
         for (var i = 0; i < 1000; i++) perDevice.inc({device: 'd' + i});
         perDevice.inc({device: 'd7'}, 5);
         try { perDevice.inc({device: 'd1000'}); } catch (e) { log(e.message); }`,
      );
      assert.equal(thousand.status, 'success', thousand.error ?? '');
      assert.deepEqual(thousand.logs, [
        'prometheus.update: metric "per_device_total" has 1000 label-value combinations for this account, as many as it may (IOTBRIDGE_SCRIPT_METRICS_SERIES_MAX); remove(labels) or reset() frees them',
      ]);
      let samples = samplesOf(await scrape(service), 'iotbridge_script_per_device_total', series.accountId);
      assert.equal(samples.length, 1000);
      assert.ok(!samples.some(({ labels }) => labels.device === 'd1000'));
      assert.equal(samples.find(({ labels }) => labels.device === 'd7')!.sample.value, '6');

      const removed = await runScript(service, series.token, `var m = new prometheus.Counter({name: 'per_device_total', help: 'Per device', labelNames: ['device']}); m.remove({device: 'd0'}); m.inc({device: 'd1000'});`);
      assert.equal(removed.status, 'success', removed.error ?? '');
      samples = samplesOf(await scrape(service), 'iotbridge_script_per_device_total', series.accountId);
      assert.equal(samples.length, 1000);
      assert.ok(samples.some(({ labels }) => labels.device === 'd1000') && !samples.some(({ labels }) => labels.device === 'd0'));
      const reset = await runScript(service, series.token, `new prometheus.Counter({name: 'per_device_total', help: 'Per device', labelNames: ['device']}).reset();`);
      assert.equal(reset.status, 'success', reset.error ?? '');
      assert.deepEqual(samplesOf(await scrape(service), 'iotbridge_script_per_device_total', series.accountId), []);
    });

    it('refuses bad names, label names, label values and values, each with a message that says why', async () => {
      const run = await runScript(
        service,
        tenant.token,
        `var tries = [
           function () { new prometheus.Counter({name: 'bad-name', help: 'x'}); },
           function () { new prometheus.Counter({name: '9lives', help: 'x'}); },
           function () { new prometheus.Counter({name: 'no_help'}); },
           function () { new prometheus.Counter({name: 'reserved_label', help: 'x', labelNames: ['account']}); },
           function () { new prometheus.Counter({name: 'bad_label', help: 'x', labelNames: ['__x']}); },
           function () { new prometheus.Histogram({name: 'le_label', help: 'x', labelNames: ['le']}); },
           function () { new prometheus.Histogram({name: 'bad_buckets', help: 'x', buckets: [2, 1]}); },
           function () { new prometheus.Counter({name: 'messages_total', help: 'x', labelNames: ['type', 'ok']}).inc({type: 'a'}, -1); },
           function () { new prometheus.Counter({name: 'messages_total', help: 'x', labelNames: ['type', 'ok']}).inc(NaN); },
           function () { new prometheus.Gauge({name: 'room_temperature_celsius', help: 'x', labelNames: ['room']}).set({room: 'a'}, Infinity); },
           function () { new prometheus.Gauge({name: 'room_temperature_celsius', help: 'x', labelNames: ['room']}).set({room: {nested: 1}}, 1); },
           function () { new prometheus.Gauge({name: 'room_temperature_celsius', help: 'x', labelNames: ['room']}).set({floor: '1'}, 1); },
           function () { new prometheus.Gauge({name: 'room_temperature_celsius', help: 'x', labelNames: ['room']}).set({room: 'a'}, '12'); },
           function () { new prometheus.Histogram({name: 'payload_bytes', help: 'x', buckets: [10, 100, 1000]}).observe(); },
           function () { prometheus.Counter({name: 'no_new', help: 'x'}); },
           function () { new prometheus.Counter({name: 'door_opens_total', help: 'Door openings'}).remove('all'); },
           function () { new prometheus.Counter({name: 'door_opens_total', help: 'Door openings'}).labels('a', 'b'); },
         ];
         tries.forEach(function (t) { try { t(); log('accepted'); } catch (e) { log(e.message); } });`,
      );
      assert.equal(run.status, 'success', run.error ?? '');
      const expected = [
        /name must match \[a-zA-Z_:\]\[a-zA-Z0-9_:\]\* .*"bad-name"/,
        /name must match .*"9lives"/,
        /help must be a non-empty string/,
        /the label "account" is reserved/,
        /a label name must match .* not start with __, got "__x"/,
        /the label "le" is reserved in a histogram/,
        /buckets must be 1 to 30 finite numbers in increasing order/,
        /a counter only goes up/,
        /the value must be a finite number, got "NaN"/,
        /the value must be a finite number, got "Infinity"/,
        /label "room" must be a string/,
        /unknown label "floor": the metric's labelNames are \[room\]/,
        /the value must be a finite number, got "12"/,
        /the value must be a finite number, got null/,
        /cannot be invoked without 'new'/,
        /remove takes the labels of a series/,
        /labels\(\{name: value\}\) takes an object/,
      ];
      assert.equal(run.logs.length, expected.length, run.logs.join('\n'));
      expected.forEach((pattern, i) => assert.match(run.logs[i]!, pattern));
      const families = await scrape(service);
      for (const name of ['bad_name', 'no_help', 'reserved_label', 'bad_label', 'le_label', 'bad_buckets', 'no_new']) assert.ok(!families.some((f) => f.name === `iotbridge_script_${name}`), name);
      assert.ok(!samplesOf(families, 'iotbridge_script_room_temperature_celsius', tenant.accountId).some(({ labels }) => labels.room === 'a'));
    });

    it('exposes device queue depths and store query times by dialect and kind', async () => {
      const udp = await createService(service, tenant.token, { name: 'udp nat', type: 'udp' });
      await createEndpoint(service, tenant.token, { key: 'nat-1', serviceId: udp });
      const queued = await runScript(service, tenant.token, `udp.queue('k.nat-1', '01'); udp.queue('k.nat-1', '02');`);
      assert.equal(queued.status, 'success', queued.error ?? '');
      const text = await scrapeText(service);
      const families = parsePrometheusTextFormat(text);
      const depths = Object.fromEntries(family(families, 'iotbridge_device_queue_depth').metrics.map((sample) => [sample.labels?.queue, Number(sample.value)]));
      assert.deepEqual(depths, { lwm2m: 0, udp: 2, mqtt: 0 });
      assert.equal(family(families, 'iotbridge_db_query_duration_seconds').type, 'HISTOGRAM');
      const timings = histogram(text, 'iotbridge_db_query_duration_seconds');
      const count = (kind: string) => timings.find(({ labels }) => labels.dialect === dialect.name && labels.kind === kind)?.count ?? 0;
      assert.ok(count('select') > 0 && count('insert') > 0, JSON.stringify(timings));
      assert.ok(timings.every(({ labels }) => ['select', 'insert', 'update', 'delete', 'other'].includes(labels.kind ?? '') && Object.keys(labels).length === 2), 'dialect and kind only, never SQL');
      family(families, 'iotbridge_db_query_errors_total');
    });
  });
}

describe('script metrics switched off (default)', () => {
  let service: TestService;
  let tenant: TestAccount;

  before(async () => {
    service = await startService('sqlite');
    tenant = await createAccount(service, 'metrics-off');
  });

  after(() => service?.stop());

  it('the classes exist, and using them throws naming IOTBRIDGE_SCRIPT_METRICS; nothing is exported', async () => {
    const run = await runScript(service, tenant.token, `log(typeof prometheus.Counter, typeof prometheus.Gauge, typeof prometheus.Histogram); new prometheus.Counter({name: 'door_opens_total', help: 'Door openings'});`);
    assert.equal(run.status, 'failed');
    assert.deepEqual(run.logs, ['function function function']);
    assert.match(run.error ?? '', /prometheus\.define: script metrics are off: IOTBRIDGE_SCRIPT_METRICS=true on the service turns them on/);
    assert.ok(!(await scrape(service)).some((f) => f.name.startsWith('iotbridge_script_door')));
  });
});
