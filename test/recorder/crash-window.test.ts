import t from 'tap';
import { EntryBudget } from '../../actors/recorder/entry-budget.ts';
import { RecorderLimits } from '../../actors/recorder/limits.ts';
import { RecorderConsumer } from '../../actors/recorder/recorder-consumer.ts';
import { RecorderSink, type StreamKind } from '../../actors/recorder/sink.ts';
import { createLogger } from '../../engine/log.ts';
import { Metrics } from '../../engine/metrics.ts';
import type { RawStreamEntry } from '../../engine/runner/types.ts';
import { rows } from '../clickhouse/embedded.ts';
import { eventually } from '../helpers/http.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { heldLease } from '../helpers/lease.ts';
import { outcome } from './outcomes.ts';

const limits = { ...RecorderLimits, maxBatch: 1000, lingerMs: 200, retryMs: 50, maxBuffered: 2000 };

t.test('a batch inserted by an owner that dies before acknowledging it lands once when the next owner redoes it', async (t) => {
  const gw = await inProcessGateway(t);
  const log = createLogger('error');
  const project = gw.project.project_id;
  const partition = 3;
  const streams = { changes: gw.topology.changes(partition), outcomes: gw.topology.outcomes(partition) };
  for (let n = 0; n < 2500; n++) await gw.redis.xadd(streams.outcomes, '*', 'd', JSON.stringify(outcome(project, n, { external_id: 'u1' })));
  const sink = new RecorderSink(gw.clickhouse, gw.redis, gw.topology, new Metrics(), log);

  // The first owner inserts its first batch, then freezes for good before the acknowledgement, as a
  // process killed at that instant would; later calls fail, so its stop leaves the rest pending.
  let inserted: RawStreamEntry[] = [];
  let crash: (err: Error) => void = () => {};
  const frozen = new Promise<never>((_, reject) => (crash = reject));
  let calls = 0;
  const dying = new RecorderConsumer({
    redis: gw.redis,
    partition,
    streams,
    consumer: 'dying',
    lease: heldLease,
    log,
    metrics: new Metrics(),
    limits,
    budget: new EntryBudget(limits.maxBuffered),
    sink: {
      record: async (kind: StreamKind, entries: RawStreamEntry[], token: string) => {
        if (++calls > 1) throw new Error('dead');
        await sink.record(kind, entries, token);
        inserted = entries;
        return frozen;
      },
    },
  });
  dying.start();
  await eventually('the first batch inserted', async () => (inserted.length > 0 ? true : undefined));
  const count = async (): Promise<{ rows: number; ids: number }> => {
    const [row] = await rows<{ rows: string; ids: string }>(gw.clickhouse, 'SELECT count() AS rows, uniqExact(id) AS ids FROM message_deliveries WHERE project = {p:String}', { p: project });
    return { rows: Number(row?.rows), ids: Number(row?.ids) };
  };
  t.same(await count(), { rows: inserted.length, ids: inserted.length }, 'the batch is in ClickHouse');
  const [pending] = (await gw.redis.xpending(streams.outcomes, 'recorder')) as [number];
  t.equal(pending, inserted.length, 'and still pending: exactly that batch');

  const next = new RecorderConsumer({ redis: gw.redis, partition, streams, consumer: 'next', lease: heldLease, log, metrics: new Metrics(), limits, sink, budget: new EntryBudget(limits.maxBuffered) });
  next.start();
  await eventually('everything recorded and acknowledged', async () => {
    const [left] = (await gw.redis.xpending(streams.outcomes, 'recorder')) as [number];
    const info = (await gw.redis.xinfo('GROUPS', streams.outcomes)) as unknown[][];
    const lag = Number(info[0]?.[info[0].indexOf('lag') + 1]);
    return left === 0 && lag === 0 ? true : undefined;
  });
  t.same(await count(), { rows: 2500, ids: 2500 }, 'every outcome once: the redone batch was dropped as a duplicate');
  crash(new Error('dead'));
  await Promise.all([dying.stop(), next.stop()]);
});
