import { createRedis } from '../../engine/infra/redis/client.ts';
import type { RoleFactory } from '../../engine/infra/runner/roles.ts';
import { SegmentStore } from '../../engine/state/segments/store.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { FanoutWorker } from './fanout-worker.ts';

/**
 * The `fanout` role: turns each notification into dispatch jobs (actors/fanout/fanout-worker.ts).
 * Any number of processes may run it; they share the notifications log through one consumer group.
 */
export const fanoutRole: RoleFactory = async ({ config, log, metrics, workerId, clickhouse }) => {
  const redis = createRedis(config);
  const topology = new Topology(config.KEY_PREFIX, config.PARTITIONS);
  const worker = new FanoutWorker({
    redis,
    topology,
    sources: { clickhouse: () => clickhouse.get(), segments: new SegmentStore(redis, topology) },
    consumer: workerId,
    leaseMs: config.LEASE_MS,
    log,
    metrics,
  });
  worker.start();
  let closing: Promise<void> | undefined;
  return {
    name: 'fanout',
    close: () =>
      (closing ??= worker.stop().then(async () => {
        await redis.quit().catch(() => redis.disconnect());
      })),
  };
};
