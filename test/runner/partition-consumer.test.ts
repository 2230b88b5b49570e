import t, { type Test } from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import { createRedis, type RedisClient } from '../../engine/infra/redis/client.ts';
import { GroupReader } from '../../engine/infra/runner/group-reader.ts';
import { PartitionConsumer } from '../../engine/infra/runner/partition-consumer.ts';
import type { PartitionHandler, StreamEntry } from '../../engine/infra/runner/types.ts';
import { APPLY_GROUP } from '../../engine/infra/redis/topology.ts';
import { OutboxSettler } from '../../actors/partition/outbox-settler.ts';
import { PartitionActor } from '../../actors/partition/partition-actor.ts';
import { deployment } from '../helpers/engine.ts';
import { ReplyDropper } from '../helpers/reply-dropper.ts';
import { REDIS_URL } from '../helpers/redis.ts';
import { Harness, until } from '../actors/harness.ts';

// One consumer run in this process against real Redis, with the real partition actor.
const WORKER = 'consumer-test';
const log = createLogger('error');

async function setup(t: Test) {
  const d = await deployment(t);
  const h = new Harness(d.env);
  t.teardown(() => h.close());
  const project = d.project.project_id;
  const user = 'order-user';
  const partition = h.topology.partitionOf(project, user);
  const stream = h.topology.ingest(partition);
  await h.redis.xgroup('CREATE', stream, APPLY_GROUP, '0', 'MKSTREAM');
  await h.redis.set(h.topology.lease(partition), WORKER, 'PX', 60_000);
  const actor = new PartitionActor({
    redis: h.redis,
    topology: h.topology,
    workerId: WORKER,
    settler: new OutboxSettler(h.redis, h.topology),
    log,
    metrics: new Metrics(),
  });
  const tag = (n: number) => h.append({ op: 'tags', project, external_id: user, at: Date.now(), tags: { n: `n${n}` } });
  const event = (n: number) => h.append({ op: 'event', project, external_id: user, at: Date.now(), name: 'e', ts: n, properties: { n } });
  const consumer = (handler: PartitionHandler, onLost: () => void = () => {}, redis: RedisClient = h.redis) =>
    new PartitionConsumer({
      redis,
      reader: new GroupReader({ redis, group: APPLY_GROUP, consumer: WORKER, batchSize: 10, lingerMs: 0, blockMs: 200, log, metrics: new Metrics() }),
      stream,
      partition,
      batchSize: 10,
      handler,
      log,
      onLost,
    });
  return { d, h, project, user, partition, stream, actor, tag, event, consumer };
}

t.test('entries a fenced former owner read are applied in order before the ones after them', async (t) => {
  const { h, project, user, stream, actor, tag, event, consumer } = await setup(t);
  await event(1);
  await tag(2);
  await h.redis.xreadgroup('GROUP', APPLY_GROUP, 'crashed-owner', 'COUNT', 2, 'STREAMS', stream, '>');
  let stolen = false;
  const outcomes: string[] = [];
  // While the pending entries of the crashed owner are applied, a fenced owner that still runs
  // reads the next two entries: the consumer's next read skips them.
  const handler: PartitionHandler = {
    open: (p) => actor.open(p),
    apply: async (p: number, entries: StreamEntry[]) => {
      if (!stolen) {
        stolen = true;
        for (let n = 3; n <= 6; n++) await (n % 2 ? event(n) : tag(n));
        await h.redis.xreadgroup('GROUP', APPLY_GROUP, 'fenced-owner', 'COUNT', 2, 'STREAMS', stream, '>');
      }
      const outcome = await actor.apply(p, entries);
      outcomes.push(outcome.kind);
      return outcome;
    },
  };
  const c = consumer(handler);
  c.start();
  t.teardown(() => c.stop());
  await h.settled();
  t.ok(outcomes.includes('gap'), 'the read after the stolen entries was refused as a gap');
  t.same(
    (await h.changes()).map((c) => (c.kind === 'event' ? c.properties?.['n'] : undefined)),
    [1, 3, 5],
    'events applied once each, in stream order',
  );
  t.equal((await h.state(project, user)).tags['n'], 'n6', 'the last write wins');
  t.same(await h.redis.xpending(stream, APPLY_GROUP), [0, null, null, null], 'nothing left pending');
  await c.stop();
});

t.test('a consumer whose apply is fenced stops and reports the loss', async (t) => {
  const { h, partition, actor, tag, consumer } = await setup(t);
  await h.redis.set(h.topology.lease(partition), 'another-worker', 'PX', 60_000);
  await tag(1);
  let lost = false;
  const c = consumer(actor, () => (lost = true));
  c.start();
  await until('the loss to be reported', async () => lost);
  await c.stop();
  t.equal(await h.redis.get(h.topology.applied(partition)), null, 'nothing applied');
});

t.test('entries of a read whose reply was lost are applied without waiting for another write', async (t) => {
  const { d, h, project, user, stream, actor, event, consumer } = await setup(t);
  const target = new URL(REDIS_URL);
  const proxy = await ReplyDropper.start({ host: target.hostname, port: Number(target.port || 6379) });
  const redis = createRedis(loadConfig({ ...d.env, REDIS_URL: proxy.url }));
  const c = consumer(actor, () => {}, redis);
  t.teardown(async () => {
    await c.stop();
    redis.disconnect();
    await proxy.close();
  });
  c.start();
  await event(1);
  await h.settled();
  const dropped = proxy.dropNextReply('XREADGROUP');
  // In one transaction, so that one read gets both: alone, the read of 3 would find 2 missing.
  const entries = [2, 3].map((n) => ({ op: 'event' as const, project, external_id: user, at: Date.now(), name: 'e', ts: n, properties: { n } }));
  const tx = h.redis.multi();
  for (const e of entries) tx.xadd(stream, '*', 'd', JSON.stringify(e));
  const added = (await tx.exec()) ?? [];
  entries.forEach((e, i) => h.track(e, String(added[i]?.[1])));
  await dropped;
  // No write follows: before, the lost entries waited for the next one (its read found the gap).
  await h.settled(10_000);
  t.same(
    (await h.changes()).map((c) => (c.kind === 'event' ? c.properties?.['n'] : undefined)),
    [1, 2, 3],
    'each event applied once, in order',
  );
  t.same(await h.redis.xpending(stream, APPLY_GROUP), [0, null, null, null], 'nothing left pending');
});
