import t from 'tap';
import { EntryBudget } from '../../actors/recorder/entry-budget.ts';
import { RecorderLimits } from '../../actors/recorder/limits.ts';
import { RecorderSink, type StreamKind } from '../../actors/recorder/sink.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import type { RawStreamEntry } from '../../engine/infra/runner/types.ts';
import { rows } from '../clickhouse/embedded.ts';
import { eventually } from '../helpers/http.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { outcome } from './outcomes.ts';
import { recorderProcess } from './process.ts';

t.test('the entry budget grants a whole request or nothing, and takes back what a read returned beyond it', async (t) => {
  const budget = new EntryBudget(2000);
  t.equal(budget.take(1500), 1500);
  t.equal(budget.take(1000), 0, 'only 500 are free: nothing');
  t.equal(budget.take(500), 500);
  budget.give(1500);
  budget.give(-200);
  t.equal(budget.take(1400), 0, 'a read over its grant holds the difference');
  t.equal(budget.take(1300), 1300);
  budget.give(5000);
  t.equal(budget.take(2001), 0, 'never more than the limit');
  t.equal(budget.take(2000), 2000);
});

t.test('a backlog over many partitions is read only as fast as it is inserted: entries read and not inserted stay within the budget', async (t) => {
  const gw = await inProcessGateway(t);
  const log = createLogger('error');
  const project = gw.project.project_id;
  // Whole batches from the first read: each stream's 1500 entries are read in three full batches,
  // and none is left as a drained stream's last part batch, which holds no budget.
  const limits = { ...RecorderLimits, maxBatch: 500, probeBatch: 500, lingerMs: 200, retryMs: 50, maxBuffered: 1000 };
  const partitions = [0, 1, 2, 3, 4, 5, 6, 7];
  for (const p of partitions) {
    const pipeline = gw.redis.pipeline();
    for (let n = 0; n < 1500; n++) pipeline.xadd(gw.topology.outcomes(p), '*', 'd', JSON.stringify(outcome(project, p * 10_000 + n)));
    await pipeline.exec();
  }
  const sink = new RecorderSink(gw.clickhouse, gw.redis, gw.topology, new Metrics(), log);
  let mostHeld = 0;
  // Entries read and not yet inserted are the group's pending ones; a slow sink lets them pile up
  // if anything but the budget limits the reads.
  const slow = {
    record: async (kind: StreamKind, entries: RawStreamEntry[], token: string) => {
      await new Promise((resolve) => setTimeout(resolve, 30));
      await sink.record(kind, entries, token);
    },
  };
  // One MULTI: a snapshot of every partition at one instant.
  const sample = async (): Promise<void> => {
    const multi = gw.redis.multi();
    for (const p of partitions) multi.xpending(gw.topology.outcomes(p), 'recorder');
    const replies = (await multi.exec()) ?? [];
    const held = replies.reduce((sum, [err, reply]) => sum + (err ? 0 : Number((reply as unknown[])[0] ?? 0)), 0);
    mostHeld = Math.max(mostHeld, held);
  };
  const sampler = setInterval(() => void sample(), 5);
  const consumers = recorderProcess(gw, 'bounded', partitions, slow, limits, log);
  consumers.forEach((c) => c.start());
  await eventually('every outcome recorded', async () => {
    const [row] = await rows<{ n: string }>(gw.clickhouse, 'SELECT count() AS n FROM message_deliveries WHERE project = {p:String}', { p: project });
    return Number(row?.n) === partitions.length * 1500 ? true : undefined;
  });
  clearInterval(sampler);
  await Promise.all(consumers.map((c) => c.stop()));
  t.ok(mostHeld > 0, `entries were seen held (${mostHeld})`);
  t.ok(mostHeld <= limits.maxBuffered, `at most the budget held at once: ${mostHeld} <= ${limits.maxBuffered} (8 partitions would read 4000 without it)`);
});

t.test('under a steady load the partitions read without waiting for each other: no read is refused budget', async (t) => {
  const gw = await inProcessGateway(t);
  const log = createLogger('error');
  const project = gw.project.project_id;
  // The default batch and budget: two whole batches' room at once would spend the budget.
  const limits = { ...RecorderLimits, lingerMs: 200, retryMs: 50 };
  const partitions = Array.from({ length: 16 }, (_, p) => p);
  let refused = 0;
  const budget = new (class extends EntryBudget {
    override take(want: number): number {
      const granted = super.take(want);
      if (granted === 0) refused++;
      return granted;
    }
  })(limits.maxBuffered);
  const sink = new RecorderSink(gw.clickhouse, gw.redis, gw.topology, new Metrics(), log);
  const consumers = recorderProcess(gw, 'steady', partitions, sink, limits, log, budget);
  consumers.forEach((c) => c.start());
  const rounds = 20;
  for (let round = 0; round < rounds; round++) {
    const pipeline = gw.redis.pipeline();
    for (const p of partitions) for (let n = 0; n < 3; n++) pipeline.xadd(gw.topology.outcomes(p), '*', 'd', JSON.stringify(outcome(project, (round * 100 + p) * 10 + n)));
    await pipeline.exec();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await eventually('every outcome recorded', async () => {
    const [row] = await rows<{ n: string }>(gw.clickhouse, 'SELECT count() AS n FROM message_deliveries WHERE project = {p:String}', { p: project });
    return Number(row?.n) === partitions.length * rounds * 3 ? true : undefined;
  });
  await Promise.all(consumers.map((c) => c.stop()));
  t.equal(refused, 0, 'every read found its budget (each held a little, not a whole batch\'s room)');
});
