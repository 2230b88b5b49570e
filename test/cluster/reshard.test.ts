import t from 'tap';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { assertBackOnRedis, assertExactlyOnce, clusterNodes, keySlot, reshard, SdkLoad } from '../helpers/cluster-fault.ts';
import { deployment } from '../helpers/engine.ts';
import { PrivateCluster } from '../../bench/redis-cluster.ts';

// 2 000 slots, partitions among them, moved from one primary to another under SDK load with
// `redis-cli --cluster reshard`. Before, appends answered MOVED or ASK inside an auto-pipeline were
// not followed, and some accepted writes stayed in the journal for good
// (docs/reliability.md#redis-cluster).
const USERS = 30;
const SLOTS = 2000;

t.test('2 000 slots resharded under load: every 202 applied once, the gateway back on Redis', async (t) => {
  const cluster = await PrivateCluster.start({ durable: true });
  t.teardown(() => cluster.stop());
  const d = await deployment(t, { env: { REDIS_URL: cluster.url } });
  const engine = await d.start(['gateway', 'apply', 'recorder']);
  await d.start(['apply']);

  // The source is the primary of partition 1; reshard moves its lowest slots first.
  const topology = new Topology(d.prefix, Number(d.env['PARTITIONS']));
  const slots = await Promise.all(Array.from({ length: topology.partitions }, (_, p) => keySlot(cluster.ports[0] ?? 0, topology.tag(p))));
  const slotOf = (p: number): number => slots[p] ?? -1;
  const primaries = (await clusterNodes(cluster.ports[0] ?? 0)).filter((n) => n.primary);
  const source = primaries.find((n) => n.slots.some(([lo, hi]) => lo <= slotOf(1) && slotOf(1) <= hi));
  const target = primaries.find((n) => n !== source);
  if (!source || !target) throw new Error('no source or target primary');
  const lowest = source.slots[0]?.[0] ?? 0;
  const moved = Array.from({ length: topology.partitions }, (_, p) => p).filter((p) => slotOf(p) >= lowest && slotOf(p) < lowest + SLOTS);
  t.ok(moved.length > 0, `partitions ${moved.join(', ')} move`);

  const load = new SdkLoad(engine.url, d.project.sdk_key, USERS);
  await new Promise((r) => setTimeout(r, 2000));
  await reshard(source.port, source.id, target.id, SLOTS);
  await cluster.settled();
  await new Promise((r) => setTimeout(r, 2000));
  await load.stop();

  const after = (await clusterNodes(cluster.ports[0] ?? 0)).find((n) => n.id === target.id);
  t.ok(after?.slots.some(([lo, hi]) => lo <= slotOf(1) && slotOf(1) <= hi), 'partition 1 is served by the target now');
  t.ok(load.acceptedCount > 0, 'events were accepted');
  await assertExactlyOnce(t, engine, d.project.rest_key, load);
  await assertBackOnRedis(t, engine, d.env['DATA_DIR'] ?? '');
});
