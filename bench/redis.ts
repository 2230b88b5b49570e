import { Redis } from 'ioredis';

/** The Redis of the benchmarks and the tests: REDIS_URL, or the local one. */
export const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';

/**
 * Deletes every key under a prefix: the benchmarks' and the tests' own keys, each run under a fresh
 * prefix. `url` may list the nodes of a Redis Cluster (comma-separated): each node is scanned for
 * its own keys, and deleted one key a command (a command names keys of one slot only).
 */
export async function cleanupPrefix(prefix: string, url = REDIS_URL): Promise<void> {
  const nodes = url.split(',');
  await Promise.all(nodes.map((node) => cleanupNode(prefix, node, nodes.length > 1)));
}

async function cleanupNode(prefix: string, url: string, cluster: boolean): Promise<void> {
  const redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 2 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length === 0) continue;
      if (!cluster) await redis.unlink(...keys);
      else await Promise.all(keys.map((key) => redis.unlink(key)));
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
