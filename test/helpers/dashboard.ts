/// <reference lib="dom" />
import type { Test } from 'tap';
import { openPage, type BrowserPage } from './browser.ts';
import { deliveriesWhere, type Stage } from './broadcast.ts';
import { call } from './http.ts';

/**
 * Helpers of the dashboard's browser tests: notifications and deliveries through the API, the page
 * signed in, the rows of its table.
 */

/** The screenshots' folder under test-output/browser/. */
export const FILE = 'dashboard';
const message = { headings: { en: 'Hello' }, contents: { en: 'Your order shipped' } };

export interface Row {
  id: string;
  external_id: string;
  status: string;
  error_code: string | null;
}

/** Sends a notification with a fixed message and `body`'s targeting; its id. */
export async function notify(s: Stage, body: Record<string, unknown>): Promise<string> {
  const answer = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { ...message, ...body });
  if (answer.status !== 201) throw new Error(`POST /api/notifications answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return (answer.body as { id: string }).id;
}

/** Every record of the project matching `query`, newest first, through the API. */
export function allDeliveries(s: Stage, query = ''): Promise<Row[]> {
  return deliveriesWhere<Row>(s, query);
}

/** Opens the dashboard at `fragment` in `p` (a new page by default) and signs in with `key`. */
export async function signedIn(t: Test, s: Stage, fragment = '', key = s.rest, p?: BrowserPage): Promise<BrowserPage> {
  const page = p ?? (await openPage(t, FILE));
  await page.page.goto(`${s.engine.url}/dashboard${fragment}`);
  await page.page.fill('input[name=key]', key);
  await page.page.click('form.gate button[type=submit]');
  await page.page.waitForSelector('header nav');
  return page;
}

/** The ids of the delivery rows on screen, once the table has loaded. */
export async function rowIds(p: BrowserPage): Promise<string[]> {
  await p.page.waitForFunction(() => document.querySelector('.pager .status')?.textContent?.includes('shown') === true);
  return p.page.$$eval('table.deliveries tbody tr', (rows) => rows.map((r) => r.getAttribute('data-id') ?? ''));
}

/**
 * Runs `change` and waits for the page it leads to: the table's GET /api/deliveries with `query`
 * answered (until then the table still shows the page before it), then its rows.
 */
export async function rowsAfter(p: BrowserPage, query: string, change: () => Promise<unknown>): Promise<string[]> {
  const answered = p.page.waitForResponse((r) => r.url().includes('/api/deliveries?') && r.url().includes(query));
  await change();
  await answered;
  return rowIds(p);
}
