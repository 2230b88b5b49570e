import t from 'tap';
import WebSocket from 'ws';
import { readHashes } from '../../engine/state/users/read-user.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { deployment } from '../helpers/engine.ts';
import { call } from '../helpers/http.ts';
import { testRedis } from '../helpers/redis.ts';
import { entriesOf } from './support.ts';

// One gateway for the file; each test has a project of its own.
const d = await deployment(t);
const gw = await d.start(['gateway']);

t.test('opt-out and opt-in are stored before the 200, also for unknown users', async (t) => {
  const project = await d.createProject();
  const redis = testRedis();
  t.teardown(() => redis.disconnect());
  const topology = new Topology(d.prefix, 8);

  const out = await call(`${gw.url}/api/sdk/opt-out`, 'POST', project.sdk_key, { external_id: 'never-seen', subscription_type: 'EMAIL' });
  t.equal(out.status, 200);
  const stored = JSON.parse((await readHashes(redis, topology, project.project_id, 'never-seen')).consent['EMAIL'] ?? 'null') as { opted_out: boolean; at: number };
  t.same(out.body, { external_id: 'never-seen', subscription_type: 'EMAIL', opted_out: true, at: new Date(stored.at).toISOString() });
  t.equal(stored.opted_out, true, 'the consent hash holds the opt-out right after the answer');

  const back = await call(`${gw.url}/api/sdk/opt-in`, 'POST', project.rest_key, { external_id: 'never-seen', subscription_type: 'EMAIL' });
  t.match(back, { status: 200, body: { opted_out: false } });
  t.match(JSON.parse((await readHashes(redis, topology, project.project_id, 'never-seen')).consent['EMAIL'] ?? 'null'), { opted_out: false });

  const bad = await call(`${gw.url}/api/sdk/opt-out`, 'POST', project.sdk_key, { external_id: 'x', subscription_type: 'FAX', extra: 1 });
  t.same([bad.status, bad.body], [
    400,
    {
      errors: [
        { code: 'validation_failed', message: 'extra: is not allowed', path: '/extra' },
        { code: 'validation_failed', message: 'subscription_type: must be one of IOS_PUSH, ANDROID_PUSH, EMAIL, SMS, WEB_PUSH', path: '/subscription_type' },
      ],
    },
  ]);
  t.equal((await call(`${gw.url}/api/sdk/opt-in`, 'GET', project.sdk_key)).status, 405);
});

/** An open socket and the answers it received, in order. */
async function open(url: string, protocols: string[], headers: Record<string, string> = {}): Promise<{ ws: WebSocket; answers: unknown[] }> {
  const ws = new WebSocket(url, protocols, { headers });
  const answers: unknown[] = [];
  ws.on('message', (data: Buffer) => answers.push(JSON.parse(data.toString())));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, answers };
}

async function waitFor(answers: unknown[], n: number): Promise<void> {
  const deadline = Date.now() + 10000;
  while (answers.length < n) {
    if (Date.now() > deadline) throw new Error(`only ${answers.length} of ${n} answers`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

t.test('WebSocket channel: ops answered in arrival order, bad frames answered, subprotocol auth', async (t) => {
  const project = await d.createProject();
  const url = `ws://127.0.0.1:${gw.port}/api/sdk/ws`;

  const { ws, answers } = await open(url, [], { authorization: `Bearer ${project.sdk_key}` });
  t.teardown(() => ws.close());
  const ops = [
    { seq: 1, op: 'identify', external_id: 'wsu', tags: { a: 1 } },
    { seq: 2, op: 'subscribe', external_id: 'wsu', type: 'EMAIL', token: 'wsu@example.com' },
    { seq: 3, op: 'opt-out', external_id: 'wsu', subscription_type: 'EMAIL' },
    { seq: 4, op: 'event', external_id: 'wsu', name: 'open' },
    { seq: 5, op: 'tags', external_id: 'wsu', tags: { a: 2 } },
  ];
  for (const op of ops) ws.send(JSON.stringify(op));
  ws.send('{"seq": 6, "op": ');
  ws.send(Buffer.from([1, 2, 3]), { binary: true });
  ws.send(JSON.stringify({ op: 'event', external_id: 'wsu', name: 'x' }));
  ws.send(JSON.stringify({ seq: 9, op: 'event', external_id: 'wsu', name: 'big', properties: { p: 'x'.repeat(1000) }, pad: 'y'.repeat(70 * 1024) }));
  ws.send(JSON.stringify({ seq: 10, op: 'receipt', external_id: 'wsu', svc_message_id: 'm', kind: 'clicked' }));
  await waitFor(answers, 10);
  t.same(answers, [
    { seq: 1, accepted: true },
    { seq: 2, accepted: true },
    {
      seq: 3,
      errors: [{ code: 'validation_failed', message: 'op: must be one of identify, subscribe, tags, event, receipt', path: '/op' }],
    },
    { seq: 4, accepted: true },
    { seq: 5, accepted: true },
    { seq: null, errors: [{ code: 'invalid_json', message: 'The body is not valid JSON (UTF-8).' }] },
    { seq: null, errors: [{ code: 'invalid_json', message: 'Frames must be text: one JSON operation each.' }] },
    { seq: null, errors: [{ code: 'validation_failed', message: 'seq: is required', path: '/seq' }] },
    { seq: null, errors: [{ code: 'payload_too_large', message: 'The body is over the size limit.' }] },
    { seq: 10, accepted: true },
  ]);
  t.same(
    (await entriesOf(d.prefix, project.project_id, 'wsu')).map((e) => e.op),
    ['identify', 'subscribe', 'event', 'tags', 'receipt'],
    'accepted ops are in the log in order',
  );

  const viaProtocol = await open(url, [`bearer.${project.rest_key}`]);
  t.equal(viaProtocol.ws.protocol, `bearer.${project.rest_key}`, 'the chosen subprotocol is echoed');
  viaProtocol.ws.send(JSON.stringify({ seq: 1, op: 'event', external_id: 'p', name: 'n' }));
  await waitFor(viaProtocol.answers, 1);
  t.same(viaProtocol.answers, [{ seq: 1, accepted: true }]);
  viaProtocol.ws.close();

  for (const [what, protocols, status] of [
    ['no key', [], 401],
    ['unknown key', ['bearer.sdk_nope'], 401],
  ] as const) {
    const refused = new WebSocket(url, [...protocols]);
    const code = await new Promise<number | undefined>((resolve) => {
      refused.once('unexpected-response', (_req, res) => resolve(res.statusCode));
      refused.once('open', () => resolve(undefined));
      refused.once('error', () => resolve(undefined));
    });
    t.equal(code, status, `${what}: refused before the upgrade`);
    refused.terminate();
  }
  t.equal((await call(`${gw.url}/healthz`, 'GET', null)).status, 200);
});

t.test('identity verification applies to each WebSocket operation', async (t) => {
  const project = await d.createProject({ identityVerification: true });
  const { ws, answers } = await open(`ws://127.0.0.1:${gw.port}/api/sdk/ws`, [`bearer.${project.sdk_key}`]);
  t.teardown(() => ws.close());
  ws.send(JSON.stringify({ seq: 1, op: 'event', external_id: 'v', name: 'n' }));
  await waitFor(answers, 1);
  t.same(answers, [
    {
      seq: 1,
      errors: [{ code: 'identity_verification_failed', message: 'identity_hash is missing or does not match external_id.', path: '/identity_hash' }],
    },
  ]);
});

t.test('without Redis: /readyz and writes answer 503 with Retry-After, and the gateway stops cleanly', async (t) => {
  const down = await d.start(['gateway'], { REDIS_URL: 'redis://127.0.0.1:1', REDIS_TIMEOUT_MS: '200' });
  const ready = await call(`${down.url}/readyz`, 'GET', null);
  t.same([ready.status, ready.headers.get('retry-after')], [503, '1']);
  const write = await call(`${down.url}/api/sdk/users`, 'POST', d.project.sdk_key, { external_id: 'x' });
  t.same([write.status, write.body, write.headers.get('retry-after')], [
    503,
    { errors: [{ code: 'unavailable', message: 'The service cannot meet this call now.' }] },
    '1',
  ]);
  t.equal((await call(`${down.url}/healthz`, 'GET', null)).status, 200);
  t.equal(await down.stop(), 0, 'SIGTERM: closes and exits 0');
});
