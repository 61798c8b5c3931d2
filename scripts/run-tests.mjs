// Runs every test/**/*.test.ts with node's test runner. Extra arguments pass through, e.g.
// `npm run test:only -- --test-name-pattern=tenancy`.
//
// The tests and the service are type-checked and compiled first (tsconfig.test.json, into dist/ as `npm run
// build` lays it out) and run as JavaScript, as the service runs in production: under tsx every test file, and
// every service or script worker it starts, paid ~1.7 s more to load its ~1,600 modules through the loader
// hooks, a quarter of the suite's time. IOTBRIDGE_TEST_FROM_SOURCE=1 type-checks only and runs the TypeScript
// through tsx instead.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';

function find(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return find(full);
    return entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

const fromSource = process.env.IOTBRIDGE_TEST_FROM_SOURCE === '1';
const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.test.json', ...(fromSource ? ['--noEmit'] : [])], { stdio: 'inherit' });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);

// The sources name the test files: a compiled file whose source is gone is not run.
const sources = find('test').sort();
const files = fromSource ? sources : sources.map((file) => path.join('dist', file.replace(/\.ts$/, '.js')));
const loader = fromSource ? ['--import', 'tsx'] : ['--enable-source-maps'];
// A file that has not ended within 15 minutes (a test stuck on an answer that never comes, or a socket, timer or
// child process left open after its tests) fails, named, instead of holding the run until CI's time runs out;
// the longest file takes about 3 minutes. Files still run in their own processes and must end by themselves.
const FILE_TIMEOUT_MS = 15 * 60_000;
// TAP, then the failed tests named again at the very end (scripts/test-failures-reporter.mjs), unless the
// arguments choose reporters of their own.
const chosen = process.argv.slice(2).some((arg) => arg.startsWith('--test-reporter'));
const reporters = chosen ? [] : ['--test-reporter=tap', '--test-reporter-destination=stdout', '--test-reporter=./scripts/test-failures-reporter.mjs', '--test-reporter-destination=stdout'];
const args = [...loader, '--test', '--test-concurrency=2', `--test-timeout=${FILE_TIMEOUT_MS}`, ...reporters, ...process.argv.slice(2), ...files];
const result = spawnSync(process.execPath, args, { stdio: 'inherit' });
process.exit(result.status ?? 1);
