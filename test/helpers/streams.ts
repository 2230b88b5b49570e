import type { RedisClient } from '../../engine/infra/redis/client.ts';

/**
 * What a consumer group of a stream has not settled: its pending entries, and the entries no
 * consumer read yet. XINFO's `lag` counts those, but Redis reports it as nil (0 through Number)
 * once the stream was trimmed or had entries deleted; then the IDs tell whether any are left, and
 * `unread` is 1 for "some".
 */
export async function groupBacklog(redis: RedisClient, stream: string, group: string): Promise<{ pending: number; unread: number }> {
  if ((await redis.exists(stream)) === 0) return { pending: 0, unread: 0 };
  const info = asFields(await redis.xinfo('STREAM', stream));
  const found = ((await redis.xinfo('GROUPS', stream)) as unknown[][]).map(asFields).find((g) => g.get('name') === group);
  if (!found) return { pending: 0, unread: Number(info.get('length')) };
  const lag = found.get('lag');
  const some = compareIds(String(found.get('last-delivered-id')), String(info.get('last-generated-id'))) < 0;
  return { pending: Number(found.get('pending')), unread: typeof lag === 'number' ? lag : some ? 1 : 0 };
}

/** Orders two stream IDs numerically. */
export function compareIds(a: string, b: string): number {
  const [am = 0n, as = 0n] = a.split('-').map(BigInt);
  const [bm = 0n, bs = 0n] = b.split('-').map(BigInt);
  if (am !== bm) return am < bm ? -1 : 1;
  return as === bs ? 0 : as < bs ? -1 : 1;
}

function asFields(reply: unknown): Map<string, unknown> {
  const list = reply as unknown[];
  const fields = new Map<string, unknown>();
  for (let i = 0; i + 1 < list.length; i += 2) fields.set(String(list[i]), list[i + 1]);
  return fields;
}
