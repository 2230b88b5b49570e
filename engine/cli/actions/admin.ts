import type { Config } from '../../../schemas/config.ts';
import { Keystore } from '../../keystore.ts';
import { createRedis } from '../../redis.ts';
import { Topology } from '../../topology.ts';

/** Runs an admin action against a short-lived Redis connection and closes it. */
export async function withKeystore<T>(config: Config, action: (keystore: Keystore) => Promise<T>): Promise<T> {
  const redis = createRedis(config, { commandTimeout: config.REDIS_TIMEOUT_MS });
  try {
    return await action(new Keystore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS)));
  } finally {
    redis.disconnect();
  }
}
