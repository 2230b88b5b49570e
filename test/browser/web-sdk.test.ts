/// <reference lib="dom" />
import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import ece from 'http_ece';
import t, { type Test } from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { Keystore } from '../../engine/state/keys/keystore.ts';
import { finish, openPage, type BrowserPage } from '../helpers/browser.ts';
import { stage, until } from '../helpers/broadcast.ts';
import { call, eventually } from '../helpers/http.ts';
import { localOutbound } from '../helpers/outbound.ts';
import { browserKeys, deliverPush, fakePushService, localServer, shownNotifications } from '../helpers/web-sdk.ts';

/**
 * The web SDK in headless Chromium against one engine process with every role and the provider
 * simulators: what a page writes arrives once, offline and across tabs; Retry-After is kept; the
 * worker shows the engine's pushes and records clicks, as the page's own worker and imported
 * into another.
 */

const FILE = 'web-sdk';
const s = await stage(t, undefined, localOutbound);
const engine = s.engine.url;
const key = s.d.project.sdk_key;

interface Event {
  name: string;
  properties: Record<string, unknown>;
  idempotency_key: string | null;
}

async function eventsOf(user: string): Promise<Event[]> {
  const answer = await call(`${engine}/api/events?external_id=${encodeURIComponent(user)}&limit=500`, 'GET', s.rest);
  return (answer.body as { events: Event[] }).events;
}

/** The operations of the batch calls the pages made, in order. */
function batchOps(...pages: BrowserPage[]): { op: string; idempotency_key?: string }[] {
  return pages.flatMap((p) => p.sent.flatMap((body) => (body as { operations?: { op: string; idempotency_key?: string }[] }).operations ?? []));
}

/** A page of the engine's origin with the SDK loaded and `init` called with `url` (default: the engine). */
async function sdkPage(t: Test, url = engine, p?: BrowserPage): Promise<BrowserPage> {
  const page = p ?? (await openPage(t, FILE));
  await page.page.goto(`${engine}/demo`);
  await page.page.evaluate(([u, k]) => svc.init({ url: u as string, key: k as string, onError: (e) => void ((window as unknown as { refused: string[] }).refused ??= []).push(`${e.code} ${e.status}`) }), [url, key]);
  return page;
}

t.test('login, tags, events and opt-out arrive once each; a refused operation is reported and dropped', async (t) => {
  const p = await sdkPage(t);
  await p.page.evaluate(async () => {
    await svc.login('web-1');
    await svc.setTags({ plan: 'pro', seats: 3 });
    await svc.track('opened', { screen: 'home' });
    await svc.setTags({ ['x'.repeat(200)]: 'too long a key' });
    await svc.optOut('EMAIL');
    await svc.flushed();
  });
  t.same(await p.page.evaluate(() => (window as unknown as { refused: string[] }).refused), ['validation_failed 400'], 'the invalid tag is reported');
  const user = await eventually('the user applied', async () => {
    const a = await call(`${engine}/api/users/web-1`, 'GET', s.rest);
    const body = a.body as { tags?: Record<string, unknown>; consent?: Record<string, unknown> };
    return a.status === 200 && body.tags?.['plan'] === 'pro' ? body : undefined;
  });
  t.match(user.tags, { plan: 'pro', seats: 3 });
  t.match(user.consent, { EMAIL: { opted_out: true } }, 'the opt-out is in force');
  const events = await eventually('the event recorded', async () => ((await eventsOf('web-1')).length > 0 ? eventsOf('web-1') : undefined));
  t.same(events.map((e) => [e.name, e.properties]), [['opened', { screen: 'home' }]], 'one event');
  t.equal(p.sent.filter((b) => JSON.stringify(b).includes('too long a key')).length, 1, 'the refused batch was not retried');
  t.same(p.errors, []);
});

t.test('the demo page logs in, sets a tag and sends an event with its buttons', async (t) => {
  const p = await openPage(t, FILE);
  await p.page.goto(`${engine}/demo`);
  await p.page.fill('input[name=key]', key);
  await p.page.fill('input[name=user]', 'demo-1');
  await p.page.click('#start button');
  await p.page.waitForFunction(() => document.getElementById('log')?.textContent?.includes('logged in') === true);
  await p.page.click('#tag button');
  await p.page.click('#event button');
  await p.page.waitForFunction(() => document.getElementById('log')?.textContent?.includes('event sent') === true);
  t.match(await p.page.textContent('#curl'), /"include_external_user_ids":\["demo-1"\]/, 'the curl names the user');
  const user = await eventually('the tag applied', async () => {
    const a = await call(`${engine}/api/users/demo-1`, 'GET', s.rest);
    return (a.body as { tags?: Record<string, unknown> }).tags?.['plan'] === 'pro' ? a.body : undefined;
  });
  t.ok(user, 'the tag is the user\'s');
  const events = await eventually('the event recorded', async () => ((await eventsOf('demo-1')).length > 0 ? eventsOf('demo-1') : undefined));
  t.same(events.map((e) => e.name), ['opened_demo']);
  await finish(t, p, 'demo', engine, [key]);
  t.same(p.errors, []);
});

t.test('calls made offline survive a reload and are applied once when back online', async (t) => {
  const p = await sdkPage(t);
  const context = p.page.context();
  await context.route(`${engine}/api/sdk/**`, (r) => r.abort('internetdisconnected'));
  await context.setOffline(true);
  await p.page.evaluate(async () => {
    await svc.login('web-2');
    for (let i = 0; i < 50; i++) await svc.track('offline', { n: i });
  });
  await context.setOffline(false);
  await p.page.reload();
  t.same(await eventsOf('web-2'), [], 'nothing reached the engine while offline');
  await p.page.evaluate(([k]) => svc.init({ url: location.origin, key: k as string }), [key]);
  await context.unroute(`${engine}/api/sdk/**`);
  await p.page.evaluate(() => svc.flushed());
  const events = await eventually('50 events recorded', async () => {
    const all = await eventsOf('web-2');
    return all.length >= 50 ? all : undefined;
  });
  t.equal(events.length, 50, 'no event twice');
  t.same([...new Set(events.map((e) => e.properties['n']))].sort((a, b) => Number(a) - Number(b)), [...Array(50).keys()], 'each call once');
});

t.test('two tabs share one sender: no operation is sent twice', async (t) => {
  const a = await sdkPage(t);
  const b = await sdkPage(t, engine, await openPage(t, FILE, a.page.context()));
  const calls = (p: BrowserPage, from: number) =>
    p.page.evaluate(async (n) => {
      await svc.login('web-3');
      await Promise.all(Array.from({ length: 25 }, (_, i) => svc.track('tab', { n: n + i })));
      await svc.flushed();
    }, from);
  await Promise.all([calls(a, 0), calls(b, 25)]);
  const keys = batchOps(a, b).filter((o) => o.op === 'event').map((o) => o.idempotency_key);
  t.equal(keys.length, 50, 'every event sent');
  t.equal(new Set(keys).size, 50, 'none sent twice');
  const events = await eventually('50 events', async () => ((await eventsOf('web-3')).length >= 50 ? eventsOf('web-3') : undefined));
  t.equal(events.length, 50);
});

t.test('503 with Retry-After: 2 is not retried before 2 seconds', async (t) => {
  // Taken before the answer is written, so no later than the page could read it: a time taken
  // after it (on 'finish') can come late on a loaded machine and shorten the measured wait.
  let refusedAt = 0;
  const { proxy, p } = await behindProxy(t, (res) => {
    res.writeHead(503, { 'Content-Type': 'application/json', 'Retry-After': '2', 'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': 'Retry-After' });
    refusedAt = Date.now();
    res.end(JSON.stringify({ errors: [{ code: 'unavailable', message: 'The service cannot meet this call now.' }] }));
  });
  await p.page.evaluate(async () => {
    await svc.login('web-4');
    await svc.track('patient');
    await svc.flushed();
  });
  const posts = proxy.log.filter((r) => r.method === 'POST');
  t.equal(posts[0]?.status, 503, 'the first try was refused');
  t.equal(posts[1]?.status, 202, 'the second was taken');
  const waited = (posts[1]?.at ?? 0) - refusedAt;
  t.ok(waited >= 2000, `the retry came ${waited} ms after the 503`);
});

t.test('a batch whose answer is lost on the wire is sent again and its events counted once', async (t) => {
  const { proxy, p } = await behindProxy(t, (res, req) => {
    // The engine takes the batch; its answer never reaches the page.
    const forward = request(new URL(req.url ?? '', engine), { method: 'POST', headers: { ...req.headers, host: new URL(engine).host } }, (answer) => {
      answer.resume();
      answer.on('end', () => res.destroy());
    });
    req.pipe(forward);
  });
  await p.page.evaluate(async () => {
    await svc.login('web-7');
    for (let i = 0; i < 5; i++) await svc.track('lost', { n: i });
    await svc.flushed();
  });
  const posts = proxy.log.filter((r) => r.method === 'POST');
  t.ok(posts.length >= 2, `the batch was sent again (${posts.length} sends)`);
  const events = await eventually('the events recorded', async () => ((await eventsOf('web-7')).length >= 5 ? eventsOf('web-7') : undefined));
  await new Promise((r) => setTimeout(r, 1500));
  t.equal((await eventsOf('web-7')).length, 5, 'each event once, although the engine took the batch twice');
  t.same(events.map((e) => e.properties['n']).sort(), [0, 1, 2, 3, 4]);
});

/** Subscribes `page` for `user`, sends a notification, and checks that its worker shows it, replaces it by tag and records the click. */
async function pushFlow(t: Test, page: BrowserPage['page'], origin: string, user: string, setup: (keys: { endpoint: string }) => Promise<void>): Promise<void> {
  const keys = browserKeys();
  const sub = s.sims.webpush.receiver(keys);
  await page.context().grantPermissions(['notifications'], { origin });
  await fakePushService(page.context(), { endpoint: sub.token, web_p256: keys.web_p256, web_auth: keys.web_auth });
  await setup({ endpoint: sub.token });
  const endpoint = await page.evaluate(async (u) => {
    await svc.login(u);
    const e = await svc.subscribe();
    await svc.flushed();
    return e;
  }, user);
  t.equal(endpoint, sub.token, 'subscribed with the push service endpoint');
  await eventually('the subscription applied', async () => {
    const a = await call(`${engine}/api/users/${user}`, 'GET', s.rest);
    const subs = (a.body as { subscriptions?: { type: string; token_tail: string; state: string }[] }).subscriptions ?? [];
    return subs.some((x) => x.type === 'WEB_PUSH' && x.state === 'live' && sub.token.endsWith(x.token_tail.slice(1))) ? true : undefined;
  });
  const push = async (title: string): Promise<string> => {
    const url = `${origin}/inbox?from=push`;
    const sent = await call(`${engine}/api/notifications`, 'POST', s.rest, { include_external_user_ids: [user], headings: { en: title }, contents: { en: 'Body' }, web_url: url, collapse_id: 'digest' });
    const id = (sent.body as { id: string }).id;
    await until(s, id);
    const path = new URL(sub.token).pathname;
    const body = await eventually('the push reached the push service', async () => {
      const got = (await s.sims.webpush.requests()).filter((r) => r.path === path && r.status === 201);
      return (got.at(-1)?.body as { encrypted?: string } | undefined)?.encrypted;
    });
    const plain = ece.decrypt(Buffer.from(body, 'base64url'), { version: 'aes128gcm', privateKey: keys.ecdh, authSecret: keys.auth }).toString('utf8');
    await deliverPush(page, origin, plain);
    return id;
  };
  await push('First');
  const first = await eventually('the notification shown', async () => ((await shownNotifications(page)).length === 1 ? shownNotifications(page) : undefined));
  t.match(first[0], { title: 'First', body: 'Body', tag: 'digest', data: { svc: { url: `${origin}/inbox?from=push` } } }, 'title, body, tag and URL');
  const id = await push('Second');
  const second = await eventually('the second replaced the first', async () => {
    const shown = await shownNotifications(page);
    return shown.length === 1 && shown[0]?.title === 'Second' ? shown : undefined;
  });
  t.equal(second.length, 1, 'one notification: the same tag replaced it');
  const [worker] = page.context().serviceWorkers();
  t.ok(worker, 'the worker runs');
  await worker?.evaluate(async () => {
    const scope = self as unknown as { registration: ServiceWorkerRegistration; dispatchEvent(e: Event): boolean };
    const [shown] = await scope.registration.getNotifications();
    const Click = (globalThis as unknown as { NotificationEvent: new (type: string, init: { notification: Notification }) => Event }).NotificationEvent;
    if (shown) scope.dispatchEvent(new Click('notificationclick', { notification: shown }));
  });
  const receipt = await eventually('the click recorded', async () => {
    const a = await call(`${engine}/api/deliveries?notification_id=${id}`, 'GET', s.rest);
    const rows = (a.body as { deliveries: { receipt: string | null }[] }).deliveries;
    return rows.some((r) => r.receipt === 'clicked') ? 'clicked' : undefined;
  }, 30_000);
  t.equal(receipt, 'clicked', 'a click records clicked in the delivery ledger');
  t.same(await shownNotifications(page), [], 'the clicked notification is closed');
}

t.test("the SDK's own worker shows pushes, replaces by tag, records delivered and clicked", async (t) => {
  const redis = createRedis(loadConfig(s.d.env));
  t.teardown(() => redis.disconnect());
  await new Keystore(redis, new Topology(s.d.env['KEY_PREFIX'] ?? '', Number(s.d.env['PARTITIONS']))).setWebDeliveredReceipts(s.d.project.project_id, true);
  const p = await openPage(t, FILE);
  await pushFlow(t, p.page, engine, 'web-5', async () => {
    await p.page.goto(`${engine}/demo`);
    await p.page.evaluate((k) => svc.init({ url: location.origin, key: k, worker: '/sdk/web-sw.js', scope: '/' }), key);
  });
  const delivered = await call(`${engine}/api/notifications?limit=1`, 'GET', s.rest);
  t.match(JSON.stringify(delivered.body), /"delivered":1/, 'the worker sent a delivered receipt');

  // The browser replaced the subscription: the worker subscribes again and registers the new one.
  const keys = browserKeys();
  const next = s.sims.webpush.receiver(keys);
  const json = JSON.stringify({ endpoint: next.token, keys: { p256dh: keys.web_p256, auth: keys.web_auth } });
  const [worker] = p.page.context().serviceWorkers();
  await worker?.evaluate(`(() => {
    const made = { endpoint: ${JSON.stringify(next.token)}, options: {}, toJSON() { return ${json}; } };
    PushManager.prototype.getSubscription = () => Promise.resolve(null);
    PushManager.prototype.subscribe = () => Promise.resolve(made);
    self.dispatchEvent(new ExtendableEvent('pushsubscriptionchange'));
  })()`);
  await eventually('the new subscription registered', async () => {
    const a = await call(`${engine}/api/users/web-5`, 'GET', s.rest);
    const subs = (a.body as { subscriptions?: { token_tail: string }[] }).subscriptions ?? [];
    return subs.some((x) => next.token.endsWith(x.token_tail.slice(1))) ? true : undefined;
  });
  t.pass('pushsubscriptionchange registers the new subscription');
  t.same(p.errors, []);
});

/**
 * A page of another origin (which the engine's pages' policy would not let call the proxy) whose
 * SDK talks to the engine through a proxy; the page's first batch is handled by `first`.
 */
async function behindProxy(t: Test, first: (res: ServerResponse, req: IncomingMessage) => void) {
  let taken = false;
  const proxy = await localServer(t, engine, (req, res) => {
    if (taken || req.method !== 'POST' || req.url !== '/api/sdk/batch') return false;
    taken = true;
    first(res, req);
    return true;
  });
  const app = await hostApp(t);
  const p = await openPage(t, FILE);
  await p.page.goto(`${app.url}/app.html`);
  await p.page.evaluate(([u, k]) => svc.init({ url: u as string, key: k as string }), [proxy.url, key]);
  return { proxy, p };
}

/** Another origin's app: a page that loads the SDK from the engine, and a worker of its own that imports the SDK's. */
function hostApp(t: Test) {
  return localServer(t, engine, (req, res) => {
    const page = `<!doctype html><title>app</title><script src="${engine}/sdk/web.js"></script>`;
    const worker = `self.addEventListener('push', () => {}); importScripts('${engine}/sdk/web-sw.js');`;
    const files: Record<string, [string, string]> = { '/app.html': ['text/html', page], '/sw.js': ['text/javascript', worker] };
    const file = files[req.url ?? ''];
    if (!file) return false;
    res.writeHead(200, { 'Content-Type': file[0] }).end(file[1]);
    return true;
  });
}

t.test('the worker imported into another origin’s worker with importScripts behaves the same', async (t) => {
  const app = await hostApp(t);
  const p = await openPage(t, FILE);
  await pushFlow(t, p.page, app.url, 'web-6', async () => {
    await p.page.goto(`${app.url}/app.html`);
    await p.page.evaluate(([u, k]) => svc.init({ url: u as string, key: k as string, worker: '/sw.js' }), [engine, key]);
  });
  t.ok(app.log.some((r) => r.path === '/sw.js'), "the app's own worker was registered");
});
