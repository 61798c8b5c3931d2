// The browser tests run against the built UI that `npm run build` makes (dist/ui). It is built here when it is
// missing or older than its sources, once for all test files (a lock directory keeps two files from building
// at the same time).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO_ROOT } from './repo.js';

/** Where `npm run build` (vite build ui) puts the UI. */
export const UI_BUILD_DIR = path.join(REPO_ROOT, 'dist/ui');
const SOURCES = ['ui/index.html', 'ui/vite.config.ts', 'ui/tsconfig.json', 'ui/src', 'ui/public', 'package-lock.json'].map((name) => path.join(REPO_ROOT, name));
const LOCK = path.join(REPO_ROOT, 'dist/.ui-build.lock');
const BUILD_TIMEOUT_MS = 120_000;

function newestChange(file: string): number {
  if (!existsSync(file)) return 0;
  const stat = statSync(file);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(file).map((name) => newestChange(path.join(file, name))));
}

function upToDate(): boolean {
  const index = path.join(UI_BUILD_DIR, 'index.html');
  return existsSync(index) && statSync(index).mtimeMs >= Math.max(...SOURCES.map(newestChange));
}

async function takeLock(): Promise<void> {
  const deadline = Date.now() + BUILD_TIMEOUT_MS;
  mkdirSync(path.dirname(LOCK), { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      return;
    } catch {
      // Another test file builds; a lock older than a build can take was left by a killed run.
      const held = statSync(LOCK, { throwIfNoEntry: false });
      if (held && Date.now() - held.mtimeMs > BUILD_TIMEOUT_MS) rmSync(LOCK, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`waited ${BUILD_TIMEOUT_MS} ms for ${LOCK}`);
      await sleep(200);
    }
  }
}

/** Builds the UI into dist/ui unless it is newer than every source; returns the directory to serve. */
export async function ensureUiBuilt(): Promise<string> {
  if (upToDate()) return UI_BUILD_DIR;
  await takeLock();
  try {
    if (upToDate()) return UI_BUILD_DIR;
    const vite = path.join(REPO_ROOT, 'node_modules/vite/bin/vite.js');
    const result = spawnSync(process.execPath, [vite, 'build', 'ui', '--logLevel', 'warn'], { cwd: REPO_ROOT, encoding: 'utf8', timeout: BUILD_TIMEOUT_MS });
    if (result.status !== 0) throw new Error(`vite build ui failed (${result.status ?? result.signal}):\n${result.stdout}\n${result.stderr}`);
    return UI_BUILD_DIR;
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}
