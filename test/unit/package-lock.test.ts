// `npm ci` (what CI runs) refuses a lock file that misses any dependency edge, optional ones included, while
// `npm install` quietly leaves out optional platform packages the registry could not serve. This catches
// that here instead of in a CI run that stops after two seconds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';

interface LockEntry {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, LockEntry> };

/** Node's resolution walk: the nearest node_modules/<name> from the dependent's folder upwards. */
function resolves(from: string, name: string): boolean {
  let dir = from;
  for (;;) {
    if (lock.packages[path.posix.join(dir, 'node_modules', name)]) return true;
    if (dir === '') return false;
    const parent = dir.lastIndexOf('/node_modules/');
    dir = parent === -1 ? '' : dir.slice(0, parent);
  }
}

test('every dependency edge in package-lock.json has an entry, as npm ci requires', () => {
  const missing: string[] = [];
  for (const [location, entry] of Object.entries(lock.packages)) {
    const required = { ...entry.dependencies, ...entry.optionalDependencies };
    for (const [name, peerRange] of Object.entries(entry.peerDependencies ?? {})) {
      if (!entry.peerDependenciesMeta?.[name]?.optional) required[name] = peerRange;
    }
    for (const name of Object.keys(required)) {
      if (!resolves(location, name)) missing.push(`${location || '(root)'} → ${name}`);
    }
  }
  assert.deepEqual(missing, [], 'add the missing entries (os/cpu-limited optional packages may be listed without "resolved")');
});
