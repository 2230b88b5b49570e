import t from 'tap';
import { assertBackOnRedis, assertExactlyOnce, clusterNodes, SdkLoad } from '../helpers/cluster-fault.ts';
import { deployment } from '../helpers/engine.ts';
import { PrivateCluster } from '../../bench/redis-cluster.ts';

// A primary of a three-node cluster (append-only, fsync always) SIGKILLed under SDK load and
// started again on its data. Before, the gateway's replay kept failing on MOVED and never returned
// to Redis: accepted writes stayed in its journal (docs/reliability.md#redis-cluster).
const USERS = 30;
const DOWN_MS = 4000;

t.test('a cluster node SIGKILLed and restarted on its data: every 202 applied once, the gateway back on Redis', async (t) => {
  const cluster = await PrivateCluster.start({ durable: true, nodeTimeoutMs: 15_000 });
  t.teardown(() => cluster.stop());
  const d = await deployment(t, { env: { REDIS_URL: cluster.url } });
  const engine = await d.start(['gateway', 'apply', 'recorder']);
  await d.start(['apply']);

  const load = new SdkLoad(engine.url, d.project.sdk_key, USERS);
  await new Promise((r) => setTimeout(r, 2000));
  const victim = (await clusterNodes(cluster.ports[0] ?? 0)).find((n) => n.primary && n.port !== cluster.ports[0]);
  if (!victim) throw new Error('no primary to kill');
  await cluster.kill(victim.port);
  await new Promise((r) => setTimeout(r, DOWN_MS));
  await cluster.restart(victim.port);
  await cluster.settled();
  await new Promise((r) => setTimeout(r, 3000));
  await load.stop();

  t.ok(load.acceptedCount > 0, 'events were accepted');
  await assertExactlyOnce(t, engine, d.project.rest_key, load);
  await assertBackOnRedis(t, engine, d.env['DATA_DIR'] ?? '');
});
