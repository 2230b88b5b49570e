import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { REDIS_URL } from '../../bench/redis.ts';

export { cleanupPrefix, REDIS_URL } from '../../bench/redis.ts';

/** A key prefix no other test uses. */
export function testPrefix(): string {
  return `t${Date.now().toString(36)}${randomBytes(3).toString('hex')}:`;
}

/** A plain client for assertions; the caller quits it. */
export function testRedis(): Redis {
  return new Redis(REDIS_URL, { lazyConnect: false, maxRetriesPerRequest: 2 });
}
