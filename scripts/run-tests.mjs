// Runs every test/**/*.test.ts with node's test runner (TypeScript through tsx). Extra arguments pass through,
// e.g. `npm run test:only -- --test-name-pattern=tenancy`.
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

const files = find('test').sort();
const args = ['--import', 'tsx', '--test', '--test-concurrency=2', ...process.argv.slice(2), ...files];
const result = spawnSync(process.execPath, args, { stdio: 'inherit' });
process.exit(result.status ?? 1);
