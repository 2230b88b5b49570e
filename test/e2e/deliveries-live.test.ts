import t, { type Test } from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { Keystore } from '../../engine/state/keys/keystore.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { deliveriesOf, iosToken, register, stage, until, type Delivery } from '../helpers/broadcast.ts';
import { call, eventually } from '../helpers/http.ts';
import { openTail, type LiveTail } from '../helpers/live-tail.ts';

/**
 * GET /api/deliveries/live through a whole engine: the records of a real broadcast reach the open
 * tails as dispatch records them, each as GET /api/deliveries lists it, filtered, and only for the
 * key's project.
 */

type Row = Delivery & { id: string };
type Tail = LiveTail<Row>;

/** A tail with its key in Authorization, as a server-side client sends it. */
function tail(t: Test, base: string, key: string, query = ''): Promise<Tail> {
  return openTail<Row>(t, `${base.replace('http', 'ws')}/api/deliveries/live${query}`, key, 'header');
}

t.test('the records of a broadcast reach the tails open while it runs', async (t) => {
  const s = await stage(t);
  await register(s, 20);
  const redis = createRedis(loadConfig(s.d.env));
  const other = await new Keystore(redis, new Topology(s.d.env['KEY_PREFIX'] ?? '', Number(s.d.env['PARTITIONS']))).createProject('other', false);
  redis.disconnect();
  await s.sims.apns.script({ match: { token: iosToken(0) }, respond: { status: 410, body: { reason: 'Unregistered', timestamp: Date.now() + 60_000 } } });

  const all = await tail(t, s.engine.url, s.rest);
  const failed = await tail(t, s.engine.url, s.rest, '?status=failed');
  const one = await tail(t, s.engine.url, s.rest, '?external_id=u5&channel=PUSH');
  const elsewhere = await tail(t, s.engine.url, other.rest_key);

  const ids = Array.from({ length: 20 }, (_, i) => `u${i}`);
  const created = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { contents: { en: 'Live' }, include_external_user_ids: ids });
  t.equal(created.status, 201);
  const { id, recipients } = created.body as { id: string; recipients: number };
  t.equal(recipients, 12, 'the users with a push subscription');
  await until(s, id);
  // One record per targeted user: an attempt for each recipient, `skipped` for the others.
  const rows = await eventually('every delivery recorded', async () => {
    const listed = await deliveriesOf(s, id);
    return listed.length >= ids.length ? (listed as Row[]) : undefined;
  }, 60_000);
  t.equal(rows.length, ids.length);
  await eventually('every record on the tail', async () => (all.records().length >= rows.length ? true : undefined), 30_000);

  const live = new Map(all.records().map((r) => [r.id, r]));
  t.equal(live.size, all.records().length, 'each record once');
  t.same([...live.keys()].sort(), rows.map((r) => r.id).sort(), 'the records GET /api/deliveries lists');
  for (const row of rows) t.same(live.get(row.id), row, `${row.external_id}: the same MessageDelivery`);
  t.match(live.get(rows.find((r) => r.external_id === 'u0')?.id ?? '?'), { status: 'failed', error_code: 'apns_410_Unregistered', receipt: null, retrying: false });

  await eventually('the filtered tails', async () => (failed.records().length >= 1 && one.records().length >= 1 ? true : undefined), 30_000);
  // Time for anything that should not arrive to do so.
  await new Promise((resolve) => setTimeout(resolve, 500));
  t.same(failed.records().map((r) => r.external_id), ['u0'], 'status=failed: the dead token only');
  t.same(one.records().map((r) => r.external_id), ['u5'], 'external_id and channel');
  t.same(elsewhere.frames, [], "another project's tail gets nothing");
  t.notOk(all.frames.some((f) => 'gap' in f), 'no gap for a reader that keeps up');
});
