import { Cluster } from 'ioredis';
import type { RedisClient } from '../redis.ts';
import { scripts } from '../scripts.ts';
import type { Topology } from '../topology.ts';

/** How long after the upgrade a marker of 0.11.1 may still be read: its 8 days, and a day for a rolling upgrade. */
const LEGACY_MARKERS_MS = 9 * 24 * 60 * 60 * 1000;

/**
 * Brings a Redis written by an earlier release to the current layout (docs/architecture.md,
 * "Upgrading in place"). Every apply worker runs it before it applies anything; each step may run
 * again after a crash or beside another worker, and the layout record names the steps done.
 *
 * Event idempotency: 0.11.1 kept one key per event (`idem:{pN}:proj:key`, 8 days). They are left
 * to expire, and applyBatch still looks them up until `legacyIdempotencyUntil` of the partition.
 * An install is one of 0.11.1 when its partitions applied something before any step was recorded.
 */
export async function upgradeLayout(redis: RedisClient, topology: Topology, now = Date.now()): Promise<void> {
  const layout = topology.layout();
  if ((await redis.hget(layout, 'idempotency')) !== null) return;
  const partitions = Array.from({ length: topology.partitions }, (_, p) => p);
  const applied = await Promise.all(partitions.map((p) => redis.exists(topology.applied(p))));
  if (applied.some((n) => n > 0)) {
    const until = String(now + LEGACY_MARKERS_MS);
    await Promise.all(partitions.map((p) => redis.set(topology.legacyIdempotencyUntil(p), until, 'PX', LEGACY_MARKERS_MS)));
  }
  await redis.hset(layout, 'idempotency', 'window');
}

/**
 * Folds the users of partition N that 0.11.1 kept in four hashes into their records
 * (engine/lua/upgradeUser-1.lua), once per partition; the apply runs it when it takes the
 * partition, before its first batch. Until then readers fall back on those hashes, and a user's
 * next write folds them too. A crash leaves the step unrecorded: it runs again, folding what is left.
 */
export async function upgradeUsers(redis: RedisClient, topology: Topology, partition: number): Promise<void> {
  const field = `users:${partition}`;
  if ((await redis.hget(topology.layout(), field)) !== null) return;
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  for (const node of nodes) {
    for (const pattern of topology.legacyUserPatterns(partition)) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        for (const key of keys) {
          const user = topology.userOfLegacyKey(key);
          if (user !== null) await scripts.upgradeUser(redis, { keys: { user: topology.user(user.project, user.externalId) }, args: {} });
        }
        cursor = next;
      } while (cursor !== '0');
    }
  }
  await redis.hset(topology.layout(), field, 'record');
}
