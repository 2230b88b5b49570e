import t, { type Test } from 'tap';
import { RetryClock } from '../../actors/dispatch/retry-clock.ts';
import { commandStats } from '../../bench/commandstats.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { createRedis, type RedisClient } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { eventually } from '../helpers/http.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';

/**
 * The dispatch role's release of due retries (actors/dispatch/retry-clock.ts), on a Redis of the
 * test's own so its script calls can be counted: a partition is looked at when it is taken, when
 * a retry it queued is due, and every ten seconds besides; never on every tick.
 */

const PARTITIONS = 8;

async function setup(t: Test): Promise<{ redis: RedisClient; topology: Topology; clock: RetryClock; scriptCalls: () => Promise<number> }> {
  const server = await PrivateRedis.start();
  const redis = createRedis(loadConfig({ REDIS_URL: server.url, KEY_PREFIX: 't:' }));
  const topology = new Topology('t:', PARTITIONS);
  const clock = new RetryClock(redis, topology, createLogger('error'), 32);
  t.teardown(async () => {
    clock.stop();
    redis.disconnect();
    await server.stop();
  });
  const scriptCalls = async (): Promise<number> => {
    const stats = await commandStats(redis);
    return (stats.get('evalsha')?.calls ?? 0) + (stats.get('eval')?.calls ?? 0);
  };
  return { redis, topology, clock, scriptCalls };
}

/** The jobs on a partition's dispatch stream. */
const released = async (redis: RedisClient, topology: Topology, partition: number): Promise<string[]> =>
  (await redis.xrange(topology.dispatch(partition), '-', '+')).map(([, fields]) => fields[1] ?? '');

t.test('a partition is looked at once when taken, then not again while nothing is due', async (t) => {
  const { redis, topology, clock, scriptCalls } = await setup(t);
  await redis.zadd(topology.retries(3), Date.now() - 1, 'waiting-before');
  for (let p = 0; p < PARTITIONS; p++) clock.own(p);
  clock.start();
  t.same(await eventually('the retry waiting before is released', async () => ((await released(redis, topology, 3)).length > 0 ? released(redis, topology, 3) : undefined)), ['waiting-before']);
  await eventually('every partition looked at', async () => ((await scriptCalls()) >= PARTITIONS ? true : undefined));
  const looked = await scriptCalls();
  await new Promise((r) => setTimeout(r, 1500));
  t.equal(await scriptCalls(), looked, `${PARTITIONS} looks, then none over six ticks`);
});

t.test('a retry queued is released once due; one a partition no longer held is not', async (t) => {
  const { redis, topology, clock } = await setup(t);
  clock.own(1);
  clock.own(2);
  clock.start();
  const at = Date.now() + 500;
  await redis.zadd(topology.retries(1), at, 'queued');
  clock.queued(1, at);
  await redis.zadd(topology.retries(2), at, 'disowned');
  clock.disown(2);
  clock.queued(2, at);
  t.same(await eventually('the queued retry released', async () => ((await released(redis, topology, 1)).length > 0 ? released(redis, topology, 1) : undefined)), ['queued']);
  t.ok(Date.now() >= at, 'not before it was due');
  await new Promise((r) => setTimeout(r, 1000));
  t.same(await released(redis, topology, 2), [], "the partition let go: its retry is its new owner's");
});

t.test('a retry queued behind its back (a process that lost the lease) is still released', async (t) => {
  const { redis, topology, clock } = await setup(t);
  clock.own(5);
  clock.start();
  await new Promise((r) => setTimeout(r, 500));
  await redis.zadd(topology.retries(5), Date.now(), 'from-elsewhere');
  t.same(await eventually('released on the next look', async () => ((await released(redis, topology, 5)).length > 0 ? released(redis, topology, 5) : undefined), 30_000), ['from-elsewhere']);
});
