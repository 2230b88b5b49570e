import { createHmac, generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as https from 'node:https';
import { importJWK, importPKCS8, SignJWT } from 'jose';
import t from 'tap';
import { Agent, fetch } from 'undici';
import webpush from 'web-push';
import { checkCredentials } from '../../engine/state/keys/provider-store.ts';
import { APNS_RAISED_STREAMS, startSimulators, type Simulators } from '../../simulators/index.ts';
import { eventually } from '../helpers/http.ts';

/**
 * Drives each simulator with a client written here, the way a provider client would talk to the
 * real service, and checks both the answers and what the simulator says it received.
 */
const sims: Simulators = await startSimulators();
t.teardown(() => sims.close());
const ca = readFileSync(sims.caFile, 'utf8');
const dispatcher = new Agent({ connect: { ca } });
t.teardown(() => dispatcher.close());

interface H2Answer {
  status: number;
  headers: http2.IncomingHttpHeaders;
  body: unknown;
}

/** Resolves once the server's first SETTINGS frame is in, so remoteSettings are the server's. */
function h2Connect(url: string): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url, { ca });
    session.once('remoteSettings', () => resolve(session));
    session.once('error', reject);
  });
}

function h2Post(session: http2.ClientHttp2Session, path: string, headers: Record<string, string>, body: string): Promise<H2Answer> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':method': 'POST', ':path': path, ...headers });
    let head: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    req.on('response', (h) => (head = h));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      resolve({ status: Number(head[':status']), headers: head, body: text === '' ? undefined : JSON.parse(text) });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const nowS = (): number => Math.floor(Date.now() / 1000);

t.test('credentials() are files the engine accepts', async (t) => {
  for (const provider of ['apns', 'fcm', 'webpush', 'twilio', 'sendgrid'] as const) {
    const creds = sims[provider].credentials();
    t.same(checkCredentials(provider, creds), creds, provider);
  }
  t.doesNotThrow(() => checkCredentials('twilio', sims.twilio.credentials('messaging_service')));
  t.equal(sims.fcm.credentials().service_account.token_uri, `${sims.fcm.url}/token`);
});

t.test('APNs', async (t) => {
  const creds = sims.apns.credentials();
  const key = await importPKCS8(creds.private_key, 'ES256');
  const sign = (iat: number, kid = creds.key_id, k = key) => new SignJWT({ iss: creds.team_id, iat }).setProtectedHeader({ alg: 'ES256', kid }).sign(k);
  const device = randomBytes(32).toString('hex');
  const aps = JSON.stringify({ aps: { alert: { title: 'Hi', body: 'there' }, sound: 'default' } });
  t.beforeEach(() => sims.apns.reset());

  t.test('accepts a push, echoes apns-id and raises the stream limit after it', async (t) => {
    const session = await h2Connect(creds.base_url ?? '');
    t.teardown(() => session.close());
    t.equal(session.remoteSettings.maxConcurrentStreams, 1, 'one stream before the first accepted push');
    const raised = new Promise<number | undefined>((resolve) => session.once('remoteSettings', (s) => resolve(s.maxConcurrentStreams)));
    const apnsId = '123E4567-E89B-12D3-A456-426614174000';
    const token = await sign(nowS());
    const res = await h2Post(session, `/3/device/${device}`, { authorization: `bearer ${token}`, 'apns-topic': creds.topic, 'apns-push-type': 'alert', 'apns-id': apnsId }, aps);
    t.equal(res.status, 200);
    t.equal(res.headers['apns-id'], apnsId);
    t.equal(res.body, undefined, 'empty body');
    t.equal(await raised, APNS_RAISED_STREAMS);
    const [logged] = await sims.apns.requests();
    t.match(logged, { method: 'POST', path: `/3/device/${device}`, status: 200, body: JSON.parse(aps) });
    t.equal(logged?.headers['apns-topic'], creds.topic);
  });

  t.test('checks the provider token', async (t) => {
    const session = await h2Connect(creds.base_url ?? '');
    t.teardown(() => session.close());
    const post = (headers: Record<string, string>) => h2Post(session, `/3/device/${device}`, { 'apns-topic': creds.topic, ...headers }, aps);
    t.same((await post({})).body, { reason: 'MissingProviderToken' });
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const forged = await post({ authorization: `bearer ${await sign(nowS(), creds.key_id, other as never)}` });
    t.same([forged.status, forged.body], [403, { reason: 'InvalidProviderToken' }], 'signed by another key');
    t.same((await post({ authorization: `bearer ${await sign(nowS(), 'OTHERKEY')}` })).body, { reason: 'InvalidProviderToken' }, 'unknown kid');
    const old = await post({ authorization: `bearer ${await sign(nowS() - 3700)}` });
    t.same([old.status, old.body], [403, { reason: 'ExpiredProviderToken' }]);
    // One token per key for 20 min: a second worker with its own token is throttled, a copy is not.
    const first = nowS() - 600;
    t.equal((await post({ authorization: `bearer ${await sign(first)}` })).status, 200);
    const storm = await post({ authorization: `bearer ${await sign(nowS())}` });
    t.same([storm.status, storm.body], [429, { reason: 'TooManyProviderTokenUpdates' }]);
    t.equal((await post({ authorization: `bearer ${await sign(first)}` })).status, 200, 'same iat, new signature: the shared token');
  });

  t.test('checks headers and payload', async (t) => {
    const session = await h2Connect(creds.base_url ?? '');
    t.teardown(() => session.close());
    const auth = `bearer ${await sign(nowS())}`;
    const post = (path: string, headers: Record<string, string>, body: string) => h2Post(session, path, { authorization: auth, ...headers }, body);
    t.same((await post(`/3/device/${device}`, {}, aps)).body, { reason: 'MissingTopic' });
    t.same((await post('/3/device/nothex', { 'apns-topic': creds.topic }, aps)).body, { reason: 'BadDeviceToken' });
    const big = JSON.stringify({ aps: { alert: 'x'.repeat(4100) } });
    t.same(await post(`/3/device/${device}`, { 'apns-topic': creds.topic }, big).then((r) => [r.status, r.body]), [413, { reason: 'PayloadTooLarge' }]);
    t.same((await post(`/3/device/${device}`, { 'apns-topic': creds.topic, 'apns-priority': '7' }, aps)).body, { reason: 'BadPriority' });
    t.same((await post(`/3/device/${device}`, { 'apns-topic': creds.topic, 'apns-collapse-id': 'c'.repeat(65) }, aps)).body, { reason: 'BadCollapseId' });
  });

  t.test('scripted answers override, limited by times', async (t) => {
    const session = await h2Connect(creds.base_url ?? '');
    t.teardown(() => session.close());
    const auth = `bearer ${await sign(nowS())}`;
    const gone = { reason: 'Unregistered', timestamp: Date.now() };
    await sims.apns.script({ match: { token: device }, respond: { status: 410, body: gone }, times: 1 });
    await sims.apns.script({ match: { path: '/3/device/' }, respond: { status: 429, body: { reason: 'TooManyRequests' }, headers: { 'retry-after': '7' }, delayMs: 50 }, times: 1 });
    const post = () => h2Post(session, `/3/device/${device}`, { authorization: auth, 'apns-topic': creds.topic }, aps);
    const a = await post();
    t.same([a.status, a.body], [410, gone]);
    t.ok(a.headers['apns-id'], 'scripted answers carry apns-id too');
    const started = Date.now();
    const b = await post();
    t.same([b.status, b.headers['retry-after']], [429, '7']);
    t.ok(Date.now() - started >= 45, 'delayed');
    t.equal((await post()).status, 200, 'rules used up');
    t.same((await sims.apns.requests()).map((r) => r.status), [410, 429, 200]);
  });

  t.test('scripted GOAWAY refuses its stream with reason Shutdown; streams before it are answered', async (t) => {
    const auth = `bearer ${await sign(nowS())}`;
    const session = await h2Connect(creds.base_url ?? '');
    t.teardown(() => session.destroy());
    const headers = { authorization: auth, 'apns-topic': creds.topic };
    const raised = new Promise((resolve) => session.once('remoteSettings', resolve));
    t.equal((await h2Post(session, `/3/device/${device}`, headers, aps)).status, 200);
    await raised;
    const doomed = randomBytes(32).toString('hex');
    await sims.apns.script({ match: { token: doomed }, respond: { status: 503, goaway: true }, times: 1 });
    const goaway = new Promise<{ code: number; reason: unknown }>((resolve) =>
      session.once('goaway', (code, _last, data) => resolve({ code, reason: data ? JSON.parse(data.toString()) : undefined })),
    );
    const tokens = Array.from({ length: 6 }, (_, i) => (i === 3 ? doomed : randomBytes(32).toString('hex')));
    const outcomes = await Promise.all(
      tokens.map((tok) =>
        h2Post(session, `/3/device/${tok}`, headers, aps).then(
          (r) => r.status,
          (e: unknown) => String((e as Error).message),
        ),
      ),
    );
    t.match(outcomes[3], /REFUSED_STREAM/, 'the GOAWAY stream is refused');
    t.same(await goaway, { code: http2.constants.NGHTTP2_NO_ERROR, reason: { reason: 'Shutdown' } });
    const log = (await sims.apns.requests()).slice(1);
    t.same(log.filter((r) => r.status === 0).map((r) => r.path), [`/3/device/${doomed}`], 'GOAWAY logged with status 0');
    tokens.forEach((tok, i) => {
      const answered = log.filter((r) => r.path.endsWith(tok) && r.status === 200).length;
      // A stream that reached the simulator before the GOAWAY is answered; a later one is refused unseen.
      if (outcomes[i] === 200) t.equal(answered, 1, `stream ${i} answered once`);
      else t.equal(answered, 0, `stream ${i} refused and never processed`);
    });
    const again = await h2Connect(creds.base_url ?? '');
    t.teardown(() => again.close());
    t.equal((await h2Post(again, `/3/device/${doomed}`, headers, aps)).status, 200, 'replayed on a new connection');
  });
});

t.test('FCM', async (t) => {
  const creds = sims.fcm.credentials();
  const sa = creds.service_account;
  const key = await importPKCS8(sa.private_key, 'RS256');
  const scope = 'https://www.googleapis.com/auth/firebase.messaging';
  const assertion = (claims: Record<string, unknown> = {}, kid = sa.private_key_id, k = key) => {
    const iat = nowS();
    return new SignJWT({ iss: sa.client_email, scope, aud: sa.token_uri, iat, exp: iat + 3600, ...claims }).setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' }).sign(k);
  };
  const tokenCall = async (jwt: string) => {
    const res = await fetch(sa.token_uri, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: jwt }).toString(),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const sendPath = `/v1/projects/${sa.project_id}/messages:send`;
  t.beforeEach(() => sims.fcm.reset());

  t.test('issues an access token and accepts a message with it', async (t) => {
    const jwt = await assertion();
    const issued = await tokenCall(jwt);
    t.equal(issued.status, 200);
    t.match(issued.body, { access_token: String, expires_in: 3600, token_type: 'Bearer' });
    const tokens = await sims.fcm.tokenRequests();
    t.same(tokens.map((r) => r.body), [{ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: jwt }]);

    const session = await h2Connect(creds.base_url ?? '');
    t.teardown(() => session.close());
    const message = { message: { token: 'fcm-token-1', notification: { title: 'Hi', body: 'there' }, data: { k: 'v' }, android: { priority: 'HIGH', ttl: '3600s' } } };
    const res = await h2Post(session, sendPath, { authorization: `Bearer ${String(issued.body.access_token)}`, 'content-type': 'application/json' }, JSON.stringify(message));
    t.equal(res.status, 200);
    t.match(res.body, { name: new RegExp(`^projects/${sa.project_id}/messages/.+`) });
    t.same((await sims.fcm.requests()).map((r) => [r.path, r.status, r.body]), [[sendPath, 200, message]], 'token requests are not in requests()');
  });

  t.test('rejects bad assertions', async (t) => {
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    t.match(await tokenCall(await assertion({}, sa.private_key_id, other as never)), { status: 400, body: { error: 'invalid_grant' } }, 'signed by another key');
    t.match(await tokenCall(await assertion({}, 'other-kid')), { status: 400, body: { error: 'invalid_grant' } }, 'unknown kid');
    t.match(await tokenCall(await assertion({ aud: 'https://oauth2.googleapis.com/token' })), { status: 400, body: { error: 'invalid_grant' } }, 'aud');
    t.match(await tokenCall(await assertion({ exp: nowS() + 7200 })), { status: 400, body: { error: 'invalid_grant' } }, 'exp beyond iat + 1 h');
    t.match(await tokenCall(await assertion({ scope: 'https://www.googleapis.com/auth/cloud-platform.read-only' })), { status: 400, body: { error: 'invalid_scope' } });
  });

  t.test('auth failures are 401 UNAUTHENTICATED without an FcmError', async (t) => {
    const issued = await tokenCall(await assertion());
    const session = await h2Connect(creds.base_url ?? '');
    t.teardown(() => session.close());
    const body = JSON.stringify({ message: { token: 'x' } });
    const unknown = await h2Post(session, sendPath, { authorization: 'Bearer ya29.nope' }, body);
    t.match(unknown, { status: 401, body: { error: { code: 401, status: 'UNAUTHENTICATED' } } });
    t.notOk((unknown.body as { error: { details?: unknown } }).error.details, 'no FcmError detail');
    const auth = { authorization: `Bearer ${String(issued.body.access_token)}` };
    t.equal((await h2Post(session, sendPath, auth, body)).status, 200);
    await sims.fcm.expireAccessTokens();
    t.match(await h2Post(session, sendPath, auth, body), { status: 401, body: { error: { status: 'UNAUTHENTICATED' } } }, 'expired');
  });

  t.test('data values must be strings; scripted errors by token', async (t) => {
    const issued = await tokenCall(await assertion());
    const session = await h2Connect(creds.base_url ?? '');
    t.teardown(() => session.close());
    const auth = { authorization: `Bearer ${String(issued.body.access_token)}` };
    const bad = await h2Post(session, sendPath, auth, JSON.stringify({ message: { token: 'x', data: { n: 1 } } }));
    t.match(bad, {
      status: 400,
      body: { error: { code: 400, status: 'INVALID_ARGUMENT', details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'INVALID_ARGUMENT' }] } },
    });
    const unregistered = {
      error: { code: 404, message: 'Requested entity was not found.', status: 'NOT_FOUND', details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'UNREGISTERED' }] },
    };
    await sims.fcm.script({ match: { token: 'dead' }, respond: { status: 404, body: unregistered }, times: 2 });
    const dead = JSON.stringify({ message: { token: 'dead' } });
    t.same((await h2Post(session, sendPath, auth, dead)).body, unregistered);
    t.equal((await h2Post(session, sendPath, auth, JSON.stringify({ message: { token: 'alive' } }))).status, 200, 'other tokens unaffected');
    t.equal((await h2Post(session, sendPath, auth, dead)).status, 404);
    t.equal((await h2Post(session, sendPath, auth, dead)).status, 200, 'times: 2 used up');
  });
});

t.test('Web Push', async (t) => {
  const creds = sims.webpush.credentials();
  const agent = new https.Agent({ ca });
  t.teardown(() => agent.destroy());
  const vapidDetails = { subject: creds.subject, publicKey: creds.vapid_public_key, privateKey: creds.vapid_private_key };
  const toSubscription = (s: { token: string; web_auth: string; web_p256: string }) => ({ endpoint: s.token, keys: { auth: s.web_auth, p256dh: s.web_p256 } });
  t.beforeEach(() => sims.webpush.reset());

  t.test('delivers and decrypts what web-push sends', async (t) => {
    const sub = sims.webpush.subscription();
    t.match(sub.token, new RegExp(`^${sims.webpush.url}/push/`));
    const payload = JSON.stringify({ title: 'Hi', body: 'there', n: 'ü'.repeat(10) });
    const res = await webpush.sendNotification(toSubscription(sub), payload, { vapidDetails, TTL: 60, urgency: 'high', agent });
    t.equal(res.statusCode, 201);
    t.match(res.headers.location, new RegExp(`^${sims.webpush.url}/message/`));
    const [logged] = await sims.webpush.requests();
    t.equal(logged?.body, payload, 'the simulator decrypted the plaintext');
    t.equal(logged?.headers['content-encoding'], 'aes128gcm');
    t.equal(logged?.headers.ttl, '60');
  });

  t.test('unknown subscription is 410; missing TTL 400; bad VAPID 401', async (t) => {
    const gone = { ...sims.webpush.subscription(), token: `${sims.webpush.url}/push/unknown` };
    const err = await webpush.sendNotification(toSubscription(gone), 'x', { vapidDetails, TTL: 60, agent }).catch((e: unknown) => e as { statusCode: number });
    t.equal(err.statusCode, 410);

    const sub = toSubscription(sims.webpush.subscription());
    const raw = async (mutate: (headers: Record<string, string | number>) => void): Promise<number> => {
      const details = webpush.generateRequestDetails(sub, 'hello', { vapidDetails, TTL: 60 });
      const headers = { ...details.headers } as Record<string, string | number>;
      mutate(headers);
      return new Promise((resolve, reject) => {
        const req = https.request(details.endpoint, { method: 'POST', headers, agent }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end(details.body);
      });
    };
    t.equal(await raw(() => undefined), 201, 'the request as generated passes');
    t.equal(await raw((h) => delete h.TTL), 400, 'TTL required');
    t.equal(await raw((h) => delete h.Authorization), 401, 'VAPID required');
    const otherKeys = webpush.generateVAPIDKeys();
    const forged = webpush.getVapidHeaders(new URL(sub.endpoint).origin, creds.subject, creds.vapid_public_key, otherKeys.privateKey, 'aes128gcm');
    t.equal(await raw((h) => (h.Authorization = forged.Authorization)), 401, 'signature by another key than k');
    const wrongAud = webpush.getVapidHeaders('https://push.example.net', creds.subject, creds.vapid_public_key, creds.vapid_private_key, 'aes128gcm');
    t.equal(await raw((h) => (h.Authorization = wrongAud.Authorization)), 401, 'aud of another origin');
  });

  t.test('VAPID claims: exp within 24 h, sub mailto: or https:', async (t) => {
    const sub = toSubscription(sims.webpush.subscription());
    const pub = Buffer.from(creds.vapid_public_key, 'base64url');
    const jwk = { kty: 'EC', crv: 'P-256', d: creds.vapid_private_key, x: pub.subarray(1, 33).toString('base64url'), y: pub.subarray(33).toString('base64url') };
    const key = await importJWK(jwk, 'ES256');
    const aud = new URL(sub.endpoint).origin;
    const post = async (claims: Record<string, unknown>): Promise<number> => {
      const jwt = await new SignJWT({ aud, exp: nowS() + 3600, sub: creds.subject, ...claims }).setProtectedHeader({ alg: 'ES256', typ: 'JWT' }).sign(key);
      const details = webpush.generateRequestDetails(sub, 'hello', { vapidDetails, TTL: 60 });
      const headers = { ...details.headers, Authorization: `vapid t=${jwt}, k=${creds.vapid_public_key}` };
      return new Promise((resolve, reject) => {
        const req = https.request(details.endpoint, { method: 'POST', headers, agent }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end(details.body);
      });
    };
    t.equal(await post({}), 201, 'hand-signed token with valid claims');
    t.equal(await post({ exp: nowS() + 25 * 3600 }), 401, 'exp beyond 24 h');
    t.equal(await post({ exp: nowS() - 10 }), 401, 'expired');
    t.equal(await post({ sub: 'ops@example.com' }), 401, 'sub without mailto:');
  });

  t.test('scripted 429 with Retry-After, once', async (t) => {
    const sub = sims.webpush.subscription();
    const id = sub.token.split('/').pop() ?? '';
    await sims.webpush.script({ match: { token: id }, respond: { status: 429, headers: { 'retry-after': '30' } }, times: 1 });
    const err = await webpush.sendNotification(toSubscription(sub), 'a', { vapidDetails, TTL: 60, agent }).catch((e: unknown) => e as { statusCode: number; headers: Record<string, string> });
    t.match(err, { statusCode: 429, headers: { 'retry-after': '30' } });
    t.equal((await webpush.sendNotification(toSubscription(sub), 'b', { vapidDetails, TTL: 60, agent })).statusCode, 201);
    t.same((await sims.webpush.requests()).map((r) => [r.status, r.body]), [[429, 'a'], [201, 'b']]);
  });
});

t.test('Twilio', async (t) => {
  const creds = sims.twilio.credentials();
  const send = (form: Record<string, string>, auth = `${creds.account_sid}:${creds.auth_token}`) =>
    fetch(`${creds.base_url}/2010-04-01/Accounts/${creds.account_sid}/Messages.json`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(auth).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));
  const from = 'from' in creds ? creds.from : '';
  t.beforeEach(() => sims.twilio.reset());

  t.test('queues a message', async (t) => {
    const res = await send({ To: '+4915112345678', From: from, Body: 'hello' });
    t.match(res, { status: 201, body: { sid: /^SM[0-9a-f]{32}$/, status: 'queued', to: '+4915112345678', from, body: 'hello' } });
    const svc = sims.twilio.credentials('messaging_service');
    t.ok('messaging_service_sid' in svc);
    const viaService = await send({ To: '+4915112345678', MessagingServiceSid: 'messaging_service_sid' in svc ? svc.messaging_service_sid : '', Body: 'hi' });
    t.equal(viaService.status, 201);
    t.same((await sims.twilio.requests()).map((r) => [r.status, (r.body as Record<string, string>).To]), [[201, '+4915112345678'], [201, '+4915112345678']]);
  });

  t.test('bad credentials 20003, bad number 21211, scripted 21610', async (t) => {
    t.match(await send({ To: '+4915112345678', From: from, Body: 'x' }, `${creds.account_sid}:wrong`), {
      status: 401,
      body: { code: 20003, status: 401, message: String, more_info: 'https://www.twilio.com/docs/errors/20003' },
    });
    t.match(await send({ To: '015112345678', From: from, Body: 'x' }), { status: 400, body: { code: 21211, status: 400 } });
    const stop = { code: 21610, message: 'Attempt to send to unsubscribed recipient', more_info: 'https://www.twilio.com/docs/errors/21610', status: 400 };
    await sims.twilio.script({ match: { token: '+15550001111' }, respond: { status: 400, body: stop } });
    t.same(await send({ To: '+15550001111', From: from, Body: 'x' }), { status: 400, body: stop });
    t.same(await send({ To: '+15550001111', From: from, Body: 'x' }), { status: 400, body: stop }, 'no times: until reset');
    await sims.twilio.reset();
    t.equal((await send({ To: '+15550001111', From: from, Body: 'x' })).status, 201);
  });
});

t.test('Twilio status callbacks are signed and scriptable', async (t) => {
  const creds = sims.twilio.credentials();
  const received: { signature: string; params: Record<string, string> }[] = [];
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ signature: String(req.headers['x-twilio-signature']), params: Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString())) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => receiver.close(() => resolve())));
  const callbackUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/twilio/status?project=p1`;
  await sims.twilio.reset();
  await sims.twilio.scriptDelivery({ match: { token: '+15550002222' }, status: 'undelivered', error_code: 30003, times: 1 });
  const send = (to: string) =>
    fetch(`${creds.base_url}/2010-04-01/Accounts/${creds.account_sid}/Messages.json`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${creds.account_sid}:${creds.auth_token}`).toString('base64')}` },
      body: new URLSearchParams({ To: to, From: 'from' in creds ? creds.from : '', Body: 'x', StatusCallback: callbackUrl }),
    }).then(async (r) => (await r.json()) as { sid: string });
  const ok = await send('+15550001111');
  const bad = await send('+15550002222');
  const deadline = Date.now() + 5000;
  while (received.length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  const sign = (params: Record<string, string>) =>
    createHmac('sha1', creds.auth_token).update(callbackUrl + Object.keys(params).sort().map((k) => k + params[k]).join('')).digest('base64');
  t.ok(received.every((r) => r.signature === sign(r.params)), 'X-Twilio-Signature verifies with the auth token');
  const statuses = (sid: string) => received.filter((r) => r.params.MessageSid === sid).map((r) => [r.params.MessageStatus, r.params.ErrorCode]);
  t.same(statuses(ok.sid), [['sent', undefined], ['delivered', undefined]]);
  t.same(statuses(bad.sid), [['sent', undefined], ['undelivered', '30003']]);
  const posted = await sims.twilio.callbacks();
  t.same(posted.map((c) => c.status), [204, 204, 204, 204], 'the simulator logs what the callback URL answered');
});

t.test('SendGrid', async (t) => {
  const creds = sims.sendgrid.credentials();
  const mail = (to = 'user@example.org') => ({
    personalizations: [{ to: [{ email: to }] }],
    from: { email: creds.from },
    subject: 'Hi',
    content: [{ type: 'text/plain', value: 'there' }],
  });
  const send = (body: unknown, key = creds.api_key) =>
    fetch(`${creds.base_url}/v3/mail/send`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  t.beforeEach(() => sims.sendgrid.reset());

  t.test('accepts mail with 202 and X-Message-Id', async (t) => {
    const res = await send(mail());
    t.equal(res.status, 202);
    t.ok(res.headers.get('x-message-id'));
    t.equal(await res.text(), '');
    t.same((await sims.sendgrid.requests()).map((r) => [r.status, r.body]), [[202, mail()]]);
  });

  t.test('checks key, body shape and sender', async (t) => {
    const bad = await send(mail(), 'SG.wrong');
    t.equal(bad.status, 401);
    t.match(await bad.json(), { errors: [{ message: String, field: null, help: null }] });
    const noContent = await send({ ...mail(), content: [] });
    t.equal(noContent.status, 400);
    t.match(await noContent.json(), { errors: [{ field: 'content' }] });
    const badTo = await send(mail('not-an-email'));
    t.match(await badTo.json(), { errors: [{ field: 'personalizations.0.to.0.email' }] });
    const stranger = await send({ ...mail(), from: { email: 'someone@else.org' } });
    t.equal(stranger.status, 403);
  });

  t.test('scripted 429 with X-RateLimit-Reset for one recipient', async (t) => {
    const reset = String(nowS() + 60);
    await sims.sendgrid.script({ match: { token: 'slow@example.org' }, respond: { status: 429, headers: { 'x-ratelimit-reset': reset }, body: { errors: [{ message: 'too many requests', field: null, help: null }] } }, times: 1 });
    const limited = await send(mail('slow@example.org'));
    t.same([limited.status, limited.headers.get('x-ratelimit-reset')], [429, reset]);
    t.equal((await send(mail('slow@example.org'))).status, 202);
  });
  t.test('a held answer waits for release(), logged as unanswered until then', async (t) => {
    await sims.sendgrid.script({ match: { token: 'held@example.org' }, respond: { status: 202, headers: { 'x-message-id': 'held' }, hold: true } });
    let answered = false;
    const pending = send(mail('held@example.org')).then((res) => {
      answered = true;
      return res;
    });
    await eventually('the held request', async () => ((await sims.sendgrid.requests()).length === 1 ? true : undefined));
    t.same((await sims.sendgrid.requests()).map((r) => r.status), [0], 'received, not answered');
    t.notOk(answered, 'the client waits');
    await sims.sendgrid.release();
    const res = await pending;
    t.same([res.status, res.headers.get('x-message-id')], [202, 'held'], 'answered once released');
    t.same((await sims.sendgrid.requests()).map((r) => r.status), [202]);
    t.equal((await send(mail('held@example.org'))).status, 202, 'after release, nothing is held');
  });
});

t.test('control surface', async (t) => {
  const res = await fetch(`${sims.twilio.url}/__sim/script`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ match: {}, respond: { status: 'x' } }) });
  t.equal(res.status, 400, 'a malformed rule is refused');
  const subscription = await fetch(`${sims.webpush.url}/__sim/subscriptions`, { method: 'POST', dispatcher });
  t.equal(subscription.status, 201);
  t.match(await subscription.json(), { token: /^https:/, web_auth: String, web_p256: String });
});
