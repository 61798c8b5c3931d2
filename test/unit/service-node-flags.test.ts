// The Node flags the service runs with (a young generation of 64 MB: docs/operations.md "Node flags") are named
// twice: by `npm start` and by the CLI's own `#!` line (`npx iotbridge serve`, a systemd unit running the file).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';
import { REPO_ROOT } from '../helpers/repo.js';

it('npm start and the CLI itself start Node with the same flags', () => {
  const start = (JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const shebang = readFileSync(path.join(REPO_ROOT, 'src/cli.ts'), 'utf8').split('\n')[0]!;
  const startFlags = /node ((?:--\S+ )*)dist\/src\/cli\.js/.exec(start)?.[1]?.trim();
  const shebangFlags = /^#!\/usr\/bin\/env -S node ((?:--\S+ ?)*)$/.exec(shebang)?.[1]?.trim();
  assert.ok(startFlags, `npm start names its flags: ${start}`);
  assert.equal(shebangFlags, startFlags);
  assert.match(startFlags, /--max-semi-space-size=64/);
});
