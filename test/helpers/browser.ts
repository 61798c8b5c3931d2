// Browser tests drive Debian's Chromium (apt-get install chromium; .ci/run installs it) with playwright-core,
// which downloads no browser of its own. What every UI test file (test/ui/) needs is here, once.
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { Config } from '../../src/config.js';
import { startService, type TestService } from './service.js';
import { ensureUiBuilt } from './ui-build.js';

/** The Chromium binary: `IOTBRIDGE_TEST_CHROMIUM`, default Debian's /usr/bin/chromium. */
export const CHROMIUM_PATH = process.env.IOTBRIDGE_TEST_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Why the browser tests cannot run here, or false. On CI (`CI` set) a missing browser is an error, not a
 * skip: a green run must have run them.
 */
export function browserMissing(): string | false {
  if (existsSync(CHROMIUM_PATH)) return false;
  const why = `Chromium not found at ${CHROMIUM_PATH}: apt-get install chromium (.ci/run does) or set IOTBRIDGE_TEST_CHROMIUM`;
  if (process.env.CI) throw new Error(`browser tests cannot run on CI: ${why}`);
  return why;
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ['--disable-dev-shm-usage'] });
}

export interface PageProblems {
  /** The problems not matching `expected`; starts over. */
  take(expected?: readonly RegExp[]): string[];
  /** Fails when a problem not matching `expected` came since the last check (the same message in every file). */
  expectNone(expected?: readonly RegExp[]): void;
}

/**
 * Collects what the page reports as broken: console errors (a CSP violation among them) and uncaught
 * exceptions. `take` returns those not matching `expected` and starts over.
 */
export function watchPageProblems(page: Page): PageProblems {
  let problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()} (${message.location().url})`);
  });
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
  const take = (expected: readonly RegExp[] = []) => {
    const unexpected = problems.filter((problem) => !expected.some((pattern) => pattern.test(problem)));
    problems = [];
    return unexpected;
  };
  return {
    take,
    expectNone(expected = []) {
      assert.deepEqual(take(expected), [], 'console errors or uncaught exceptions');
    },
  };
}

/** The console line Chromium writes for an API answer with this status (expected where a test provokes it). */
export function failedRequest(status: number): RegExp {
  return new RegExp(`Failed to load resource: the server responded with a status of ${status}\\b`);
}

/**
 * A new page of `context` whose waits give up after 5 s (Playwright's 30 s would only slow a failing test
 * down: every page here answers from loopback), with its problems watched from the start.
 */
export async function openPage(context: BrowserContext): Promise<{ page: Page; problems: PageProblems }> {
  const page = await context.newPage();
  page.setDefaultTimeout(5000);
  // Loading the app (its scripts parsed and run) on a machine busy with other test files took over 5 s.
  page.setDefaultNavigationTimeout(20_000);
  return { page, problems: watchPageProblems(page) };
}

/**
 * A copy of the built UI for one test file alone: another test file may rebuild dist/ui while this one runs
 * (the build empties it first), and a reload must not find the hashed assets gone. Copied again when a build
 * changed dist/ui halfway. The caller removes the directory.
 */
export async function servedUiCopy(): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const built = await ensureUiBuilt();
    const copy = mkdtempSync(path.join(tmpdir(), 'iotbridge-ui-'));
    cpSync(built, copy, { recursive: true });
    const html = readFileSync(path.join(copy, 'index.html'), 'utf8');
    const assets = [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+)"/g)].map((match) => match[1]!);
    if (assets.length > 0 && assets.every((asset) => existsSync(path.join(copy, asset)))) return copy;
    rmSync(copy, { recursive: true, force: true });
    if (attempt === 5) throw new Error('dist/ui kept changing while it was copied');
  }
}

/**
 * The real service (SQLite) serving its own copy of the UI build (servedUiCopy), which its `stop()` removes
 * (a `restart()`ed one leaves it).
 */
export async function startUiService(overrides: Partial<Config> = {}): Promise<TestService> {
  const uiDir = await servedUiCopy();
  let service: TestService;
  try {
    service = await startService('sqlite', { uiDir, ...overrides });
  } catch (error) {
    rmSync(uiDir, { recursive: true, force: true });
    throw error;
  }
  return {
    ...service,
    async stop() {
      await service.stop();
      rmSync(uiDir, { recursive: true, force: true });
    },
  };
}

/** Where the screenshots docs/ui.md shows are written: `IOTBRIDGE_UI_SCREENSHOTS=docs/ui` (npm run screenshots:ui). */
const SCREENSHOTS = process.env.IOTBRIDGE_UI_SCREENSHOTS;

export interface ScreenshotOptions {
  /** The whole page (long forms and lists) rather than the window. */
  readonly fullPage?: boolean;
  /** Scroll to the top first, so that the window shows the page's head whatever the test scrolled to. */
  readonly fromTop?: boolean;
}

/** Writes `<name>.png` into IOTBRIDGE_UI_SCREENSHOTS; nothing when it is unset (a plain test run). */
export async function screenshot(page: Page, name: string, { fullPage = false, fromTop = false }: ScreenshotOptions = {}): Promise<void> {
  if (!SCREENSHOTS) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  if (fromTop) await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage });
}

/**
 * Waits until `read` gives `expected` (deep equality), reading every 50 ms: the page renders after the API
 * answers or an event comes. After `timeoutMs` it fails with the last value read and `what`.
 */
export async function eventually<T>(read: () => Promise<T>, expected: T, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await read();
  while (!isEqual(last, expected)) {
    if (Date.now() > deadline) assert.deepEqual(last, expected, what);
    await new Promise((resolve) => setTimeout(resolve, 50));
    last = await read();
  }
}

function isEqual(a: unknown, b: unknown): boolean {
  try {
    assert.deepEqual(a, b);
    return true;
  } catch {
    return false;
  }
}

/** Fills the sign-in page's email and password and submits them (the page shows the sign-in form). */
export async function submitPassword(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

/** Pastes an API token (`<token>[:<accountId>]`) on the sign-in page and submits it. */
export async function submitToken(page: Page, token: string): Promise<void> {
  await page.getByLabel('Token', { exact: true }).fill(token);
  await page.getByRole('button', { name: 'Use token' }).click();
}

/** Opens the UI of the service at `baseUrl`, signs in with email and password and waits for the Dashboard. */
export async function signIn(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await page.goto(`${baseUrl}/`);
  await submitPassword(page, email, password);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
}

/** A phone's window: the pages must fit its width, tables scrolling inside their own box. */
export const PHONE_VIEWPORT = { width: 390, height: 844 } as const;

/** How far the page sticks out sideways, in CSS pixels: 0 when it fits the window's width. */
export function sidewaysOverflow(page: Page): Promise<number> {
  return page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
}
