import { Redis } from 'ioredis';

/** The Redis of the benchmarks and the tests: REDIS_URL, or the local one. */
export const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';

/**
 * Deletes every key under a prefix (of a single Redis node): the benchmarks' and the tests' own
 * keys, each run under a fresh prefix.
 */
export async function cleanupPrefix(prefix: string, url = REDIS_URL): Promise<void> {
  const redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 2 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
