import path from 'node:path';
import { repoRoot } from '../../scripts/repo-root.js';

/**
 * The tests run from their TypeScript (tsx) or compiled into dist/ (scripts/run-tests.mjs, as the service runs
 * in production); paths into the repository are taken from its root, found from here either way.
 */
export const REPO_ROOT = repoRoot(import.meta.url);

/** True when these tests run compiled (dist/test/…): the service they spawn then runs compiled too. */
export const COMPILED = import.meta.url.endsWith('.js');

/** Node arguments that run the command line (`iotbridge …`) the way these tests run: compiled or under tsx. */
export const CLI = COMPILED ? [path.join(REPO_ROOT, 'dist/src/cli.js')] : ['--import', 'tsx', path.join(REPO_ROOT, 'src/cli.ts')];
