import t, { type Test } from 'tap';
import { EntryBudget } from '../../actors/recorder/entry-budget.ts';
import { RecorderLimits } from '../../actors/recorder/limits.ts';
import { RecorderConsumer } from '../../actors/recorder/recorder-consumer.ts';
import { RecordRounds } from '../../actors/recorder/rounds.ts';
import { RecorderSink } from '../../actors/recorder/sink.ts';
import { createLogger, type Logger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { rows } from '../clickhouse/embedded.ts';
import { eventually } from '../helpers/http.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { heldLease } from '../helpers/lease.ts';
import { REDIS_URL } from '../helpers/redis.ts';
import { ReplyDropper } from '../helpers/reply-dropper.ts';
import { outcome } from './outcomes.ts';

// A read whose reply never arrives still moved its entries into the group's pending list. Before,
// ioredis sent the read again after reconnecting, the next batch's trim deleted the orphaned
// entries below it, and their rows never reached ClickHouse.
const limits = { ...RecorderLimits, maxBatch: 1000, lingerMs: 100, retryMs: 50, maxBuffered: 2000 };

async function setup(t: Test) {
  const gw = await inProcessGateway(t);
  const target = new URL(REDIS_URL);
  const proxy = await ReplyDropper.start({ host: target.hostname, port: Number(target.port || 6379) });
  const redis = createRedis({ ...gw.config, REDIS_URL: proxy.url });
  const metrics = new Metrics();
  const errors: string[] = [];
  const quiet = createLogger('error');
  const log: Logger = { ...quiet, error: (msg, fields) => errors.push(msg + ' ' + JSON.stringify(fields)) };
  const project = gw.project.project_id;
  const partition = 2;
  const streams = { changes: gw.topology.changes(partition), outcomes: gw.topology.outcomes(partition) };
  const sink = new RecorderSink(gw.clickhouse, gw.redis, gw.topology, new Metrics(), quiet);
  const consumer = new RecorderConsumer({ redis, partition, streams, consumer: 'c1', rounds: new RecordRounds({ redis, topology: gw.topology, sink, worker: 'c1', log: quiet, limits }), budget: new EntryBudget(limits.maxBuffered), lease: heldLease, log, metrics, limits });
  t.teardown(async () => {
    await consumer.stop();
    redis.disconnect();
    await proxy.close();
  });
  const add = async (from: number, to: number): Promise<void> => {
    for (let n = from; n < to; n++) await gw.redis.xadd(streams.outcomes, '*', 'd', JSON.stringify(outcome(project, n)));
  };
  const count = async (): Promise<{ rows: number; ids: number }> => {
    const [row] = await rows<{ rows: string; ids: string }>(gw.clickhouse, 'SELECT count() AS rows, uniqExact(id) AS ids FROM message_deliveries WHERE project = {p:String}', { p: project });
    return { rows: Number(row?.rows), ids: Number(row?.ids) };
  };
  const pending = async (): Promise<number> => Number(((await gw.redis.xpending(streams.outcomes, 'recorder')) as [number])[0]);
  return { gw, proxy, consumer, add, count, pending, metrics, errors, streams };
}

t.test('a read whose reply is lost: its entries are claimed and recorded once, nothing trimmed from under them', async (t) => {
  const { proxy, consumer, add, count, pending, metrics, errors } = await setup(t);
  consumer.start();
  await add(0, 300);
  await eventually('the first entries recorded', async () => ((await count()).rows === 300 ? true : undefined));

  const dropped = proxy.dropNextReply('XREADGROUP');
  await add(300, 600);
  await dropped;
  // Enough later entries that a batch trimmed below its last ID would reach the lost ones.
  await add(600, 1200);

  await eventually('every entry recorded', async () => ((await count()).ids === 1200 && (await pending()) === 0 ? true : undefined), 15_000);
  t.same(await count(), { rows: 1200, ids: 1200 }, 'each outcome exactly once');
  const lost = await metrics.lostEntries.get();
  t.same(lost.values.map((v) => v.value), [], 'no entry was deleted while pending');
  t.same(errors, [], 'no error logged');
});

t.test('an entry deleted while pending is an error in the log and in the metrics', async (t) => {
  const { gw, consumer, add, count, metrics, errors, streams } = await setup(t);
  await add(0, 10);
  await gw.redis.xgroup('CREATE', streams.outcomes, 'recorder', '0', 'MKSTREAM');
  const read = (await gw.redis.xreadgroup('GROUP', 'recorder', 'gone', 'COUNT', 10, 'STREAMS', streams.outcomes, '>')) as [string, [string, string[]][]][];
  const ids = read[0]?.[1].map(([id]) => id) ?? [];
  await gw.redis.xdel(streams.outcomes, ...ids.slice(0, 3));

  consumer.start();
  await eventually('the rest recorded', async () => ((await count()).rows === 7 ? true : undefined));
  const lost = await metrics.lostEntries.get();
  t.same(lost.values.map((v) => [v.labels['group'], v.value]), [['recorder', 3]], 'counted');
  t.equal(errors.length, 1, 'logged once');
  t.match(errors[0], /deleted while pending/);
  t.match(errors[0], ids[0] ?? 'no id');
});

t.test('settling a batch never trims below what another group still has pending or unread', async (t) => {
  const { gw, consumer, add, count, streams } = await setup(t);
  await gw.redis.xgroup('CREATE', streams.outcomes, 'audit', '$', 'MKSTREAM');
  await add(0, 400);
  // The audit group reads the first 100 and acknowledges none; the rest it has not read.
  await gw.redis.xreadgroup('GROUP', 'audit', 'a1', 'COUNT', 100, 'STREAMS', streams.outcomes, '>');
  consumer.start();
  await add(400, 1000);
  await eventually('all recorded', async () => ((await count()).rows === 1000 ? true : undefined));
  t.equal(await gw.redis.xlen(streams.outcomes), 1000, 'every entry kept for the audit group');
  await gw.redis.xgroup('DESTROY', streams.outcomes, 'audit');
  await add(1000, 1001);
  await eventually('trimmed once no other group needs the entries', async () => ((await gw.redis.xlen(streams.outcomes)) < 1000 ? true : undefined));
});
