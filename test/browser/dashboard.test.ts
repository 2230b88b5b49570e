/// <reference lib="dom" />
import t, { type Test } from 'tap';
import { openPage, type BrowserPage } from '../helpers/browser.ts';
import { deliveriesOf, iosToken, register, stage, until, type Stage } from '../helpers/broadcast.ts';
import { call, eventually } from '../helpers/http.ts';

/**
 * The dashboard in headless Chromium against one engine process with every role and the provider
 * simulators: the key gate, filters, paging, hints, the user, notification and live views.
 */

const FILE = 'dashboard';
const USERS = 130;
const message = { headings: { en: 'Hello' }, contents: { en: 'Your order shipped' } };

interface Row {
  id: string;
  external_id: string;
  status: string;
  error_code: string | null;
}

async function notify(s: Stage, body: Record<string, unknown>): Promise<string> {
  const answer = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { ...message, ...body });
  if (answer.status !== 201) throw new Error(`POST /api/notifications answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return (answer.body as { id: string }).id;
}

/** Every record of the project, newest first, through the API. */
async function allDeliveries(s: Stage, query = ''): Promise<Row[]> {
  const rows: Row[] = [];
  let cursor: string | null = null;
  do {
    const page = (await call(`${s.engine.url}/api/deliveries?limit=1000${query}${cursor === null ? '' : `&cursor=${cursor}`}`, 'GET', s.rest)).body as {
      deliveries: Row[];
      next_cursor: string | null;
    };
    rows.push(...page.deliveries);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return rows;
}

/** Opens the dashboard at `fragment` and signs in with the REST key. */
async function signedIn(t: Test, s: Stage, fragment = ''): Promise<BrowserPage> {
  const p = await openPage(t, FILE);
  await p.page.goto(`${s.engine.url}/dashboard${fragment}`);
  await p.page.fill('input[name=key]', s.rest);
  await p.page.click('form.gate button[type=submit]');
  await p.page.waitForSelector('header nav');
  return p;
}

/** The ids of the delivery rows on screen, once the table has loaded. */
async function rowIds(p: BrowserPage): Promise<string[]> {
  await p.page.waitForFunction(() => document.querySelector('.pager .status')?.textContent?.includes('shown') === true);
  return p.page.$$eval('table.deliveries tbody tr', (rows) => rows.map((r) => r.getAttribute('data-id') ?? ''));
}

const s = await stage(t);
await register(s, USERS);
await s.sims.apns.script({ match: { token: iosToken(0) }, respond: { status: 410, body: { reason: 'Unregistered', timestamp: Date.now() + 60_000 } } });
const ids = Array.from({ length: USERS }, (_, i) => `u${i}`);
const push = await notify(s, { include_external_user_ids: ids.filter((_, i) => i % 5 < 3) });
const sms = await notify(s, { channel: 'SMS', include_external_user_ids: ids.filter((_, i) => i % 5 === 3) });
for (const id of [push, sms]) await until(s, id);
const recorded = (await deliveriesOf(s, push)).length + (await deliveriesOf(s, sms)).length;
await eventually('every record queryable', async () => ((await allDeliveries(s)).length === recorded ? true : undefined), 60_000);

t.test('the page asks for a key, refuses a wrong one and an SDK key, and opens with a REST key', async (t) => {
  const p = await openPage(t, FILE);
  await p.page.goto(`${s.engine.url}/dashboard`);
  await p.page.fill('input[name=key]', 'not-a-key');
  await p.page.click('form.gate button[type=submit]');
  t.match(await p.page.textContent('form.gate [role=alert]'), /not valid/, 'a wrong key is refused');
  await p.page.fill('input[name=key]', s.d.project.sdk_key);
  await p.page.click('form.gate button[type=submit]');
  await p.page.waitForFunction(() => document.querySelector('form.gate [role=alert]')?.textContent?.includes('REST key') === true);
  t.pass('an SDK key is refused');
  await p.screenshot('key-refused');
  await p.page.fill('input[name=key]', s.rest);
  await p.page.click('form.gate button[type=submit]');
  const shown = await rowIds(p);
  t.equal(shown.length, 50, 'the first page of deliveries');
  await p.page.waitForSelector('.charts .chart canvas');
  t.ok(await p.page.$('.charts .chart canvas'), 'charts drawn');
  t.notMatch(p.page.url(), s.rest, 'the key is not in the URL');
  await p.page.reload();
  t.equal((await rowIds(p)).length, 50, 'the key is kept for the session: a reload opens without asking');
  await p.page.waitForSelector('.charts .chart canvas');
  await p.screenshot('deliveries');
  t.same(p.foreign(s.engine.url), [], 'no request left the gateway');
  t.same(p.errors, [], 'no page errors');
});

t.test('a filter narrows the table, is kept in the URL, and a failure shows its hint', async (t) => {
  const p = await signedIn(t, s);
  await rowIds(p);
  await p.page.selectOption('select[name=status]', 'failed');
  await p.page.waitForFunction(() => location.hash.includes('status=failed'));
  const failed = await allDeliveries(s, '&status=failed');
  t.ok(failed.length >= 1, 'the dead token failed');
  t.same(await rowIds(p), failed.map((r) => r.id), 'the table holds exactly the failed records');
  const hint = await p.page.textContent(`tr[data-id="${failed[0]?.id ?? ''}"] .hint`);
  t.match(hint, /retired/i, 'the hint of apns_410_Unregistered next to the failure');
  await p.screenshot('failed');
  const shared = p.page.url();
  t.notMatch(shared, s.rest, 'the shared URL holds no key');
  const other = await signedIn(t, s, new URL(shared).hash);
  t.same(await rowIds(other), failed.map((r) => r.id), 'the shared link opens the same view');
  await other.page.fill('input[name=external_id]', 'u3');
  await other.page.press('input[name=external_id]', 'Enter');
  await other.page.waitForFunction(() => location.hash.includes('external_id=u3'));
  t.same(await rowIds(other), [], 'status=failed and user u3 together: nothing');
  t.same([...p.foreign(s.engine.url), ...other.foreign(s.engine.url)], [], 'no request left the gateway');
});

t.test('paging through the cursor neither repeats nor skips a record', async (t) => {
  const p = await signedIn(t, s);
  const seen: string[] = [...(await rowIds(p))];
  const firsts: string[] = [seen[0] ?? ''];
  for (;;) {
    const older = p.page.locator('.pager button', { hasText: 'Older' });
    if (await older.isDisabled()) break;
    await older.click();
    await p.page.waitForFunction(() => location.hash.includes('cursor='));
    await p.page.waitForFunction((first) => document.querySelector('table.deliveries tbody tr')?.getAttribute('data-id') !== first, seen.at(-50));
    const ids = await rowIds(p);
    firsts.push(ids[0] ?? '');
    seen.push(...ids);
  }
  const all = await allDeliveries(s);
  t.equal(new Set(seen).size, seen.length, 'no record twice');
  t.same(seen, all.map((r) => r.id), 'every record, newest first, as the API lists them');
  t.ok(firsts.length >= 3, `${firsts.length} pages`);
  await p.page.locator('.pager button', { hasText: 'Newer' }).click();
  await p.page.waitForFunction((first) => document.querySelector('table.deliveries tbody tr')?.getAttribute('data-id') === first, firsts.at(-2));
  t.pass('"Newer" goes back one page');
});

t.test('a user view shows the subscription the dispatch path retired, with tags and deliveries', async (t) => {
  const p = await signedIn(t, s, `#/deliveries?status=failed`);
  await rowIds(p);
  await p.page.click('table.deliveries tbody tr td a[href="#/users/u0"]');
  await p.page.waitForSelector('table.subscriptions');
  t.equal(await p.page.textContent('table.subscriptions tbody tr .badge'), 'retired', 'the dead token shows retired');
  t.match(await p.page.textContent('table.subscriptions'), 'IOS_PUSH');
  t.match(await p.page.textContent('table.deliveries'), 'apns_410_Unregistered', "the user's deliveries");
  await p.screenshot('user');
  t.same(p.foreign(s.engine.url), [], 'no request left the gateway');
});

t.test('the live tail shows a delivery made during the test, and pauses', async (t) => {
  const p = await signedIn(t, s, '#/live?channel=SMS');
  await p.page.waitForFunction(() => document.querySelector('[data-testid=live-state]')?.textContent === 'open');
  const id = await notify(s, { channel: 'SMS', include_external_user_ids: ['u3', 'u8'] });
  await p.page.waitForFunction((n) => document.querySelectorAll(`table.deliveries a[href="#/notifications/${n}"]`).length === 2, id, { timeout: 60_000 });
  t.pass('both records of the new notification arrived');
  await p.screenshot('live');
  await p.page.click('.pager button:has-text("Pause")');
  const before = await p.page.$$eval('table.deliveries tbody tr', (r) => r.length);
  const held = await notify(s, { channel: 'SMS', include_external_user_ids: ['u13'] });
  await p.page.waitForFunction(() => document.querySelector('.pager')?.textContent?.includes('1 new while paused') === true, undefined, { timeout: 60_000 });
  t.equal(await p.page.$$eval('table.deliveries tbody tr', (r) => r.length), before, 'paused: the table holds still');
  await p.page.click('.pager button:has-text("Resume")');
  await p.page.waitForSelector(`table.deliveries a[href="#/notifications/${held}"]`);
  t.pass('resumed: the held record is shown');
  await p.page.goto(`${s.engine.url}/dashboard#/live?channel=EMAIL`);
  await p.page.waitForFunction(() => document.querySelector('[data-testid=live-state]')?.textContent === 'open');
  await notify(s, { channel: 'SMS', include_external_user_ids: ['u18'] });
  const email = await notify(s, { channel: 'EMAIL', include_external_user_ids: ['u4'] });
  await p.page.waitForSelector(`table.deliveries a[href="#/notifications/${email}"]`, { timeout: 60_000 });
  t.same(await p.page.$$eval('table.deliveries tbody td:nth-child(4)', (c) => c.map((x) => x.textContent)), ['EMAIL'], 'the filter narrows the tail');
  t.same(p.foreign(s.engine.url).filter((u) => !u.startsWith(s.engine.url.replace('http', 'ws'))), [], 'no request left the gateway');
});

t.test("a notification's counts move while it sends, and cancel asks first and stops it", async (t) => {
  const smsUsers = ids.filter((_, i) => i % 5 === 3);
  const id = await notify(s, { channel: 'SMS', throttle_rate_per_minute: 60, include_external_user_ids: smsUsers });
  const p = await signedIn(t, s, '#/notifications');
  await p.page.click(`table.notifications a[href="#/notifications/${id}"]`);
  await p.page.waitForSelector('[data-counter=sent]');
  const sent = async (): Promise<number> => Number((await p.page.textContent('[data-counter=sent]'))?.replace(/\D/g, ''));
  const first = await sent();
  await p.page.waitForFunction((n) => Number(document.querySelector('[data-counter=sent]')?.textContent?.replace(/\D/g, '')) > n, first, { timeout: 30_000 });
  t.ok((await sent()) > first, 'the sent count moved on screen');
  await p.screenshot('notification-sending');
  await p.page.click('button:has-text("Cancel notification")');
  t.ok(await p.page.isVisible('text=Stop sending this notification?'), 'cancel asks first');
  const asked = (await call(`${s.engine.url}/api/notifications/${id}`, 'GET', s.rest)).body as { canceled: boolean };
  t.equal(asked.canceled, false, 'asking cancels nothing');
  await p.page.click('button:has-text("Yes, cancel it")');
  await p.page.waitForFunction(() => document.querySelector('[data-testid=notification-status]')?.textContent === 'canceled', undefined, { timeout: 30_000 });
  const view = await until(s, id, 'canceled');
  t.ok(view.counts['sent'] !== undefined && view.counts['sent'] < smsUsers.length, `stopped before every user was sent (${view.counts['sent']} of ${smsUsers.length})`);
  await p.screenshot('notification-canceled');
  t.same(p.foreign(s.engine.url), [], 'no request left the gateway');
  t.same(p.errors, [], 'no page errors');
});

t.test('the page and its hashed assets carry caching headers and a same-origin policy', async (t) => {
  const page = await fetch(`${s.engine.url}/dashboard`);
  const html = await page.text();
  t.equal(page.status, 200);
  t.match(page.headers.get('cache-control'), 'no-cache');
  t.match(page.headers.get('content-security-policy'), "default-src 'self'");
  const assets = [...html.matchAll(/\/dashboard\/assets\/([\w.-]+)/g)].map((m) => m[1] ?? '');
  t.equal(assets.length, 2, 'one script and one stylesheet');
  for (const name of assets) {
    const asset = await fetch(`${s.engine.url}/dashboard/assets/${name}`);
    await asset.arrayBuffer();
    t.equal(asset.status, 200, name);
    t.match(asset.headers.get('cache-control'), 'immutable', `${name} cached for good`);
  }
  const missing = await fetch(`${s.engine.url}/dashboard/assets/main-NOPE.js`);
  t.equal(missing.status, 404);
  t.match(await missing.json(), { errors: [{ code: 'not_found' }] });
});
