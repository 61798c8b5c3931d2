/**
 * Location benchmark (issue 19), against the service in this process on SQLite:
 *  - import: N cells in OpenCelliD's CSV columns streamed into an embedded location service (rows/s), beside a
 *    bare better-sqlite3 loop inserting the same rows into a table of the same shape, 5,000 per transaction;
 *  - geolocate: `location.geolocation.locate` of one known cell at a time (cache off), 32 in flight, beside a
 *    bare prepared point look-up of the same cells in the same database;
 *  - geofences: F geofences (half circles, half small polygons over central Europe), then
 *    `location.geofences.evaluate` of endpoints' positions (stored presence, position, events), beside the
 *    bare index query (R-tree + exact tests, GeofenceIndex.containing) of the same positions.
 * Median of several rounds.
 *
 *   npm run bench:location
 *   BENCH_CELLS=1000000 BENCH_GEOFENCES=100000 BENCH_ROUNDS=3 npm run bench:location
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import Database from 'better-sqlite3';
import pino from 'pino';
import { IotBridge } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { GeofenceIndex } from '../src/location/geofence-index.js';
import { parseGeofenceShape } from '../src/location/geofence-shape.js';

const CELLS = Number(process.env.BENCH_CELLS ?? 1_000_000);
const GEOFENCES = Number(process.env.BENCH_GEOFENCES ?? 100_000);
const LOOKUPS = Number(process.env.BENCH_LOOKUPS ?? 20_000);
const EVALS = Number(process.env.BENCH_EVALS ?? 5_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const IN_FLIGHT = 32;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

/** Deterministic pseudo-random numbers, so every run measures the same data. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

interface Cell {
  readonly mcc: number;
  readonly mnc: number;
  readonly area: number;
  readonly cell: number;
  readonly lat: number;
  readonly lon: number;
}

/** Cell `i` of the generated set: LTE cells of 10 networks over Europe. */
function cellAt(i: number): Cell {
  const next = random(i + 1);
  return { mcc: 262 + (i % 10), mnc: 1 + (i % 3), area: 100 + (i % 5000), cell: i, lat: 42 + next() * 12, lon: -5 + next() * 25 };
}

function* csvLines(count: number): Generator<string> {
  yield 'radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal\n';
  let chunk = '';
  for (let i = 0; i < count; i++) {
    const c = cellAt(i);
    chunk += `LTE,${c.mcc},${c.mnc},${c.area},${c.cell},,${c.lon.toFixed(6)},${c.lat.toFixed(6)},1500,10,1,1459692060,1459692060,0\n`;
    if (chunk.length > 64 * 1024) {
      yield chunk;
      chunk = '';
    }
  }
  yield chunk;
}

/** The reference import: the same rows into a plain table of the same key, 5,000 per transaction. */
function bareImport(file: string, count: number): number {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('create table cells (radio text, mcc integer, mnc integer, area integer, cell integer, lat real, lon real, range integer, samples integer, primary key (radio, mcc, mnc, area, cell))');
  const insert = db.prepare('insert or replace into cells values (?, ?, ?, ?, ?, ?, ?, ?, ?)');
  const batch = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const c = cellAt(i);
      insert.run('LTE', c.mcc, c.mnc, c.area, c.cell, c.lat, c.lon, 1500, 10);
    }
  });
  const begun = performance.now();
  for (let from = 0; from < count; from += 5000) batch(from, Math.min(count, from + 5000));
  const rate = count / ((performance.now() - begun) / 1000);
  db.close();
  return rate;
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-bench-location-'));
  const token = 'AT:bench-admin-token-000000000';
  const bridge = new IotBridge(
    loadConfig({}, { httpPort: 0, udpPort: 0, tcpPort: 0, coapPort: 0, coapsPort: -1, mqttPort: 0, httpHost: '127.0.0.1', dataDir, adminToken: token, locationCacheSeconds: 0 }),
    pino({ level: process.env.BENCH_LOG ?? 'warn' }),
  );
  await bridge.start();
  try {
    const { domain } = bridge;
    const { location } = domain;
    const scope = await domain.accounts.scopeFor(await domain.tokens.authenticate(token));

    // Import, once (a second import of the same rows measures replacing, not loading).
    const embedded = await location.services.create(scope, { name: 'bench', type: 'embedded' });
    let begun = performance.now();
    const imported = await location.services.import(scope, embedded.id, Readable.from(csvLines(CELLS)), { format: 'opencellid', replace: false });
    const importRate = imported.rows / ((performance.now() - begun) / 1000);
    const bareImportRate = bareImport(path.join(dataDir, 'bare.db'), CELLS);
    console.error(`import: ${fmt(importRate)} rows/s (${imported.rows} rows, ${imported.rejected} rejected); bare ${fmt(bareImportRate)} rows/s`);

    const bare = new Database(path.join(dataDir, 'bare.db'), { readonly: true });
    const lookup = bare.prepare('select lat, lon, range from cells where radio = ? and mcc = ? and mnc = ? and area = ? and cell = ?');
    const geolocate: number[] = [];
    const bareGeolocate: number[] = [];
    const latencies: number[] = [];
    const alone: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const pick = random(round + 7);
      let next = 0;
      begun = performance.now();
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (next < LOOKUPS) {
            next++;
            const c = cellAt(Math.floor(pick() * CELLS));
            const t = performance.now();
            await location.geolocation.locate(scope, { cells: [{ radioType: 'lte', mcc: c.mcc, mnc: c.mnc, tac: c.area, cellId: c.cell }] });
            latencies.push(performance.now() - t);
          }
        }),
      );
      geolocate.push(LOOKUPS / ((performance.now() - begun) / 1000));
      begun = performance.now();
      for (let i = 0; i < LOOKUPS; i++) {
        const c = cellAt(Math.floor(pick() * CELLS));
        if (!lookup.get('LTE', c.mcc, c.mnc, c.area, c.cell)) throw new Error('bare look-up missed');
      }
      bareGeolocate.push(LOOKUPS / ((performance.now() - begun) / 1000));
      // One at a time: what a single request waits.
      for (let i = 0; i < 1000; i++) {
        const c = cellAt(Math.floor(pick() * CELLS));
        const t = performance.now();
        await location.geolocation.locate(scope, { cells: [{ radioType: 'lte', mcc: c.mcc, mnc: c.mnc, tac: c.area, cellId: c.cell }] });
        alone.push(performance.now() - t);
      }
      console.error(`geolocate round ${round + 1}: ${fmt(geolocate.at(-1)!)}/s; bare ${fmt(bareGeolocate.at(-1)!)}/s`);
    }
    bare.close();

    // Geofences: half circles of 50 m–2 km, half polygons of 6–15 corners, over lat 43–53, lon -5–10.
    const shapeAt = (i: number) => {
      const next = random(i * 31 + 5);
      const lat = 43 + next() * 10;
      const lon = -5 + next() * 15;
      if (i % 2 === 0) return { circle: { lat, lon, radius: 50 + next() * 1950 } };
      const corners = 6 + Math.floor(next() * 10);
      const size = 0.002 + next() * 0.02;
      const ring = Array.from({ length: corners }, (_, k) => [lon + size * Math.cos((2 * Math.PI * k) / corners), lat + size * Math.sin((2 * Math.PI * k) / corners)]);
      return { geometry: { type: 'Polygon', coordinates: [[...ring, ring[0]]] } };
    };
    begun = performance.now();
    for (let i = 0; i < GEOFENCES; i++) await location.geofences.create(scope, { name: `fence-${i}`, tags: [i % 10 === 0 ? 'depot' : 'site'], ...shapeAt(i) });
    const createRate = GEOFENCES / ((performance.now() - begun) / 1000);
    const trackers = await domain.services.create(scope, { name: 'trackers', type: 'http' });
    const endpoints = 200;
    for (let i = 0; i < endpoints; i++) await domain.endpoints.create(scope, { key: `tracker-${i}`, serviceId: trackers.id });
    const index = GeofenceIndex.build(Array.from({ length: GEOFENCES }, (_, i) => ({ id: String(i), tags: [], shape: parseGeofenceShape(shapeAt(i)) })));

    const evals: number[] = [];
    const bareEvals: number[] = [];
    let transitions = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const pick = random(round + 99);
      const positions = Array.from({ length: EVALS }, () => {
        // Every other position at a fence's centre, so evaluations enter and leave geofences.
        const fence = shapeAt(Math.floor(pick() * GEOFENCES));
        return fence.circle ? { lat: fence.circle.lat, lon: fence.circle.lon } : { lat: 43 + pick() * 10, lon: -5 + pick() * 15 };
      });
      let next = 0;
      begun = performance.now();
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async (_, worker) => {
          while (next < EVALS) {
            const position = positions[next++]!;
            const result = await location.geofences.evaluate(scope, `k.tracker-${(worker * 7 + next) % endpoints}`, position, { source: 'bench' });
            transitions += result.transitions.length;
          }
        }),
      );
      evals.push(EVALS / ((performance.now() - begun) / 1000));
      begun = performance.now();
      for (const position of positions) index.containing(position.lat, position.lon);
      bareEvals.push(EVALS / ((performance.now() - begun) / 1000));
      console.error(`geofence round ${round + 1}: ${fmt(evals.at(-1)!)} evals/s; bare index ${fmt(bareEvals.at(-1)!)} queries/s`);
    }

    const sorted = [...latencies].sort((a, b) => a - b);
    const single = [...alone].sort((a, b) => a - b);
    console.log(`# IoT Bridge location: ${cpus().length} cores, Node ${process.version}, SQLite, ${fmt(CELLS)} cells, ${fmt(GEOFENCES)} geofences, median of ${ROUNDS}\n`);
    console.log('| measure | IoT Bridge | reference (same run) | ratio |');
    console.log('|---|---|---|---|');
    console.log(`| OpenCelliD import (streamed CSV → embedded service) | ${fmt(importRate)} rows/s | bare better-sqlite3 insert, 5,000 a transaction: ${fmt(bareImportRate)} rows/s | ${(importRate / bareImportRate).toFixed(2)} |`);
    console.log(`| geolocate one cell (${IN_FLIGHT} in flight, cache off) | ${fmt(median(geolocate))}/s, p50 ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2)} ms, p99 ${sorted[Math.floor(sorted.length * 0.99)]!.toFixed(2)} ms | bare prepared point look-up: ${fmt(median(bareGeolocate))}/s | ${(median(geolocate) / median(bareGeolocate)).toFixed(2)} |`);
    console.log(`| geolocate one cell, one request at a time | p50 ${single[Math.floor(single.length / 2)]!.toFixed(3)} ms, p99 ${single[Math.floor(single.length * 0.99)]!.toFixed(3)} ms | | |`);
    console.log(`| geofence evaluation (presence, position, events; ${IN_FLIGHT} in flight) | ${fmt(median(evals))}/s | bare R-tree + exact test: ${fmt(median(bareEvals))}/s (${(1e6 / median(bareEvals)).toFixed(1)} µs each) | ${(median(evals) / median(bareEvals)).toFixed(3)} |`);
    console.log(`\nGeofences created through the domain: ${fmt(createRate)}/s. Transitions emitted: ${fmt(transitions)}.`);
  } finally {
    await bridge.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
