import t, { type Test } from 'tap';
import { ApnsClient, apnsPayload } from '../../../actors/dispatch/providers/apns.ts';
import { ApnsTokenCache } from '../../../actors/dispatch/providers/apns-token.ts';
import type { SendResult } from '../../../actors/dispatch/providers/provider.ts';
import { startSimulators } from '../../../simulators/index.ts';
import { caOf, deviceToken, message, sleep } from './helpers.ts';

const sims = await startSimulators();
t.teardown(() => sims.close());
const ca = caOf(sims);
t.beforeEach(() => sims.apns.reset());

const ios = (n: number) => ({ type: 'IOS_PUSH' as const, token: deviceToken(n) });
/** A client with its own token cache, so tests do not share provider tokens by accident. */
function client(t: Test, opts: ConstructorParameters<typeof ApnsClient>[1] = {}): ApnsClient {
  const c = new ApnsClient(sims.apns.credentials(), { ca, tokens: new ApnsTokenCache(), ...opts });
  t.teardown(() => c.close());
  return c;
}
const failed = (r: SendResult) => (r.ok ? { ok: true } : { code: r.code, action: r.action, retryAfterMs: r.retryAfterMs });

t.test('an alert push carries the APNs headers and payload the simulator accepts', async (t) => {
  const apns = client(t);
  const before = Math.floor(Date.now() / 1000);
  const result = await apns.send(ios(1), message());
  t.match(result, { ok: true, providerMessageId: /^[0-9a-f-]{36}$/ });
  const [req] = await sims.apns.requests();
  t.equal(req?.status, 200);
  t.equal(req?.path, `/3/device/${deviceToken(1)}`);
  t.match(req?.headers, {
    authorization: /^bearer [\w-]+\.[\w-]+\.[\w-]+$/,
    'apns-topic': 'com.example.app',
    'apns-push-type': 'alert',
    'apns-priority': '10',
    'apns-collapse-id': 'inbox',
    'apns-id': /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
  });
  t.equal(result.ok && result.providerMessageId, req?.headers['apns-id'], 'the provider id is the apns-id APNs echoed');
  const expiration = Number(req?.headers['apns-expiration']);
  t.ok(expiration >= before + 3600 && expiration <= before + 3602, 'apns-expiration is now + ttl');
  t.same(req?.body, { aps: { alert: { title: 'Hello', body: 'World' }, sound: 'default' }, svc_message_id: 'm-1', deep_link: '/inbox', count: 3 });
});

t.test('a push with neither title nor body goes as background with priority 5; ttl 0 expires at once', async (t) => {
  const apns = client(t);
  t.match(await apns.send(ios(2), message({ title: null, body: '', ttlSeconds: 0, collapseId: null })), { ok: true });
  const [req] = await sims.apns.requests();
  t.match(req?.headers, { 'apns-push-type': 'background', 'apns-priority': '5', 'apns-expiration': '0' });
  t.notOk(req && 'apns-collapse-id' in req.headers);
  t.match(req?.body, { aps: { 'content-available': 1 } });
});

t.test('a data key named aps cannot replace the aps dictionary', async (t) => {
  t.same(JSON.parse(apnsPayload(message({ data: { aps: 'x', k: 1 } }))), { aps: { alert: { title: 'Hello', body: 'World' }, sound: 'default' }, k: 1 });
});

t.test('a payload over 4096 bytes is refused locally without a request', async (t) => {
  const apns = client(t);
  const result = await apns.send(ios(3), message({ body: 'x'.repeat(4100) }));
  t.match(result, { ok: false, code: 'apns_413_PayloadTooLarge', action: 'FAIL', latencyMs: null, hint: /4096/ });
  t.same(await sims.apns.requests(), []);
});

t.test('one provider token serves many sends and two clients of the same team and key', async (t) => {
  const shared = new ApnsTokenCache();
  const a = client(t, { tokens: shared });
  const b = client(t, { tokens: shared });
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).send(ios(100 + i), message())));
  t.ok(results.every((r) => r.ok), 'all accepted (no TooManyProviderTokenUpdates)');
  const auths = new Set((await sims.apns.requests()).map((r) => r.headers.authorization));
  t.equal(auths.size, 1, 'every request carried the same JWT');
});

t.test('the process-wide token cache is used when no cache is given', async (t) => {
  const a = new ApnsClient(sims.apns.credentials(), { ca });
  const b = new ApnsClient(sims.apns.credentials(), { ca });
  t.teardown(() => Promise.all([a.close(), b.close()]));
  await a.send(ios(7), message());
  await b.send(ios(8), message());
  const auths = new Set((await sims.apns.requests()).map((r) => r.headers.authorization));
  t.equal(auths.size, 1);
});

t.test('the provider token is renewed after 40 minutes, not before', async (t) => {
  let now = Date.now() - 50 * 60_000;
  const apns = client(t, { tokens: new ApnsTokenCache(() => now) });
  await apns.send(ios(10), message());
  now += 39 * 60_000;
  await apns.send(ios(11), message());
  now += 2 * 60_000;
  const third = await apns.send(ios(12), message());
  t.match(third, { ok: true }, 'APNs accepts the renewed token (41 min > 20 min)');
  const [a, b, c] = (await sims.apns.requests()).map((r) => r.headers.authorization);
  t.equal(a, b, 'same token at 39 minutes');
  t.not(b, c, 'new token at 41 minutes');
});

t.test('ExpiredProviderToken: a token of 25 minutes is re-signed and the send retried once', async (t) => {
  let now = Date.now() - 30 * 60_000;
  const apns = client(t, { tokens: new ApnsTokenCache(() => now) });
  await apns.send(ios(20), message());
  now += 25 * 60_000;
  await sims.apns.script({ match: { token: deviceToken(21) }, respond: { status: 403, body: { reason: 'ExpiredProviderToken' } }, times: 1 });
  const result = await apns.send(ios(21), message());
  t.match(result, { ok: true });
  const reqs = (await sims.apns.requests()).filter((r) => r.path.endsWith(deviceToken(21)));
  t.same(reqs.map((r) => r.status), [403, 200]);
  t.not(reqs[0]?.headers.authorization, reqs[1]?.headers.authorization, 'the retry carried a new token');
  t.match(reqs[0]?.headers['apns-id'], /^[0-9a-f-]{36}$/);
  t.equal(reqs[0]?.headers['apns-id'], reqs[1]?.headers['apns-id'], 'and the same apns-id: it is the same notification');
});

t.test('the token in force is answered without signing; none while one is due or being signed', async (t) => {
  let now = Date.now();
  const tokens = new ApnsTokenCache(() => now);
  const key = sims.apns.credentials();
  t.equal(tokens.current(key), null, 'nothing signed yet');
  const signing = tokens.token(key);
  t.equal(tokens.current(key), null, 'being signed');
  const jwt = await signing;
  t.equal(tokens.current(key), jwt);
  now += 41 * 60_000;
  t.equal(tokens.current(key), null, 'due for renewal at 40 minutes');
  t.not(await tokens.token(key), jwt);
});

t.test('ExpiredProviderToken on a token under 20 minutes: REAUTH back to the caller, no re-signing', async (t) => {
  let now = Date.now() - 30 * 60_000;
  const apns = client(t, { tokens: new ApnsTokenCache(() => now) });
  await apns.send(ios(30), message());
  now += 10 * 60_000;
  await sims.apns.script({ match: { token: deviceToken(31) }, respond: { status: 403, body: { reason: 'ExpiredProviderToken' } }, times: 1 });
  t.match(failed(await apns.send(ios(31), message())), { code: 'apns_403_ExpiredProviderToken', action: 'REAUTH' });
  now += 11 * 60_000;
  t.match(await apns.send(ios(32), message()), { ok: true }, 'at 21 minutes the flagged token is replaced');
  const auths = (await sims.apns.requests()).map((r) => r.headers.authorization);
  t.equal(auths.length, 3, 'no retry of the refused send');
  t.equal(auths[0], auths[1]);
  t.not(auths[1], auths[2]);
});

t.test('TooManyProviderTokenUpdates is retried later with the same token', async (t) => {
  const apns = client(t);
  await sims.apns.script({ match: { token: deviceToken(40) }, respond: { status: 429, body: { reason: 'TooManyProviderTokenUpdates' } }, times: 1 });
  t.match(failed(await apns.send(ios(40), message())), { code: 'apns_429_TooManyProviderTokenUpdates', action: 'RETRY' });
  await apns.send(ios(41), message());
  const auths = new Set((await sims.apns.requests()).map((r) => r.headers.authorization));
  t.equal(auths.size, 1);
});

t.test('scripted APNs errors map to code, action and hint', async (t) => {
  const apns = client(t);
  const cases: [number, string, Record<string, string>, string, string][] = [
    [400, 'BadDeviceToken', {}, 'apns_400_BadDeviceToken', 'DROP'],
    [400, 'DeviceTokenNotForTopic', {}, 'apns_400_DeviceTokenNotForTopic', 'DROP'],
    [403, 'InvalidProviderToken', {}, 'apns_403_InvalidProviderToken', 'FAIL'],
    [400, 'TopicDisallowed', {}, 'apns_400_TopicDisallowed', 'FAIL'],
    [400, 'SomethingNew', {}, 'apns_400_SomethingNew', 'FAIL'],
    [500, 'InternalServerError', {}, 'apns_500_InternalServerError', 'RETRY'],
    [429, 'TooManyRequests', { 'retry-after': '7' }, 'apns_429_TooManyRequests', 'RETRY'],
  ];
  let n = 50;
  for (const [status, reason, headers, code, action] of cases) {
    n += 1;
    await sims.apns.script({ match: { token: deviceToken(n) }, respond: { status, body: { reason }, headers }, times: 1 });
    const r = await apns.send(ios(n), message());
    t.match(r, { ok: false, code, action, hint: /\w/, latencyMs: Number }, code);
  }
  await sims.apns.script({ match: { token: deviceToken(70) }, respond: { status: 429, body: { reason: 'TooManyRequests' }, headers: { 'retry-after': '7' } }, times: 1 });
  t.match(failed(await apns.send(ios(70), message())), { retryAfterMs: 7000 }, 'Retry-After (lowercase in Node) is read');
});

t.test('410 Unregistered is DROP with the time the token became invalid', async (t) => {
  const apns = client(t);
  await sims.apns.script({ match: { token: deviceToken(80) }, respond: { status: 410, body: { reason: 'Unregistered', timestamp: 1_700_000_000_000 } }, times: 1 });
  t.match(await apns.send(ios(80), message()), { ok: false, code: 'apns_410_Unregistered', action: 'DROP', invalidSinceMs: 1_700_000_000_000 });
});

t.test('a 503 answer retires that connection: the next send opens a new one', async (t) => {
  const apns = client(t);
  await apns.send(ios(90), message());
  t.equal(apns.pool.connects, 1);
  await sims.apns.script({ match: { token: deviceToken(91) }, respond: { status: 503, body: { reason: 'ServiceUnavailable' } }, times: 1 });
  t.match(failed(await apns.send(ios(91), message())), { code: 'apns_503_ServiceUnavailable', action: 'RETRY' });
  t.match(await apns.send(ios(92), message()), { ok: true });
  t.equal(apns.pool.connects, 2);
});

t.test('GOAWAY: the refused push is replayed on a new connection, none lost or doubled', async (t) => {
  const apns = client(t);
  await apns.send(ios(200), message()); // raises the stream limit of the first connection
  await sims.apns.script({ match: { token: deviceToken(205) }, respond: { status: 200, goaway: true }, times: 1 });
  const tokens = Array.from({ length: 12 }, (_, i) => 201 + i);
  const results = await Promise.all(tokens.map((n) => apns.send(ios(n), message())));
  t.ok(results.every((r) => r.ok), 'every send accepted');
  const reqs = (await sims.apns.requests()).slice(1);
  for (const n of tokens) {
    const mine = reqs.filter((r) => r.path.endsWith(deviceToken(n)));
    t.equal(mine.filter((r) => r.status === 200).length, 1, `token ${n} delivered exactly once`);
  }
  const refused = reqs.filter((r) => r.status === 0);
  t.same(refused.map((r) => r.path), [`/3/device/${deviceToken(205)}`], 'only the GOAWAY stream was refused');
  t.ok(apns.pool.connects >= 2, 'replayed on a new connection');
});

t.test('the peer stream limit is respected: 1 stream per connection until APNs raises it', async (t) => {
  const apns = client(t, { pool: { maxSessions: 2 } });
  // Scripted answers do not raise the limit, so both connections stay at 1 stream.
  await sims.apns.script({ match: { path: '/3/device/' }, respond: { status: 200, delayMs: 150 }, times: 6 });
  let peak = 0;
  const probe = setInterval(() => (peak = Math.max(peak, apns.pool.stats().active)), 2);
  const results = await Promise.all(Array.from({ length: 6 }, (_, i) => apns.send(ios(300 + i), message())));
  clearInterval(probe);
  t.ok(results.every((r) => r.ok));
  t.equal(peak, 2, 'never more than one stream on each of two connections');
  const at = (await sims.apns.requests()).map((r) => r.at).sort((x, y) => x - y);
  for (let i = 0; i + 2 < at.length; i++) t.ok((at[i + 2] as number) - (at[i] as number) >= 140, `request ${i + 2} waited for a free stream`);
  t.equal(apns.pool.connects, 2);
  // An accepted, unscripted push raises SETTINGS_MAX_CONCURRENT_STREAMS; the pool reads it.
  await apns.send(ios(310), message());
  await sleep(20);
  t.ok(apns.pool.stats().maxStreams.includes(1000), 'the raised limit is read from the new SETTINGS');
});

t.test('a full queue pushes back with queue_full', async (t) => {
  const apns = client(t, { pool: { maxSessions: 1, maxQueued: 2 } });
  await sims.apns.script({ match: { path: '/3/device/' }, respond: { status: 200, delayMs: 100 }, times: 3 });
  // All four reach the pool before its first connection is up: two wait, two are refused.
  const results = await Promise.all(Array.from({ length: 4 }, (_, i) => apns.send(ios(400 + i), message())));
  t.same(results.map((r) => (r.ok ? 'ok' : r.code)), ['ok', 'ok', 'queue_full', 'queue_full']);
  t.match(results[3], { action: 'RETRY', latencyMs: null });
  t.equal((await sims.apns.requests()).length, 2, 'the refused sends never reached APNs');
});

t.test('a timeout is RETRY and the next send goes on a new connection', async (t) => {
  // The second send connects anew within the same limit: a second is room for a TLS handshake on
  // a loaded machine; the first answer comes well after it.
  const apns = client(t, { timeoutMs: 1000 });
  await sims.apns.script({ match: { token: deviceToken(500) }, respond: { status: 200, delayMs: 3000 }, times: 1 });
  t.match(await apns.send(ios(500), message()), { ok: false, code: 'timeout', action: 'RETRY', latencyMs: Number });
  t.match(await apns.send(ios(501), message()), { ok: true });
  t.equal(apns.pool.connects, 2);
});

t.test('an untrusted certificate or a closed port is connection_error', async (t) => {
  const untrusting = new ApnsClient(sims.apns.credentials(), { tokens: new ApnsTokenCache() });
  t.teardown(() => untrusting.close());
  t.match(await untrusting.send(ios(600), message()), { ok: false, code: 'connection_error', action: 'RETRY' });
  const closed = new ApnsClient({ ...sims.apns.credentials(), base_url: 'https://127.0.0.1:1' }, { ca, tokens: new ApnsTokenCache() });
  t.teardown(() => closed.close());
  t.match(await closed.send(ios(601), message()), { ok: false, code: 'connection_error', action: 'RETRY' });
});

t.test('an aborted send is canceled', async (t) => {
  const apns = client(t);
  await sims.apns.script({ match: { token: deviceToken(700) }, respond: { status: 200, delayMs: 300 }, times: 1 });
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 50);
  t.match(await apns.send(ios(700), message(), ac.signal), { ok: false, code: 'canceled', action: 'FAIL' });
});

t.test('close is idempotent and lets queued and in-flight sends finish', async (t) => {
  const apns = new ApnsClient(sims.apns.credentials(), { ca, tokens: new ApnsTokenCache() });
  await sims.apns.script({ match: { token: deviceToken(800) }, respond: { status: 200, delayMs: 100 }, times: 1 });
  const sending = apns.send(ios(800), message());
  await sleep(1);
  const [a, b] = [apns.close(), apns.close()];
  t.equal(a, b);
  t.match(await sending, { ok: true });
  await a;
  t.match(await apns.send(ios(801), message()), { ok: false, code: 'connection_error' });
});

t.test('after the first accepted push, 500 concurrent sends share one connection', async (t) => {
  const apns = client(t);
  await apns.send(ios(900), message());
  await sleep(20);
  const results = await Promise.all(Array.from({ length: 500 }, (_, i) => apns.send(ios(1000 + i), message())));
  t.ok(results.every((r) => r.ok), 'all accepted');
  t.equal(apns.pool.connects, 1, 'the raised SETTINGS_MAX_CONCURRENT_STREAMS made room on one connection');
  t.equal((await sims.apns.requests()).length, 501);
});
