import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { recorderRole } from '../../actors/recorder/role.ts';
import { Keystore, type CreatedProject } from '../../engine/state/keys/keystore.ts';
import type { OutcomeEntry } from '../../schemas/outcomes.ts';
import { call, eventually } from '../helpers/http.ts';
import { inProcessGateway, type InProcess } from '../helpers/in-process.ts';
import { openTail, type LiveTail } from '../helpers/live-tail.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';
import { outcome } from '../recorder/outcomes.ts';

/**
 * GET /api/deliveries/live: records reach the socket as the recorder inserts them, narrowed by
 * the filters, for the key's project only; a reader that stops reading, and every reader when the
 * gateway's subscriber had to reconnect, is sent a gap notice.
 */

interface Delivery {
  id: string;
  status: string;
  external_id: string;
  receipt: string | null;
}

let gw: InProcess;
let other: CreatedProject;

type Tail = LiveTail<Delivery>;

function wsUrl(query = ''): string {
  return `${gw.url.replace('http', 'ws')}/api/deliveries/live${query}`;
}

/** Opens a tail with the key as the subprotocol, as a browser does. */
function tail(t: Test, query = '', key = gw.project.rest_key): Promise<Tail> {
  return openTail<Delivery>(t, wsUrl(query), key, 'protocol');
}

/** The status of a refused upgrade, and its error code. */
async function refused(url: string, protocols: string[], headers: Record<string, string> = {}): Promise<{ status: number; code: string }> {
  const { status, body } = await refusal(url, protocols, headers);
  return { status, code: body.errors[0]?.code ?? '' };
}

/** The answer to an upgrade that is refused. */
function refusal(url: string, protocols: string[], headers: Record<string, string> = {}): Promise<{ status: number; body: { errors: { code: string }[] } }> {
  const ws = new WebSocket(url, protocols, { headers });
  return new Promise((resolve, reject) => {
    ws.once('open', () => reject(new Error('the upgrade was accepted')));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(body) as { errors: { code: string }[] } }));
    });
  });
}

/** Appends outcomes to partition streams, as dispatch does; the recorder inserts and publishes them. */
async function append(outcomes: OutcomeEntry[]): Promise<void> {
  const pipeline = gw.redis.pipeline();
  outcomes.forEach((o, i) => pipeline.xadd(gw.topology.outcomes(i % gw.topology.partitions), '*', 'd', JSON.stringify(o)));
  await pipeline.exec();
}

t.before(async () => {
  // A Redis of this file's own: the test that cuts the subscriber's connection finds it among the
  // server's clients, which tests running alongside would add to. Stopped after the gateway.
  const server = await PrivateRedis.start();
  t.teardown(() => server.stop());
  gw = await inProcessGateway(t, { REDIS_URL: server.url });
  await gw.run(recorderRole);
  other = await new Keystore(gw.redis, gw.topology).createProject('other', false);
});

t.test('records reach the socket as the recorder writes them, as GET /api/deliveries lists them', async (t) => {
  const live = await tail(t);
  const p = gw.project.project_id;
  const written = Array.from({ length: 30 }, (_, n) => outcome(p, 1000 + n, { notification_id: 'live-1', status: n % 3 === 0 ? 'failed' : 'sent', error_code: n % 3 === 0 ? 'apns_410_Unregistered' : null, hint: n % 3 === 0 ? 'The device token is no longer valid.' : null }));
  await append([...written, outcome(other.project_id, 5000, { notification_id: 'live-1' })]);
  await eventually('30 records on the socket', async () => (live.records().length >= 30 ? true : undefined), 30_000);
  const listed = (await call(`${gw.url}/api/deliveries?notification_id=live-1&limit=100`, 'GET', gw.project.rest_key)).body as { deliveries: Delivery[] };
  const byId = new Map(live.records().map((d) => [d.id, d]));
  t.equal(byId.size, 30, "the project's records, each once");
  t.same([...byId.keys()].sort(), listed.deliveries.map((d) => d.id).sort(), 'the same records as the API lists');
  for (const row of listed.deliveries) t.same(byId.get(row.id), row, `${row.id}: the same record`);
  t.notOk(byId.has('d5000'), "another project's record is not sent");
});

t.test('filters narrow the records, time bounds included', async (t) => {
  const p = gw.project.project_id;
  const failed = await tail(t, '?status=failed&channel=PUSH');
  const one = await tail(t, '?external_id=u3&until=2030-01-01T00:00:00Z');
  await append(Array.from({ length: 21 }, (_, n) => outcome(p, 2000 + n, { notification_id: 'live-2', status: n % 3 === 0 ? 'failed' : 'sent', error_code: n % 3 === 0 ? 'timeout' : null, hint: n % 3 === 0 ? 'retry' : null })));
  await append([outcome(p, 3003, { notification_id: 'live-2', at: Date.parse('2031-01-01T00:00:00Z') })]);
  await eventually('the failed ones', async () => (failed.records().length >= 7 ? true : undefined), 30_000);
  await eventually("u3's", async () => (one.records().length >= 3 ? true : undefined), 30_000);
  await new Promise((resolve) => setTimeout(resolve, 500));
  t.equal(failed.records().length, 7);
  t.ok(failed.records().every((d) => d.status === 'failed'), 'status=failed: only failures');
  t.same(one.records().map((d) => d.external_id), ['u3', 'u3', 'u3'], 'one user, before until');
});

t.test('keys and filters are checked before the upgrade', async (t) => {
  t.same(await refused(wsUrl(), []), { status: 401, code: 'missing_key' });
  t.same(await refused(wsUrl(), ['bearer.rest_nope']), { status: 401, code: 'invalid_key' });
  t.same(await refused(wsUrl(), [`bearer.${gw.project.sdk_key}`]), { status: 403, code: 'wrong_key_type' }, 'an SDK key may not tail');
  t.same(await refused(wsUrl('?status=bogus'), [], { authorization: `Bearer ${gw.project.rest_key}` }), { status: 400, code: 'validation_failed' });
  t.same(await refused(wsUrl('?limit=5'), [`bearer.${gw.project.rest_key}`]), { status: 400, code: 'validation_failed' }, 'paging does not apply');
  for (const query of ['?status=bogus&since=yesterday', '?external_id=', '?channel=PUSH&channel=SMS']) {
    const listed = await call(`${gw.url}/api/deliveries${query}`, 'GET', gw.project.rest_key);
    t.equal(listed.status, 400, `${query}: refused by GET /api/deliveries`);
    t.same((await refusal(wsUrl(query), [`bearer.${gw.project.rest_key}`])).body, listed.body, `${query}: the errors of GET /api/deliveries`);
  }
  const plain = await call(`${gw.url}/api/deliveries/live`, 'GET', gw.project.rest_key);
  t.equal(plain.status, 400, 'a GET without an upgrade');
});

/** How many connections are subscribed to the live channel: the gateway's subscriber, or none. */
async function subscribers(): Promise<number> {
  const [, count] = (await gw.redis.pubsub('NUMSUB', gw.topology.liveDeliveries())) as [string, number];
  return count;
}

t.test('the gateway holds its subscriber only while a connection is open or opening', async (t) => {
  await eventually('no subscriber left from before', async () => ((await subscribers()) === 0 ? true : undefined));
  const first = await tail(t);
  const second = await tail(t);
  t.equal(await subscribers(), 1, 'one subscriber for both connections');
  first.ws.close();
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.equal(await subscribers(), 1, 'kept while one connection is open');
  second.ws.close();
  await eventually('closed with the last connection', async () => ((await subscribers()) === 0 ? true : undefined));
  // Clients that give up during the upgrade, at times that fall before, during and after the wait for the subscription.
  for (const delay of [0, 1, 2, 3, 4, 5, 6, 8, 10]) {
    const ws = new WebSocket(wsUrl(), [`bearer.${gw.project.rest_key}`]);
    ws.on('error', () => undefined);
    await new Promise((resolve) => setTimeout(resolve, delay));
    ws.terminate();
    await eventually(`none left by an upgrade abandoned after ${delay} ms`, async () => ((await subscribers()) === 0 ? true : undefined), 5000);
  }
  t.pass('no subscriber without a connection');
});

t.test('a reader that stops reading gets a gap notice, never an unbounded buffer', async (t) => {
  const slow = await tail(t, '?notification_id=flood');
  const fast = await tail(t, '?notification_id=flood');
  slow.ws.pause();
  const p = gw.project.project_id;
  const filler = 'x'.repeat(1500);
  const lines = (from: number, count: number): string =>
    Array.from({ length: count }, (_, n) => JSON.stringify({ stream_id: `0-${from + n}`, ...outcome(p, from + n, { notification_id: 'flood', hint: filler }) })).join('\n');
  // Published as the recorder does, directly: 40 inserts of 500 records, about 40 MB. Each waits
  // for the reading connection to get the one before, as a recorder's inserts come a while apart:
  // published all at once on a busy machine, they could pass what Redis buffers for a subscriber
  // (32 MB) and have it cut the gateway's connection, which is another test's fault.
  const total = 40 * 500;
  for (let i = 0; i < 40; i++) {
    await gw.redis.publish(gw.topology.liveDeliveries(), lines(100_000 + i * 500, 500));
    await eventually(`the reading connection got insert ${i + 1}`, async () => (fast.records().length >= (i + 1) * 500 ? true : undefined), 60_000);
  }
  t.equal(fast.records().length, total, 'a connection that reads misses nothing');
  t.notOk(fast.frames.some((f) => 'gap' in f), 'and gets no gap notice');
  slow.ws.resume();
  await eventually('the gap notice', async () => (slow.frames.some((f) => 'gap' in f) ? true : undefined), 30_000);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const missed = slow.frames.reduce((n, f) => n + ('gap' in f ? (f.gap.missed ?? NaN) : 0), 0);
  t.ok(missed > 0, `${missed} records dropped for the slow reader`);
  t.equal(slow.records().length + missed, total, 'every record either sent or counted in a gap notice');
  const metrics = (await call(`${gw.url}/metrics`, 'GET', null)).body as string;
  t.match(metrics, new RegExp(`svc_live_records_dropped_total ${missed}\\b`), 'and counted in the metrics');
  const ids = slow.records().map((d) => d.id);
  t.equal(new Set(ids).size, ids.length, 'nothing sent twice');
});

/** Ids of the clients of this Redis subscribed to a channel (CLIENT LIST TYPE pubsub). */
async function channelSubscribers(): Promise<Set<string>> {
  const list = (await gw.redis.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string;
  return new Set(list.split('\n').flatMap((line) => /^id=(\d+) .*\bsub=[1-9]/.exec(line)?.[1] ?? []));
}

t.test('when the subscriber loses its connection, every open tail gets a gap notice of unknown size', async (t) => {
  await eventually('no subscriber left from before', async () => ((await subscribers()) === 0 ? true : undefined));
  const others = await channelSubscribers();
  const first = await tail(t, '?notification_id=resub');
  const second = await tail(t, '?notification_id=resub&status=failed');
  // Only the client that appeared with the tails.
  const ours = [...(await channelSubscribers())].filter((id) => !others.has(id));
  t.equal(ours.length, 1, 'one new subscriber: the gateway');
  await gw.redis.call('CLIENT', 'KILL', 'ID', ours[0] ?? '');
  for (const live of [first, second]) await eventually('the gap notice', async () => (live.frames.length > 0 ? true : undefined), 10_000);
  t.same(first.frames, [{ gap: { missed: null } }], 'the first tail: missed, count unknown');
  t.same(second.frames, [{ gap: { missed: null } }], 'and the second');
  t.equal(await subscribers(), 1, 'subscribed again');
  const p = gw.project.project_id;
  await append([outcome(p, 7000, { notification_id: 'resub' })]);
  await eventually('the record after the gap', async () => (first.records().length === 1 ? true : undefined), 30_000);
  t.same(first.frames.map((f) => Object.keys(f)[0]), ['gap', 'deliveries'], 'records flow again, after the notice');
  t.equal(second.frames.length, 1, 'no second notice');
});
