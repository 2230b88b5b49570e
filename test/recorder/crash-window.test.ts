import t, { type Test } from 'tap';
import { RecorderLimits } from '../../actors/recorder/limits.ts';
import { RecorderConsumer } from '../../actors/recorder/recorder-consumer.ts';
import { RecorderSink, type StreamKind } from '../../actors/recorder/sink.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import type { RawStreamEntry } from '../../engine/infra/runner/types.ts';
import { rows } from '../clickhouse/embedded.ts';
import { eventually } from '../helpers/http.ts';
import { inProcessGateway, type InProcess } from '../helpers/in-process.ts';
import { groupBacklog } from '../helpers/streams.ts';
import { outcome } from './outcomes.ts';
import { recorderProcess } from './process.ts';
import { RecorderKeys } from '../../actors/recorder/redis-keys.ts';

// Rounds gather for 300 ms: a loaded host may start the partitions' first reads further apart than
// the default 25 ms, and the tests that need several partitions in one round would see two.
const limits = { ...RecorderLimits, maxBatch: 1000, lingerMs: 200, retryMs: 50, maxBuffered: 4000, gatherMs: 300 };
const log = createLogger('error');

type Sink = Pick<RecorderSink, 'record'>;

/** A recorder process of the test (test/recorder/process.ts) with this file's limits. */
function recorder(gw: InProcess, name: string, partitions: number[], sink: Sink): RecorderConsumer[] {
  return recorderProcess(gw, name, partitions, sink, limits, log);
}

async function addOutcomes(gw: InProcess, partition: number, from: number, to: number): Promise<void> {
  const pipeline = gw.redis.pipeline();
  for (let n = from; n < to; n++) pipeline.xadd(gw.topology.outcomes(partition), '*', 'd', JSON.stringify(outcome(gw.project.project_id, n, { external_id: `u${partition}` })));
  await pipeline.exec();
}

async function count(gw: InProcess): Promise<{ rows: number; ids: number }> {
  const [row] = await rows<{ rows: string; ids: string }>(gw.clickhouse, 'SELECT count() AS rows, uniqExact(id) AS ids FROM message_deliveries WHERE project = {p:String}', { p: gw.project.project_id });
  return { rows: Number(row?.rows), ids: Number(row?.ids) };
}

async function settled(gw: InProcess, partitions: number[]): Promise<void> {
  await eventually('everything recorded and acknowledged', async () => {
    for (const p of partitions) {
      const { pending, unread } = await groupBacklog(gw.redis, gw.topology.outcomes(p), 'recorder');
      if (pending !== 0 || unread !== 0) return undefined;
    }
    return true;
  });
}

/**
 * A sink that inserts the first round, then freezes for good before the round is settled, as a
 * process killed at that instant would; later calls fail, so its stop leaves the rest pending.
 */
function dyingSink(real: Sink): { sink: Sink; inserted: () => RawStreamEntry[]; crash: () => void } {
  let inserted: RawStreamEntry[] = [];
  let crash: (err: Error) => void = () => {};
  const frozen = new Promise<never>((_, reject) => (crash = reject));
  let calls = 0;
  return {
    sink: {
      record: async (kind: StreamKind, entries: RawStreamEntry[], token: string) => {
        if (++calls > 1) throw new Error('dead');
        await real.record(kind, entries, token);
        inserted = entries;
        return frozen;
      },
    },
    inserted: () => inserted,
    crash: () => crash(new Error('dead')),
  };
}

async function started(t: Test): Promise<{ gw: InProcess; sink: RecorderSink }> {
  const gw = await inProcessGateway(t);
  return { gw, sink: new RecorderSink(gw.clickhouse, gw.redis, gw.topology, new Metrics(), log) };
}

t.test('a round inserted by an owner that dies before settling it lands once when the next owner redoes it', async (t) => {
  const { gw, sink } = await started(t);
  const partition = 3;
  await addOutcomes(gw, partition, 0, 2500);
  const dying = dyingSink(sink);
  const [first] = recorder(gw, 'dying', [partition], dying.sink);
  first?.start();
  await eventually('the first round inserted', async () => (dying.inserted().length > 0 ? true : undefined));
  t.same(await count(gw), { rows: dying.inserted().length, ids: dying.inserted().length }, 'the round is in ClickHouse');
  const [pending] = (await gw.redis.xpending(gw.topology.outcomes(partition), 'recorder')) as [number];
  t.equal(pending, dying.inserted().length, 'and still pending: exactly that batch');
  t.ok(await gw.redis.hget(gw.topology.own(RecorderKeys).marks(partition), 'outcomes'), 'the partition is marked with the round');

  const [next] = recorder(gw, 'next', [partition], sink);
  next?.start();
  await settled(gw, [partition]);
  t.same(await count(gw), { rows: 2500, ids: 2500 }, 'every outcome once: the redone round was dropped as a duplicate');
  t.equal(await gw.redis.hget(gw.topology.own(RecorderKeys).marks(partition), 'outcomes'), null, 'the mark is cleared');
  dying.crash();
  await Promise.all([first?.stop(), next?.stop()]);
});

t.test('a round of several partitions, left unsettled, is redone by each partition’s new owner and lands once', async (t) => {
  const { gw, sink } = await started(t);
  const partitions = [4, 5, 6];
  for (const p of partitions) await addOutcomes(gw, p, p * 1000, p * 1000 + 300);
  const dying = dyingSink(sink);
  const old = recorder(gw, 'old', partitions, dying.sink);
  old.forEach((c) => c.start());
  await eventually('the first round inserted', async () => (dying.inserted().length > 0 ? true : undefined));
  const marks = await Promise.all(partitions.map((p) => gw.redis.hget(gw.topology.own(RecorderKeys).marks(p), 'outcomes')));
  t.equal(new Set(marks).size, 1, 'the partitions went into one round');
  t.equal(dying.inserted().length, 900, 'one insert carried the three batches');
  const manifest = JSON.parse((await gw.redis.get(gw.topology.own(RecorderKeys).round(marks[0] ?? ''))) ?? '{}') as { parts?: unknown[] };
  t.equal(manifest.parts?.length, 3, 'its manifest lists the three batches');

  // Each partition goes to a process of its own, so each redoes the whole round.
  const owners = partitions.map((p) => recorder(gw, `new-${p}`, [p], sink)).flat();
  owners.forEach((c) => c.start());
  await settled(gw, partitions);
  t.same(await count(gw), { rows: 900, ids: 900 }, 'every outcome once');
  for (const p of partitions) t.equal(await gw.redis.hget(gw.topology.own(RecorderKeys).marks(p), 'outcomes'), null, `partition ${p}: mark cleared`);
  t.equal(await gw.redis.exists(gw.topology.own(RecorderKeys).round(marks[0] ?? '')), 0, 'and the manifest deleted by the last to settle');
  dying.crash();
  await Promise.all([...old, ...owners].map((c) => c.stop()));
});

t.test('a mark without a manifest is a round that never inserted: its batch is claimed and lands once', async (t) => {
  const { gw, sink } = await started(t);
  const partition = 7;
  const stream = gw.topology.outcomes(partition);
  await addOutcomes(gw, partition, 0, 400);
  // A process read the batch and marked its partition, then died before writing the manifest.
  await gw.redis.xgroup('CREATE', stream, 'recorder', '0', 'MKSTREAM');
  await gw.redis.xreadgroup('GROUP', 'recorder', 'ghost', 'COUNT', 400, 'STREAMS', stream, '>');
  await gw.redis.hset(gw.topology.own(RecorderKeys).marks(partition), 'outcomes', 'ghost|outcomes|1');
  const [next] = recorder(gw, 'next', [partition], sink);
  next?.start();
  await settled(gw, [partition]);
  t.same(await count(gw), { rows: 400, ids: 400 }, 'every outcome once');
  t.equal(await gw.redis.hget(gw.topology.own(RecorderKeys).marks(partition), 'outcomes'), null, 'the stale mark is cleared');
  t.equal(await gw.redis.get(gw.topology.own(RecorderKeys).round('ghost|outcomes|1')), 'aborted', 'and the round given up: a late manifest write of its owner fails');
  await next?.stop();
});

t.test('the partitions of a process due together share one insert', async (t) => {
  const { gw, sink } = await started(t);
  const partitions = [8, 9, 10, 11, 12, 13, 14, 15];
  for (const p of partitions) await addOutcomes(gw, p, p * 1000, p * 1000 + 50);
  let inserts = 0;
  const counting: Sink = {
    record: async (kind, entries, token) => {
      inserts++;
      await sink.record(kind, entries, token);
    },
  };
  const consumers = recorder(gw, 'one', partitions, counting);
  consumers.forEach((c) => c.start());
  await settled(gw, partitions);
  t.same(await count(gw), { rows: 400, ids: 400 }, 'every outcome once');
  t.ok(inserts < partitions.length, `${inserts} insert(s) for ${partitions.length} partitions`);
  await Promise.all(consumers.map((c) => c.stop()));
});
