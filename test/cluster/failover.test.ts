import t from 'tap';
import { assertBackOnRedis, assertExactlyOnce, clusterNodes, failover, SdkLoad } from '../helpers/cluster-fault.ts';
import { deployment } from '../helpers/engine.ts';
import { PrivateCluster } from '../../bench/redis-cluster.ts';

// Three primaries with a replica each, under SDK load: a replica takes over with CLUSTER FAILOVER,
// then another primary is SIGKILLed, its replica a second behind, and promoted by the cluster.
// Appends wait for one replica (REDIS_WAIT_REPLICAS=1), so a 202 survives the promotion; before,
// what the primary alone had was lost (docs/reliability.md#redis-cluster).
const USERS = 30;

// Consumers whose partitions move while a read waits on the failed node must end, or the partition
// stays with them unread (engine/infra/runner/consumer-loop.ts).
t.test('failovers to replicas under load: every 202 applied once, the gateway back on Redis', async (t) => {
  const cluster = await PrivateCluster.start({ durable: true, replicas: true });
  t.teardown(() => cluster.stop());
  const d = await deployment(t, { env: { REDIS_URL: cluster.url, REDIS_WAIT_REPLICAS: '1' } });
  // The recorder stays with the gateway: the embedded ClickHouse the events are read from is its.
  const engine = await d.start(['gateway', 'recorder']);
  const workers = [await d.start(['apply']), await d.start(['apply'])];
  const pauseWorkers = (paused: boolean) => workers.forEach((w) => w.proc.kill(paused ? 'SIGSTOP' : 'SIGCONT'));
  const first = cluster.ports[0] ?? 0;

  const load = new SdkLoad(engine.url, d.project.sdk_key, USERS);
  await new Promise((r) => setTimeout(r, 2000));
  const before = await clusterNodes(first);
  const [one, two] = before.filter((n) => n.primary);
  const replicaOf = (id: string | undefined) => before.find((n) => !n.primary && n.primaryId === id);
  const promoted = replicaOf(one?.id);
  if (!one || !two || !promoted || !replicaOf(two.id)) throw new Error('no primary with a replica');
  await failover(promoted.port);
  await cluster.settled();
  await new Promise((r) => setTimeout(r, 2000));

  // Its replica stops reading for a second first: what the primary takes meanwhile, the
  // promoted replica never has, so its 202s must not depend on the primary alone. The apply
  // workers stop too, so that nothing of it is applied and recorded before the kill.
  const lagging = replicaOf(two.id)?.port ?? 0;
  cluster.freeze(lagging, true);
  pauseWorkers(true);
  await new Promise((r) => setTimeout(r, 1000));
  await cluster.kill(two.port);
  cluster.freeze(lagging, false);
  pauseWorkers(false);
  const survivor = cluster.ports.find((p) => p !== two.port) ?? 0;
  await clusterSees(survivor, (nodes) => nodes.some((n) => n.primary && n.primaryId === null && n.id === replicaOf(two.id)?.id));
  await cluster.restart(two.port);
  await cluster.settled();
  await new Promise((r) => setTimeout(r, 2000));
  await load.stop();

  t.ok(load.acceptedCount > 0, 'events were accepted');
  await assertExactlyOnce(t, engine, d.project.rest_key, load);
  await assertBackOnRedis(t, engine, d.env['DATA_DIR'] ?? '');
});

async function clusterSees(port: number, check: (nodes: Awaited<ReturnType<typeof clusterNodes>>) => boolean): Promise<void> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    if (check(await clusterNodes(port))) return;
  }
  throw new Error('the replica was not promoted');
}
