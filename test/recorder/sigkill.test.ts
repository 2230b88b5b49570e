import t from 'tap';
import { openClickHouse } from '../../engine/infra/clickhouse/client.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { rows } from '../clickhouse/embedded.ts';
import { deployment } from '../helpers/engine.ts';
import { eventually } from '../helpers/http.ts';
import { groupBacklog } from '../helpers/streams.ts';
import { outcome } from './outcomes.ts';

const TOTAL = 60_000;

t.test('a recorder killed with SIGKILL again and again mid-batch, then restarted, records every entry exactly once', async (t) => {
  const d = await deployment(t);
  const config = loadConfig(d.env);
  const redis = createRedis(config);
  t.teardown(() => redis.disconnect());
  const topology = new Topology(config.KEY_PREFIX, config.PARTITIONS);
  const project = d.project.project_id;
  for (let n = 0; n < TOTAL; n += 1000) {
    const pipeline = redis.pipeline();
    for (let i = n; i < n + 1000; i++) {
      const o = outcome(project, i, { external_id: `u${i % 500}` });
      pipeline.xadd(topology.outcomes(topology.partitionOf(project, o.external_id)), '*', 'd', JSON.stringify(o));
    }
    await pipeline.exec();
  }
  const pending = async (): Promise<{ pending: number; unread: number }> => {
    let total = 0;
    let unread = 0;
    for (let p = 0; p < topology.partitions; p++) {
      const backlog = await groupBacklog(redis, topology.outcomes(p), 'recorder');
      total += backlog.pending;
      unread += backlog.unread;
    }
    return { pending: total, unread };
  };

  let caughtMidBatch = 0;
  for (let kill = 0; kill < 4; kill++) {
    const before = await pending();
    const recorder = await d.start(['recorder']);
    // The kill lands as soon as this recorder has moved the backlog and holds a batch read but not
    // acknowledged: a fixed delay misses the backlog altogether on a fast host, where the recorder
    // drains it within a second.
    const deadline = Date.now() + 1200 + 300 * kill;
    for (;;) {
      const now = await pending();
      const moved = now.pending !== before.pending || now.unread !== before.unread;
      if ((moved && now.pending > 0) || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    // Later kills land later in the batch: after its insert, before its acknowledgement.
    await new Promise((r) => setTimeout(r, 50 * kill));
    await recorder.kill();
    const left = await pending();
    if (left.pending > 0) caughtMidBatch++;
    t.comment(`kill ${kill + 1}: ${left.pending} pending, ${left.unread} unread`);
  }
  t.ok(caughtMidBatch > 0, 'at least one kill left a batch read but not acknowledged');

  const last = await d.start(['recorder']);
  await eventually('every entry acknowledged', async () => {
    const left = await pending();
    return left.pending === 0 && left.unread === 0 ? true : undefined;
  }, 120_000);
  const code = await last.stop();
  // Its errors and warnings with the failure: a stop that timed out says what it waited for.
  t.equal(code, 0, 'the last recorder stops cleanly', { logged: last.logs.filter((l) => l['level'] === 'error' || l['level'] === 'warn').slice(-10), stderr: last.stderr().slice(-2000) });

  const ch = await openClickHouse(config);
  t.teardown(() => ch.close());
  const [counts] = await rows<{ rows: string; ids: string }>(ch, 'SELECT count() AS rows, uniqExact(id) AS ids FROM message_deliveries WHERE project = {p:String}', { p: project });
  t.same({ rows: Number(counts?.rows), ids: Number(counts?.ids) }, { rows: TOTAL, ids: TOTAL }, 'every outcome once, none twice');
});
