import { readFile } from 'node:fs/promises';
import type { Config } from '../../../schemas/config.ts';
import { Keystore } from '../../../engine/state/keys/keystore.ts';
import { createRedis } from '../../../engine/infra/redis/client.ts';
import { Topology } from '../../../engine/infra/redis/topology.ts';

/** Runs an admin action against a short-lived Redis connection and closes it. */
export async function withKeystore<T>(config: Config, action: (keystore: Keystore) => Promise<T>): Promise<T> {
  const redis = createRedis(config, { commandTimeout: config.REDIS_TIMEOUT_MS });
  try {
    return await action(new Keystore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS)));
  } finally {
    redis.disconnect();
  }
}

/** A file's JSON, or undefined after saying on stderr why it could not be read. */
export async function readJsonFile(file: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as unknown;
  } catch (err) {
    console.error(`engine: cannot read ${file} as JSON: ${err instanceof Error ? err.message : String(err)}`);
    return undefined;
  }
}
