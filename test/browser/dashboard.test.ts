/// <reference lib="dom" />
import t, { type Test } from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { Keystore } from '../../engine/state/keys/keystore.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { finish, openPage, type BrowserPage } from '../helpers/browser.ts';
import { iosToken, register, stage, until } from '../helpers/broadcast.ts';
import { allDeliveries, FILE, notify, rowIds, rowsAfter, signedIn } from '../helpers/dashboard.ts';
import { call, eventually } from '../helpers/http.ts';

/**
 * The dashboard in headless Chromium against one engine process with every role and the provider
 * simulators: the key gate, filters, paging, hints, the user, notification and live views. Every
 * test ends with a screenshot and the checks that the browser asked nothing of another host and
 * put the key in no URL (finish).
 */

const USERS = 130;

/** The screenshot and request checks every test ends with. */
function done(t: Test, p: BrowserPage, name: string): Promise<void> {
  return finish(t, p, name, s.engine.url, [s.rest, s.d.project.sdk_key]);
}

const s = await stage(t);
await register(s, USERS);
await s.sims.apns.script({ match: { token: iosToken(0) }, respond: { status: 410, body: { reason: 'Unregistered', timestamp: Date.now() + 60_000 } } });
const ids = Array.from({ length: USERS }, (_, i) => `u${i}`);
const pushed = ids.filter((_, i) => i % 5 < 3);
const texted = ids.filter((_, i) => i % 5 === 3);
const push = await notify(s, { include_external_user_ids: pushed });
const sms = await notify(s, { channel: 'SMS', include_external_user_ids: texted });
for (const id of [push, sms]) await until(s, id);
// One record per targeted user (the dead token's failure is not retried). A notification is
// completed before the recorder has inserted its records, so they are counted, not read back.
await eventually('every record queryable', async () => ((await allDeliveries(s)).length === pushed.length + texted.length ? true : undefined), 60_000);

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
  await p.page.waitForFunction(() => document.querySelectorAll('.charts .chart canvas').length === 3);
  t.pass('all three charts drawn');
  t.ok(p.requests.filter((u) => u.includes('/api/deliveries/stats')).length > 3, 'from several stats calls');
  await done(t, p, 'deliveries');
  t.same(p.errors, [], 'no page errors');
});

t.test('a filter narrows the table, is kept in the URL, and a failure shows its hint', async (t) => {
  const p = await signedIn(t, s);
  await rowIds(p);
  const shown = await rowsAfter(p, 'status=failed', () => p.page.selectOption('select[name=status]', 'failed'));
  t.match(p.page.url(), /#\/deliveries\?status=failed$/, 'the filter is in the URL');
  const failed = await allDeliveries(s, '&status=failed');
  t.ok(failed.length >= 1, 'the dead token failed');
  t.same(shown, failed.map((r) => r.id), 'the table holds exactly the failed records');
  const hint = await p.page.textContent(`tr[data-id="${failed[0]?.id ?? ''}"] .hint`);
  t.match(hint, /retired/i, 'the hint of apns_410_Unregistered next to the failure');
  await p.page.waitForFunction(() => document.querySelectorAll('.charts .chart canvas').length === 3);
  await done(t, p, 'failed');
  const shared = p.page.url();
  t.notMatch(shared, s.rest, 'the shared URL holds no key');
  const other = await signedIn(t, s, new URL(shared).hash);
  t.same(await rowIds(other), failed.map((r) => r.id), 'the shared link opens the same view');
  await other.page.fill('input[name=external_id]', 'u3');
  const none = await rowsAfter(other, 'external_id=u3', () => other.page.press('input[name=external_id]', 'Enter'));
  t.match(other.page.url(), 'external_id=u3', 'the user is in the URL too');
  t.same(none, [], 'status=failed and user u3 together: nothing');
  await done(t, other, 'failed-shared-link');
});

t.test('the pager stays where it is while the charts load', async (t) => {
  const p = await openPage(t, FILE);
  // The charts' calls are held until the table is on screen and measured.
  let release = (): void => undefined;
  const held = new Promise<void>((r) => (release = r));
  await p.page.route('**/api/deliveries/stats?**', async (route) => {
    await held;
    await route.continue();
  });
  await signedIn(t, s, '', s.rest, p);
  await rowIds(p);
  t.equal(await p.page.locator('.chart .plot.empty').count(), 3, 'the charts are still loading');
  const before = await p.page.locator('.pager').boundingBox();
  release();
  await p.page.waitForFunction(() => document.querySelectorAll('.charts .chart canvas').length === 3);
  const after = await p.page.locator('.pager').boundingBox();
  t.ok(before !== null && after !== null, 'the pager is on screen');
  t.equal(after?.y, before?.y, 'drawn charts take the room their placeholders held');
  await done(t, p, 'charts-drawn');
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
  await done(t, p, 'paged');
});

t.test('a user view shows the subscription the dispatch path retired, with tags, consent, events and deliveries', async (t) => {
  const sdk = s.d.project.sdk_key;
  t.equal((await call(`${s.engine.url}/api/sdk/users/u0/tags`, 'PUT', sdk, { plan: 'gold', visits: 3 })).status, 202);
  t.equal((await call(`${s.engine.url}/api/sdk/events`, 'POST', sdk, { external_id: 'u0', name: 'order_shipped', properties: { order: 'A-17' } })).status, 202);
  t.equal((await call(`${s.engine.url}/api/sdk/opt-out`, 'POST', sdk, { external_id: 'u0', subscription_type: 'EMAIL' })).status, 200);
  await eventually('the tags applied', async () => {
    const user = (await call(`${s.engine.url}/api/users/u0`, 'GET', s.rest)).body as { tags: Record<string, unknown> };
    return user.tags['plan'] === 'gold' ? true : undefined;
  });
  await eventually('the event recorded', async () => {
    const page = (await call(`${s.engine.url}/api/events?external_id=u0`, 'GET', s.rest)).body as { events: unknown[] };
    return page.events.length === 1 ? true : undefined;
  }, 30_000);

  const p = await signedIn(t, s, `#/deliveries?status=failed`);
  await rowIds(p);
  // The user's deliveries fail once as if ClickHouse were slow: the applied state shows all the same.
  const slow = { status: 503, contentType: 'application/json', body: JSON.stringify({ errors: [{ code: 'unavailable', message: 'ClickHouse is slow' }] }) };
  await p.page.route(/\/api\/deliveries\?(.*&)?external_id=u0(&|$)/, (route) => route.fulfill(slow), { times: 1 });
  await p.page.click('table.deliveries tbody tr td a[href="#/users/u0"]');
  await p.page.waitForSelector('section > p.error:has-text("ClickHouse is slow")');
  await p.page.waitForSelector('table.subscriptions');
  await p.page.waitForSelector('table.events');
  t.ok(await p.page.isVisible('section > p.error:has-text("ClickHouse is slow")'), "the user's state and events show while the deliveries failed");
  await p.screenshot('user-deliveries-failed');
  await p.page.reload();
  await p.page.waitForSelector('table.subscriptions');
  await p.page.waitForSelector('table.deliveries');
  t.equal(await p.page.textContent('table.subscriptions tbody tr .badge'), 'retired', 'the dead token shows retired');
  t.match(await p.page.textContent('table.subscriptions'), 'IOS_PUSH');
  t.match(await p.page.textContent('table.subscriptions tbody tr td.code'), /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'each subscription shows its id');
  const tags = await p.page.$$eval('table.tags tr', (rows) => rows.map((r) => [r.querySelector('th')?.textContent, r.querySelector('td')?.textContent]));
  t.same(Object.fromEntries(tags), { plan: 'gold', visits: '3' }, 'the tags');
  t.match(await p.page.textContent('ul.consent'), /^EMAIL: opted out since /, 'the opt-out');
  const events = await p.page.$$eval('table.events tbody tr', (rows) => rows.map((r) => Array.from(r.querySelectorAll('td')).slice(1).map((c) => c.textContent)));
  t.same(events, [['order_shipped', '{"order":"A-17"}']], 'the event with its properties');
  t.match(await p.page.textContent('table.deliveries'), 'apns_410_Unregistered', "the user's deliveries");
  await done(t, p, 'user');
});

t.test('the live tail shows a delivery made during the test, and pauses', async (t) => {
  const p = await signedIn(t, s, '#/live?channel=SMS');
  await p.page.waitForFunction(() => document.querySelector('[data-testid=live-state]')?.textContent === 'open');
  const id = await notify(s, { channel: 'SMS', include_external_user_ids: ['u3', 'u8'] });
  await p.page.waitForFunction((n) => document.querySelectorAll(`table.deliveries a[href="#/notifications/${n}"]`).length === 2, id);
  t.pass('both records of the new notification arrived');
  await p.screenshot('live');
  await p.page.click('.pager button:has-text("Pause")');
  const before = await p.page.$$eval('table.deliveries tbody tr', (r) => r.length);
  const held = await notify(s, { channel: 'SMS', include_external_user_ids: ['u13'] });
  await p.page.waitForFunction(() => document.querySelector('.pager')?.textContent?.includes('1 new while paused') === true, undefined);
  t.equal(await p.page.$$eval('table.deliveries tbody tr', (r) => r.length), before, 'paused: the table holds still');
  await p.page.click('.pager button:has-text("Resume")');
  await p.page.waitForSelector(`table.deliveries a[href="#/notifications/${held}"]`);
  t.pass('resumed: the held record is shown');
  await p.page.goto(`${s.engine.url}/dashboard#/live?channel=EMAIL`);
  await p.page.waitForFunction(() => document.querySelector('[data-testid=live-state]')?.textContent === 'open');
  await notify(s, { channel: 'SMS', include_external_user_ids: ['u18'] });
  const email = await notify(s, { channel: 'EMAIL', include_external_user_ids: ['u4'] });
  await p.page.waitForSelector(`table.deliveries a[href="#/notifications/${email}"]`);
  t.same(await p.page.$$eval('table.deliveries tbody td:nth-child(4)', (c) => c.map((x) => x.textContent)), ['EMAIL'], 'the filter narrows the tail');
  t.ok(p.requests.some((u) => u.startsWith(`${s.engine.url.replace('http', 'ws')}/api/deliveries/live`)), 'the tails are among the recorded requests');
  await done(t, p, 'live-email');
});

t.test('a refused live tail says why, and one the gateway closed says why and reconnects', async (t) => {
  const p = await openPage(t, FILE);
  // The second tail of this page is played by a stand-in that reports gaps and closes; the others are real.
  let tails = 0;
  await p.page.routeWebSocket(/\/api\/deliveries\/live/, (ws) => {
    if (++tails !== 2) return void ws.connectToServer();
    ws.send(JSON.stringify({ gap: { missed: 3 } }));
    ws.send(JSON.stringify({ gap: { missed: null } }));
    ws.close({ code: 1011, reason: 'live tail unavailable' });
  });
  await signedIn(t, s, '#/live?status=bogus', s.rest, p);
  await p.page.waitForSelector('[data-testid=live-reason]');
  t.equal(await p.page.textContent('[data-testid=live-state]'), 'closed');
  t.match(await p.page.textContent('[data-testid=live-reason]'), /^Refused: status: /, 'the reason the gateway gives for these filters');
  t.equal(await p.page.inputValue('select[name=status]'), 'bogus', "the link's status is shown, not a blank choice");
  await p.screenshot('live-refused');

  await p.page.goto(`${s.engine.url}/dashboard#/live?channel=SMS`);
  await p.page.waitForFunction(() => document.querySelector('[data-testid=live-reason]')?.textContent?.includes('1011') === true);
  t.equal(await p.page.textContent('[data-testid=live-reason]'), 'Closed by the gateway (close code 1011: live tail unavailable).');
  t.match(await p.page.textContent('main'), '3 records were not sent to this browser', 'a counted gap');
  t.match(await p.page.textContent('main'), 'Some records were missed: the gateway lost its connection to Redis', 'a gap of unknown size');
  await p.screenshot('live-closed');
  await p.page.click('.pager button:has-text("Reconnect")');
  await p.page.waitForFunction(() => document.querySelector('[data-testid=live-state]')?.textContent === 'open');
  t.notOk(await p.page.$('[data-testid=live-reason]'), 'reconnected: no reason left');
  const id = await notify(s, { channel: 'SMS', include_external_user_ids: ['u23'] });
  await p.page.waitForSelector(`table.deliveries a[href="#/notifications/${id}"]`);
  t.pass('records flow on the new connection');
  t.equal(tails, 3, 'three tails: refused, closed, reconnected');
  await done(t, p, 'live-reconnected');
});

t.test('a revoked key sends the page back to the key prompt and is forgotten', async (t) => {
  const redis = createRedis(loadConfig(s.d.env));
  t.teardown(() => redis.disconnect());
  const keystore = new Keystore(redis, new Topology(s.d.env['KEY_PREFIX'] ?? '', Number(s.d.env['PARTITIONS'])));
  const key = await keystore.createKey(s.d.project.project_id, 'rest');
  const p = await signedIn(t, s, '', key);
  await rowIds(p);
  // The charts' calls answered first: one refused would send the page to the prompt before the
  // click below, on a machine slow enough.
  await p.page.waitForFunction(() => document.querySelector('.charts figure.chart') !== null && !Array.from(document.querySelectorAll('.charts p.empty')).some((e) => e.textContent?.startsWith('Loading')));
  await keystore.revokeKey(key);
  await eventually('the gateway refuses the revoked key', async () => ((await call(`${s.engine.url}/api/deliveries?limit=1`, 'GET', key)).status === 401 ? true : undefined));
  await p.page.click('header nav a:has-text("Notifications")');
  await p.page.waitForSelector('form.gate');
  t.match(await p.page.textContent('form.gate [role=alert]'), /no longer accepts the key/, 'the prompt says why it asks again');
  t.equal(await p.page.evaluate(() => sessionStorage.length), 0, 'the key is forgotten');
  await finish(t, p, 'key-revoked', s.engine.url, [s.rest, s.d.project.sdk_key, key]);
});

t.test("a notification's counts move while it sends, and cancel asks first and stops it", async (t) => {
  const smsUsers = ids.filter((_, i) => i % 5 === 3);
  const id = await notify(s, { channel: 'SMS', throttle_rate_per_minute: 60, include_external_user_ids: smsUsers });
  const p = await signedIn(t, s, '#/notifications');
  await p.page.click(`table.notifications a[href="#/notifications/${id}"]`);
  await p.page.waitForSelector('[data-counter=sent]');
  const sent = async (): Promise<number> => Number((await p.page.textContent('[data-counter=sent]'))?.replace(/\D/g, ''));
  // One poll fails as if ClickHouse were slow: the error shows, and the next poll goes on.
  await p.page.route(`${s.engine.url}/api/notifications/${id}`, (route) => route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ errors: [{ code: 'unavailable', message: 'ClickHouse is slow' }] }) }), { times: 1 });
  await p.page.waitForSelector('section > p.error:has-text("ClickHouse is slow")');
  const first = await sent();
  await p.page.waitForFunction((n) => Number(document.querySelector('[data-counter=sent]')?.textContent?.replace(/\D/g, '')) > n, first);
  t.ok((await sent()) > first, 'the sent count moved on screen after a failed poll');
  t.notOk(await p.page.$('section > p.error'), 'and the error is gone');
  await p.screenshot('notification-sending');
  await p.page.click('button:has-text("Cancel notification")');
  t.ok(await p.page.isVisible('text=Stop sending this notification?'), 'cancel asks first');
  const asked = (await call(`${s.engine.url}/api/notifications/${id}`, 'GET', s.rest)).body as { canceled: boolean };
  t.equal(asked.canceled, false, 'asking cancels nothing');
  await p.page.click('button:has-text("Yes, cancel it")');
  await p.page.waitForFunction(() => document.querySelector('[data-testid=notification-status]')?.textContent === 'canceled', undefined);
  const view = await until(s, id, 'canceled');
  t.ok(view.counts['sent'] !== undefined && view.counts['sent'] < smsUsers.length, `stopped before every user was sent (${view.counts['sent']} of ${smsUsers.length})`);
  await done(t, p, 'notification-canceled');
  t.same(p.errors, [], 'no page errors');
});

t.test('the page and its hashed assets carry caching headers and a same-origin policy, and load so in the browser', async (t) => {
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

  const p = await openPage(t, FILE);
  await p.page.goto(`${s.engine.url}/dashboard`);
  await p.page.waitForSelector('form.gate');
  t.same(
    p.requests.filter((u) => u.includes('/dashboard/assets/')).sort(),
    assets.map((name) => `${s.engine.url}/dashboard/assets/${name}`).sort(),
    'the browser loads the page with exactly those assets',
  );
  await done(t, p, 'gate');
  t.same(p.errors, [], 'no page errors');
});
