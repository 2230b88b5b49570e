import type { RedisClient } from '../../engine/infra/redis/client.ts';
import { APPLY_GROUP, type Topology } from '../../engine/infra/redis/topology.ts';

/** Whether Redis answers PING within `ms` (/readyz). */
export async function pingWithin(redis: RedisClient, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([redis.ping().then((r) => r === 'PONG'), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Entries not yet applied, summed over partitions: the `lag` of group "apply" (XINFO GROUPS), its
 * pending count when Redis cannot tell the lag, or the whole stream before the group exists.
 */
export async function ingestLag(redis: RedisClient, topology: Topology): Promise<number> {
  const lags = await Promise.all(
    Array.from({ length: topology.partitions }, async (_, p) => {
      const key = topology.ingest(p);
      let groups: unknown;
      try {
        groups = await redis.xinfo('GROUPS', key);
      } catch (err) {
        if (err instanceof Error && /no such key/i.test(err.message)) return 0;
        throw err;
      }
      const group = Array.isArray(groups) ? groups.map(fieldsOf).find((g) => g.get('name') === APPLY_GROUP) : undefined;
      if (group === undefined) return redis.xlen(key);
      const lag = group.get('lag') ?? group.get('pending');
      return typeof lag === 'number' ? lag : 0;
    }),
  );
  return lags.reduce((a, b) => a + b, 0);
}

/** A flat [name, value, name, value, ...] reply as a map. */
function fieldsOf(reply: unknown): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (!Array.isArray(reply)) return out;
  for (let i = 0; i + 1 < reply.length; i += 2) out.set(String(reply[i]), reply[i + 1]);
  return out;
}
