import t from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { scripts } from '../../engine/infra/scripts/registry.ts';
import { cleanupPrefix, REDIS_URL, testPrefix } from '../helpers/redis.ts';

/**
 * oldestUnread-n.lua, the gateway's look at how far behind the workers are
 * (gateway/ingest/pressure.ts): for each stream of one call, the oldest entry its group has not
 * acknowledged. Against a real Redis, under a key prefix of its own.
 */

t.test('each stream answers its oldest unacknowledged entry, in the order given', async (t) => {
  const prefix = testPrefix();
  const redis = createRedis(loadConfig({ REDIS_URL, KEY_PREFIX: prefix }));
  t.teardown(async () => {
    redis.disconnect();
    await cleanupPrefix(prefix);
  });
  const key = (name: string): string => `${prefix}${name}`;
  const group = 'g';
  const add = async (stream: string): Promise<string> => (await redis.xadd(key(stream), '*', 'd', '{}')) ?? '';

  const noGroup = await add('no-group');
  await add('no-group');

  const pending = await add('pending');
  await add('pending');
  await redis.xgroup('CREATE', key('pending'), group, '0');
  await redis.xreadgroup('GROUP', group, 'c', 'COUNT', 10, 'STREAMS', key('pending'), '>');

  const readFirst = await add('unread');
  await redis.xgroup('CREATE', key('unread'), group, '0');
  await redis.xreadgroup('GROUP', group, 'c', 'COUNT', 1, 'STREAMS', key('unread'), '>');
  await redis.xack(key('unread'), group, readFirst);
  const unread = await add('unread');

  await add('caught-up');
  await redis.xgroup('CREATE', key('caught-up'), group, '0');
  const read = (await redis.xreadgroup('GROUP', group, 'c', 'COUNT', 10, 'STREAMS', key('caught-up'), '>')) as [string, [string, string[]][]][];
  await redis.xack(key('caught-up'), group, ...(read[0]?.[1] ?? []).map(([id]) => id));

  const streams = ['no-group', 'pending', 'unread', 'caught-up', 'missing'].map(key);
  t.same((await scripts.oldestUnread(redis, { keys: {}, args: { group }, streams })).ids, [noGroup, pending, unread, '', ''], [
    'no group yet: the first entry',
    'the smallest pending ID',
    'the first entry after what the group read',
    'read and acknowledged: none',
    'no stream: none',
  ].join('; '));
});
