import t from 'tap';
import { DispatchConsumer } from '../../actors/dispatch/dispatch-consumer.ts';
import { WINDOW as ROLE_WINDOW } from '../../actors/dispatch/role.ts';
import { USERS_PER_JOB as FANOUT_USERS_PER_JOB } from '../../engine/state/notifications/lifecycle.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { DISPATCH_GROUP, Topology } from '../../engine/infra/redis/topology.ts';
import { fieldOf } from '../../engine/infra/runner/types.ts';
import { eventually } from '../helpers/http.ts';
import { REDIS_URL, cleanupPrefix, testPrefix } from '../helpers/redis.ts';

/**
 * The dispatch consumer's window counts users, not jobs (actors/dispatch/dispatch-consumer.ts): on
 * a real stream of jobs of 1 to 8 users, each job held until the test lets it end, the users of
 * the jobs running never pass the window, and every job runs once.
 */

const WINDOW = 32;
const USERS_PER_JOB = 8;

t.test("the dispatch role's window holds four of the fan-out's largest jobs", async (t) => {
  // A read asks for the jobs that fit a quarter of the window free; a job larger than that quarter would pass the window.
  t.ok(ROLE_WINDOW >= 4 * FANOUT_USERS_PER_JOB, `WINDOW ${ROLE_WINDOW}, USERS_PER_JOB ${FANOUT_USERS_PER_JOB}`);
});

t.test('the jobs running hold at most the window of users, and each job runs once', async (t) => {
  const prefix = testPrefix();
  const redis = createRedis(loadConfig({ REDIS_URL, KEY_PREFIX: prefix }));
  const stream = new Topology(prefix, 8).dispatch(0);
  await redis.xgroup('CREATE', stream, DISPATCH_GROUP, '0', 'MKSTREAM');
  const sizes = [8, 8, 1, 3, 8, 8, 8, 2, 1, 1, 8, 5, 8, 8, 7, 1, 8, 8, 4, 8];
  for (const users of sizes) await redis.xadd(stream, '*', 'd', JSON.stringify({ users }));

  const waiting: (() => void)[] = [];
  const ran: string[] = [];
  let users = 0;
  let most = 0;
  const consumer = new DispatchConsumer({
    redis,
    stream,
    group: DISPATCH_GROUP,
    consumer: 'w1',
    window: WINDOW,
    usersPerJob: USERS_PER_JOB,
    blockMs: 100,
    open: (entry) => {
      const held = (JSON.parse(fieldOf(entry, 'd') ?? '{}') as { users: number }).users;
      return {
        users: held,
        run: async () => {
          users += held;
          most = Math.max(most, users);
          ran.push(entry.id);
          await new Promise<void>((resolve) => waiting.push(resolve));
          users -= held;
          await redis.xack(stream, DISPATCH_GROUP, entry.id);
          return true;
        },
      };
    },
    log: createLogger('error'),
    metrics: new Metrics(),
  });
  consumer.start();
  t.teardown(async () => {
    await consumer.stop();
    redis.disconnect();
    await cleanupPrefix(prefix);
  });

  // Nothing ends until the consumer has read what fits: a quarter of the window free is its cue.
  await eventually('the window filled', async () => (users > WINDOW - WINDOW / 4 ? true : undefined), 10_000);
  const filled = users;
  // Then the jobs end one at a time, oldest first.
  while (ran.length < sizes.length || waiting.length > 0) {
    await eventually('a job running', async () => (waiting.length > 0 ? true : undefined), 10_000);
    await new Promise((r) => setTimeout(r, 20));
    waiting.shift()?.();
  }
  await consumer.stop();
  await eventually('every job acknowledged', async () => (Number((await redis.xpending(stream, DISPATCH_GROUP))[0]) === 0 ? true : undefined), 10_000);
  t.equal(ran.length, sizes.length, 'every job ran');
  t.equal(new Set(ran).size, sizes.length, 'none twice');
  t.ok(most <= WINDOW, `the users running never passed the window (most: ${most})`);
  t.ok(filled <= WINDOW, `before any job ended, the consumer read ${filled} users' jobs, within the window`);
});
