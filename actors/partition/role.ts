import { createRedis } from '../../engine/infra/redis/client.ts';
import type { RoleFactory } from '../../engine/infra/runner/roles.ts';
import { GroupReader } from '../../engine/infra/runner/group-reader.ts';
import { PartitionConsumer } from '../../engine/infra/runner/partition-consumer.ts';
import { runPartitionRole } from '../../engine/infra/runner/partition-runner.ts';
import { APPLY_GROUP, Topology } from '../../engine/infra/redis/topology.ts';
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
  const reader = new GroupReader({
    redis,
    group: APPLY_GROUP,
    consumer: workerId,
    batchSize: config.APPLY_BATCH,
    lingerMs: config.APPLY_LINGER_MS,
    blockMs: Math.min(1000, config.LEASE_MS),
    log,
    metrics,
  });
  return runPartitionRole('apply', ctx, redis, {
    leaseKey: (p) => topology.lease(p),
    workersKey: topology.workers(),
    work: (partition, onLost) =>
      new PartitionConsumer({
        redis,
        reader,
        stream: topology.ingest(partition),
        partition,
        batchSize: config.APPLY_BATCH,
        handler: actor,
        log,
        onLost,
      }),
  });
};
