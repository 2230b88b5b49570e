import t, { type Test } from 'tap';
import { loadConfig } from '../../engine/config.ts';
import { createRedis } from '../../engine/redis.ts';
import { scripts } from '../../engine/scripts.ts';
import { DISPATCH_GROUP, Topology } from '../../engine/topology.ts';
import { REDIS_URL, cleanupPrefix, testPrefix } from '../helpers/redis.ts';

/** The fan-out and dispatch scripts against the real Redis: each effect once. */

async function setup(t: Test) {
  const prefix = testPrefix();
  const redis = createRedis(loadConfig({ REDIS_URL, KEY_PREFIX: prefix }));
  t.teardown(async () => {
    redis.disconnect();
    await cleanupPrefix(prefix);
  });
  return { redis, topology: new Topology(prefix, 8) };
}

t.test('appendJobs appends each user once per notification, however often a chunk is appended', async (t) => {
  const { redis, topology } = await setup(t);
  const keys = { dispatch: topology.dispatch(3), fanned: topology.notificationFanned(3, 'n1'), counts: topology.notificationCounts(3, 'n1') };
  const args = { notification: 'n1', project: 'p', keepSeconds: 60 };
  t.equal((await scripts.appendJobs(redis, { keys, args, users: ['a', 'b'] })).appended, 2);
  t.equal((await scripts.appendJobs(redis, { keys, args, users: ['b', 'c'] })).appended, 1, 'a resumed chunk appends only the new user');
  const jobs = (await redis.xrange(keys.dispatch, '-', '+')).map(([, f]) => JSON.parse(f[1] ?? '{}') as { external_id: string; attempt: number });
  t.same(jobs.map((j) => [j.external_id, j.attempt]), [['a', 1], ['b', 1], ['c', 1]]);
  t.equal(await redis.hget(keys.counts, 'jobs'), '3');
  t.ok((await redis.ttl(keys.fanned)) > 0, 'the set expires');
});

t.test('recordAttempts records a job once: a call resent after a lost reply writes nothing again', async (t) => {
  const { redis, topology } = await setup(t);
  const p = 2;
  const keys = { dispatch: topology.dispatch(p), counts: topology.notificationCounts(p, 'n1'), outcomes: topology.outcomes(p), retries: topology.retries(p), ingest: topology.ingest(p) };
  await redis.xgroup('CREATE', keys.dispatch, DISPATCH_GROUP, '0', 'MKSTREAM');
  const id = await redis.xadd(keys.dispatch, '*', 'd', '{}');
  await redis.xreadgroup('GROUP', DISPATCH_GROUP, 'w1', 'COUNT', 10, 'STREAMS', keys.dispatch, '>');
  const call = {
    keys,
    args: { group: DISPATCH_GROUP, entryId: id ?? '', now: 1000, done: 0, retry: '{"n":"n1","attempt":2}', retryAt: 5000, outcomeCount: 2 },
    outcomes: [JSON.stringify({ status: 'sent', retrying: false }), JSON.stringify({ status: 'failed', retrying: true })],
    retire: [JSON.stringify({ op: 'retire' })],
  };
  t.same(await scripts.recordAttempts(redis, call), { recorded: true });
  t.same(await scripts.recordAttempts(redis, call), { recorded: false }, 'the second call finds the job acknowledged');
  t.equal(await redis.xlen(keys.outcomes), 2, 'one outcome per attempt');
  t.equal(await redis.xlen(keys.ingest), 1, 'the retire entry goes to the partition log');
  t.same(await redis.hgetall(keys.counts), { sent: '1' }, 'a failure that will be retried is not counted; the job is not done');
  t.same(await redis.zrange(keys.retries, 0, -1, 'WITHSCORES'), ['{"n":"n1","attempt":2}', '5000']);
  t.equal(await redis.xlen(keys.dispatch), 0, 'the job is deleted');
});

t.test('releaseDue moves only due members, each once', async (t) => {
  const { redis, topology } = await setup(t);
  const keys = { waiting: topology.retries(1), stream: topology.dispatch(1) };
  await redis.zadd(keys.waiting, 100, 'a', 200, 'b', 300, 'c');
  t.same(await scripts.releaseDue(redis, { keys, args: { now: 250, max: 10 } }), { moved: 2 });
  t.same(await scripts.releaseDue(redis, { keys, args: { now: 250, max: 10 } }), { moved: 0 });
  t.same((await redis.xrange(keys.stream, '-', '+')).map(([, f]) => f[1]), ['a', 'b']);
  t.same(await redis.zrange(keys.waiting, 0, -1), ['c']);
});
