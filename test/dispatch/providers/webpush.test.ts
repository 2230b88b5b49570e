import t, { type Test } from 'tap';
import { WebPushClient, WEBPUSH_MAX_PLAINTEXT } from '../../../actors/dispatch/providers/webpush.ts';
import { VapidHeaders } from '../../../actors/dispatch/providers/vapid.ts';
import type { Target } from '../../../actors/dispatch/providers/provider.ts';
import { startSimulators } from '../../../simulators/index.ts';
import { localPolicy } from '../../helpers/outbound.ts';
import { caOf, message } from './helpers.ts';

const sims = await startSimulators();
t.teardown(() => sims.close());
const ca = caOf(sims);
t.beforeEach(() => sims.webpush.reset());

function client(t: Test, opts: ConstructorParameters<typeof WebPushClient>[1] = {}): WebPushClient {
  const c = new WebPushClient(sims.webpush.credentials(), { ca, outbound: localPolicy, ...opts });
  t.teardown(() => c.close());
  return c;
}
const subscription = (): Target => ({ type: 'WEB_PUSH', ...sims.webpush.subscription() });
const idOf = (target: Target): string => target.token.split('/').pop() as string;

t.test('a push is VAPID-signed, aes128gcm-encrypted, with TTL, Urgency and Topic; the receiver decrypts it', async (t) => {
  const push = client(t);
  const target = subscription();
  const result = await push.send(target, message());
  t.match(result, { ok: true, providerMessageId: /\/message\// });
  const [req] = await sims.webpush.requests();
  t.equal(req?.status, 201);
  t.match(req?.headers, { ttl: '3600', urgency: 'high', topic: 'inbox', 'content-encoding': 'aes128gcm', authorization: /^vapid t=[\w-]+\.[\w-]+\.[\w-]+, k=[\w-]+$/ });
  t.same(JSON.parse(req?.body as string), { notification_id: 'n-1', title: 'Hello', body: 'World', data: { svc_message_id: 'm-1', deep_link: '/inbox', count: 3 }, tag: 'inbox' });
});

t.test('the VAPID header is signed once an hour per push service, and accepted each time', async (t) => {
  const push = client(t);
  for (let i = 0; i < 3; i++) t.match(await push.send(subscription(), message()), { ok: true });
  const sent = (await sims.webpush.requests()).map((r) => r.headers['authorization']);
  t.equal(sent.length, 3);
  t.equal(new Set(sent).size, 1, 'one header for the three pushes');

  const claims = (header: string): { aud: string; exp: number } => JSON.parse(Buffer.from(/t=[\w-]+\.([\w-]+)\./.exec(header)?.[1] ?? '', 'base64url').toString());
  const vapid = new VapidHeaders(sims.webpush.credentials());
  const endpoint = new URL(subscription().token);
  const now = Date.now();
  const first = vapid.authorization(endpoint, now);
  t.equal(claims(first).aud, endpoint.origin, 'aud is the push service origin');
  t.ok(claims(first).exp * 1000 >= now + 11 * 3_600_000 && claims(first).exp * 1000 <= now + 24 * 3_600_000, 'valid for 11 to 24 hours');
  t.equal(vapid.authorization(endpoint, now + 3_599_999), first, 'reused within the hour');
  t.equal(claims(vapid.authorization(new URL('https://other.example:8443/push/1'), now)).aud, 'https://other.example:8443', 'another push service gets its own');
  const later = vapid.authorization(endpoint, now + 3_600_000);
  t.not(later, first, 'signed again after an hour');
});

t.test('normal priority is Urgency normal; a collapse id that is no valid Topic is left out', async (t) => {
  const push = client(t);
  t.match(await push.send(subscription(), message({ priority: 'normal', collapseId: 'not a topic!', ttlSeconds: 0 })), { ok: true });
  const [req] = await sims.webpush.requests();
  t.match(req?.headers, { urgency: 'normal', ttl: '0' });
  t.notOk(req && 'topic' in req.headers);
});

t.test('a payload over the encrypted 4096-byte limit is refused locally', async (t) => {
  const push = client(t);
  const result = await push.send(subscription(), message({ body: 'x'.repeat(WEBPUSH_MAX_PLAINTEXT) }));
  t.match(result, { ok: false, code: 'webpush_413', action: 'FAIL', latencyMs: null });
  t.same(await sims.webpush.requests(), []);
});

t.test('the largest payload that fits is accepted', async (t) => {
  const push = client(t);
  const base = Buffer.byteLength(JSON.stringify({ notification_id: 'n-1', title: 'Hello', body: '', data: {}, tag: 'inbox' }));
  t.match(await push.send(subscription(), message({ data: {}, body: 'y'.repeat(WEBPUSH_MAX_PLAINTEXT - base) })), { ok: true });
});

t.test('a subscription without keys fails without a request', async (t) => {
  const push = client(t);
  t.match(await push.send({ type: 'WEB_PUSH', token: subscription().token }, message()), { ok: false, code: 'webpush_400', action: 'FAIL' });
  t.same(await sims.webpush.requests(), []);
});

t.test('an unknown subscription is 410 and DROP (unscripted)', async (t) => {
  const push = client(t);
  const target = subscription();
  const gone = { ...target, token: target.token.replace(/[^/]+$/, 'unknown-endpoint') };
  t.match(await push.send(gone, message()), { ok: false, code: 'webpush_410', action: 'DROP', hint: /retired/ });
});

t.test('scripted push service answers map to code, action, hint and Retry-After', async (t) => {
  const push = client(t);
  const date = new Date(Date.now() + 60_000).toUTCString();
  const cases: [number, Record<string, string>, object][] = [
    [404, {}, { code: 'webpush_404', action: 'DROP' }],
    [410, {}, { code: 'webpush_410', action: 'DROP' }],
    [429, { 'retry-after': '12' }, { code: 'webpush_429', action: 'RETRY', retryAfterMs: 12_000 }],
    [503, { 'retry-after': date }, { code: 'webpush_503', action: 'RETRY' }],
    [500, {}, { code: 'webpush_500', action: 'RETRY', retryAfterMs: null }],
    [400, {}, { code: 'webpush_400', action: 'FAIL' }],
    [401, {}, { code: 'webpush_401', action: 'FAIL' }],
    [403, {}, { code: 'webpush_403', action: 'FAIL' }],
    [413, {}, { code: 'webpush_413', action: 'FAIL' }],
  ];
  for (const [status, headers, expected] of cases) {
    const target = subscription();
    await sims.webpush.script({ match: { token: idOf(target) }, respond: { status, headers, body: 'scripted' }, times: 1 });
    const r = await push.send(target, message());
    t.match(r, { ok: false, hint: /\w/, latencyMs: Number, ...expected }, `${status}`);
    if (status === 503 && !r.ok) t.ok(r.retryAfterMs !== null && r.retryAfterMs > 55_000 && r.retryAfterMs <= 60_000, 'an HTTP-date Retry-After is read');
  }
});

t.test('a slow push service is a timeout; an untrusted certificate a connection_error', async (t) => {
  const push = client(t, { timeoutMs: 100 });
  const target = subscription();
  await sims.webpush.script({ match: { token: idOf(target) }, respond: { status: 201, delayMs: 400 }, times: 1 });
  t.match(await push.send(target, message()), { ok: false, code: 'timeout', action: 'RETRY' });
  const untrusting = new WebPushClient(sims.webpush.credentials(), { outbound: localPolicy });
  t.teardown(() => untrusting.close());
  t.match(await untrusting.send(subscription(), message()), { ok: false, code: 'connection_error', action: 'RETRY' });
});
