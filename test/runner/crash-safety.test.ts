import { setPriority } from 'node:os';
import t from 'tap';
import { deployment } from '../helpers/engine.ts';
import { Harness, until } from '../actors/harness.ts';
import { Workload } from './workload.ts';

t.test('a worker killed while applying a backlog: after takeover every entry is applied exactly once', async (t) => {
  // Small batches so the kill lands between many apply calls, not after the last one.
  const d = await deployment(t, { env: { APPLY_BATCH: '20' } });
  const h = new Harness(d.env);
  t.teardown(() => h.close());
  const work = new Workload(d.project.project_id, 80, 7);
  for (let i = 0; i < 6; i++) await work.append(h, work.next(1000));

  const first = await d.start(['apply']);
  // At the lowest CPU priority: on a busy machine it would otherwise apply the whole backlog
  // before this process, waiting for its turn, sees it start.
  if (first.proc.pid !== undefined) setPriority(first.proc.pid, 19);
  const progress = await until('the first worker to apply something', async () => {
    let partitions = 0;
    for (let p = 0; p < h.topology.partitions; p++) if (await h.redis.exists(h.topology.applied(p))) partitions++;
    return partitions > 0 && partitions;
  });
  await first.kill();
  const leftAfterKill = await Promise.all([...Array(h.topology.partitions).keys()].map((p) => h.pending(p)));
  t.comment(`killed after ${progress} partition(s) started applying; partitions with entries left: ${leftAfterKill.filter((n) => n > 0).length}`);
  t.ok(leftAfterKill.some((n) => n > 0), 'the kill landed while entries were still to be applied');

  await d.start(['apply']);
  await h.settled(60_000);
  t.same(await work.check(h), [], 'the state equals the model and each event is recorded once');
});
