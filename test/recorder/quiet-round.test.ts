import t from 'tap';
import { RecorderLimits } from '../../actors/recorder/limits.ts';
import { QuietWatch } from '../../actors/recorder/quiet-watch.ts';
import { RecorderSink, type StreamKind } from '../../actors/recorder/sink.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import type { RawStreamEntry } from '../../engine/infra/runner/types.ts';
import { rows } from '../clickhouse/embedded.ts';
import { eventually } from '../helpers/http.ts';
import { inProcessGateway } from '../helpers/in-process.ts';
import { recorderProcess } from './process.ts';
import { outcome } from './outcomes.ts';

/**
 * Batches held until they fall due go early when every stream of the process goes quiet
 * (actors/recorder/quiet-watch.ts). The batches here fall due only after a minute: a record seen
 * within the test's wait was inserted early.
 */
const log = createLogger('error');
const limits = { ...RecorderLimits, lingerMs: 120_000, retryMs: 50, gatherMs: 300 };

t.test('the batches of every partition go together once the streams go quiet', async (t) => {
  const gw = await inProcessGateway(t);
  const project = gw.project.project_id;
  const partitions = [3, 4, 5, 6];
  const inserts: { kind: StreamKind; entries: number }[] = [];
  const sink = new RecorderSink(gw.clickhouse, gw.redis, gw.topology, new Metrics(), log);
  const counting: Pick<RecorderSink, 'record'> = {
    record: (kind: StreamKind, entries: RawStreamEntry[], token: string) => {
      inserts.push({ kind, entries: entries.length });
      return sink.record(kind, entries, token);
    },
  };
  // Long enough for every partition to hold its batch before the watch looks.
  const quiet = new QuietWatch({ redis: gw.redis, log, limits: { ...limits, quietMs: 500 } });
  const consumers = recorderProcess(gw, 'q1', partitions, counting, limits, log, undefined, quiet);
  t.teardown(async () => {
    await Promise.all(consumers.map((c) => c.stop()));
    quiet.stop();
  });
  consumers.forEach((c) => c.start());

  // Every entry lands at once, so no partition goes quiet before another has its batch.
  let n = 0;
  const adds = gw.redis.multi();
  for (const partition of partitions) {
    for (let i = 0; i < 5; i++) adds.xadd(gw.topology.outcomes(partition), '*', 'd', JSON.stringify(outcome(project, n++)));
  }
  await adds.exec();
  const recorded = await eventually('the outcomes recorded before their batches fall due', async () => {
    const [row] = await rows<{ n: string }>(gw.clickhouse, 'SELECT count() AS n FROM message_deliveries WHERE project = {p:String}', { p: project });
    return Number(row?.n) === n ? true : undefined;
  });
  t.ok(recorded, `all ${n} outcomes recorded a linger of ${limits.lingerMs / 1000} s early`);
  t.same(
    inserts.filter((i) => i.kind === 'outcomes').map((i) => i.entries),
    [n],
    'one round for the four partitions',
  );
});

t.test('the watch hurries no one while entries keep coming, and everyone once they stop', async (t) => {
  const gw = await inProcessGateway(t);
  const quietMs = 400;
  const quiet = new QuietWatch({ redis: gw.redis, log, limits: { ...limits, quietMs } });
  const stream = gw.topology.outcomes(7);
  const redis = createRedis(gw.config);
  t.teardown(() => {
    quiet.stop();
    redis.disconnect();
  });
  let hurried = 0;
  const holder = { hurry: () => hurried++ };

  quiet.hold(holder, [stream]);
  const feeding = Date.now();
  while (Date.now() - feeding < 4 * quietMs) {
    await redis.xadd(stream, '*', 'd', '{}');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.equal(hurried, 0, 'not hurried while an entry comes every 20 ms');

  await eventually('the holder hurried once the entries stopped', async () => (hurried > 0 ? true : undefined));
  t.equal(hurried, 1, 'hurried once');
  quiet.release(holder);
});

t.test('entries on streams of no held batch keep no one waiting', async (t) => {
  const gw = await inProcessGateway(t);
  const quiet = new QuietWatch({ redis: gw.redis, log, limits: { ...limits, quietMs: 200 } });
  const redis = createRedis(gw.config);
  t.teardown(() => {
    quiet.stop();
    redis.disconnect();
  });
  let hurried = 0;
  quiet.hold({ hurry: () => hurried++ }, [gw.topology.outcomes(9)]);
  // Another partition's stream, and the held partition's changes, keep getting entries.
  for (let i = 0; hurried === 0 && i < 500; i++) {
    await redis.xadd(gw.topology.outcomes(10), '*', 'd', '{}');
    await redis.xadd(gw.topology.changes(9), '*', 'd', '{}');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.equal(hurried, 1, 'hurried while streams it does not hold kept getting entries');
});

t.test('a holder that lets go is not hurried', async (t) => {
  const gw = await inProcessGateway(t);
  const quiet = new QuietWatch({ redis: gw.redis, log, limits: { ...limits, quietMs: 20 } });
  t.teardown(() => quiet.stop());
  const streams = [gw.topology.outcomes(8)];
  let hurried = 0;
  const kept = { hurry: () => hurried++ };
  const gone = { hurry: () => t.fail('a released holder was hurried') };
  quiet.hold(gone, streams);
  quiet.release(gone);
  quiet.hold(kept, streams);
  await eventually('the holder kept hurried', async () => (hurried > 0 ? true : undefined));
  t.equal(hurried, 1);
});
