import t, { type Test } from 'tap';
import { FcmClient } from '../../../actors/dispatch/providers/fcm.ts';
import { FcmTokenCache } from '../../../actors/dispatch/providers/fcm-token.ts';
import { startSimulators } from '../../../simulators/index.ts';
import { caOf, message } from './helpers.ts';

const sims = await startSimulators();
t.teardown(() => sims.close());
const ca = caOf(sims);
t.beforeEach(() => sims.fcm.reset());

const android = (token: string) => ({ type: 'ANDROID_PUSH' as const, token });
function client(t: Test, opts: ConstructorParameters<typeof FcmClient>[1] = {}, creds = sims.fcm.credentials()): FcmClient {
  const c = new FcmClient(creds, { ca, tokens: new FcmTokenCache(), ...opts });
  t.teardown(() => c.close());
  return c;
}
const googleError = (code: number, status: string, message: string, errorCode?: string) => ({
  error: { code, message, status, ...(errorCode ? { details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode }] } : {}) },
});

t.test('a send carries the FCM v1 message with string data and android options', async (t) => {
  const fcm = client(t);
  const result = await fcm.send(android('tok-1'), message());
  t.match(result, { ok: true, providerMessageId: /^projects\/demo-project\/messages\// });
  const [req] = await sims.fcm.requests();
  t.equal(req?.status, 200);
  t.equal(req?.path, '/v1/projects/demo-project/messages:send');
  t.match(req?.headers.authorization, /^Bearer ya29\.sim-/);
  t.same(req?.body, {
    message: {
      token: 'tok-1',
      notification: { title: 'Hello', body: 'World' },
      data: { svc_message_id: 'm-1', deep_link: '/inbox', count: '3' },
      android: { priority: 'HIGH', ttl: '3600s', collapse_key: 'inbox' },
    },
  });
});

t.test('the OAuth request is a signed JWT bearer grant to token_uri', async (t) => {
  const fcm = client(t);
  await fcm.send(android('tok-2'), message({ priority: 'normal', collapseId: null, title: null }));
  const [tokenReq] = await sims.fcm.tokenRequests();
  t.match(tokenReq, { status: 200, path: '/token', body: { grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: /^[\w-]+\.[\w-]+\.[\w-]+$/ } });
  const [req] = await sims.fcm.requests();
  t.same((req?.body as { message: unknown }).message, { token: 'tok-2', notification: { body: 'World' }, data: { svc_message_id: 'm-1', deep_link: '/inbox', count: '3' }, android: { priority: 'NORMAL', ttl: '3600s' } });
});

t.test('one access token serves many sends and two clients of the same account', async (t) => {
  const shared = new FcmTokenCache();
  const a = client(t, { tokens: shared });
  const b = client(t, { tokens: shared });
  const results = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).send(android(`tok-${i}`), message())));
  t.ok(results.every((r) => r.ok));
  t.equal((await sims.fcm.tokenRequests()).length, 1, 'fetched once');
  t.equal(new Set((await sims.fcm.requests()).map((r) => r.headers.authorization)).size, 1);
  t.equal(shared.fetches, 1);
});

t.test('a scripted 401 UNAUTHENTICATED drops the token, fetches a new one and retries once', async (t) => {
  const fcm = client(t);
  await fcm.send(android('tok-a'), message());
  await sims.fcm.script({ match: { token: 'tok-b' }, respond: { status: 401, body: googleError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.') }, times: 1 });
  t.match(await fcm.send(android('tok-b'), message()), { ok: true });
  t.equal((await sims.fcm.tokenRequests()).length, 2, 'fetched again after the 401');
  const reqs = await sims.fcm.requests();
  t.same(reqs.map((r) => r.status), [200, 401, 200]);
  t.equal(reqs[0]?.headers.authorization, reqs[1]?.headers.authorization);
  t.not(reqs[1]?.headers.authorization, reqs[2]?.headers.authorization);
  await fcm.send(android('tok-c'), message());
  t.equal((await sims.fcm.tokenRequests()).length, 2, 'the new token is cached');
});

t.test('access tokens the simulator forgot are renewed on the next send', async (t) => {
  const fcm = client(t);
  await fcm.send(android('tok-d'), message());
  await sims.fcm.expireAccessTokens();
  t.match(await fcm.send(android('tok-e'), message()), { ok: true });
  t.equal((await sims.fcm.tokenRequests()).length, 2);
});

t.test('a 401 that keeps coming back is REAUTH to the caller after one retry', async (t) => {
  const fcm = client(t);
  await sims.fcm.script({ match: { token: 'tok-f' }, respond: { status: 401, body: googleError(401, 'UNAUTHENTICATED', 'nope') }, times: 2 });
  t.match(await fcm.send(android('tok-f'), message()), { ok: false, code: 'fcm_401_UNAUTHENTICATED', action: 'REAUTH' });
  t.equal((await sims.fcm.requests()).length, 2);
});

t.test('the access token is cached until 5 minutes before it expires', async (t) => {
  let now = Date.now();
  const fcm = client(t, { tokens: new FcmTokenCache(() => now) });
  await fcm.send(android('tok-g'), message());
  now += 54 * 60_000;
  await fcm.send(android('tok-h'), message());
  t.equal((await sims.fcm.tokenRequests()).length, 1, 'still fresh at 54 minutes');
  now += 2 * 60_000;
  await fcm.send(android('tok-i'), message());
  t.equal((await sims.fcm.tokenRequests()).length, 2, 'renewed at 56 minutes');
});

t.test('scripted FCM errors map to code, action and hint', async (t) => {
  const fcm = client(t);
  const cases: [number, unknown, Record<string, string>, object][] = [
    [404, googleError(404, 'NOT_FOUND', 'Requested entity was not found.', 'UNREGISTERED'), {}, { code: 'fcm_404_UNREGISTERED', action: 'DROP' }],
    [403, googleError(403, 'PERMISSION_DENIED', 'SenderId mismatch', 'SENDER_ID_MISMATCH'), {}, { code: 'fcm_403_SENDER_ID_MISMATCH', action: 'DROP' }],
    [400, googleError(400, 'INVALID_ARGUMENT', 'The registration token is not a valid FCM registration token', 'INVALID_ARGUMENT'), {}, { code: 'fcm_400_INVALID_ARGUMENT', action: 'DROP', hint: /retired/ }],
    [400, googleError(400, 'INVALID_ARGUMENT', 'Message is too big', 'INVALID_ARGUMENT'), {}, { code: 'fcm_400_INVALID_ARGUMENT', action: 'FAIL' }],
    [401, googleError(401, 'UNAUTHENTICATED', 'Auth error from APNS or Web Push Service', 'THIRD_PARTY_AUTH_ERROR'), {}, { code: 'fcm_401_THIRD_PARTY_AUTH_ERROR', action: 'FAIL' }],
    [429, googleError(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded', 'QUOTA_EXCEEDED'), { 'retry-after': '30' }, { code: 'fcm_429_QUOTA_EXCEEDED', action: 'RETRY', retryAfterMs: 30_000 }],
    [500, googleError(500, 'INTERNAL', 'Internal error', 'INTERNAL'), {}, { code: 'fcm_500_INTERNAL', action: 'RETRY' }],
    [503, googleError(503, 'UNAVAILABLE', 'Unavailable', 'UNAVAILABLE'), {}, { code: 'fcm_503_UNAVAILABLE', action: 'RETRY', retryAfterMs: null }],
    [502, 'Bad Gateway', {}, { code: 'fcm_502', action: 'RETRY' }],
  ];
  let n = 0;
  for (const [status, body, headers, expected] of cases) {
    n += 1;
    await sims.fcm.script({ match: { token: `err-${n}` }, respond: { status, body, headers }, times: 1 });
    t.match(await fcm.send(android(`err-${n}`), message()), { ok: false, hint: /\w/, latencyMs: Number, ...expected }, JSON.stringify(expected));
  }
  t.equal((await sims.fcm.requests()).length, cases.length, 'none of these is retried inside the client');
});

t.test('a service account the token endpoint refuses is fcm_oauth_failed, no send made', async (t) => {
  const good = sims.fcm.credentials();
  const fcm = client(t, {}, { ...good, service_account: { ...good.service_account, private_key_id: 'not-the-key' } });
  t.match(await fcm.send(android('tok-j'), message()), { ok: false, code: 'fcm_oauth_failed', action: 'FAIL', latencyMs: null, hint: /service account/ });
  t.same(await sims.fcm.requests(), []);
});

t.test('a token endpoint that is down is RETRY, not a credential failure', async (t) => {
  const good = sims.fcm.credentials();
  const fcm = client(t, {}, { ...good, service_account: { ...good.service_account, token_uri: 'http://127.0.0.1:1/token' } });
  t.match(await fcm.send(android('tok-k'), message()), { ok: false, code: 'connection_error', action: 'RETRY' });
});
