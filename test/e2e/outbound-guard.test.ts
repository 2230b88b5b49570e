import { createServer, type Socket } from 'node:net';
import t from 'tap';
import WebSocket from 'ws';
import { stage, until, deliveriesOf } from '../helpers/broadcast.ts';
import { call, eventually } from '../helpers/http.ts';

/**
 * Web Push endpoints are chosen by whoever holds the SDK key. With OUTBOUND_ALLOW_PRIVATE off, a
 * literal loopback, metadata or private address is refused at registration on every SDK path,
 * and a name that resolves to loopback is skipped at send: the listener behind it sees no
 * connection (docs/api.md#outbound-urls).
 */

const s = await stage(t, undefined, { OUTBOUND_ALLOW_PRIVATE: 'false' });
const sdk = s.d.project.sdk_key;
const base = s.engine.url;

const sockets: Socket[] = [];
const listener = createServer((socket) => {
  sockets.push(socket);
  socket.destroy();
});
await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => listener.close(() => resolve())));
const port = (listener.address() as { port: number }).port;
const keys = s.sims.webpush.subscription();
const sub = (token: string) => ({ type: 'WEB_PUSH', token, web_auth: keys.web_auth, web_p256: keys.web_p256 });

t.test('literal refused addresses are a 400 naming the token, over HTTP, batch and WebSocket', async (t) => {
  const refused: [string, RegExp][] = [
    [`https://127.0.0.1:${port}/internal`, /loopback/],
    ['https://169.254.169.254/latest/meta-data/', /link-local or metadata/],
    [`https://[::1]:${port}/x`, /loopback/],
    ['https://10.0.0.7/push', /private/],
    ['https://user:secret@push.example.com/x', /credentials/],
  ];
  for (const [token, why] of refused) {
    const answer = await call(`${base}/api/sdk/users/g1/subscriptions`, 'POST', sdk, sub(token));
    t.equal(answer.status, 400, token);
    t.match(answer.body, { errors: [{ code: 'validation_failed', path: '/token', message: why }] });
  }
  const batch = await call(`${base}/api/sdk/batch`, 'POST', sdk, {
    operations: [
      { op: 'identify', external_id: 'g1' },
      { op: 'subscribe', external_id: 'g1', ...sub(`https://127.0.0.1:${port}/internal`) },
    ],
  });
  t.equal(batch.status, 400);
  t.match(batch.body, { errors: [{ code: 'validation_failed', path: '/operations/1/token' }] });

  const ws = new WebSocket(`${base.replace('http', 'ws')}/api/sdk/ws`, [`bearer.${sdk}`]);
  t.teardown(() => ws.close());
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const answer = new Promise<string>((resolve) => ws.once('message', (data: Buffer) => resolve(data.toString())));
  ws.send(JSON.stringify({ seq: 1, op: 'subscribe', external_id: 'g1', ...sub('https://169.254.169.254/latest/meta-data/') }));
  t.match(JSON.parse(await answer), { seq: 1, errors: [{ code: 'validation_failed', path: '/token' }] });
});

t.test('a name that resolves to loopback is skipped at send with endpoint_refused; no connection is made', async (t) => {
  const answer = await call(`${base}/api/sdk/users/g2/subscriptions`, 'POST', sdk, sub(`https://localhost:${port}/push/1`));
  t.equal(answer.status, 202, JSON.stringify(answer.body));
  await eventually('g2 applied', async () => {
    const user = await call(`${base}/api/users/g2`, 'GET', s.rest);
    return user.status === 200 && (user.body as { subscriptions: unknown[] }).subscriptions.length === 1 ? true : undefined;
  });
  const created = await call(`${base}/api/notifications`, 'POST', s.rest, { include_external_user_ids: ['g2'], contents: { en: 'hello' } });
  t.equal(created.status, 201, JSON.stringify(created.body));
  const id = (created.body as { id: string }).id;
  await until(s, id);
  const records = await eventually('the attempt recorded', async () => {
    const found = await deliveriesOf(s, id);
    return found.length > 0 ? found : undefined;
  });
  t.match(records, [{ status: 'skipped', error_code: 'endpoint_refused', subscription_type: 'WEB_PUSH' }]);
  t.equal(sockets.length, 0, 'the loopback listener saw no connection');
});
