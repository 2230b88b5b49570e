import t from 'tap';
import { EntryBudget } from '../../actors/recorder/entry-budget.ts';
import { RecorderLimits } from '../../actors/recorder/limits.ts';
import { RecorderConsumer } from '../../actors/recorder/recorder-consumer.ts';
import { RecordRounds } from '../../actors/recorder/rounds.ts';
import { RecorderSink } from '../../actors/recorder/sink.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import type { LeaseView } from '../../engine/infra/runner/partition-runner.ts';
import { rows } from '../clickhouse/embedded.ts';
import { eventually } from '../helpers/http.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { RenewedLease } from '../helpers/lease.ts';
import { outcome } from './outcomes.ts';

// A recorder whose lease lapses while it holds a batch (a stalled process, renewals that fail)
// while another worker takes the partition over (the lease is what PartitionRunner hands over;
// here each consumer gets a lease of its own that the test lapses).
const limits = { ...RecorderLimits, maxBatch: 1000, lingerMs: 60_000, retryMs: 20, maxBuffered: 2000 };

t.test('an owner whose lease lapsed mid-batch neither reads nor inserts: every outcome lands once', async (t) => {
  const gw = await inProcessGateway(t);
  const log = createLogger('error');
  const project = gw.project.project_id;
  const partition = 5;
  const streams = { changes: gw.topology.changes(partition), outcomes: gw.topology.outcomes(partition) };
  const sink = new RecorderSink(gw.clickhouse, gw.redis, gw.topology, new Metrics(), log);
  const add = async (from: number, to: number): Promise<void> => {
    for (let n = from; n < to; n++) await gw.redis.xadd(streams.outcomes, '*', 'd', JSON.stringify(outcome(project, n)));
  };
  const consumer = (name: string, lease: LeaseView, linger = limits.lingerMs): RecorderConsumer =>
    new RecorderConsumer({ redis: gw.redis, partition, streams, consumer: name, log, metrics: new Metrics(), rounds: new RecordRounds({ redis: gw.redis, topology: gw.topology, sink, worker: name, log, limits }), lease, limits: { ...limits, lingerMs: linger }, budget: new EntryBudget(limits.maxBuffered) });
  const pendingOf = async (name: string): Promise<number> => {
    // Before the first consumer made the group there is nothing pending.
    const summary = (await gw.redis.xpending(streams.outcomes, 'recorder').catch(() => null)) as [number, unknown, unknown, [string, string][] | null] | null;
    const consumers = summary?.[3];
    return Number(consumers?.find(([c]) => c === name)?.[1] ?? 0);
  };
  const count = async (): Promise<{ rows: number; ids: number }> => {
    const [row] = await rows<{ rows: string; ids: string }>(gw.clickhouse, 'SELECT count() AS rows, uniqExact(id) AS ids FROM message_deliveries WHERE project = {p:String}', { p: project });
    return { rows: Number(row?.rows), ids: Number(row?.ids) };
  };

  // The first owner reads 300 outcomes into a batch that is not due for a minute.
  await add(0, 300);
  const leases = [new RenewedLease(), new RenewedLease(), new RenewedLease()] as const;
  t.teardown(() => leases.forEach((l) => l.lapse()));
  const [firstLease, secondLease, thirdLease] = leases;
  const first = consumer('first', firstLease);
  first.start();
  await eventually('the first owner holds 300 read', async () => ((await pendingOf('first')) === 300 ? true : undefined));

  // Its lease lapses; once it has expired the next owner takes the pending batch over, inserts it,
  // and stops.
  firstLease.lapse();
  await eventually('the first lease expired', async () => (firstLease.expired() ? true : undefined));
  const second = consumer('second', secondLease, 50);
  second.start();
  await eventually('the batch taken over and inserted', async () => ((await count()).rows === 300 ? true : undefined));
  await second.stop();

  // More outcomes arrive while the first owner still runs on the lapsed lease, then it stops.
  await add(300, 500);
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.equal(await pendingOf('first'), 0, 'the first owner read nothing more');
  await first.stop();
  t.same(await count(), { rows: 300, ids: 300 }, 'and inserted nothing at its stop');

  // The partition's next owner finds the rest unread.
  const third = consumer('third', thirdLease, 50);
  third.start();
  await eventually('everything recorded and acknowledged', async () => {
    const [left] = (await gw.redis.xpending(streams.outcomes, 'recorder')) as [number];
    return left === 0 && (await count()).rows === 500 ? true : undefined;
  });
  await third.stop();
  t.same(await count(), { rows: 500, ids: 500 }, 'every outcome once');
});
