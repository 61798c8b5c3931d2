// The Map and Location services pages of the web UI in a real browser (Debian's Chromium through
// playwright-core) against the real service serving its own copy of the built UI. One browser for the file;
// each test goes on from where the previous one left the page, and ends with no console error (a CSP violation
// included) and no uncaught exception beyond the failed requests it provoked on purpose.
// Places are real ones: Berlin's extent (52.3383–52.6755 N, 13.0884–13.7611 E), the Brandenburg Gate
// (52.516275 N, 13.377704 E), Munich's Marienplatz (48.137222 N, 11.575556 E), Hamburg's Rathaus
// (53.550556 N, 9.9925 E).
// IOTBRIDGE_UI_SCREENSHOTS=docs/ui also writes map.png and location-services.png.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { browserMissing, eventually, failedRequest, launchBrowser, openPage, PHONE_VIEWPORT, screenshot, sidewaysOverflow, signIn, startUiService, type PageProblems } from '../helpers/browser.js';
import { createEndpoint, createService } from '../helpers/fixtures.js';
import { ADMIN_TOKEN, type TestService } from '../helpers/service.js';

const skip = browserMissing();
const EMAIL = 'dispatcher@example.com';
const PASSWORD = 'correct horse battery';
const GOOGLE_KEY = 'AIzaSy-ui-test-secret-0123456789';

const BERLIN_AREA = {
  name: 'Berlin delivery area',
  tags: ['city:berlin'],
  geometry: {
    type: 'Polygon',
    coordinates: [[[13.0884, 52.3383], [13.7611, 52.3383], [13.7611, 52.6755], [13.0884, 52.6755], [13.0884, 52.3383]]],
  },
};
const MUNICH_DEPOT = { name: 'Munich depot', tags: ['city:munich'], circle: { lat: 48.137222, lon: 11.575556, radius: 15_000 } };
const BRANDENBURG_GATE = { lat: 52.516275, lon: 13.377704 };

/** OpenCelliD's columns: three cells around the Brandenburg Gate and one line with a cell id that is no number. */
const CELLS_CSV = [
  'radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal',
  'LTE,262,1,100,12345,,13.37770,52.51630,500,40,1,1459692060,1459692060,-90',
  'LTE,262,1,100,12346,,13.38100,52.51700,800,12,1,1459692060,1459692060,0',
  'GSM,262,2,801,1001,,13.37400,52.51500,1500,5,1,1459692060,1459692060,0',
  'LTE,262,1,100,not-a-number,,13.4,52.5,100,1,1,0,0,0',
].join('\n');

describe('Map and Location services pages in Chromium', { skip, timeout: 120_000 }, () => {
  let service: TestService;
  let browser: Browser;
  let page: Page;
  let problems: PageProblems;
  let work: string;
  let endpointId: string;

  /** A link of the navigation (pages have links of the same name). */
  const section = (name: string) => page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name, exact: true });
  const map = () => page.getByTestId('location-map');
  const count = (selector: string) => page.locator(selector).count();
  const listedGeofences = () => page.getByRole('list', { name: 'Geofences' }).locator('li.loc-geofence-item .loc-link-button').allTextContents();
  const newGeofenceForm = () => page.getByRole('form', { name: 'New geofence' });
  /** The map's centre (`lat,lon` to 4 decimals) and zoom, as the page records them on the map's box. */
  const view = async () => ({ center: await map().getAttribute('data-center'), zoom: await map().getAttribute('data-zoom') });
  /** Whether the map's centre, recorded once a move (and its animation) has ended, lies within these bounds. */
  const centreBetween = ([south, north]: [number, number], [west, east]: [number, number]) => async () => {
    const [lat, lon] = ((await view()).center ?? '').split(',').map(Number);
    return lat! > south && lat! < north && lon! > west && lon! < east;
  };

  before(async () => {
    [service, browser] = await Promise.all([startUiService(), launchBrowser()]);
    work = mkdtempSync(path.join(tmpdir(), 'iotbridge-ui-location-'));
    const user = await service.request('POST', '/users', { body: { email: EMAIL, password: PASSWORD, name: 'Dispatcher' } });
    assert.equal(user.status, 201, JSON.stringify(user.body));
    const serviceId = await createService(service, ADMIN_TOKEN, { name: 'trackers', type: 'lwm2m' });
    endpointId = (await createEndpoint(service, ADMIN_TOKEN, { key: 'truck-7', serviceId })).id as string;
    for (const geofence of [BERLIN_AREA, MUNICH_DEPOT]) {
      const created = await service.request('POST', '/geofences', { body: geofence });
      assert.equal(created.status, 201, JSON.stringify(created.body));
    }
    const position = await service.request('PUT', '/endpoints/k.truck-7/position', { body: { ...BRANDENBURG_GATE, accuracy: 25 } });
    assert.equal(position.status, 200, JSON.stringify(position.body));

    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    ({ page, problems } = await openPage(context));
    await signIn(page, service.baseUrl, EMAIL, PASSWORD);
  });

  after(async () => {
    await browser?.close();
    await service?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('draws the country basemap, both geofences and the position, each with its popup', async () => {
    await section('Map').click();
    await page.getByRole('heading', { name: 'Map', level: 1 }).waitFor();
    await page.locator('[data-testid="location-map"][data-basemap="loaded"]').waitFor();
    // Natural Earth 1:50m has 241 countries and territories: every one is an SVG path of the basemap.
    assert.ok((await count('path.loc-country')) > 200, 'the country outlines are drawn');
    assert.match((await page.locator('.leaflet-control-attribution').textContent()) ?? '', /Natural Earth/);
    await eventually(() => count('path.loc-geofence'), 2, 'the polygon and the circle on the map');
    await eventually(() => count('path.loc-position'), 1, 'one position marker');
    assert.equal(await count('path.loc-accuracy'), 1, 'its accuracy circle');
    assert.deepEqual((await listedGeofences()).sort(), ['Berlin delivery area', 'Munich depot']);

    // The first view holds Berlin and Munich (it starts on the whole world): its centre lies between them.
    await eventually(centreBetween([48.1, 52.7], [11.5, 13.8]), true, 'the first view fits Berlin and Munich');

    await page.locator('path.loc-position').click();
    const popup = page.locator('.leaflet-popup-content');
    assert.equal(await popup.getByRole('link', { name: endpointId }).getAttribute('href'), `#/endpoints/${endpointId}`);
    assert.match((await popup.textContent()) ?? '', /± 25 m/);
    await page.locator('.leaflet-popup-close-button').click();
    problems.expectNone();
  });

  it('finds Berlin and flies there; a click on the map shows its coordinates and the nearest place', async () => {
    const expected = await service.request('GET', '/location/forward?q=Berlin&limit=5');
    const best = expected.body.items[0];
    assert.equal(best.name, 'Berlin');
    await page.getByRole('searchbox', { name: 'Place' }).fill('Berlin');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByRole('list', { name: 'Places found' }).getByRole('button', { name: 'Berlin, DE' }).first().waitFor();
    await eventually(view, { center: `${best.lat.toFixed(4)},${best.lon.toFixed(4)}`, zoom: '10' }, 'the map flew to Berlin');
    assert.equal(await count('path.loc-place'), 1, 'the place is marked');

    const box = (await map().boundingBox())!;
    await map().click({ position: { x: box.width / 2 + 120, y: box.height / 2 + 80 } });
    const clicked = page.getByTestId('clicked-point');
    await clicked.waitFor();
    const [lat, lon] = ((await clicked.textContent()) ?? '').split(', ').map(Number);
    assert.ok(lon! > best.lon && lat! < best.lat, 'the point clicked is south-east of the centre');
    const nearest = await service.request('GET', `/location/reverse?lat=${lat}&lon=${lon}`);
    assert.equal(nearest.status, 200);
    await eventually(async () => (await page.getByTestId('nearest-place').textContent())?.includes(`Nearest place: ${nearest.body.name}, ${nearest.body.country}`), true, 'the nearest place');
    problems.expectNone();
  });

  it('creates a circle geofence from the form, its centre first picked on the map', async () => {
    const form = newGeofenceForm();
    await form.getByRole('button', { name: 'Pick on map' }).click();
    await page.getByText('Click the map to choose the point.').waitFor();
    const earlier = await page.getByTestId('clicked-point').textContent();
    await map().click({ position: { x: 200, y: 150 } });
    await eventually(async () => (await form.getByLabel('Latitude').inputValue()) !== '', true, 'the latitude picked');
    assert.notEqual(await form.getByLabel('Longitude').inputValue(), '');
    assert.equal(await page.getByTestId('clicked-point').textContent(), earlier, 'a pick is not a click for the nearest place');

    await form.getByLabel('Name').fill('Hamburg depot');
    await form.getByLabel('Tags (optional)').fill('city:hamburg, depot');
    await form.getByLabel('Latitude').fill('53.550556');
    await form.getByLabel('Longitude').fill('9.9925');
    await form.getByLabel('Radius (m)').fill('10000');
    await form.getByRole('button', { name: 'Create geofence' }).click();
    await page.getByRole('status').filter({ hasText: 'Created “Hamburg depot”.' }).waitFor();
    await eventually(async () => (await listedGeofences()).sort(), ['Berlin delivery area', 'Hamburg depot', 'Munich depot'], 'the new geofence in the list');
    await eventually(() => count('path.loc-geofence'), 3, 'the new geofence on the map');
    const stored = await service.request('GET', '/geofences?q=Hamburg');
    assert.deepEqual(stored.body.items.map((item: any) => [item.circle, item.tags]), [[{ lat: 53.550556, lon: 9.9925, radius: 10000 }, ['city:hamburg', 'depot']]]);
    assert.equal(await newGeofenceForm().getByLabel('Name').inputValue(), '', 'the form is empty again');
    problems.expectNone();
  });

  it('shows the API’s message for a polygon whose ring is not closed, and the page’s for text that is not JSON', async () => {
    const geometry = { type: 'Polygon', coordinates: [[[13.3, 52.5], [13.4, 52.5], [13.4, 52.6], [13.31, 52.6]]] };
    const expected = await service.request('POST', '/geofences', { body: { name: 'Broken', geometry } });
    assert.equal(expected.status, 400);
    const form = newGeofenceForm();
    await form.getByLabel('Name').fill('Broken');
    await form.getByLabel('GeoJSON polygon').check();
    await form.getByLabel('GeoJSON geometry').fill(JSON.stringify(geometry));
    await form.getByRole('button', { name: 'Create geofence' }).click();
    await eventually(() => form.getByRole('alert').textContent(), expected.body.error.message, 'the API’s message');
    assert.match(expected.body.error.message, /ring must be closed/);

    await form.getByLabel('GeoJSON geometry').fill('{"type": "Polygon",');
    await form.getByRole('button', { name: 'Create geofence' }).click();
    await eventually(async () => (await form.getByRole('alert').textContent())?.startsWith('The geometry is not JSON'), true, 'the page’s message');
    assert.equal((await service.request('GET', '/geofences?q=Broken')).body.total, 0, 'nothing stored');
    problems.expectNone([failedRequest(400)]);
  });

  it('evaluates the truck at the Brandenburg Gate: it enters the Berlin area', async () => {
    const form = page.getByRole('form', { name: 'Evaluate a position' });
    await form.getByLabel('Endpoint').fill('k.truck-7');
    await form.getByLabel('Latitude').fill(String(BRANDENBURG_GATE.lat));
    await form.getByLabel('Longitude').fill(String(BRANDENBURG_GATE.lon));
    await form.getByRole('button', { name: 'Evaluate' }).click();
    await eventually(() => form.getByRole('list', { name: 'Transitions' }).textContent(), 'enter Berlin delivery area', 'the transition');
    assert.equal(await count('path.loc-position'), 1, 'still one position: the truck’s');
    problems.expectNone();
  });

  it('edits a geofence from its popup, opened from the list', async () => {
    await page.getByRole('list', { name: 'Geofences' }).getByRole('button', { name: 'Munich depot', exact: true }).click();
    const popup = page.locator('.leaflet-popup-content');
    await eventually(() => popup.textContent(), 'Munich depotcircle, 15 kmcity:munichEdit', 'the geofence’s popup');
    await popup.getByRole('link', { name: 'Edit Munich depot' }).click();
    const form = page.getByRole('form', { name: 'Edit “Munich depot”' });
    assert.equal(await form.getByLabel('Radius (m)').inputValue(), '15000');
    assert.equal(await form.getByLabel('Latitude').inputValue(), '48.137222');
    await form.getByLabel('Radius (m)').fill('12000');
    await form.getByRole('button', { name: 'Save geofence' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved “Munich depot”.' }).waitFor();
    await newGeofenceForm().waitFor();
    assert.equal(new URL(page.url()).hash, '#/map', 'back to the form of a new geofence');
    const stored = await service.request('GET', '/geofences?q=Munich');
    assert.deepEqual(stored.body.items[0].circle, { ...MUNICH_DEPOT.circle, radius: 12000 });
    problems.expectNone();
  });

  it('fits every geofence on a fresh load, then deletes one after a confirmation', async () => {
    await page.reload();
    await page.locator('[data-testid="location-map"][data-basemap="loaded"]').waitFor();
    await eventually(() => count('path.loc-geofence'), 3, 'three geofences');
    await eventually(centreBetween([48.1, 53.6], [9.9, 13.8]), true, 'the first view fits Hamburg, Berlin and Munich');
    await screenshot(page, 'map');

    const item = page.locator('li.loc-geofence-item').filter({ hasText: 'Hamburg depot' });
    await item.getByRole('button', { name: 'Delete Hamburg depot' }).click();
    await item.getByText('Delete “Hamburg depot”?').waitFor();
    assert.equal((await service.request('GET', '/geofences')).body.total, 3, 'nothing deleted before the confirmation');
    await item.getByRole('button', { name: 'Yes, delete' }).click();
    await eventually(async () => (await listedGeofences()).sort(), ['Berlin delivery area', 'Munich depot'], 'the list without it');
    await eventually(() => count('path.loc-geofence'), 2, 'the map without it');
    assert.equal((await service.request('GET', '/geofences')).body.total, 2);
    problems.expectNone();
  });

  it('creates an embedded service and imports an OpenCelliD CSV into it', async () => {
    await section('Location').click();
    await page.getByRole('heading', { name: 'Location services', level: 1 }).waitFor();
    await page.getByText('No location services yet').waitFor();
    const form = page.getByRole('form', { name: 'New location service' });
    await form.getByLabel('Name').fill('Berlin cells');
    await form.getByLabel('Type').selectOption('embedded');
    assert.equal(await form.getByLabel('API key').count(), 0, 'no key for an embedded service');
    await form.getByRole('button', { name: 'Create service' }).click();
    await page.getByRole('status').filter({ hasText: 'Created “Berlin cells”.' }).waitFor();

    const file = path.join(work, 'cells.csv');
    writeFileSync(file, CELLS_CSV);
    const importForm = page.getByRole('form', { name: 'Import into “Berlin cells”' });
    await importForm.getByLabel('CSV file').setInputFiles(file);
    await importForm.getByLabel('Format').selectOption('opencellid');
    await importForm.getByRole('button', { name: 'Import' }).click();
    await eventually(() => importForm.getByTestId('import-result').textContent(), 'Imported 3 rows; 1 rejected.', 'the import’s result');
    assert.match((await importForm.getByRole('list', { name: 'First rejected lines' }).textContent()) ?? '', /^line 5: /);
    await eventually(() => page.getByTestId('service-positions').first().textContent(), '3 cells, 0 Wi-Fi', 'the positions counted');
    const { body } = await service.request('GET', '/location/services');
    const shown = await service.request('GET', `/location/services/${body.items[0].id}`);
    assert.deepEqual(shown.body.positions, { cells: 3, wifi: 0 });
    problems.expectNone();
  });

  it('creates a Google service whose key is never shown, reorders and deletes', async () => {
    const form = page.getByRole('form', { name: 'New location service' });
    await form.getByLabel('Name').fill('Google fallback');
    await form.getByLabel('Type').selectOption('google');
    assert.equal(await form.getByLabel('API key').getAttribute('type'), 'password');
    await form.getByLabel('API key').fill(GOOGLE_KEY);
    await form.getByRole('button', { name: 'Create service' }).click();
    await page.getByRole('status').filter({ hasText: 'Created “Google fallback”.' }).waitFor();
    const names = () => page.locator('table[aria-label="Location services"] tbody td.loc-service-name').allTextContents();
    await eventually(names, ['Berlin cells', 'Google fallback'], 'both services in order');
    const row = page.locator('table[aria-label="Location services"] tbody tr').filter({ hasText: 'Google fallback' });
    assert.equal(await row.locator('td').nth(4).textContent(), 'set');
    assert.equal(await form.getByLabel('Type').inputValue(), 'embedded', 'the form is reset');
    const text = await page.locator('body').innerText();
    assert.ok(!text.includes(GOOGLE_KEY), 'the key is not on the page');
    assert.ok(!(await page.content()).includes(GOOGLE_KEY), 'nor in its HTML');
    const stored = await service.request('GET', '/location/services');
    assert.equal(stored.body.items[1].hasApiKey, true);

    await page.getByRole('button', { name: 'Move Google fallback up' }).click();
    await eventually(names, ['Google fallback', 'Berlin cells'], 'Google first');
    const reordered = await service.request('GET', '/location/services');
    assert.deepEqual(reordered.body.items.map((item: any) => [item.name, item.position]), [['Google fallback', 0], ['Berlin cells', 1]]);
    await screenshot(page, 'location-services', { fullPage: true, fromTop: true });

    await row.getByRole('button', { name: 'Delete Google fallback' }).click();
    await row.getByText('Delete “Google fallback”? Its key goes with it.').waitFor();
    await row.getByRole('button', { name: 'Yes, delete' }).click();
    await eventually(names, ['Berlin cells'], 'Google deleted');
    assert.deepEqual((await service.request('GET', '/location/services')).body.items.map((item: any) => item.name), ['Berlin cells']);
    problems.expectNone();
  });

  it('fits a phone’s width: nothing overflows sideways on either page', async () => {
    await page.setViewportSize(PHONE_VIEWPORT);
    await page.getByRole('heading', { name: 'Location services', level: 1 }).waitFor();
    assert.equal(await sidewaysOverflow(page), 0, 'the location services page fits 390 px');
    await section('Map').click();
    await page.locator('[data-testid="location-map"][data-basemap="loaded"]').waitFor();
    await eventually(() => count('path.loc-geofence'), 2, 'the geofences on the phone');
    assert.equal(await sidewaysOverflow(page), 0, 'the map page fits 390 px');
    problems.expectNone();
  });
});
