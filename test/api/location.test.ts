// Issue 19: location services per account, the OpenCelliD import into an embedded service, geolocation from
// cells and Wi-Fi (embedded, then an HTTP provider in the Google format on loopback), geocoding with the embedded
// places, usage counts, and every route's cross-tenant and bad-input answers.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { assertError, createAccount, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/** Berlin Alexanderplatz, where the sample's cells sit around. */
const CENTRE = { lat: 52.5219, lon: 13.4132 };

/**
 * A sample in OpenCelliD's column order (radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,
 * updated,averageSignal) with its header: `count` LTE cells of MCC 262 / MNC 1 / TAC 100 spread over ~0.2° around
 * the centre, cell 12345 at a known spot, three GSM cells around a point in Munich, and two bad lines.
 */
function openCellIdSample(count: number): string {
  const lines = ['radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal'];
  for (let i = 0; i < count; i++) {
    const lat = CENTRE.lat + ((i % 100) - 50) * 0.002;
    const lon = CENTRE.lon + (Math.floor(i / 100) - 25) * 0.004;
    lines.push(`LTE,262,1,100,${20000 + i},,${lon.toFixed(5)},${lat.toFixed(5)},1000,12,1,1459692060,1459692060,0`);
  }
  lines.push('LTE,262,1,100,12345,,13.37700,52.51630,500,40,1,1459692060,1459692060,-90');
  // Around Marienplatz, Munich (48.1374, 11.5755): north, south-west and south-east of it, 1 km each.
  lines.push('GSM,262,2,801,1001,,11.57550,48.14640,1500,5,1,1459692060,1459692060,0');
  lines.push('GSM,262,2,801,1002,,11.56470,48.13290,1500,5,1,1459692060,1459692060,0');
  lines.push('GSM,262,2,801,1003,,11.58630,48.13290,1500,5,1,1459692060,1459692060,0');
  lines.push('LTE,262,1,100,not-a-number,,13.4,52.5,100,1,1,0,0,0');
  lines.push('LTE,262,1,100,77,,13.4,95.5,100,1,1,0,0,0');
  return `${lines.join('\n')}\n`;
}

/** A geolocation API in the Google format (POST ?key=… {cellTowers, wifiAccessPoints} → {location, accuracy}). */
class GoogleStyleProvider {
  readonly server: Server;
  readonly seen: Array<{ url: string; body: Record<string, unknown> }> = [];

  constructor() {
    this.server = createServer((request: IncomingMessage, response) => {
      let text = '';
      request.on('data', (chunk: Buffer) => (text += chunk.toString()));
      request.on('end', () => {
        const body = JSON.parse(text) as { cellTowers?: Array<{ cellId: number }> };
        this.seen.push({ url: request.url ?? '', body });
        response.setHeader('content-type', 'application/json');
        if (!request.url?.includes('key=provider-secret-key')) {
          response.statusCode = 400;
          return response.end(JSON.stringify({ error: { code: 400, message: 'API key not valid', errors: [{ reason: 'keyInvalid' }] } }));
        }
        if (body.cellTowers?.[0]?.cellId === 424242) return response.end(JSON.stringify({ location: { lat: 35.6895, lng: 139.6917 }, accuracy: 1200 }));
        response.statusCode = 404;
        response.end(JSON.stringify({ error: { code: 404, message: 'Not Found', errors: [{ reason: 'notFound' }] } }));
      });
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/geolocation/v1/geolocate`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function importCsv(service: TestService, token: string, id: string, csv: string, query = ''): Promise<{ status: number; body: Record<string, any> }> {
  const response = await fetch(`${service.baseUrl}/location/services/${id}/import${query}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv' }, body: csv });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

for (const dialect of DIALECTS) {
  describe(`location: services, import, geolocation, geocoding (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let embeddedId: string;
    const provider = new GoogleStyleProvider();
    let providerUrl: string;

    before(async () => {
      providerUrl = await provider.start();
      service = await startService(dialect.name, { outboundAllow: ['127.0.0.1/32'] });
      tenant = await createAccount(service, 'location');
      other = await createAccount(service, 'location-other');
    });

    after(async () => {
      await service?.stop();
      await provider.stop();
    });

    it('creates an embedded service and imports an OpenCelliD CSV: rows stored, bad rows counted with their lines', async () => {
      const created = await service.request('POST', '/location/services', { token: tenant.token, body: { name: 'cells', type: 'embedded' } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body.type, 'embedded');
      assert.equal(created.body.hasApiKey, false);
      embeddedId = created.body.id;

      const imported = await importCsv(service, tenant.token, embeddedId, openCellIdSample(5000));
      assert.equal(imported.status, 200, JSON.stringify(imported.body));
      assert.equal(imported.body.state, 'done');
      assert.equal(imported.body.rows, 5004);
      assert.equal(imported.body.rejected, 2);
      assert.deepEqual(imported.body.firstErrors.map((e: { line: number }) => e.line), [5006, 5007]);
      const shown = await service.request('GET', `/location/services/${embeddedId}`, { token: tenant.token });
      assert.deepEqual(shown.body.positions, { cells: 5004, wifi: 0 });
      assert.equal(shown.body.import.state, 'done');

      // Importing the same rows again replaces them: no duplicates.
      const again = await importCsv(service, tenant.token, embeddedId, openCellIdSample(5000));
      assert.equal(again.body.rows, 5004);
      assert.deepEqual((await service.request('GET', `/location/services/${embeddedId}`, { token: tenant.token })).body.positions, { cells: 5004, wifi: 0 });
    });

    it('geolocates the issue’s request from the imported cell, and several cells to a weighted point between them', async () => {
      const one = await service.request('POST', '/location/geolocate', { token: tenant.token, body: { cells: [{ radioType: 'lte', mcc: 262, mnc: 1, lac: 100, cellId: 12345 }] } });
      assert.equal(one.status, 200, JSON.stringify(one.body));
      assert.ok(Math.abs(one.body.lat - 52.5163) < 1e-4 && Math.abs(one.body.lon - 13.377) < 1e-4, JSON.stringify(one.body));
      assert.equal(one.body.accuracy, 500);
      assert.equal(one.body.source, 'cell');
      assert.deepEqual(one.body.provider, { id: embeddedId, name: 'cells', type: 'embedded' });
      assert.equal(one.body.cached, false);
      assert.equal((await service.request('POST', '/location/geolocate', { token: tenant.token, body: { cells: [{ radioType: 'lte', mcc: 262, mnc: 1, lac: 100, cellId: 12345 }] } })).body.cached, true);

      // Three cells 1 km around Marienplatz: the estimate lies between them, not on the first.
      const three = await service.request('POST', '/location/geolocate', {
        token: tenant.token,
        body: { cellTowers: [1001, 1002, 1003].map((cellId) => ({ radioType: 'gsm', mobileCountryCode: 262, mobileNetworkCode: 2, locationAreaCode: 801, cellId })) },
      });
      assert.equal(three.status, 200, JSON.stringify(three.body));
      assert.deepEqual(three.body.matched, { cells: 3, wifi: 0 });
      assert.ok(Math.abs(three.body.lat - 48.1374) < 0.005 && Math.abs(three.body.lon - 11.5755) < 0.005, `near Marienplatz: ${JSON.stringify(three.body)}`);
    });

    it('imports Wi-Fi positions and prefers them over a cell', async () => {
      const wifi = ['mac,lon,lat,range', '00:11:22:33:44:55,13.40500,52.52000,60', '00:11:22:33:44:56,13.40540,52.52020,60'].join('\n');
      const imported = await importCsv(service, tenant.token, embeddedId, wifi, '?format=wifi');
      assert.equal(imported.body.rows, 2, JSON.stringify(imported.body));
      const located = await service.request('POST', '/location/geolocate', {
        token: tenant.token,
        body: { cells: [{ radioType: 'lte', mcc: 262, mnc: 1, tac: 100, cellId: 12345 }], wifiAccessPoints: [{ macAddress: '00-11-22-33-44-55', signalStrength: -60 }, { macAddress: '001122334456', signalStrength: -70 }] },
      });
      assert.equal(located.status, 200, JSON.stringify(located.body));
      assert.ok(Math.abs(located.body.lat - 52.5201) < 0.001 && Math.abs(located.body.lon - 13.4052) < 0.001, JSON.stringify(located.body));
      assert.ok(located.body.accuracy < 200, 'Wi-Fi accuracy, not the cell’s 500 m');
      assert.ok(located.body.source.includes('wifi'));
    });

    it('falls back to an HTTP provider in the Google format; its key is never shown; unknown everywhere is 404', async () => {
      const refused = await service.request('POST', '/location/services', { token: tenant.token, body: { name: 'google', type: 'google', url: providerUrl } });
      assertError(refused, 400, 'IOTB_REQUEST_VALIDATION', 'a google service needs its key');
      const created = await service.request('POST', '/location/services', { token: tenant.token, body: { name: 'google', type: 'google', url: providerUrl, apiKey: 'provider-secret-key' } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body.hasApiKey, true);
      assert.equal(created.body.position, 1, 'after the embedded one');
      const listed = await service.request('GET', '/location/services', { token: tenant.token });
      assert.deepEqual(listed.body.items.map((s: { name: string }) => s.name), ['cells', 'google']);
      assert.ok(!JSON.stringify(listed.body).includes('provider-secret-key'), 'the key is write-only');

      const located = await service.request('POST', '/location/geolocate', { token: tenant.token, body: { cells: [{ radioType: 'lte', mcc: 440, mnc: 10, tac: 5, cellId: 424242 }] } });
      assert.equal(located.status, 200, JSON.stringify(located.body));
      assert.deepEqual([located.body.lat, located.body.lon, located.body.accuracy, located.body.provider.type], [35.6895, 139.6917, 1200, 'google']);
      const sent = provider.seen.at(-1)!;
      assert.match(sent.url, /key=provider-secret-key/);
      assert.deepEqual((sent.body.cellTowers as unknown[])[0], { cellId: 424242, locationAreaCode: 5, mobileCountryCode: 440, mobileNetworkCode: 10 });

      assertError(await service.request('POST', '/location/geolocate', { token: tenant.token, body: { cells: [{ radioType: 'lte', mcc: 440, mnc: 10, tac: 5, cellId: 1 }] } }), 404, 'IOTB_LOCATION_NOT_FOUND', 'nobody knows it');

      // A wrong key: the provider's 400 is a failure (502) whose message does not carry the key.
      const changed = await service.request('PATCH', `/location/services/${created.body.id}`, { token: tenant.token, body: { apiKey: 'wrong-key-0000' } });
      assert.equal(changed.status, 200, JSON.stringify(changed.body));
      const failed = await service.request('POST', '/location/geolocate', { token: tenant.token, body: { cells: [{ radioType: 'lte', mcc: 440, mnc: 10, tac: 5, cellId: 2 }] } });
      assertError(failed, 502, 'IOTB_LOCATION_PROVIDER_FAILED', 'a wrong key');
      assert.ok(!JSON.stringify(failed.body).includes('wrong-key-0000'));
      await service.request('DELETE', `/location/services/${created.body.id}`, { token: tenant.token });
    });

    it('refuses a provider URL on an address the service does not reach, and bad requests with the field named', async () => {
      const refused = await service.request('POST', '/location/services', { token: tenant.token, body: { name: 'metadata', type: 'google', url: 'http://169.254.169.254/latest', apiKey: 'k' } });
      assertError(refused, 403, 'IOTB_OUTBOUND_ADDRESS_REFUSED', 'link-local');
      assertError(await service.request('POST', '/location/services', { token: tenant.token, body: { name: 'x', type: 'carrier-pigeon' } }), 400, 'IOTB_REQUEST_VALIDATION', 'unknown type');
      assertError(await service.request('POST', '/location/services', { token: tenant.token, body: { name: 'x', type: 'embedded', apiKey: 'k' } }), 400, 'IOTB_REQUEST_VALIDATION', 'embedded with a key');
      const bad = await service.request('POST', '/location/geolocate', { token: tenant.token, body: { cells: [{ radioType: 'lte', mcc: 2620, mnc: 1, tac: 1, cellId: 1 }] } });
      assertError(bad, 400, 'IOTB_REQUEST_VALIDATION', 'mcc out of range');
      assert.equal(bad.body.error.details.field, 'cells[0].mcc');
      assertError(await service.request('POST', '/location/geolocate', { token: tenant.token, body: {} }), 400, 'IOTB_REQUEST_VALIDATION', 'nothing to locate');
      const notCsv = await importCsv(service, tenant.token, embeddedId, '\u0000\u0001garbage\n1,2\n');
      assert.equal(notCsv.status, 200, 'a file of bad rows imports nothing and says so');
      assert.equal(notCsv.body.rows, 0);
      assert.ok(notCsv.body.rejected >= 1);
    });

    it('geocodes well-known places with the embedded places', async () => {
      const berlin = await service.request('GET', '/location/forward?q=Berlin', { token: tenant.token });
      assert.equal(berlin.status, 200, JSON.stringify(berlin.body));
      const first = berlin.body.items[0];
      assert.equal(first.name, 'Berlin');
      assert.equal(first.country, 'DE');
      // Published: 52.5200 N, 13.4050 E; within 0.05° (~5 km).
      assert.ok(Math.abs(first.lat - 52.52) < 0.05 && Math.abs(first.lon - 13.405) < 0.05, JSON.stringify(first));
      assert.equal(berlin.body.provider.type, 'embedded');
      const paris = await service.request('GET', '/location/forward?q=paris&country=US&limit=3', { token: tenant.token });
      assert.ok(paris.body.items.length > 0 && paris.body.items.every((p: { country: string }) => p.country === 'US'));

      const reverse = await service.request('GET', '/location/reverse?lat=48.8566&lon=2.3522', { token: tenant.token });
      assert.equal(reverse.status, 200, JSON.stringify(reverse.body));
      assert.equal(reverse.body.name, 'Paris');
      assert.ok(reverse.body.distance < 5000, `${reverse.body.distance} m`);
      assertError(await service.request('GET', '/location/reverse?lat=91&lon=0', { token: tenant.token }), 400, 'IOTB_REQUEST_VALIDATION', 'lat 91');
      assertError(await service.request('GET', '/location/forward?q=', { token: tenant.token }), 400, 'IOTB_REQUEST_VALIDATION', 'empty query');
    });

    it("asks the account's Nominatim service first for geocoding, falls back to the embedded places when it fails, and only for that account", async () => {
      const answers: string[] = [];
      const nominatim = createServer((request, response) => {
        answers.push(request.url ?? '');
        response.setHeader('content-type', 'application/json');
        if (request.url?.startsWith('/search') && request.url.includes('q=Unter+den+Linden')) {
          return response.end(JSON.stringify([{ place_id: 1, licence: 'Data © OpenStreetMap contributors, ODbL 1.0', osm_type: 'way', osm_id: 4, lat: '52.5170365', lon: '13.3888599', category: 'highway', type: 'primary', importance: 0.5, name: 'Unter den Linden', display_name: 'Unter den Linden, Mitte, Berlin, 10117, Deutschland', address: { road: 'Unter den Linden', city: 'Berlin', country_code: 'de' } }]));
        }
        response.statusCode = 500;
        response.end('{"error":"down"}');
      });
      await new Promise<void>((resolve) => nominatim.listen(0, '127.0.0.1', resolve));
      try {
        const url = `http://127.0.0.1:${(nominatim.address() as AddressInfo).port}`;
        const created = await service.request('POST', '/location/services', { token: tenant.token, body: { name: 'osm', type: 'nominatim', url } });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        const street = await service.request('GET', '/location/forward?q=Unter%20den%20Linden', { token: tenant.token });
        assert.equal(street.status, 200, JSON.stringify(street.body));
        assert.equal(street.body.provider.type, 'nominatim');
        assert.deepEqual([street.body.items[0].name, street.body.items[0].country, street.body.items[0].lat], ['Unter den Linden', 'DE', 52.5170365]);
        // The provider fails (500): the embedded places answer.
        const city = await service.request('GET', '/location/forward?q=Hamburg', { token: tenant.token });
        assert.equal(city.body.provider.type, 'embedded');
        assert.equal(city.body.items[0].name, 'Hamburg');
        const asked = answers.length;
        const others = await service.request('GET', '/location/forward?q=Unter%20den%20Linden', { token: other.token });
        assert.equal(others.body.provider.type, 'embedded', "another account does not use the tenant's provider");
        assert.equal(answers.length, asked);
        await service.request('DELETE', `/location/services/${created.body.id}`, { token: tenant.token });
      } finally {
        await new Promise<void>((resolve) => nominatim.close(() => resolve()));
      }
    });

    it('counts every lookup per account and day', async () => {
      const usage = await service.request('GET', '/location/usage', { token: tenant.token });
      assert.equal(usage.status, 200, JSON.stringify(usage.body));
      const count = (kind: string) => usage.body.items.filter((row: { kind: string }) => row.kind === kind).reduce((sum: number, row: { count: number }) => sum + row.count, 0);
      assert.ok(count('geolocate') >= 7, JSON.stringify(usage.body));
      assert.ok(count('forward') >= 2 && count('reverse') >= 1, JSON.stringify(usage.body));
      const others = (await service.request('GET', '/location/usage', { token: other.token })).body.items as Array<{ kind: string; count: number }>;
      assert.deepEqual(others.map((row) => [row.kind, row.count]), [['forward', 1]], "another account counts only its own lookup");
    });

    it("another account neither sees nor changes the services, nor geolocates with the tenant's cells", async () => {
      for (const [method, path, body] of [
        ['GET', `/location/services/${embeddedId}`, undefined],
        ['PATCH', `/location/services/${embeddedId}`, { name: 'mine' }],
        ['DELETE', `/location/services/${embeddedId}`, undefined],
      ] as const) {
        assertError(await service.request(method, path, { token: other.token, body }), 404, 'IOTB_LOCATION_SERVICE_NOT_FOUND', `${method} ${path}`);
      }
      const imported = await importCsv(service, other.token, embeddedId, openCellIdSample(1));
      assert.equal(imported.status, 404);
      assert.deepEqual((await service.request('GET', '/location/services', { token: other.token })).body.items, []);
      assertError(
        await service.request('POST', '/location/geolocate', { token: other.token, body: { cells: [{ radioType: 'lte', mcc: 262, mnc: 1, lac: 100, cellId: 12345 }] } }),
        404,
        'IOTB_LOCATION_NOT_FOUND',
        "the tenant's cells are not the other account's",
      );
      assertError(await service.request('GET', '/location/services', { token: null }), 401, 'IOTB_AUTH_TOKEN_MISSING', 'no token');
    });

    it('deletes a service with its positions', async () => {
      const deleted = await service.request('DELETE', `/location/services/${embeddedId}`, { token: tenant.token });
      assert.equal(deleted.status, 204);
      assertError(await service.request('GET', `/location/services/${embeddedId}`, { token: tenant.token }), 404, 'IOTB_LOCATION_SERVICE_NOT_FOUND', 'gone');
      assertError(
        await service.request('POST', '/location/geolocate', { token: tenant.token, body: { cells: [{ radioType: 'lte', mcc: 262, mnc: 1, lac: 100, cellId: 20001 }] } }),
        404,
        'IOTB_LOCATION_NOT_FOUND',
        'no service left',
      );
    });
  });
}
