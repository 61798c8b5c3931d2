// Adds to package-lock.json the optional platform packages `npm install` left out, so `npm ci` accepts the lock.
//
//   npm install <something> && npm run lock:platforms      (or: node scripts/lock-optional-platforms.mjs [lock])
//
// Why: native tools ship one optional package per platform (esbuild, rolldown, lightningcss, node-aead-crypto:
// `@rolldown/binding-darwin-arm64`, `lightningcss-linux-x64-musl`, …). When the registry npm talks to cannot
// serve some of them, `npm install` quietly leaves them out of the lock, and `npm ci` (CI, a clean clone) then
// stops with "Missing: <name>@<version> from lock file". This script finds every optional dependency edge with
// no entry and adds one the way npm would for a package that is not for this machine: `version`, `optional`,
// `dev` (as its dependent), and `os` / `cpu` / `libc` read from the package's name, without `resolved` or
// `integrity` (npm ci does not fetch a package whose os/cpu/libc do not match). It changes nothing when nothing
// is missing, and says which names it could not read. test/unit/package-lock.test.ts fails while an edge is
// missing; test/unit/lock-optional-platforms.test.ts runs this script on a made-up lock.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const OS = ['darwin', 'linux', 'win32', 'freebsd', 'openbsd', 'netbsd', 'sunos', 'android', 'aix', 'openharmony'];
const CPU = { x64: ['x64'], arm64: ['arm64'], aarch64: ['arm64'], arm: ['arm'], ia32: ['ia32'], ppc64: ['ppc64'], ppc64le: ['ppc64'], s390x: ['s390x'], riscv64: ['riscv64'], loong64: ['loong64'], mips64el: ['mips64el'], wasm32: ['wasm32'], universal: ['x64', 'arm64'] };
const LIBC = { gnu: 'glibc', gnueabihf: 'glibc', musl: 'musl', musleabihf: 'musl' };

/**
 * `os`, `cpu` and `libc` of a platform package from its name (`@rolldown/binding-linux-arm-gnueabihf` →
 * linux, arm, glibc), or undefined when the name names no CPU.
 */
function platformOf(name) {
  const words = name.split('/').pop().split('-');
  const platform = {};
  for (const word of words) {
    if (OS.includes(word)) platform.os = [word];
    else if (word === 'windows') platform.os = ['win32'];
    else if (word === 'macos') platform.os = ['darwin'];
    if (word in CPU) platform.cpu = CPU[word];
    if (word.startsWith('arm') && word.endsWith('eabihf')) platform.cpu = ['arm'];
    if (word in LIBC) platform.libc = [LIBC[word]];
  }
  if (!platform.cpu) return undefined;
  // wasm32 packages run anywhere Node does: no os.
  return { ...(platform.os ? { os: platform.os } : {}), cpu: platform.cpu, ...(platform.libc ? { libc: platform.libc } : {}) };
}

/** Node's resolution walk over the lock: the nearest node_modules/<name> from the dependent's folder upwards. */
function resolves(packages, from, name) {
  let dir = from;
  for (;;) {
    if (packages[path.posix.join(dir, 'node_modules', name)]) return true;
    if (dir === '') return false;
    const parent = dir.lastIndexOf('/node_modules/');
    dir = parent === -1 ? '' : dir.slice(0, parent);
  }
}

/** Adds the missing entries to a parsed lock; returns what was added and what could not be. */
function addMissingPlatforms(lock) {
  const packages = lock.packages;
  const added = [];
  const unreadable = [];
  for (const [location, entry] of Object.entries(packages)) {
    for (const [name, range] of Object.entries(entry.optionalDependencies ?? {})) {
      if (resolves(packages, location, name)) continue;
      const platform = platformOf(name);
      const version = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/.test(range) ? range : undefined;
      if (!platform || !version) {
        unreadable.push(`${location || '(root)'} → ${name}@${range}`);
        continue;
      }
      // Hoisted beside the dependent's own node_modules root, where npm puts it when nothing else is there.
      const target = packages[`node_modules/${name}`] ? path.posix.join(location, 'node_modules', name) : `node_modules/${name}`;
      packages[target] = { version, ...(platform.cpu ? { cpu: platform.cpu } : {}), ...(entry.dev || entry.devOptional ? { dev: true } : {}), ...(platform.libc ? { libc: platform.libc } : {}), optional: true, ...(platform.os ? { os: platform.os } : {}) };
      added.push(`${target}@${version}`);
    }
  }
  if (added.length > 0) {
    // npm keeps the entries sorted by location.
    lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b, 'en'))));
  }
  return { added, unreadable };
}

const file = path.resolve(process.argv[2] ?? 'package-lock.json');
const lock = JSON.parse(readFileSync(file, 'utf8'));
const { added, unreadable } = addMissingPlatforms(lock);
if (added.length > 0) writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(added.length === 0 ? `${path.basename(file)}: no optional platform package missing` : `${path.basename(file)}: added ${added.length}:\n  ${added.join('\n  ')}`);
if (unreadable.length > 0) {
  console.error(`not added (no platform in the name, or not an exact version): add these by hand or run npm install where the registry serves them:\n  ${unreadable.join('\n  ')}`);
  process.exitCode = 1;
}
