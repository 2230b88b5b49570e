import t from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { scripts } from '../../engine/infra/scripts/registry.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { REDIS_URL, cleanupPrefix, testPrefix } from '../helpers/redis.ts';
import { frequencySends } from '../../actors/dispatch/redis-keys.ts';

/** takeCapSlot against the real Redis: the cap holds under racing notifications (docs/api.md#frequency-caps). */

const prefix = testPrefix();
const redis = createRedis(loadConfig({ REDIS_URL, KEY_PREFIX: prefix }));
t.teardown(async () => {
  redis.disconnect();
  await cleanupPrefix(prefix);
});
const topology = new Topology(prefix, 8);
const HOUR = 3_600_000;
const take = (user: string, member: string, max: number, now: number) =>
  scripts.takeCapSlot(redis, { keys: { sends: frequencySends(topology, 'p', user, 'PUSH') }, args: { member, max, windowMs: 24 * HOUR, now } });

t.test('notifications racing for the last slots get exactly the cap between them', async (t) => {
  const now = Date.now();
  for (const max of [1, 3]) {
    const user = `racer${max}`;
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => take(user, `n${i}`, max, now)));
    t.equal(answers.filter((a) => a.taken).length, max, `cap ${max}: ${max} of 20 racing notifications taken`);
  }
});

t.test('a notification keeps its slot over its subscriptions and retries; the window rolls', async (t) => {
  const now = Date.now();
  t.ok((await take('u1', 'a', 2, now)).taken);
  t.ok((await take('u1', 'a', 2, now + 1000)).taken, 'the same notification again: its slot');
  t.ok((await take('u1', 'b', 2, now + 2000)).taken);
  t.notOk((await take('u1', 'c', 2, now + 3000)).taken, 'a third notification within 24 h is capped');
  t.ok((await take('u1', 'c', 2, now + 24 * HOUR + 1)).taken, 'past the window of the first send, a slot is free again');
  t.notOk((await take('u1', 'd', 2, now + 24 * HOUR + 2)).taken);
  t.ok((await redis.pttl(frequencySends(topology, 'p', 'u1', 'PUSH'))) > 0, 'the set expires with its window');
  t.ok((await take('u2', 'c', 2, now)).taken, 'caps are per user');
  const email = await scripts.takeCapSlot(redis, { keys: { sends: frequencySends(topology, 'p', 'u1', 'EMAIL') }, args: { member: 'e', max: 1, windowMs: HOUR, now } });
  t.ok(email.taken, 'and per channel');
});
