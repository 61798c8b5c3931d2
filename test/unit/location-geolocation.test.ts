import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { inspect } from 'node:util';
import { AppError } from '../../src/errors.js';
import { estimatePosition, type LocationMatch } from '../../src/location/estimate.js';
import { cellKey, normaliseMac, parseGeolocationRequest } from '../../src/location/geolocation-input.js';
import { GoogleStyleGeolocation, UnwiredLabsGeolocation } from '../../src/location/geolocation-providers.js';
import type { HttpJson } from '../../src/location/http-json.js';
import { readOpenCellIdCsv, readWifiCsv, type CellRow, type WifiRow } from '../../src/location/opencellid-csv.js';

// Real places (Wikipedia coordinates), degrees.
const BRANDENBURG_GATE = { lat: 52.5163, lon: 13.3777 };
const REICHSTAG = { lat: 52.5186, lon: 13.3761 };
const POTSDAMER_PLATZ = { lat: 52.5096, lon: 13.376 };
const FRIEDRICHSTRASSE_STATION = { lat: 52.5202, lon: 13.3869 };
const HOTEL_ADLON = { lat: 52.5161, lon: 13.3802 };
const MARIENPLATZ_MUNICH = { lat: 48.1374, lon: 11.5755 };

/** Haversine distance in metres: the test's own yardstick, independent of the estimator's vector maths. */
function metres(a: { lat: number; lon: number }, b: { lat: number; lon: number }): number {
  const rad = Math.PI / 180;
  const h = Math.sin(((b.lat - a.lat) * rad) / 2) ** 2 + Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(((b.lon - a.lon) * rad) / 2) ** 2;
  return 2 * 6_371_008.8 * Math.asin(Math.sqrt(h));
}

function validationField(body: unknown): string {
  try {
    parseGeolocationRequest(body);
  } catch (error) {
    assert.ok(error instanceof AppError, String(error));
    assert.equal(error.code, 'IOTB_REQUEST_VALIDATION');
    return (error.details as { field: string }).field;
  }
  assert.fail(`accepted ${JSON.stringify(body)}`);
}

const lteCell = { radioType: 'lte', mcc: 262, mnc: 1, lac: 100, cellId: 12345 };

describe('parseGeolocationRequest', () => {
  it('reads the documented shape: POST /location/geolocate {"cells":[{"radioType":"lte","mcc":262,"mnc":1,"lac":100,"cellId":12345}]}', () => {
    assert.deepEqual(parseGeolocationRequest({ cells: [lteCell] }), { cells: [{ radioType: 'lte', mcc: 262, mnc: 1, area: 100, cellId: 12345 }], wifi: [] });
  });

  it("reads Google's names: cellTowers, wifiAccessPoints, a top-level radioType, newRadioCellId", () => {
    const request = parseGeolocationRequest({
      radioType: 'gsm',
      considerIp: false,
      carrier: 'Vodafone',
      cellTowers: [
        { cellId: 42, locationAreaCode: 415, mobileCountryCode: 310, mobileNetworkCode: 410, age: 0, signalStrength: -60, timingAdvance: 15 },
        { radioType: 'NR', newRadioCellId: 2 ** 36 - 1, locationAreaCode: 7, mobileCountryCode: 262, mobileNetworkCode: 2 },
      ],
      wifiAccessPoints: [{ macAddress: '3C:37:86:5D:75:D4', signalStrength: -35, signalToNoiseRatio: 0 }],
    });
    assert.deepEqual(request.cells, [
      { radioType: 'gsm', mcc: 310, mnc: 410, area: 415, cellId: 42, signalStrength: -60, timingAdvance: 15, age: 0 },
      { radioType: 'nr', mcc: 262, mnc: 2, area: 7, cellId: 68719476735 },
    ]);
    assert.deepEqual(request.wifi, [{ macAddress: '3c:37:86:5d:75:d4', signalStrength: -35 }]);
    assert.equal(request.considerIp, false);
  });

  it('takes umts for wcdma, any case, tac for lac and signal for signalStrength', () => {
    const { cells } = parseGeolocationRequest({ cells: [{ radioType: 'UMTS', mcc: 262, mnc: 2, tac: 801, cellId: 86355, signal: -87 }] });
    assert.deepEqual(cells, [{ radioType: 'wcdma', mcc: 262, mnc: 2, area: 801, cellId: 86355, signalStrength: -87 }]);
  });

  it('normalises MAC addresses to lower-case colon form', () => {
    for (const written of ['aa:bb:cc:dd:ee:ff', 'AA-BB-CC-DD-EE-FF', 'aabbccddeeff', 'AaBbCcDdEeFf']) {
      assert.equal(parseGeolocationRequest({ wifi: [{ macAddress: written }] }).wifi[0]?.macAddress, 'aa:bb:cc:dd:ee:ff', written);
    }
    assert.equal(normaliseMac('aa:bb-cc:dd:ee:ff'), undefined, 'mixed separators');
    assert.equal(normaliseMac('aa:bb:cc:dd:ee'), undefined, 'five octets');
  });

  it('accepts an ip alone, IPv4 or IPv6', () => {
    assert.deepEqual(parseGeolocationRequest({ ip: '2001:db8::1' }), { cells: [], wifi: [], ip: '2001:db8::1' });
    assert.equal(parseGeolocationRequest({ ip: '192.0.2.7', considerIp: true }).ip, '192.0.2.7');
  });

  it('allows a CDMA SID up to 32767 where an MNC stops at 999', () => {
    assert.equal(parseGeolocationRequest({ cells: [{ ...lteCell, radioType: 'cdma', mnc: 32767 }] }).cells[0]?.mnc, 32767);
    assert.equal(validationField({ cells: [{ ...lteCell, mnc: 1000 }] }), 'cells[0].mnc');
  });

  it('names the field of each error as it was sent', () => {
    const threeCells = (bad: object) => ({ cells: [lteCell, lteCell, { ...lteCell, ...bad }] });
    assert.equal(validationField(null), 'body');
    assert.equal(validationField([lteCell]), 'body');
    assert.equal(validationField({}), 'cells');
    assert.equal(validationField({ cells: [], wifi: [] }), 'cells');
    assert.equal(validationField(threeCells({ mcc: 1000 })), 'cells[2].mcc');
    assert.equal(validationField(threeCells({ mcc: 26.2 })), 'cells[2].mcc');
    assert.equal(validationField(threeCells({ mcc: '262' })), 'cells[2].mcc');
    assert.equal(validationField({ cells: [{ radioType: 'lte', mcc: 262, lac: 1, cellId: 1 }] }), 'cells[0].mnc');
    assert.equal(validationField({ cells: [{ radioType: 'lte', mcc: 262, mnc: 1, cellId: 1 }] }), 'cells[0].lac');
    assert.equal(validationField({ cells: [{ ...lteCell, lac: undefined, tac: -1 }] }), 'cells[0].tac');
    assert.equal(validationField({ cells: [{ ...lteCell, cellId: 2 ** 32 }] }), 'cells[0].cellId');
    assert.equal(validationField({ cells: [{ ...lteCell, radioType: 'nr', cellId: 2 ** 36 }] }), 'cells[0].cellId');
    assert.equal(validationField({ cells: [{ ...lteCell, radioType: 'wimax' }] }), 'cells[0].radioType');
    assert.equal(validationField({ cells: [{ ...lteCell, radioType: undefined }] }), 'cells[0].radioType');
    assert.equal(validationField({ cells: [{ ...lteCell, signalStrength: 5 }] }), 'cells[0].signalStrength');
    assert.equal(validationField({ cells: [{ ...lteCell, timingAdvance: 2 ** 16 + 1 }] }), 'cells[0].timingAdvance');
    assert.equal(validationField({ cells: [{ ...lteCell, age: -1 }] }), 'cells[0].age');
    assert.equal(validationField({ cells: [lteCell, 'x'] }), 'cells[1]');
    assert.equal(validationField({ radioType: 'tetra', cellTowers: [] }), 'radioType');
    assert.equal(validationField({ cellTowers: [{ cellId: 1, locationAreaCode: 1, mobileCountryCode: 1000, mobileNetworkCode: 1 }], radioType: 'gsm' }), 'cellTowers[0].mobileCountryCode');
    assert.equal(validationField({ wifi: [{ macAddress: 'aa:bb:cc:dd:ee:ff' }, { macAddress: 'aa:bb:cc:dd:ee:fg' }] }), 'wifi[1].macAddress');
    assert.equal(validationField({ wifiAccessPoints: [{ macAddress: 'aabbccddeeff', signal: -201 }] }), 'wifiAccessPoints[0].signal');
    assert.equal(validationField({ cells: [lteCell], cellTowers: [] }), 'cellTowers');
    assert.equal(validationField({ cells: { 0: lteCell } }), 'cells');
    assert.equal(validationField({ cells: Array.from({ length: 51 }, () => lteCell) }), 'cells');
    assert.equal(validationField({ wifiAccessPoints: Array.from({ length: 101 }, () => ({ macAddress: 'aabbccddeeff' })) }), 'wifiAccessPoints');
    assert.equal(validationField({ ip: '256.1.1.1' }), 'ip');
    assert.equal(validationField({ ip: '192.0.2.7', considerIp: 'yes' }), 'considerIp');
  });

  it('keeps the limits inclusive: 50 cells and 100 access points pass', () => {
    const request = parseGeolocationRequest({ cells: Array.from({ length: 50 }, () => lteCell), wifi: Array.from({ length: 100 }, () => ({ macAddress: 'aabbccddeeff' })) });
    assert.equal(request.cells.length, 50);
    assert.equal(request.wifi.length, 100);
  });
});

describe('cellKey', () => {
  it("writes OpenCelliD's radio names, so a request's wcdma finds an imported UMTS row", () => {
    assert.equal(cellKey('wcdma', 262, 2, 801, 86355), 'UMTS:262:2:801:86355');
    assert.equal(cellKey('UMTS', 262, 2, 801, 86355), cellKey('wcdma', 262, 2, 801, 86355));
    assert.equal(cellKey('lte', 262, 1, 100, 12345), 'LTE:262:1:100:12345');
    assert.equal(cellKey('nr', 262, 1, 100, 2 ** 36 - 1), 'NR:262:1:100:68719476735');
    assert.notEqual(cellKey('gsm', 262, 1, 100, 12345), cellKey('lte', 262, 1, 100, 12345));
  });
});

const HEADER = 'radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal';

function csvInput(text: string, chunkBytes = 4096): Readable {
  const bytes = Buffer.from(text);
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += chunkBytes) chunks.push(bytes.subarray(at, at + chunkBytes));
  return Readable.from(chunks);
}

describe('readOpenCellIdCsv', () => {
  it('reads a line in the OpenCelliD column order, and one with only the first nine columns', async () => {
    const rows: CellRow[] = [];
    const result = await readOpenCellIdCsv(csvInput(`${HEADER}\nUMTS,262,2,801,86355,0,13.285512,52.522202,1000,7,1,1282569574,1300155341,0\nLTE,262,1,100,12345,,13.3777,52.5163,1500\n`), async (batch) => {
      rows.push(...batch);
    });
    assert.deepEqual(result, { rows: 2, rejected: 0, firstErrors: [] });
    assert.deepEqual(rows, [
      { radio: 'UMTS', mcc: 262, mnc: 2, area: 801, cell: 86355, lon: 13.285512, lat: 52.522202, range: 1000, samples: 7 },
      { radio: 'LTE', mcc: 262, mnc: 1, area: 100, cell: 12345, lon: 13.3777, lat: 52.5163, range: 1500, samples: 0 },
    ]);
  });

  it('reads thousands of rows in batches, counts bad lines with their numbers, reports progress', async () => {
    const radios = ['GSM', 'UMTS', 'LTE', 'NR', 'CDMA'];
    const lines = [HEADER];
    const bad = new Map<number, string>([
      [101, 'WIMAX,262,1,100,1,0,13.1,52.1,500,3,1,1,1,0'],
      [502, 'LTE,262,1,100,2,0,13.1,95.1,500,3,1,1,1,0'],
      [1203, 'GSM,abc,1,100,3,0,13.1,52.1,500,3,1,1,1,0'],
      [2004, 'LTE,262,1,100'],
      [2900, 'LTE,262,1,100,4,0,13.1,52.1,-5,3,1,1,1,0'],
    ]);
    const blankLine = 1500;
    let good = 0;
    for (let line = 2; line <= 3001; line++) {
      if (bad.has(line)) lines.push(bad.get(line)!);
      else if (line === blankLine) lines.push('');
      else {
        const radio = radios[line % radios.length]!;
        lines.push(`${radio},262,${line % 4},${1000 + (line % 50)},${line * 7},0,${(13 + line / 10_000).toFixed(6)},${(52 + line / 10_000).toFixed(6)},${500 + line},${line % 30},1,1282569574,1300155341,0`);
        good++;
      }
    }
    lines[3] = `"${lines[3]!.replace(',', '",')}`; // a quoted radio, as a spreadsheet writes it: still read
    const text = `${lines.join('\r\n').replace('\r\n', '\n')}\n`; // mixed line ends
    const batches: number[] = [];
    const progress: { rows: number; rejected: number; bytes: number }[] = [];
    let inFlight = false;
    let overlapped = false;
    let first: CellRow | undefined;
    const result = await readOpenCellIdCsv(
      csvInput(text),
      async (rows) => {
        if (inFlight) overlapped = true;
        inFlight = true;
        first ??= rows[0];
        batches.push(rows.length);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight = false;
      },
      { batchSize: 1000, onProgress: (p) => progress.push(p) },
    );

    assert.equal(good, 2994);
    assert.equal(result.rows, good);
    assert.equal(result.rejected, bad.size);
    assert.deepEqual(result.firstErrors.map((e) => e.line), [...bad.keys()]);
    assert.match(result.firstErrors[0]!.message, /radio/);
    assert.match(result.firstErrors[1]!.message, /lat/);
    assert.match(result.firstErrors[2]!.message, /mcc/);
    assert.match(result.firstErrors[3]!.message, /columns/);
    assert.match(result.firstErrors[4]!.message, /range/);
    assert.deepEqual(batches, [1000, 1000, 994]);
    assert.equal(overlapped, false, 'no batch starts before the previous one is done');
    assert.deepEqual(first, { radio: 'LTE', mcc: 262, mnc: 2, area: 1002, cell: 14, lon: 13.0002, lat: 52.0002, range: 502, samples: 2 });
    assert.deepEqual(progress.map((p) => p.rows), [1000, 2000, 2994]);
    assert.equal(progress.at(-1)!.rejected, bad.size);
    assert.equal(progress.at(-1)!.bytes, Buffer.byteLength(text));
    assert.ok(progress[0]!.bytes > 0 && progress[0]!.bytes < progress.at(-1)!.bytes);
  });

  it('keeps the first 20 errors and counts them all', async () => {
    const text = Array.from({ length: 25 }, (_, i) => `LTE,262,1,100,${i},0,200,52.1,500`).join('\n');
    const result = await readOpenCellIdCsv(csvInput(text), async () => {});
    assert.equal(result.rejected, 25);
    assert.equal(result.firstErrors.length, 20);
    assert.deepEqual(result.firstErrors.map((e) => e.line), Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it('stops when the signal is aborted, after the batch under way', async () => {
    const text = Array.from({ length: 50 }, (_, i) => `GSM,262,1,100,${i},0,13.1,52.1,500`).join('\n');
    const controller = new AbortController();
    let calls = 0;
    await assert.rejects(
      readOpenCellIdCsv(
        csvInput(text, 64),
        async () => {
          calls++;
          controller.abort();
        },
        { batchSize: 10, signal: controller.signal },
      ),
      { name: 'AbortError' },
    );
    assert.equal(calls, 1);
  });

  it('refuses a line longer than 64 KiB as not this format', async () => {
    await assert.rejects(readOpenCellIdCsv(csvInput(`${HEADER}\nLTE,${'9'.repeat(70_000)}\n`), async () => {}), (error: unknown) => {
      return error instanceof AppError && error.code === 'IOTB_REQUEST_VALIDATION' && (error.details as { field: string }).field === 'file';
    });
  });
});

describe('readWifiCsv', () => {
  it('reads mac,lon,lat,range with or without a header, normalising MACs', async () => {
    const rows: WifiRow[] = [];
    const result = await readWifiCsv(csvInput('mac,lon,lat,range\nAA-BB-CC-DD-EE-FF,13.3777,52.5163,50\nnot-a-mac,13.1,52.1,40\n3c37865d75d4,13.3802,52.5161,80\n'), async (batch) => {
      rows.push(...batch);
    });
    assert.deepEqual(rows, [
      { mac: 'aa:bb:cc:dd:ee:ff', lon: 13.3777, lat: 52.5163, range: 50 },
      { mac: '3c:37:86:5d:75:d4', lon: 13.3802, lat: 52.5161, range: 80 },
    ]);
    assert.equal(result.rejected, 1);
    assert.equal(result.firstErrors[0]?.line, 3);
    const headless = await readWifiCsv(csvInput('aabbccddeeff,13.3777,52.5163,50'), async () => {});
    assert.deepEqual(headless, { rows: 1, rejected: 0, firstErrors: [] });
  });
});

const cellAt = (place: { lat: number; lon: number }, range: number, extra: Partial<LocationMatch> = {}): LocationMatch => ({ kind: 'cell', ...place, range, ...extra });
const apAt = (place: { lat: number; lon: number }, range: number, extra: Partial<LocationMatch> = {}): LocationMatch => ({ kind: 'wifi', ...place, range, ...extra });

describe('estimatePosition', () => {
  it('answers nothing without matches', () => {
    assert.equal(estimatePosition([]), undefined);
  });

  it('gives a single cell its own position and range', () => {
    assert.deepEqual(estimatePosition([cellAt(REICHSTAG, 1500)]), { ...REICHSTAG, accuracy: 1500 });
  });

  it('puts three cells around the Brandenburg Gate near it, within their circles', () => {
    const estimate = estimatePosition([cellAt(REICHSTAG, 1500), cellAt(POTSDAMER_PLATZ, 1500), cellAt(FRIEDRICHSTRASSE_STATION, 1500)])!;
    assert.ok(metres(estimate, BRANDENBURG_GATE) < 400, `${metres(estimate, BRANDENBURG_GATE)} m from the gate`);
    assert.ok(estimate.accuracy >= 1500 && estimate.accuracy < 2500, `accuracy ${estimate.accuracy}`);
  });

  it('drops a cell 500 km away (Munich) from three in Berlin', () => {
    const estimate = estimatePosition([cellAt(REICHSTAG, 1500), cellAt(MARIENPLATZ_MUNICH, 1500), cellAt(POTSDAMER_PLATZ, 1500), cellAt(FRIEDRICHSTRASSE_STATION, 1500)])!;
    assert.ok(metres(MARIENPLATZ_MUNICH, BRANDENBURG_GATE) > 500_000);
    assert.ok(metres(estimate, BRANDENBURG_GATE) < 400, `${metres(estimate, BRANDENBURG_GATE)} m from the gate`);
    assert.ok(estimate.accuracy < 2500, `accuracy ${estimate.accuracy}`);
  });

  it('prefers two access points to a cell', () => {
    const estimate = estimatePosition([cellAt(POTSDAMER_PLATZ, 2000, { signalStrength: -50 }), apAt(BRANDENBURG_GATE, 60), apAt(HOTEL_ADLON, 60)])!;
    assert.ok(metres(estimate, BRANDENBURG_GATE) < 150, `${metres(estimate, BRANDENBURG_GATE)} m from the gate`);
    assert.ok(estimate.accuracy < 300, `accuracy ${estimate.accuracy}`);
  });

  it('uses a lone access point that agrees with the cells, and ignores one that does not', () => {
    const agreeing = estimatePosition([cellAt(POTSDAMER_PLATZ, 2000), apAt(BRANDENBURG_GATE, 60)])!;
    assert.ok(metres(agreeing, BRANDENBURG_GATE) < 50, `${metres(agreeing, BRANDENBURG_GATE)} m from the access point`);
    assert.ok(agreeing.accuracy < 200, `accuracy ${agreeing.accuracy}`);
    const moved = estimatePosition([cellAt(POTSDAMER_PLATZ, 2000), apAt(MARIENPLATZ_MUNICH, 60)])!;
    assert.deepEqual(moved, { ...POTSDAMER_PLATZ, accuracy: 2000 });
  });

  it('averages cells either side of the antimeridian (Taveuni, Fiji) to longitude ±180, not 0', () => {
    const estimate = estimatePosition([cellAt({ lat: -16.8, lon: 179.98 }, 5000), cellAt({ lat: -16.8, lon: -179.98 }, 5000)])!;
    assert.ok(Math.abs(estimate.lon) > 179.99, `lon ${estimate.lon}`);
    assert.ok(Math.abs(estimate.lat + 16.8) < 0.001, `lat ${estimate.lat}`);
    assert.ok(estimate.accuracy < 8000, `accuracy ${estimate.accuracy}`);
  });

  it('narrows a cell by its timing advance: GSM 553.5 m a step (TS 45.010), LTE 78.12 m (TS 36.213); not NR', () => {
    assert.equal(estimatePosition([cellAt(REICHSTAG, 35_000, { radio: 'gsm', timingAdvance: 1 })])!.accuracy, 1107);
    assert.equal(estimatePosition([cellAt(REICHSTAG, 35_000, { radio: 'LTE', timingAdvance: 10 })])!.accuracy, 860);
    assert.equal(estimatePosition([cellAt(REICHSTAG, 500, { radio: 'gsm', timingAdvance: 3 })])!.accuracy, 500, 'never widens');
    assert.equal(estimatePosition([cellAt(REICHSTAG, 35_000, { radio: 'nr', timingAdvance: 1 })])!.accuracy, 35_000);
  });

  it('leans towards the cell heard more strongly', () => {
    const estimate = estimatePosition([cellAt(REICHSTAG, 1500, { signalStrength: -60 }), cellAt(POTSDAMER_PLATZ, 1500, { signalStrength: -115 })])!;
    assert.ok(metres(estimate, REICHSTAG) < metres(estimate, POTSDAMER_PLATZ) / 5, `${metres(estimate, REICHSTAG)} m from the Reichstag`);
  });
});

/** The provider clients' transport: fetch to the local server. */
const fetchJson: HttpJson = async (request) => {
  const response = await fetch(request.url, {
    method: request.method,
    headers: request.headers,
    body: request.json === undefined ? undefined : JSON.stringify(request.json),
    signal: AbortSignal.timeout(request.timeoutMs),
  });
  return { status: response.status, text: await response.text() };
};

const API_KEY = 'k3y/Secret+value';
const providerFailure = (error: unknown) => {
  assert.ok(error instanceof AppError, String(error));
  assert.equal(error.code, 'IOTB_LOCATION_PROVIDER_FAILED');
  assert.ok(!error.message.includes('k3y') && !JSON.stringify(error.details).includes('k3y'), error.message);
  return true;
};

describe('HTTP geolocation providers against a local server of the documented formats', () => {
  let server: http.Server;
  let origin: string;
  const received: { url: string; body: any }[] = [];

  before(async () => {
    server = http.createServer((request, response) => {
      let text = '';
      request.on('data', (chunk: Buffer) => (text += chunk.toString()));
      request.on('end', () => {
        const url = new URL(request.url!, 'http://localhost');
        const body = JSON.parse(text);
        received.push({ url: request.url!, body });
        const reply = (status: number, json: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
        if (url.pathname === '/geolocation/v1/geolocate') {
          // developers.google.com/maps/documentation/geolocation/requests-geolocation: errors and their reasons.
          if (url.searchParams.get('key') === 'over-quota') return reply(403, { error: { code: 403, message: 'dailyLimitExceeded', errors: [{ domain: 'usageLimits', reason: 'dailyLimitExceeded', message: 'dailyLimitExceeded' }] } });
          if (url.searchParams.get('key') !== API_KEY) return reply(400, { error: { code: 400, message: `API key not valid: ${url.searchParams.get('key')}`, errors: [{ domain: 'usageLimits', reason: 'keyInvalid' }] } });
          if (body.cellTowers?.[0]?.cellId === 12345) return reply(200, { location: { lat: 52.5163, lng: 13.3777 }, accuracy: 1200 });
          return reply(404, { error: { code: 404, message: 'Requested entity was not found.', errors: [{ domain: 'geolocation', reason: 'notFound', message: 'Requested entity was not found.' }] } });
        }
        if (url.pathname === '/v2/process') {
          // unwiredlabs.com/api: errors come as status "error" with a message.
          if (body.token !== API_KEY) return reply(200, { status: 'error', message: 'Invalid token', balance: 0 });
          if (body.cells?.[0]?.cid === 12345) return reply(200, { status: 'ok', balance: 99, lat: 52.5163, lon: 13.3777, accuracy: 900 });
          return reply(200, { status: 'error', message: 'No matches found', balance: 99 });
        }
        reply(404, { message: 'no such path' });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const request = parseGeolocationRequest({
    cells: [
      { ...lteCell, signalStrength: -80, timingAdvance: 4 },
      { radioType: 'gsm', mcc: 262, mnc: 1, lac: 5, cellId: 6 },
    ],
    wifi: [{ macAddress: 'AA-BB-CC-DD-EE-FF', signalStrength: -60 }],
    ip: '192.0.2.7',
  });

  it('Google-style: sends the key as ?key=, the documented body, and reads location.lat/lng', async () => {
    const provider = new GoogleStyleGeolocation({ url: `${origin}/geolocation/v1/geolocate`, apiKey: API_KEY, http: fetchJson, timeoutMs: 5000 });
    assert.deepEqual(await provider.locate(request), { lat: 52.5163, lon: 13.3777, accuracy: 1200 });
    const sent = received.at(-1)!;
    assert.equal(new URL(sent.url, origin).searchParams.get('key'), API_KEY);
    assert.deepEqual(sent.body, {
      considerIp: false,
      radioType: 'lte',
      // One radioType per request: the GSM cell is left out.
      cellTowers: [{ cellId: 12345, locationAreaCode: 100, mobileCountryCode: 262, mobileNetworkCode: 1, signalStrength: -80, timingAdvance: 4 }],
      wifiAccessPoints: [{ macAddress: 'aa:bb:cc:dd:ee:ff', signalStrength: -60 }],
    });
  });

  it('Google-style: a bare origin gets the documented path; NR cells go in newRadioCellId', async () => {
    const provider = new GoogleStyleGeolocation({ url: origin, apiKey: API_KEY, http: fetchJson });
    await provider.locate(parseGeolocationRequest({ cells: [{ radioType: 'nr', mcc: 262, mnc: 1, tac: 9, cellId: 2 ** 35 }] }));
    const sent = received.at(-1)!;
    assert.equal(new URL(sent.url, origin).pathname, '/geolocation/v1/geolocate');
    assert.deepEqual(sent.body.cellTowers, [{ newRadioCellId: 2 ** 35, locationAreaCode: 9, mobileCountryCode: 262, mobileNetworkCode: 1 }]);
  });

  it('Google-style: 404 notFound is no position; 403 and 400 are failures that never show the key', async () => {
    const url = `${origin}/geolocation/v1/geolocate`;
    const provider = new GoogleStyleGeolocation({ url, apiKey: API_KEY, http: fetchJson });
    assert.equal(await provider.locate(parseGeolocationRequest({ cells: [{ ...lteCell, cellId: 999 }] })), undefined);
    await assert.rejects(new GoogleStyleGeolocation({ url, apiKey: 'over-quota', http: fetchJson }).locate(request), (error: unknown) => {
      assert.ok(error instanceof AppError && error.code === 'IOTB_LOCATION_PROVIDER_FAILED');
      assert.deepEqual(error.details, { provider: 'google', status: 403 });
      assert.match(error.message, /403.*dailyLimitExceeded/);
      return true;
    });
    // The fake server echoes a wrong key in its message: the error masks it.
    await assert.rejects(new GoogleStyleGeolocation({ url, apiKey: 'k3y/Secret+wrong', http: fetchJson }).locate(request), (error: unknown) => {
      assert.ok(error instanceof AppError && error.code === 'IOTB_LOCATION_PROVIDER_FAILED');
      assert.ok(!error.message.includes('k3y'), error.message);
      assert.match(error.message, /400.*keyInvalid/);
      return true;
    });
    // A 404 without the notFound reason is a wrong URL, not "no position".
    await assert.rejects(new GoogleStyleGeolocation({ url: `${origin}/elsewhere`, apiKey: API_KEY, http: fetchJson }).locate(request), providerFailure);
  });

  it('Google-style: an ip alone is not sent (the provider would locate this server)', async () => {
    const before = received.length;
    const provider = new GoogleStyleGeolocation({ url: origin, apiKey: API_KEY, http: fetchJson });
    assert.equal(await provider.locate(parseGeolocationRequest({ ip: '192.0.2.7' })), undefined);
    assert.equal(received.length, before);
  });

  it('Unwired Labs: sends the documented body to /v2/process and reads lat/lon/accuracy', async () => {
    const provider = new UnwiredLabsGeolocation({ url: origin, apiKey: API_KEY, http: fetchJson, timeoutMs: 5000 });
    assert.deepEqual(await provider.locate(request), { lat: 52.5163, lon: 13.3777, accuracy: 900 });
    const sent = received.at(-1)!;
    assert.equal(sent.url, '/v2/process');
    assert.deepEqual(sent.body, {
      token: API_KEY,
      radio: 'lte',
      mcc: 262,
      mnc: 1,
      cells: [
        { lac: 100, cid: 12345, radio: 'lte', mcc: 262, mnc: 1, signal: -80, tA: 4 },
        { lac: 5, cid: 6, radio: 'gsm', mcc: 262, mnc: 1 },
      ],
      wifi: [{ bssid: 'aa:bb:cc:dd:ee:ff', signal: -60 }],
      ip: '192.0.2.7',
      address: 0,
    });
  });

  it('Unwired Labs: "No matches found" is no position; an error status is a failure without the key', async () => {
    const provider = new UnwiredLabsGeolocation({ url: `${origin}/v2/process`, apiKey: API_KEY, http: fetchJson });
    const umts = parseGeolocationRequest({ cells: [{ radioType: 'wcdma', mcc: 262, mnc: 2, lac: 801, cellId: 86355 }], considerIp: false, ip: '192.0.2.7' });
    assert.equal(await provider.locate(umts), undefined);
    assert.equal(received.at(-1)!.body.radio, 'umts');
    assert.equal(received.at(-1)!.body.ip, undefined, 'considerIp false keeps the ip back');
    await assert.rejects(new UnwiredLabsGeolocation({ url: origin, apiKey: 'k3y-wrong', http: fetchJson }).locate(request), (error: unknown) => {
      providerFailure(error);
      assert.match((error as AppError).message, /Invalid token/);
      return true;
    });
  });

  it('turns an unreachable provider into IOTB_LOCATION_PROVIDER_FAILED, and never shows the key when inspected', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const provider = new GoogleStyleGeolocation({ url: `http://127.0.0.1:${port}/`, apiKey: API_KEY, http: fetchJson, timeoutMs: 2000 });
    await assert.rejects(provider.locate(request), providerFailure);
    assert.ok(!inspect(provider, { depth: 5 }).includes('k3y') && !JSON.stringify(provider).includes('k3y'));
  });

  it('refuses a URL that is not http(s) when built', () => {
    assert.throws(() => new UnwiredLabsGeolocation({ url: 'ftp://example.com', apiKey: API_KEY, http: fetchJson }), { code: 'IOTB_REQUEST_VALIDATION' });
  });
});
