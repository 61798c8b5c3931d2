// Issue 19: geofences (GeoJSON polygons with holes, MultiPolygons cut at the antimeridian, circles), their
// evaluation over the API and from scripts (enter / exit / inside, `geofence` events in the history, dwell time),
// endpoints' positions, the geospatial namespace, cross-tenant answers, and presence across kill -9.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../helpers/devices.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { FuzzService, fuzzAccount, fuzzEndpoint, fuzzService } from '../helpers/fuzz.js';
import { CrashTestStorage } from '../helpers/crash-storage.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/** A 2 × 2 km square around the centre of Berlin (lon 13.38–13.42, lat 52.51–52.53) with a hole in its middle. */
const BERLIN_WITH_HOLE = {
  type: 'Polygon',
  coordinates: [
    [[13.38, 52.51], [13.42, 52.51], [13.42, 52.53], [13.38, 52.53], [13.38, 52.51]],
    [[13.395, 52.515], [13.405, 52.515], [13.405, 52.525], [13.395, 52.525], [13.395, 52.515]],
  ],
};

/** Around Taveuni (Fiji), cut at the antimeridian as RFC 7946 3.1.9 recommends. */
const FIJI_CUT = {
  type: 'MultiPolygon',
  coordinates: [
    [[[179.5, -17.2], [180, -17.2], [180, -16.4], [179.5, -16.4], [179.5, -17.2]]],
    [[[-180, -17.2], [-179.6, -17.2], [-179.6, -16.4], [-180, -16.4], [-180, -17.2]]],
  ],
};

async function geofenceEvents(service: TestService, token: string, endpoint: string): Promise<Array<{ transition: string; name: string; dwellSeconds?: number }>> {
  const history = await service.request('GET', `/history?type=geofence&endpoint=${endpoint}&limit=100`, { token });
  assert.equal(history.status, 200, JSON.stringify(history.body));
  return (history.body.items as Array<{ data: { transition: string; name: string; dwellSeconds?: number } }>).map((event) => event.data).reverse();
}

for (const dialect of DIALECTS) {
  describe(`geofences (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let serviceId: string;
    let berlinId: string;
    let circleId: string;
    let fijiId: string;

    before(async () => {
      service = await startService(dialect.name);
      tenant = await createAccount(service, 'geofences');
      other = await createAccount(service, 'geofences-other');
      serviceId = await createService(service, tenant.token, { name: 'trackers', type: 'http' });
      for (const key of ['truck-1', 'truck-2', 'boat-1']) await createEndpoint(service, tenant.token, { key, serviceId });
    });

    after(() => service?.stop());

    it('creates polygon, circle and antimeridian geofences; lists them by name prefix and tags', async () => {
      const berlin = await service.request('POST', '/geofences', { token: tenant.token, body: { name: 'Berlin centre', tags: ['city', 'de'], geometry: BERLIN_WITH_HOLE } });
      assert.equal(berlin.status, 201, JSON.stringify(berlin.body));
      berlinId = berlin.body.id;
      assert.deepEqual(berlin.body.geometry.coordinates[1][0], [13.395, 52.515], 'the hole is kept');
      const depot = await service.request('POST', '/geofences', { token: tenant.token, body: { name: 'Depot', tags: ['depot', 'de'], circle: { lat: 52.5, lon: 13.3, radius: 500 } } });
      assert.equal(depot.status, 201, JSON.stringify(depot.body));
      circleId = depot.body.id;
      const fiji = await service.request('POST', '/geofences', { token: tenant.token, body: { name: 'Taveuni', tags: ['island'], geometry: FIJI_CUT } });
      assert.equal(fiji.status, 201, JSON.stringify(fiji.body));
      fijiId = fiji.body.id;

      const all = await service.request('GET', '/geofences', { token: tenant.token });
      assert.deepEqual(all.body.items.map((g: { name: string }) => g.name), ['Berlin centre', 'Depot', 'Taveuni']);
      assert.equal(all.body.total, 3);
      assert.deepEqual((await service.request('GET', '/geofences?q=dep', { token: tenant.token })).body.items.map((g: { id: string }) => g.id), [circleId]);
      assert.deepEqual((await service.request('GET', '/geofences?tag=de&tag=city', { token: tenant.token })).body.items.map((g: { id: string }) => g.id), [berlinId]);
      assert.equal((await service.request('GET', `/geofences/${circleId}`, { token: tenant.token })).body.circle.radius, 500);
    });

    it('refuses bad shapes with the field that is wrong', async () => {
      const cases: Array<[string, Record<string, unknown>, string]> = [
        ['an open ring', { geometry: { type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 1]]] } }, 'geometry.coordinates[0]'],
        ['a bow tie', { geometry: { type: 'Polygon', coordinates: [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]] } }, 'geometry.coordinates[0]'],
        ['latitude 91', { geometry: { type: 'Polygon', coordinates: [[[0, 0], [1, 91], [1, 0], [0, 0]]] } }, 'geometry.coordinates[0][1]'],
        ['both shapes', { geometry: BERLIN_WITH_HOLE, circle: { lat: 0, lon: 0, radius: 10 } }, ''],
        ['no shape', {}, ''],
      ];
      for (const [what, shape, field] of cases) {
        const response = await service.request('POST', '/geofences', { token: tenant.token, body: { name: 'bad', ...shape } });
        assertError(response, 400, 'IOTB_REQUEST_VALIDATION', what);
        if (field) assert.ok(String(response.body.error.details?.field ?? '').startsWith(field), `${what}: ${JSON.stringify(response.body)}`);
      }
      assertError(await service.request('POST', '/geofences', { token: tenant.token, body: { name: 'r', circle: { lat: 0, lon: 0, radius: 0 } } }), 400, 'IOTB_REQUEST_VALIDATION', 'radius 0');
      assertError(await service.request('POST', '/geofences/eval', { token: tenant.token, body: { endpoint: 'k.truck-1', lat: 95, lon: 0 } }), 400, 'IOTB_REQUEST_VALIDATION', 'lat 95');
      assertError(await service.request('POST', '/geofences/eval', { token: tenant.token, body: { endpoint: 'k.nobody', lat: 0, lon: 0 } }), 404, 'IOTB_ENDPOINT_NOT_FOUND', 'no such endpoint');
    });

    it('evaluates a drive through a polygon with a hole: enter, inside on request, exit into the hole, enter again, exit', async () => {
      const at = async (lat: number, lon: number, extra: Record<string, unknown> = {}) => {
        const response = await service.request('POST', '/geofences/eval', { token: tenant.token, body: { endpoint: 'k.truck-1', lat, lon, ...extra } });
        assert.equal(response.status, 200, JSON.stringify(response.body));
        return (response.body.transitions as Array<{ transition: string; geofenceId: string }>).map((t) => `${t.transition} ${t.geofenceId === berlinId ? 'berlin' : t.geofenceId}`);
      };
      assert.deepEqual(await at(52.50, 13.37), [], 'outside');
      assert.deepEqual(await at(52.512, 13.385), ['enter berlin']);
      assert.deepEqual(await at(52.513, 13.386), [], 'still inside: no event');
      assert.deepEqual(await at(52.513, 13.386, { inside: true }), ['inside berlin']);
      assert.deepEqual(await at(52.52, 13.40), ['exit berlin'], 'the hole is outside');
      assert.deepEqual(await at(52.528, 13.415), ['enter berlin']);
      assert.deepEqual(await at(52.54, 13.43), ['exit berlin']);

      const events = await waitFor(async () => {
        const found = await geofenceEvents(service, tenant.token, 'k.truck-1');
        return found.length === 5 ? found : undefined;
      }, 'five geofence events');
      assert.deepEqual(events.map((e) => e.transition), ['enter', 'inside', 'exit', 'enter', 'exit']);
      assert.ok(events.every((e) => e.name === 'Berlin centre'));
      assert.equal(typeof events[2]!.dwellSeconds, 'number', 'an exit says how long the endpoint was inside');
      const position = await service.request('GET', '/endpoints/k.truck-1/position', { token: tenant.token });
      assert.deepEqual([position.body.lat, position.body.lon, position.body.source], [52.54, 13.43, 'api'], 'the last position is kept');
    });

    it('crosses the antimeridian and a circle, and evaluates only the geofences with the given tags', async () => {
      const at = async (endpoint: string, lat: number, lon: number, tags?: string[]) => {
        const response = await service.request('POST', '/geofences/eval', { token: tenant.token, body: { endpoint, lat, lon, ...(tags && { tags }) } });
        assert.equal(response.status, 200, JSON.stringify(response.body));
        return (response.body.transitions as Array<{ transition: string; name: string }>).map((t) => `${t.transition} ${t.name}`);
      };
      // Sailing east along 16.8° S: into the western part, over the date line into the eastern part, out.
      assert.deepEqual(await at('k.boat-1', -16.8, 179.2), []);
      assert.deepEqual(await at('k.boat-1', -16.8, 179.9), ['enter Taveuni']);
      assert.equal((await service.request('GET', `/geofences/${fijiId}`, { token: tenant.token })).body.geometry.type, 'MultiPolygon');
      assert.deepEqual(await at('k.boat-1', -16.8, -179.9), [], 'the same geofence across the date line');
      assert.deepEqual(await at('k.boat-1', -16.8, -179.4), ['exit Taveuni']);

      // The depot circle (500 m around 52.5, 13.3): 300 m north is inside, 700 m is not.
      assert.deepEqual(await at('k.truck-2', 52.5027, 13.3, ['depot']), ['enter Depot']);
      // Evaluated for other tags only, the depot keeps its state: no exit although the truck is far away.
      assert.deepEqual(await at('k.truck-2', 52.52, 13.39, ['city']), ['enter Berlin centre']);
      assert.deepEqual(await at('k.truck-2', 52.5063, 13.3, ['depot']), ['exit Depot']);
    });

    it('lists positions for the map, also in a box across the antimeridian; a position can be set directly', async () => {
      const set = await service.request('PUT', '/endpoints/k.truck-2/position', { token: tenant.token, body: { lat: 48.1374, lon: 11.5755, accuracy: 25 } });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.equal(set.body.accuracy, 25);
      const all = await service.request('GET', '/location/positions', { token: tenant.token });
      assert.equal(all.body.items.length, 3);
      const pacific = await service.request('GET', '/location/positions?bbox=179,-18,-179,-16', { token: tenant.token });
      assert.equal(pacific.body.items.length, 1);
      assert.equal(pacific.body.items[0].lon, -179.4);
      assertError(await service.request('GET', '/location/positions?bbox=0,10,1,5', { token: tenant.token }), 400, 'IOTB_REQUEST_VALIDATION', 'minLat above maxLat');
      assertError(await service.request('GET', '/endpoints/k.truck-3/position', { token: tenant.token }), 404, 'IOTB_ENDPOINT_NOT_FOUND', 'no such endpoint');
      await createEndpoint(service, tenant.token, { key: 'parked', serviceId });
      assertError(await service.request('GET', '/endpoints/k.parked/position', { token: tenant.token }), 404, 'IOTB_POSITION_NOT_FOUND', 'never positioned');
    });

    it('scripts evaluate geofences (events reach triggers), geolocate, and measure distances', async () => {
      // A trigger on the geofence events of the account: it sees what an evaluation emitted.
      const watcher = await service.request('POST', '/triggers', { token: tenant.token, body: { name: 'watch fences', events: ['geofence'], script: "log(event.data.transition + ' ' + event.data.name);" } });
      assert.equal(watcher.status, 201, JSON.stringify(watcher.body));
      const evaluated = await runScript(
        service,
        tenant.token,
        "var r = geofence.eval(null, {lat: 52.512, lon: 13.385}); log(JSON.stringify(r.transitions.map(function (t) { return t.transition + ' ' + t.name; })));" +
          ' log(geofence.contains(' + JSON.stringify(berlinId) + ', {lat: 52.52, lon: 13.40}), geofence.contains(' + JSON.stringify(berlinId) + ', {lat: 52.512, lon: 13.385}));' +
          " log(Math.round(geospatial.geodist({lat: 48.8566, lon: 2.3522}, {lat: 51.5074, lon: -0.1278}, {unit: 'km'})), Math.round(geospatial.bearing({lat: 0, lon: 0}, {lat: 0, lon: 1})));" +
          " log(location.geolocate({cells: [{radioType: 'lte', mcc: 262, mnc: 1, tac: 1, cellId: 1}]}), location.forward('Berlin', {limit: 1})[0].country);",
        { endpoint: 'k.truck-1' },
      );
      assert.equal(evaluated.status, 'success', evaluated.error ?? '');
      assert.deepEqual(evaluated.logs, ['["enter Berlin centre"]', 'false true', '344 90', 'null DE']);
      await waitFor(async () => {
        const runs = await service.request('GET', `/executions?triggerId=${watcher.body.id}`, { token: tenant.token });
        return (runs.body.items as Array<{ logs: string[] }>).some((run) => run.logs.includes('enter Berlin centre')) ? true : undefined;
      }, 'the watcher run on the enter event');

      const bad = await runScript(service, tenant.token, 'geofence.eval(null, {lat: 100, lon: 0});', { endpoint: 'k.truck-1' });
      assert.equal(bad.status, 'failed');
      assert.match(bad.error ?? '', /IOTB_REQUEST_VALIDATION/);
      const badDistance = await runScript(service, tenant.token, 'geospatial.geodist({lat: 1}, {lat: 2, lon: 3});');
      assert.equal(badDistance.status, 'failed');
    });

    it("another account neither sees, changes nor evaluates against the tenant's geofences", async () => {
      for (const [method, url, body] of [
        ['GET', `/geofences/${berlinId}`, undefined],
        ['PUT', `/geofences/${berlinId}`, { name: 'mine', circle: { lat: 0, lon: 0, radius: 10 } }],
        ['DELETE', `/geofences/${berlinId}`, undefined],
      ] as const) {
        assertError(await service.request(method, url, { token: other.token, body }), 404, 'IOTB_GEOFENCE_NOT_FOUND', `${method} ${url}`);
      }
      assert.deepEqual((await service.request('GET', '/geofences', { token: other.token })).body.items, []);
      assert.deepEqual((await service.request('GET', '/location/positions', { token: other.token })).body.items, []);
      const truck = (await service.request('GET', '/endpoints/k.truck-1', { token: tenant.token })).body.id as string;
      assertError(await service.request('POST', '/geofences/eval', { token: other.token, body: { endpoint: truck, lat: 52.512, lon: 13.385 } }), 404, 'IOTB_ENDPOINT_NOT_FOUND', "the tenant's endpoint");
      assertError(await service.request('PUT', `/endpoints/${truck}/position`, { token: other.token, body: { lat: 0, lon: 0 } }), 404, 'IOTB_ENDPOINT_NOT_FOUND', 'set');
      // The other account's own endpoint at a point inside the tenant's Berlin geofence: nothing happens.
      const otherService = await createService(service, other.token, { name: 'x', type: 'http' });
      await createEndpoint(service, other.token, { key: 'spy', serviceId: otherService });
      const spy = await service.request('POST', '/geofences/eval', { token: other.token, body: { endpoint: 'k.spy', lat: 52.512, lon: 13.385 } });
      assert.deepEqual(spy.body.transitions, []);
      const script = await runScript(service, other.token, `log(geofence.get(${JSON.stringify(berlinId)}));`);
      assert.deepEqual(script.logs, ['null']);
      const contains = await runScript(service, other.token, `geofence.contains(${JSON.stringify(berlinId)}, {lat: 52.512, lon: 13.385});`);
      assert.match(contains.error ?? '', /IOTB_GEOFENCE_NOT_FOUND/);
      const evalOther = await runScript(service, other.token, `geofence.eval(${JSON.stringify(truck)}, {lat: 52.512, lon: 13.385});`);
      assert.match(evalOther.error ?? '', /IOTB_ENDPOINT_NOT_FOUND/);
      const located = await runScript(service, other.token, "log(location.geolocate({cells: [{radioType: 'lte', mcc: 262, mnc: 1, tac: 1, cellId: 1}]}));");
      assert.deepEqual(located.logs, ['null'], "the tenant's providers are not the other account's");
    });

    it('replaces and deletes a geofence; an endpoint inside a deleted one has no state left', async () => {
      const replaced = await service.request('PUT', `/geofences/${circleId}`, { token: tenant.token, body: { name: 'Depot (large)', tags: ['depot'], circle: { lat: 52.5, lon: 13.3, radius: 5000 } } });
      assert.equal(replaced.status, 200, JSON.stringify(replaced.body));
      assert.equal(replaced.body.circle.radius, 5000);
      const inside = await service.request('POST', '/geofences/eval', { token: tenant.token, body: { endpoint: 'k.truck-2', lat: 52.52, lon: 13.3, tags: ['depot'] } });
      assert.deepEqual(inside.body.transitions.map((t: { name: string }) => t.name), ['Depot (large)'], 'the new radius applies at once');
      assert.equal((await service.request('DELETE', `/geofences/${circleId}`, { token: tenant.token })).status, 204);
      const after = await service.request('POST', '/geofences/eval', { token: tenant.token, body: { endpoint: 'k.truck-2', lat: 0, lon: 0, tags: ['depot'] } });
      assert.deepEqual(after.body.transitions, [], 'no exit from a geofence that is gone');
      assertError(await service.request('GET', `/geofences/${circleId}`, { token: tenant.token }), 404, 'IOTB_GEOFENCE_NOT_FOUND', 'gone');
    });
  });

  describe(`geofence presence across kill -9 (${dialect.name})`, { skip: dialect.skip, timeout: 120_000 }, () => {
    let storage: CrashTestStorage;
    let service: FuzzService;

    before(async () => {
      storage = await CrashTestStorage.create(dialect.name, 'geofence-restart');
      service = await storage.start();
    });
    after(async () => {
      await service?.stop();
      await storage?.remove();
    });

    it('an endpoint inside before the crash exits after it, with its dwell time', async () => {
      const { token } = await fuzzAccount(service, 'geofence-restart');
      const serviceId = await fuzzService(service, token, { name: 'trackers', type: 'http' });
      await fuzzEndpoint(service, token, { key: 'van', serviceId });
      const fence = await service.request('POST', '/geofences', { token, body: { name: 'yard', circle: { lat: 10, lon: 10, radius: 1000 } } });
      assert.equal(fence.status, 201, fence.text);
      const entered = await service.request('POST', '/geofences/eval', { token, body: { endpoint: 'k.van', lat: 10, lon: 10 } });
      assert.match(entered.text, /"transition":"enter"/);

      await CrashTestStorage.kill(service);
      service = await storage.start();

      const stayed = await service.request('POST', '/geofences/eval', { token, body: { endpoint: 'k.van', lat: 10.001, lon: 10 } });
      assert.match(stayed.text, /"transitions":\[\]/, 'still inside: no second enter after the restart');
      const left = await service.request('POST', '/geofences/eval', { token, body: { endpoint: 'k.van', lat: 11, lon: 10 } });
      assert.equal(left.status, 200, left.text);
      const [exit] = (JSON.parse(left.text) as { transitions: Array<{ transition: string; dwellSeconds: number }> }).transitions;
      assert.equal(exit?.transition, 'exit');
      assert.ok(exit.dwellSeconds >= 0);
      const position = await service.request('GET', '/endpoints/k.van/position', { token });
      assert.match(position.text, /"lat":11/);
    });
  });
}
