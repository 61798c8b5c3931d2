import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The tests run from their TypeScript (tsx) or compiled into dist/ (scripts/run-tests.mjs, as the service runs
 * in production); paths into the repository are taken from its root, found from here either way.
 */
function findRoot(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error('no package.json above the tests');
  }
}

export const REPO_ROOT = findRoot();

/** True when these tests run compiled (dist/test/…): the service they spawn then runs compiled too. */
export const COMPILED = import.meta.url.endsWith('.js');

/** Node arguments that run the command line (`iotbridge …`) the way these tests run: compiled or under tsx. */
export const CLI = COMPILED ? [path.join(REPO_ROOT, 'dist/src/cli.js')] : ['--import', 'tsx', path.join(REPO_ROOT, 'src/cli.ts')];
