/**
 * The ceiling of bench/broadcast.ts: a bare client that sends pushes to one provider simulator as
 * fast as it takes them, doing nothing else (no Redis, no rendering, no records), shaped like the
 * engine's requests:
 * - apns (default): `node:http2`, the ES256 provider token (jose, from the credential file), one
 *   distinct 64-hex device token per push;
 * - fcm: `node:http2`, one OAuth access token fetched first from the service account's token_uri
 *   (RS256 assertion), a JSON message per push to `fcm-token-<i>`;
 * - webpush: pooled HTTP/1.1 (undici), each push encrypted (aes128gcm) by `web-push` and the
 *   VAPID header signed once, as the engine does, all to the one subscription of `--subscription`.
 *
 * `node --import tsx bench/apns-ceiling.ts [--provider apns|fcm|webpush] --creds FILE [--ca ca.pem]
 *  --count N [--connections 4] [--inflight K] [--subscription FILE]`: opens the connections (APNs
 * allows one stream until a push is accepted, then raises it), keeps K requests in flight (default:
 * connections x the peer's SETTINGS_MAX_CONCURRENT_STREAMS, the most the engine's pool can use; for
 * webpush one per connection) until N answers came back. `--ca` is for TLS peers; an http:// base_url
 * (bench/h2-peer.ts) is cleartext HTTP/2 with prior knowledge and needs none. Prints JSON lines on stdout:
 * `{"msg":"progress",...}` every second, then `{"msg":"done",...}`.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import http2, { type ClientHttp2Session, type OutgoingHttpHeaders } from 'node:http2';
import { parseArgs } from 'node:util';
import { importPKCS8, SignJWT } from 'jose';
import { Pool, request } from 'undici';
import webpush from 'web-push';
import { androidToken, iosToken } from '../simulators/tokens.ts';

const { values } = parseArgs({
  options: {
    provider: { type: 'string', default: 'apns' },
    creds: { type: 'string' },
    ca: { type: 'string' },
    count: { type: 'string', default: '100000' },
    connections: { type: 'string', default: '4' },
    inflight: { type: 'string' },
    /** webpush: a file holding one subscription of the simulator ({token, web_auth, web_p256}). */
    subscription: { type: 'string' },
    /** Engine stream cap per connection (H2Pool streamCap). */
    'stream-cap': { type: 'string', default: '1000' },
  },
});
const provider = values.provider;
if (!values.creds || (provider !== 'apns' && provider !== 'fcm' && provider !== 'webpush') || (provider === 'webpush' && !values.subscription)) {
  console.error('usage: apns-ceiling.ts [--provider apns|fcm|webpush] --creds FILE [--ca ca.pem] --count N [--connections 4] [--inflight K] [--subscription FILE]');
  process.exit(2);
}
const count = Number(values.count);
const connections = Number(values.connections);
const streamCap = Number(values['stream-cap']);
const credsText = await readFile(values.creds, 'utf8');
/** The extra CA of TLS peers; none for cleartext ones. */
const tls = values.ca === undefined ? {} : { ca: await readFile(values.ca) };

const emit = (line: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

const lanes: Lane[] = [];
let next = 0;
let answered = 0;
let inflightNow = 0;
const statuses: Record<string, number> = {};
let target = Number(values.inflight ?? 0);

function tally(status: number): void {
  answered += 1;
  statuses[String(status)] = (statuses[String(status)] ?? 0) + 1;
}

/** Where requests go: an HTTP/2 connection, or the HTTP/1.1 pool; at most `max` in flight. */
interface Lane {
  active: number;
  max: number;
  /** Sends push i; calls `done` with the answer's status (0 when none came). */
  fire(i: number, done: (status: number) => void): void;
  close(): void;
}

/** A push request over HTTP/2: headers and body of push i. */
type H2Push = (i: number) => { headers: OutgoingHttpHeaders; body: Buffer };

async function apnsPush(): Promise<{ base: string; push: H2Push }> {
  const creds = JSON.parse(credsText) as { team_id: string; key_id: string; private_key: string; topic: string; base_url: string };
  const key = await importPKCS8(creds.private_key, 'ES256');
  const jwt = await new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid: creds.key_id }).setIssuer(creds.team_id).setIssuedAt().sign(key);
  const payload = Buffer.from(
    JSON.stringify({ aps: { alert: { title: 'Hello', body: 'Your order shipped' }, sound: 'default' }, order: 'A1', svc_message_id: randomUUID() }),
  );
  const push: H2Push = (i) => ({
    headers: {
      ':method': 'POST',
      ':path': `/3/device/${iosToken(i)}`,
      authorization: `bearer ${jwt}`,
      'apns-topic': creds.topic,
      'apns-push-type': 'alert',
      'apns-id': randomUUID(),
      'apns-expiration': String(Math.floor(Date.now() / 1000) + 3600),
      'apns-priority': '5',
      'apns-collapse-id': 'orders',
      'content-length': payload.length,
    },
    body: payload,
  });
  return { base: creds.base_url, push };
}

async function fcmPush(): Promise<{ base: string; push: H2Push }> {
  const { service_account: sa, base_url: base } = JSON.parse(credsText) as {
    service_account: { project_id: string; client_email: string; private_key: string; private_key_id: string; token_uri: string };
    base_url: string;
  };
  const iat = Math.floor(Date.now() / 1000);
  const assertion = await new SignJWT({ scope: 'https://www.googleapis.com/auth/firebase.messaging' })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: sa.private_key_id })
    .setIssuer(sa.client_email)
    .setAudience(sa.token_uri)
    .setIssuedAt(iat)
    .setExpirationTime(iat + 3600)
    .sign(await importPKCS8(sa.private_key, 'RS256'));
  const oauth = new Pool(new URL(sa.token_uri).origin, { connect: tls });
  const answer = await request(sa.token_uri, {
    method: 'POST',
    dispatcher: oauth,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
  });
  const { access_token: token } = (await answer.body.json()) as { access_token?: string };
  await oauth.close();
  if (answer.statusCode !== 200 || token === undefined) throw new Error(`token_uri answered ${answer.statusCode}`);
  const path = `/v1/projects/${encodeURIComponent(sa.project_id)}/messages:send`;
  const push: H2Push = (i) => {
    const body = Buffer.from(
      JSON.stringify({
        message: {
          token: androidToken(i),
          notification: { title: 'Hello', body: 'Your order shipped' },
          data: { order: 'A1', svc_message_id: randomUUID() },
          android: { priority: 'NORMAL', ttl: '3600s', collapse_key: 'orders' },
        },
      }),
    );
    return {
      headers: { ':method': 'POST', ':path': path, authorization: `Bearer ${token}`, 'content-type': 'application/json; charset=utf-8', 'content-length': body.length },
      body,
    };
  };
  return { base, push };
}

/** Opens one HTTP/2 connection and sends its first push alone, so the peer raises its stream limit. */
async function h2Lane(base: string, push: H2Push): Promise<Lane> {
  const session: ClientHttp2Session = http2.connect(base, { ...tls, settings: { enablePush: false } });
  session.on('error', (err) => emit({ msg: 'session error', error: String(err) }));
  const lane: Lane = {
    active: 0,
    max: 1,
    fire: (i, done) => {
      const { headers, body } = push(i);
      const stream = session.request(headers);
      let status = 0;
      stream.on('response', (h) => {
        status = Number(h[':status']);
      });
      stream.on('data', () => undefined);
      stream.on('error', () => undefined);
      stream.on('close', () => done(status));
      stream.end(body);
    },
    close: () => session.close(),
  };
  session.on('remoteSettings', (settings) => {
    lane.max = Math.min(settings.maxConcurrentStreams ?? streamCap, streamCap);
  });
  await new Promise<void>((resolve) =>
    lane.fire(next++, (status) => {
      tally(status);
      resolve();
    }),
  );
  // The raised SETTINGS come with or right after the first answer.
  for (let i = 0; i < 50 && lane.max <= 1; i++) await new Promise((r) => setTimeout(r, 10));
  return lane;
}

/** The HTTP/1.1 pool of the web push sends: one request per connection at a time. */
function webPushLane(subscription: { token: string; web_auth: string; web_p256: string }): Lane {
  const creds = JSON.parse(credsText) as { vapid_public_key: string; vapid_private_key: string; subject: string };
  const endpoint = new URL(subscription.token);
  const pool = new Pool(endpoint.origin, { connect: tls, connections });
  const keys = { auth: subscription.web_auth, p256dh: subscription.web_p256 };
  // Signed once, as the engine signs once an hour per push service (actors/dispatch/providers/vapid.ts).
  const { Authorization: authorization } = webpush.getVapidHeaders(endpoint.origin, creds.subject, creds.vapid_public_key, creds.vapid_private_key, 'aes128gcm');
  return {
    active: 0,
    max: connections,
    fire: (i, done) => {
      const payload = JSON.stringify({ notification_id: randomUUID(), title: 'Hello', body: 'Your order shipped', data: { order: 'A1', push: i } });
      const details = webpush.generateRequestDetails({ endpoint: subscription.token, keys }, payload, { TTL: 3600, urgency: 'normal', contentEncoding: 'aes128gcm', topic: 'orders' });
      const headers: Record<string, string> = { authorization };
      for (const [name, value] of Object.entries(details.headers)) if (value !== undefined) headers[name.toLowerCase()] = String(value);
      pool.request({ method: 'POST', path: endpoint.pathname, headers, body: details.body ?? Buffer.alloc(0) }).then(
        async (answer) => {
          await answer.body.dump();
          done(answer.statusCode);
        },
        () => done(0),
      );
    },
    close: () => void pool.close(),
  };
}

function send(lane: Lane, onDone: () => void): void {
  lane.active += 1;
  inflightNow += 1;
  lane.fire(next++, (status) => {
    lane.active -= 1;
    inflightNow -= 1;
    tally(status);
    onDone();
  });
}

const started = process.hrtime.bigint();
const cpu0 = process.cpuUsage();
if (provider === 'webpush') {
  lanes.push(webPushLane(JSON.parse(await readFile(values.subscription ?? '', 'utf8')) as { token: string; web_auth: string; web_p256: string }));
} else {
  const { base, push } = provider === 'apns' ? await apnsPush() : await fcmPush();
  for (let i = 0; i < connections; i++) lanes.push(await h2Lane(base, push));
}
if (target <= 0) target = lanes.reduce((n, c) => n + c.max, 0);

await new Promise<void>((resolve) => {
  const pick = (): Lane | undefined => {
    let best: Lane | undefined;
    for (const c of lanes) if (c.active < c.max && (!best || c.active < best.active)) best = c;
    return best;
  };
  const pump = (): void => {
    if (answered >= count) return resolve();
    while (next < count && inflightNow < target) {
      const lane = pick();
      if (!lane) break;
      send(lane, pump);
    }
  };
  pump();
  const timer = setInterval(() => {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    emit({ msg: 'progress', answered, seconds: Math.round(seconds * 10) / 10, per_sec: Math.round(answered / seconds) });
    if (answered >= count) clearInterval(timer);
  }, 1000);
  timer.unref();
});
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
const cpu = process.cpuUsage(cpu0);
emit({
  msg: 'done',
  provider,
  pushes: answered,
  seconds: Math.round(seconds * 1000) / 1000,
  per_sec: Math.round(answered / seconds),
  statuses,
  connections,
  inflight: target,
  peer_max_streams: lanes.map((c) => c.max),
  cpu_seconds: Math.round(((cpu.user + cpu.system) / 1e6) * 1000) / 1000,
  cpu_us_per_push: Math.round(((cpu.user + cpu.system) / Math.max(answered, 1)) * 10) / 10,
});
for (const lane of lanes) lane.close();
process.exit(0);
