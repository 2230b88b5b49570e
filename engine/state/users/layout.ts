import { Cluster } from 'ioredis';
import type { RedisClient } from '../../infra/redis/client.ts';
import { scripts } from '../../infra/scripts/registry.ts';
import type { Topology } from '../../infra/redis/topology.ts';
import { UserKeys } from './redis-keys.ts';
import type { SubscriptionType } from '../../../schemas/sdk.ts';
import { TokenIndex } from './token-index.ts';

/** How long after the upgrade 0.11.1's layout may still be met: its markers' 8 days, and a day for a rolling upgrade. */
const LEGACY_MARKERS_MS = 9 * 24 * 60 * 60 * 1000;

/**
 * Brings a Redis written by an earlier release to the current layout (docs/architecture.md,
 * "Upgrading in place"). Every apply worker runs it before it applies anything; each step may run
 * again after a crash or beside another worker, and the layout record names the steps done.
 *
 * - The window: an install is one of 0.11.1 when its partitions applied something before any
 *   step was recorded. Its partitions then get `legacyLayoutUntil`, 9 days ahead, within which
 *   the writes still look for what 0.11.1 left; a new install never does.
 * - Event idempotency: 0.11.1 kept one key per event (`idem:{pN}:proj:key`, 8 days). They are
 *   left to expire, and applyBatch still looks them up within the window.
 * - Tokens: 0.11.1's ownership records and id keys are adopted into the token index
 *   (engine/state/users/token-index.ts, which also adopts one on a claim within the window) and
 *   deleted.
 */
export async function upgradeLayout(redis: RedisClient, topology: Topology, now = Date.now()): Promise<void> {
  await step(redis, topology, 'idempotency', async () => {
    const partitions = Array.from({ length: topology.partitions }, (_, p) => p);
    const applied = await Promise.all(partitions.map((p) => redis.exists(topology.applied(p))));
    if (applied.every((n) => n === 0)) return;
    const until = String(now + LEGACY_MARKERS_MS);
    await Promise.all(partitions.map((p) => redis.set(topology.own(UserKeys).legacyLayoutUntil(p), until, 'PX', LEGACY_MARKERS_MS)));
  });
  await step(redis, topology, 'tokens', async () => {
    const tokens = new TokenIndex(redis, topology);
    const patterns = topology.own(UserKeys).legacyTokenPatterns();
    await scanKeys(redis, patterns.tokens, async (key) => {
      const found = topology.own(UserKeys).tokenOfLegacyKey(key);
      if (found !== null) await tokens.adoptLegacy(found.project, { type: found.type as SubscriptionType, token: found.token });
    });
    // Ids whose token had no record (a settlement cut short) name nothing the index misses.
    await scanKeys(redis, patterns.ids, async (key) => void (await redis.del(key)));
  });
}

/**
 * Folds the users of partition N that 0.11.1 kept in four hashes into their records
 * (engine/infra/scripts/lua/upgradeUser-1.lua), once per partition; the apply runs it when it takes the
 * partition, before its first batch. Until then readers fall back on those hashes, and a user's
 * next write folds them too. A crash leaves the step unrecorded: it runs again, folding what is left.
 */
export async function upgradeUsers(redis: RedisClient, topology: Topology, partition: number): Promise<void> {
  await step(redis, topology, `users:${partition}`, async () => {
    for (const pattern of topology.own(UserKeys).legacyUserPatterns(partition)) {
      await scanKeys(redis, pattern, async (key) => {
        const user = topology.own(UserKeys).userOfLegacyKey(key);
        if (user !== null) await scripts.upgradeUser(redis, { keys: { user: topology.own(UserKeys).user(user.project, user.externalId) }, args: {} });
      });
    }
  });
}

/**
 * Until when (ms) this install may still meet what 0.11.1 left: users in its hashes (a worker of
 * 0.11.1 may still run for a day) and its token records. 0 for an install that never ran it;
 * every partition has the same window, and partition 0's is read.
 */
export async function legacyLayoutUntil(redis: RedisClient, topology: Topology): Promise<number> {
  return Number((await redis.get(topology.own(UserKeys).legacyLayoutUntil(0))) ?? 0);
}

/** Runs a step unless the layout record says it is done, then records it. */
async function step(redis: RedisClient, topology: Topology, name: string, run: () => Promise<void>): Promise<void> {
  if ((await redis.hget(topology.own(UserKeys).layout(), name)) !== null) return;
  await run();
  await redis.hset(topology.own(UserKeys).layout(), name, 'done');
}

/** Every key matching `pattern`, on every master of a Cluster. */
async function scanKeys(redis: RedisClient, pattern: string, each: (key: string) => Promise<void>): Promise<void> {
  for (const node of redis instanceof Cluster ? redis.nodes('master') : [redis]) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      for (const key of keys) await each(key);
      cursor = next;
    } while (cursor !== '0');
  }
}
