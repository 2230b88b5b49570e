import t from 'tap';
import { EntryBudget } from '../../actors/recorder/entry-budget.ts';
import { RecorderLimits } from '../../actors/recorder/limits.ts';
import { RecorderConsumer } from '../../actors/recorder/recorder-consumer.ts';
import { RecordRounds } from '../../actors/recorder/rounds.ts';
import { RecorderSink } from '../../actors/recorder/sink.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { rows } from '../clickhouse/embedded.ts';
import { eventually } from '../helpers/http.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { heldLease } from '../helpers/lease.ts';
import { monitorLines } from '../helpers/redis.ts';
import { outcome } from './outcomes.ts';

/**
 * An idle partition of the recorder only waits for its next entry: one blocking read a linger
 * period, not a look and then a wait (actors/recorder/recorder-consumer.ts). Its reads are counted
 * with MONITOR, by the partition's stream names, so other tests' commands on the shared Redis do
 * not count.
 */
const LINGER_MS = 200;
const IDLE_MS = 2000;
const limits = { ...RecorderLimits, lingerMs: LINGER_MS, retryMs: 50 };

t.test('an idle partition reads once a linger period, and takes the next entry at once', async (t) => {
  const gw = await inProcessGateway(t);
  const quiet = createLogger('error');
  const redis = createRedis(gw.config);
  const partition = 5;
  const streams = { changes: gw.topology.changes(partition), outcomes: gw.topology.outcomes(partition) };
  const sink = new RecorderSink(gw.clickhouse, gw.redis, gw.topology, new Metrics(), quiet);
  const rounds = new RecordRounds({ redis, topology: gw.topology, sink, worker: 'c1', log: quiet, limits });
  const consumer = new RecorderConsumer({ redis, partition, streams, consumer: 'c1', rounds, budget: new EntryBudget(limits.maxBuffered), lease: heldLease, log: quiet, metrics: new Metrics(), limits });
  let reads = 0;
  const monitor = await monitorLines((line) => {
    if (line.toLowerCase().includes('] "xreadgroup" ') && line.includes(`"${streams.changes}"`)) reads++;
  });
  t.teardown(async () => {
    monitor.close();
    await consumer.stop();
    redis.disconnect();
  });

  consumer.start();
  await eventually('the consumer reading', async () => (reads > 0 ? true : undefined));
  await new Promise((resolve) => setTimeout(resolve, 2 * LINGER_MS));
  reads = 0;
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  const periods = IDLE_MS / LINGER_MS;
  t.ok(reads >= 1, `it still reads (${reads} reads)`);
  t.ok(reads <= periods + 2, `${reads} reads in ${periods} linger periods: one a period, not a look and a wait`);

  const project = gw.project.project_id;
  await gw.redis.xadd(streams.outcomes, '*', 'd', JSON.stringify(outcome(project, 1)));
  const recorded = await eventually('the entry recorded', async () => {
    const [row] = await rows<{ n: string }>(gw.clickhouse, 'SELECT count() AS n FROM message_deliveries WHERE project = {p:String}', { p: project });
    return Number(row?.n) === 1 ? true : undefined;
  });
  t.ok(recorded, 'an entry that comes to an idle partition is recorded');
});
