import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { Test } from 'tap';

/** Debian's chromium (`.ci/run` and `make test` install it when missing). */
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
/** Screenshots land here, one folder per test file (git-ignored). */
const OUTPUT = fileURLToPath(new URL('../../test-output/browser/', import.meta.url));

export interface BrowserPage {
  page: Page;
  /** Every URL the page requested, in order (documents, scripts, styles, fetches, WebSockets). */
  requests: string[];
  /** The JSON bodies the page sent (POST, PUT), in order. */
  sent: unknown[];
  /** Every address the page was at, fragment changes included. */
  addresses: string[];
  /** Uncaught page errors and console errors but failed loads, for assertions and failure messages. */
  errors: string[];
  /** Saves a full-page screenshot as <test-output>/browser/<file>/<name>.png and returns its path. */
  screenshot(name: string): Promise<string>;
  /** The requested URLs whose origin is not `origin`. */
  foreign(origin: string): string[];
  /** The requested URLs and addresses that contain `secret` (as it is or URL-encoded). */
  leaked(secret: string): string[];
}

let shared: Promise<Browser> | null = null;

/** One headless Chromium per test file, closed when the file's tests end. */
function browser(t: Test): Promise<Browser> {
  if (shared === null) {
    shared = chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    const launched = shared;
    t.teardown(async () => {
      shared = null;
      await (await launched).close();
    });
  }
  return shared;
}

/**
 * A fresh browser context and page for one test (its own session storage), or another page (a
 * tab) of `context`, with every request it makes recorded. `file` names the screenshot folder
 * (the test file's base name).
 */
export async function openPage(t: Test, file: string, context?: BrowserContext): Promise<BrowserPage> {
  const own = context ?? (await (await browser(t)).newContext({ viewport: { width: 1360, height: 900 } }));
  if (!context) t.teardown(() => own.close());
  // tsx compiles the tests with esbuild's keepNames: a function passed to evaluate may call its
  // __name helper, which pages lack.
  if (!context) await own.addInitScript({ content: 'globalThis.__name ??= (f) => f;' });
  const page = await own.newPage();
  // Every wait is for a condition; on a loaded machine a page can take longer than Playwright's
  // 30 s to render or answer, and that is no failure of the page.
  page.setDefaultTimeout(120_000);
  const requests: string[] = [];
  const sent: unknown[] = [];
  const addresses: string[] = [];
  const errors: string[] = [];
  page.on('request', (r) => {
    requests.push(r.url());
    const body = r.postData();
    if (body !== null && r.headers()['content-type']?.startsWith('application/json')) sent.push(JSON.parse(body));
  });
  page.on('websocket', (ws) => void requests.push(ws.url()));
  page.on('framenavigated', (f) => void addresses.push(f.url()));
  page.on('pageerror', (e) => void errors.push(e.message));
  // A refused call (a wrong key: 401) is logged by the browser as a console error; it is no page error.
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
  });
  const dir = join(OUTPUT, file);
  mkdirSync(dir, { recursive: true });
  return {
    page,
    requests,
    sent,
    addresses,
    errors,
    screenshot: async (name) => {
      const path = join(dir, `${name}.png`);
      await page.screenshot({ path, fullPage: true });
      return path;
    },
    foreign: (origin) =>
      requests.filter((u) => {
        const url = new URL(u);
        if (url.protocol === 'data:' || url.protocol === 'blob:') return false;
        return `${url.protocol.replace('ws', 'http')}//${url.host}` !== origin;
      }),
    leaked: (secret) => [...requests, ...addresses].filter((u) => u.includes(secret) || u.includes(encodeURIComponent(secret))),
  };
}

/**
 * What every browser test ends with: a screenshot named `name`, then the assertions that the page
 * requested nothing outside `origin` and that no requested URL nor address carries a key.
 */
export async function finish(t: Test, p: BrowserPage, name: string, origin: string, keys: readonly string[]): Promise<void> {
  t.ok(existsSync(await p.screenshot(name)), `screenshot ${name}`);
  t.same(p.foreign(origin), [], 'no request left the gateway');
  t.ok(p.requests.length > 0, `${p.requests.length} requests recorded`);
  keys.forEach((key, i) => t.same(p.leaked(key), [], keys.length === 1 ? 'no URL carries the key' : `no URL carries key ${i + 1} of ${keys.length}`));
}
