import { createRedis } from '../../engine/redis.ts';
import type { RoleFactory } from '../../engine/roles.ts';
import { PartitionRunner } from '../../engine/runner/partition-runner.ts';
import { Topology } from '../../engine/topology.ts';
import { APPLY_GROUP } from './limits.ts';
import { OutboxSettler } from './outbox-settler.ts';
import { PartitionActor } from './partition-actor.ts';

/**
 * The `apply` role: owns a share of the partitions through leases and applies their ingest
 * streams with the partition actor. close() finishes the batches in flight and releases the leases.
 */
export const applyRole: RoleFactory = async (ctx) => {
  const { config, log, metrics, workerId } = ctx;
  const redis = createRedis(config);
  const topology = new Topology(config.KEY_PREFIX, config.PARTITIONS);
  const actor = new PartitionActor({ redis, topology, workerId, settler: new OutboxSettler(redis, topology), log, metrics });
  const runner = new PartitionRunner({
    redis,
    topology,
    workerId,
    leaseMs: config.LEASE_MS,
    batchSize: config.APPLY_BATCH,
    group: APPLY_GROUP,
    handler: actor,
    log,
  });
  runner.start();
  let closing: Promise<void> | undefined;
  return {
    name: 'apply',
    close: () =>
      (closing ??= runner.close().then(async () => {
        await redis.quit();
      })),
  };
};
