import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { FastCounter, FastHistogram } from '../../src/observability/fast-series.js';

/** Observations of awkward values: on a bound, between bounds, past the last, zero, many series. */
const OBSERVATIONS: [method: string, route: string, status: number, seconds: number][] = [
  ['GET', '/endpoints/:ref', 200, 0.001],
  ['GET', '/endpoints/:ref', 200, 0.0007],
  ['GET', '/endpoints/:ref', 404, 0.03],
  ['POST', '/endpoints', 201, 12],
  ['GET', '/health', 200, 0],
  ['GET', 'unmatched', 404, 0.0025],
  ['GET', '/endpoints/:ref', 200, 0.5],
  ['DELETE', '/endpoints/:ref', 204, 2.5],
];
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

describe('FastCounter and FastHistogram', () => {
  it('expose exactly the text prom-client\'s Counter and Histogram expose for the same observations', async () => {
    const reference = new Registry();
    const counter = new Counter({ name: 'x_requests_total', help: 'requests', labelNames: ['method', 'route', 'status_code'], registers: [reference] });
    const histogram = new Histogram({ name: 'x_duration_seconds', help: 'durations', labelNames: ['method', 'route'], buckets: BUCKETS, registers: [reference] });
    const fast = new Registry();
    const fastCounter = new FastCounter({ name: 'x_requests_total', help: 'requests' }).register(fast);
    const fastHistogram = new FastHistogram({ name: 'x_duration_seconds', help: 'durations', buckets: BUCKETS }).register(fast);
    for (const [method, route, status, seconds] of OBSERVATIONS) {
      counter.inc({ method, route, status_code: String(status) });
      histogram.observe({ method, route }, seconds);
      fastCounter.inc(`${method} ${route} ${status}`, { method, route, status_code: String(status) });
      fastHistogram.observe(`${method} ${route}`, { method, route }, seconds);
    }
    assert.equal(await fast.metrics(), await reference.metrics());
  });

  it('expose a histogram without labels as prom-client does, at zero before its first observation too', async () => {
    const reference = new Registry();
    const histogram = new Histogram({ name: 'w_run_seconds', help: 'runs', buckets: BUCKETS, registers: [reference] });
    const fast = new Registry();
    const fastHistogram = new FastHistogram({ name: 'w_run_seconds', help: 'runs', buckets: BUCKETS }).register(fast);
    fastHistogram.zero('', {});
    assert.equal(await fast.metrics(), await reference.metrics());
    for (const [, , , seconds] of OBSERVATIONS) {
      histogram.observe(seconds);
      fastHistogram.observe('', {}, seconds);
    }
    assert.equal(await fast.metrics(), await reference.metrics());
  });

  it('start again from nothing when the registry is reset', async () => {
    const registry = new Registry();
    const counter = new FastCounter({ name: 'y_total', help: 'y' }).register(registry);
    counter.inc('a', { kind: 'a' });
    registry.resetMetrics();
    counter.inc('b', { kind: 'b' });
    assert.match(await registry.metrics(), /^y_total\{kind="b"\} 1$/m);
    assert.doesNotMatch(await registry.metrics(), /kind="a"/);
  });

  it('refuses a second metric of the same name on one registry, as prom-client does', () => {
    const registry = new Registry();
    new FastCounter({ name: 'z_total', help: 'z' }).register(registry);
    assert.throws(() => new Counter({ name: 'z_total', help: 'z', registers: [registry] }), /already been registered/);
  });
});
