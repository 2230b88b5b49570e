import t, { type Test } from 'tap';
import { loadConfig } from '../../engine/config.ts';
import { createRedis } from '../../engine/redis.ts';
import { upgradeLayout } from '../../engine/state/layout.ts';
import { Topology } from '../../engine/topology.ts';
import { deployment } from '../helpers/engine.ts';

// engine/state/layout.ts: which installs read 0.11.1's idempotency markers, and for how long.
const NOW = Date.UTC(2026, 10, 1);
const DAY = 24 * 60 * 60 * 1000;

async function setup(t: Test): Promise<{ redis: ReturnType<typeof createRedis>; topology: Topology }> {
  const d = await deployment(t);
  const config = loadConfig(d.env);
  const redis = createRedis(config);
  t.teardown(() => redis.disconnect());
  return { redis, topology: new Topology(config.KEY_PREFIX, config.PARTITIONS) };
}

t.test('a new install records the step and reads no old markers', async (t) => {
  const { redis, topology } = await setup(t);
  await upgradeLayout(redis, topology, NOW);
  t.equal(await redis.hget(topology.layout(), 'idempotency'), 'window');
  t.equal(await redis.get(topology.legacyIdempotencyUntil(0)), null);
});

t.test('an install of 0.11.1 reads them for 9 days in every partition, and a second run changes nothing', async (t) => {
  const { redis, topology } = await setup(t);
  await redis.set(topology.applied(topology.partitions - 1), '1-0');
  await upgradeLayout(redis, topology, NOW);
  for (let p = 0; p < topology.partitions; p++) t.equal(await redis.get(topology.legacyIdempotencyUntil(p)), String(NOW + 9 * DAY), `partition ${p}`);
  await upgradeLayout(redis, topology, NOW + DAY);
  t.equal(await redis.get(topology.legacyIdempotencyUntil(0)), String(NOW + 9 * DAY), 'the step ran once');
});
