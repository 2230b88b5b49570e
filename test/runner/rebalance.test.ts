import t from 'tap';
import { deployment, type EngineProcess } from '../helpers/engine.ts';
import { Harness, until } from '../actors/harness.ts';
import { Workload } from './workload.ts';

function workerId(proc: EngineProcess): string {
  const started = proc.logs.find((l) => l['msg'] === 'started');
  if (typeof started?.['worker'] !== 'string') throw new Error('no worker id in the start log');
  return started['worker'];
}

t.test('two, then three workers share the partitions; a killed one hands its partitions over', async (t) => {
  // 32 partitions, so that rendezvous hashing gives each of three workers some with near certainty.
  const d = await deployment(t, { env: { PARTITIONS: '32', APPLY_BATCH: '50' } });
  const h = new Harness(d.env);
  t.teardown(() => h.close());
  const work = new Workload(d.project.project_id, 50, 11);

  /** Owners of every partition once each is owned by exactly one of `workers`, each owning some. */
  const sharedBy = (workers: string[], ms = 15_000) =>
    until(
      `partitions shared by ${workers.length} workers`,
      async () => {
        const owners = await h.redis.mget(...[...Array(h.topology.partitions).keys()].map((p) => h.topology.lease(p)));
        if (!owners.every((o) => o !== null && workers.includes(o))) return false;
        const counts = workers.map((w) => owners.filter((o) => o === w).length);
        return counts.every((c) => c > 0) && counts;
      },
      ms,
    );

  // Writes keep coming while the partitions move.
  let writing = true;
  const writer = (async () => {
    while (writing) {
      await work.append(h, work.next(100));
      await new Promise((r) => setTimeout(r, 50));
    }
  })();

  try {
    const a = await d.start(['apply']);
    const b = await d.start(['apply']);
    t.ok(await sharedBy([workerId(a), workerId(b)]), 'two workers');
    const c = await d.start(['apply']);
    const three = await sharedBy([workerId(a), workerId(b), workerId(c)]);
    t.comment(`partitions per worker: ${three.join(', ')}`);
    t.ok(three, 'three workers');

    await b.kill();
    t.ok(await sharedBy([workerId(a), workerId(c)], 10_000), 'the killed worker’s partitions moved to the others');

    writing = false;
    await writer;
    await h.settled(60_000);
    t.same(await work.check(h), [], 'state equals the model: per-user order held, each event once');

    t.equal(await a.stop(), 0, 'a stopped worker exits cleanly');
    t.notOk(await h.redis.zscore(h.topology.workers(), workerId(a)), 'and leaves the worker set');
    t.ok(await sharedBy([workerId(c)], 10_000), 'its released partitions go to the last worker');
    // The log line follows the leases: the round that took them logs once it has taken them all.
    const logged = await until('the owned partitions to be logged', async () =>
      c.logs.some((l) => l['msg'] === 'partitions' && Array.isArray(l['owned']) && l['owned'].length === h.topology.partitions),
    );
    t.ok(logged, 'owned partitions are logged');
  } finally {
    writing = false;
    await writer.catch(() => {});
  }
});
