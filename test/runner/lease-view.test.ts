import t from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { PartitionRunner, type LeaseView } from '../../engine/infra/runner/partition-runner.ts';
import { eventually } from '../helpers/http.ts';
import { cleanupPrefix, REDIS_URL, testPrefix } from '../helpers/redis.ts';

t.test('the lease a partition work is given: positive while renewed, within LEASE_MS less the margin; 0 for good once lost', async (t) => {
  const prefix = testPrefix();
  const redis = createRedis(loadConfig({ REDIS_URL, KEY_PREFIX: prefix }));
  t.teardown(async () => {
    redis.disconnect();
    await cleanupPrefix(prefix);
  });
  const leaseKey = (p: number): string => `${prefix}lease:{p${p}}`;
  const leases: LeaseView[] = [];
  const runner = new PartitionRunner({
    redis,
    partitions: 1,
    leaseKey,
    workersKey: `${prefix}workers`,
    workerId: 'lease-test',
    // Long enough that a renewal a few hundred ms late on a busy machine still finds it held.
    leaseMs: 1500,
    log: createLogger('error'),
    work: (_partition, _onLost, lease) => {
      leases.push(lease);
      return { start: () => {}, stop: async () => {} };
    },
  });
  runner.start();
  t.teardown(() => runner.close());
  const [lease] = await eventually('the partition owned', async () => (leases.length > 0 ? leases : undefined));
  if (!lease) throw new Error('no lease');
  // Over several renewal rounds (every 500 ms) it stays held and never claims more than 1500 - 250 ms.
  for (let i = 0; i < 10; i++) {
    const left = lease.remainingMs();
    t.ok(left > 0 && left <= 1250, `held: ${left} ms`);
    await new Promise((resolve) => setTimeout(resolve, 175));
  }
  // Another worker's value in the key: the next renewal finds the lease lost.
  await redis.set(leaseKey(0), 'another-worker', 'PX', 60_000);
  await eventually('the lease seen lost', async () => (lease.remainingMs() <= 0 ? true : undefined));
  t.equal(lease.remainingMs(), 0, 'lost for good, whatever the time left');
});
