// scripts/lock-optional-platforms.mjs adds what `npm install` leaves out of the lock when the registry cannot
// serve other platforms' optional packages (npm ci then refuses the lock; see package-lock.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const SCRIPT = path.resolve('scripts/lock-optional-platforms.mjs');

function runOn(lock: object): { lock: any; output: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'iotbridge-lock-'));
  try {
    const file = path.join(dir, 'package-lock.json');
    writeFileSync(file, JSON.stringify(lock, null, 2));
    const output = execFileSync(process.execPath, [SCRIPT, file], { encoding: 'utf8' });
    return { lock: JSON.parse(readFileSync(file, 'utf8')), output };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const tool = {
  version: '1.2.0',
  dev: true,
  optionalDependencies: {
    '@tool/binding-darwin-arm64': '1.2.0',
    '@tool/binding-linux-x64-gnu': '1.2.0',
    '@tool/binding-linux-arm64-musl': '1.2.0',
    '@tool/binding-win32-ia32-msvc': '1.2.0',
    '@tool/binding-wasm32-wasi': '1.2.0',
  },
};

test('adds each missing optional platform package with version, optional, dev and os/cpu/libc from its name', () => {
  const { lock, output } = runOn({
    name: 'x',
    lockfileVersion: 3,
    packages: {
      '': { devDependencies: { tool: '^1.2.0' } },
      'node_modules/tool': tool,
      // The one this machine could install stays as npm wrote it.
      'node_modules/@tool/binding-linux-x64-gnu': { version: '1.2.0', resolved: 'https://registry.example/t.tgz', integrity: 'sha512-x', cpu: ['x64'], dev: true, libc: ['glibc'], optional: true, os: ['linux'] },
    },
  });
  assert.match(output, /added 4/);
  assert.deepEqual(lock.packages['node_modules/@tool/binding-darwin-arm64'], { version: '1.2.0', cpu: ['arm64'], dev: true, optional: true, os: ['darwin'] });
  assert.deepEqual(lock.packages['node_modules/@tool/binding-linux-arm64-musl'], { version: '1.2.0', cpu: ['arm64'], dev: true, libc: ['musl'], optional: true, os: ['linux'] });
  assert.deepEqual(lock.packages['node_modules/@tool/binding-win32-ia32-msvc'], { version: '1.2.0', cpu: ['ia32'], dev: true, optional: true, os: ['win32'] });
  assert.deepEqual(lock.packages['node_modules/@tool/binding-wasm32-wasi'], { version: '1.2.0', cpu: ['wasm32'], dev: true, optional: true });
  assert.equal(lock.packages['node_modules/@tool/binding-linux-x64-gnu'].resolved, 'https://registry.example/t.tgz');
  const locations = Object.keys(lock.packages);
  assert.deepEqual(locations, ['', ...locations.slice(1).sort((a, b) => a.localeCompare(b, 'en'))], 'entries stay sorted by location');

  const again = runOn(lock);
  assert.match(again.output, /no optional platform package missing/);
  assert.deepEqual(again.lock, lock);
});

test('a missing optional package whose name names no platform is reported, not guessed', () => {
  assert.throws(
    () => runOn({ lockfileVersion: 3, packages: { '': {}, 'node_modules/tool': { version: '1.0.0', optionalDependencies: { 'tool-extras': '1.0.0' } } } }),
    (error: any) => /tool-extras@1\.0\.0/.test(String(error.stderr)),
  );
});
