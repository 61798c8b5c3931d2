// `iotbridge location import`: the CLI imports an OpenCelliD file (plain or gzip) into an embedded location
// service of a running service's database, which then geolocates from it; a wrong service id is refused.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { FuzzService, fuzzAccount } from '../helpers/fuzz.js';
import { CLI } from '../helpers/repo.js';

const run = promisify(execFile);

describe('iotbridge location import (SQLite)', { timeout: 120_000 }, () => {
  let dataDir: string;
  let service: FuzzService;

  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-location-cli-'));
    service = await FuzzService.start({ IOTBRIDGE_DATA_DIR: dataDir });
  });
  after(async () => {
    await service?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('imports a gzip OpenCelliD file into the account’s embedded service; geolocation finds its cells', async () => {
    const { accountId, token } = await fuzzAccount(service, 'cli-import');
    const created = await service.request('POST', '/location/services', { token, body: { name: 'cells', type: 'embedded' } });
    assert.equal(created.status, 201, created.text);
    const id = created.json.id as string;
    const rows = ['radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal'];
    for (let i = 0; i < 2000; i++) rows.push(`GSM,208,1,${100 + (i % 7)},${i},,2.35${String(i % 100).padStart(2, '0')},48.85${String(i % 97).padStart(2, '0')},800,3,1,0,0,0`);
    const file = path.join(dataDir, 'cells.csv.gz');
    await writeFile(file, gzipSync(`${rows.join('\n')}\n`));

    const env = { ...process.env, IOTBRIDGE_DATA_DIR: dataDir };
    const { stdout } = await run(process.execPath, [...CLI, 'location', 'import', id, file, '--account', accountId], { env });
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as { state: string; rows: number; rejected: number };
    assert.deepEqual([result.state, result.rows, result.rejected], ['done', 2000, 0]);

    const located = await service.request('POST', '/location/geolocate', { token, body: { cells: [{ radioType: 'gsm', mcc: 208, mnc: 1, lac: 105, cellId: 5 }] } });
    assert.equal(located.status, 200, located.text);
    assert.ok(Math.abs((located.json.lat as number) - 48.8505) < 1e-6, located.text);

    const wrong = await run(process.execPath, [...CLI, 'location', 'import', 'no-such-service', file, '--account', accountId], { env }).catch((error: { code: number; stderr: string }) => error);
    assert.equal((wrong as { code: number }).code, 1);
    assert.match((wrong as { stderr: string }).stderr, /No such location service/);
  });
});
