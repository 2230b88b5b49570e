/**
 * The ceiling of bench/broadcast.ts: a bare `node:http2` client that sends pushes to the APNs
 * simulator as fast as it takes them, doing nothing else (no Redis, no rendering, no records).
 * Same TLS, same ES256 provider token (jose, from the simulator's credential file), a request
 * shaped like the engine's (headers and payload), one distinct 64-hex device token per push.
 *
 * `node --import tsx bench/apns-ceiling.ts --creds apns.json --ca ca.pem --count N
 *  [--connections 4] [--inflight K]`: opens the connections (APNs allows one stream until a push is
 * accepted, then raises it), keeps K requests in flight (default: connections x the peer's
 * SETTINGS_MAX_CONCURRENT_STREAMS, the most the engine's pool can use) until N answers came back.
 * Prints JSON lines on stdout: `{"msg":"progress",...}` every second, then `{"msg":"done",...}`.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import http2, { type ClientHttp2Session } from 'node:http2';
import { parseArgs } from 'node:util';
import { importPKCS8, SignJWT } from 'jose';

const { values } = parseArgs({
  options: {
    creds: { type: 'string' },
    ca: { type: 'string' },
    count: { type: 'string', default: '100000' },
    connections: { type: 'string', default: '4' },
    inflight: { type: 'string' },
    /** Engine stream cap per connection (H2Pool streamCap). */
    'stream-cap': { type: 'string', default: '1000' },
  },
});
if (!values.creds || !values.ca) {
  console.error('usage: apns-ceiling.ts --creds apns.json --ca ca.pem --count N [--connections 4] [--inflight K]');
  process.exit(2);
}
const count = Number(values.count);
const connections = Number(values.connections);
const streamCap = Number(values['stream-cap']);
const creds = JSON.parse(await readFile(values.creds, 'utf8')) as { team_id: string; key_id: string; private_key: string; topic: string; base_url: string };
const ca = await readFile(values.ca);
const key = await importPKCS8(creds.private_key, 'ES256');
const jwt = await new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid: creds.key_id }).setIssuer(creds.team_id).setIssuedAt().sign(key);

/** The same token shape as the users of bench/broadcast.ts (test/helpers/broadcast.ts iosToken). */
const tokenOf = (i: number): string => `f${i.toString(16)}`.padStart(64, '0');
const payload = Buffer.from(
  JSON.stringify({ aps: { alert: { title: 'Hello', body: 'Your order shipped' }, sound: 'default' }, order: 'A1', svc_message_id: randomUUID() }),
);

const emit = (line: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

interface Conn {
  session: ClientHttp2Session;
  active: number;
  max: number;
}

const conns: Conn[] = [];
let next = 0;
let answered = 0;
let inflightNow = 0;
const statuses: Record<string, number> = {};
let target = Number(values.inflight ?? 0);

function send(conn: Conn, onDone: () => void): void {
  const i = next++;
  conn.active += 1;
  inflightNow += 1;
  const stream = conn.session.request({
    ':method': 'POST',
    ':path': `/3/device/${tokenOf(i)}`,
    authorization: `bearer ${jwt}`,
    'apns-topic': creds.topic,
    'apns-push-type': 'alert',
    'apns-id': randomUUID(),
    'apns-expiration': String(Math.floor(Date.now() / 1000) + 3600),
    'apns-priority': '5',
    'apns-collapse-id': 'orders',
    'content-length': payload.length,
  });
  let status = 0;
  stream.on('response', (h) => {
    status = Number(h[':status']);
  });
  stream.on('data', () => undefined);
  stream.on('error', () => undefined);
  stream.on('close', () => {
    conn.active -= 1;
    inflightNow -= 1;
    answered += 1;
    statuses[String(status)] = (statuses[String(status)] ?? 0) + 1;
    onDone();
  });
  stream.end(payload);
}

/** Opens one connection and sends its first push alone, so the peer raises its stream limit. */
async function open(): Promise<Conn> {
  const session = http2.connect(creds.base_url, { ca, settings: { enablePush: false } });
  session.on('error', (err) => emit({ msg: 'session error', error: String(err) }));
  const conn: Conn = { session, active: 0, max: 1 };
  session.on('remoteSettings', (s) => {
    conn.max = Math.min(s.maxConcurrentStreams ?? streamCap, streamCap);
  });
  await new Promise<void>((resolve) => send(conn, resolve));
  // The raised SETTINGS come with or right after the first answer.
  for (let i = 0; i < 50 && conn.max <= 1; i++) await new Promise((r) => setTimeout(r, 10));
  return conn;
}

const started = process.hrtime.bigint();
const cpu0 = process.cpuUsage();
for (let i = 0; i < connections; i++) conns.push(await open());
if (target <= 0) target = conns.reduce((n, c) => n + c.max, 0);

await new Promise<void>((resolve) => {
  const pick = (): Conn | undefined => {
    let best: Conn | undefined;
    for (const c of conns) if (c.active < c.max && (!best || c.active < best.active)) best = c;
    return best;
  };
  const pump = (): void => {
    if (answered >= count) return resolve();
    while (next < count && inflightNow < target) {
      const conn = pick();
      if (!conn) break;
      send(conn, pump);
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
  pushes: answered,
  seconds: Math.round(seconds * 1000) / 1000,
  per_sec: Math.round(answered / seconds),
  statuses,
  connections,
  inflight: target,
  peer_max_streams: conns.map((c) => c.max),
  cpu_seconds: Math.round(((cpu.user + cpu.system) / 1e6) * 1000) / 1000,
});
for (const c of conns) c.session.close();
process.exit(0);
