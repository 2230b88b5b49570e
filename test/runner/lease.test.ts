import t, { type Test } from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createRedis, type RedisClient } from '../../engine/infra/redis/client.ts';
import { Leases } from '../../engine/infra/runner/lease.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { commandStats } from '../../bench/commandstats.ts';
import { eventually } from '../helpers/http.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';
import { cleanupPrefix, REDIS_URL, testPrefix } from '../helpers/redis.ts';
import { WebhookKeys } from '../../engine/state/webhooks/redis-keys.ts';

/**
 * engine/infra/runner/lease.ts against a real Redis: what the partition runner, the webhook senders and
 * the notification watcher rely on. Each test runs under its own key prefix, deleted at its end.
 */

const LEASE_MS = 10_000;

function setup(t: Test): { redis: RedisClient; topology: Topology } {
  const prefix = testPrefix();
  const redis = createRedis(loadConfig({ REDIS_URL, KEY_PREFIX: prefix, PARTITIONS: '4' }));
  t.teardown(async () => {
    redis.disconnect();
    await cleanupPrefix(prefix);
  });
  return { redis, topology: new Topology(prefix, 4) };
}

t.test('take when free, renew when ours, refused while another worker holds it', async (t) => {
  const { redis, topology } = setup(t);
  const a = new Leases(redis, 'worker-a', LEASE_MS);
  const b = new Leases(redis, 'worker-b', LEASE_MS);
  // The three kinds of lease its holders take: a partition's, an endpoint's, the watcher's.
  for (const key of [topology.lease(0), topology.own(WebhookKeys).webhookLease('ep1'), topology.named('lease:webhooks:watcher')]) {
    t.equal(await a.renew(key), false, `${key}: not renewed while no one holds it`);
    t.equal(await redis.exists(key), 0, `${key}: and not created by the renewal`);

    t.equal(await a.take(key), true, `${key}: taken when free`);
    t.equal(await redis.get(key), 'worker-a', `${key}: it names the taker`);
    const ttl = await redis.pttl(key);
    t.ok(ttl > LEASE_MS - 2000 && ttl <= LEASE_MS, `${key}: it lasts LEASE_MS (${ttl} ms left)`);

    t.equal(await a.take(key), false, `${key}: not taken twice, even by its holder`);

    await redis.pexpire(key, 1000);
    t.equal(await a.renew(key), true, `${key}: renewed while ours`);
    t.ok((await redis.pttl(key)) > 1000, `${key}: the renewal extends it to LEASE_MS again`);

    t.equal(await b.take(key), false, `${key}: another worker cannot take it`);
    t.equal(await b.renew(key), false, `${key}: nor renew it`);
    t.equal(await b.hold(key), false, `${key}: nor hold it`);
    t.equal(await redis.get(key), 'worker-a', `${key}: it still names its holder`);
  }
});

t.test('hold: takes a free lease, renews its own, refuses another’s', async (t) => {
  const { redis, topology } = setup(t);
  const a = new Leases(redis, 'worker-a', LEASE_MS);
  const b = new Leases(redis, 'worker-b', LEASE_MS);
  const key = topology.named('lease:webhooks:watcher');

  t.equal(await a.hold(key), true, 'held: taken while free');
  t.equal(await redis.get(key), 'worker-a', 'it names the holder');
  await redis.pexpire(key, 1000);
  t.equal(await a.hold(key), true, 'held again: ours, so renewed');
  t.ok((await redis.pttl(key)) > 1000, 'the renewal extends it to LEASE_MS again');
  t.equal(await b.hold(key), false, 'another worker does not hold it');
  t.equal(await redis.get(key), 'worker-a', 'it still names its holder');
});

t.test('release only when ours', async (t) => {
  const { redis, topology } = setup(t);
  const a = new Leases(redis, 'worker-a', LEASE_MS);
  const b = new Leases(redis, 'worker-b', LEASE_MS);
  const key = topology.own(WebhookKeys).webhookLease('ep1');

  t.equal(await a.release(key), false, 'nothing released while no one holds it');
  t.equal(await a.take(key), true, 'taken');
  t.equal(await b.release(key), false, 'another worker cannot release it');
  t.equal(await redis.get(key), 'worker-a', 'it still names its holder');
  t.equal(await a.release(key), true, 'its holder releases it');
  t.equal(await redis.exists(key), 0, 'the lease is gone');
  t.equal(await a.release(key), false, 'released once only');
  t.equal(await b.take(key), true, 'another worker takes it at once');
  t.equal(await a.release(key), false, 'the former holder cannot release it now');
  t.equal(await redis.get(key), 'worker-b', 'it names the new holder');
});

t.test('a lease not renewed expires after LEASE_MS and is taken again', async (t) => {
  const { redis, topology } = setup(t);
  const shortMs = 300;
  const a = new Leases(redis, 'worker-a', shortMs);
  const b = new Leases(redis, 'worker-b', LEASE_MS);
  const key = topology.lease(1);

  t.equal(await a.take(key), true, 'taken for 300 ms');
  t.equal(await b.take(key), false, 'refused to another worker while it lasts');
  await eventually('the lease expired', async () => ((await redis.exists(key)) === 0 ? true : undefined), 5000);
  t.equal(await a.renew(key), false, 'once expired, its former holder cannot renew it');
  t.equal(await b.take(key), true, 'another worker takes it');
  t.equal(await redis.get(key), 'worker-b', 'it names the new holder');
  t.equal(await a.hold(key), false, 'the former holder cannot hold it now');
  t.equal(await a.release(key), false, 'nor release it');

  t.equal(await b.release(key), true, 'released by the new holder');
  t.equal(await a.hold(key), true, 'hold takes it again once free');
  await eventually('the lease expired again', async () => ((await redis.exists(key)) === 0 ? true : undefined), 5000);
  t.equal(await a.hold(key), true, 'and after it expired, hold takes it once more');
  t.equal(await redis.get(key), 'worker-a', 'it names the holder');
});

t.test('renewals asked in one turn go in one call, each answered for its own lease', async (t) => {
  const server = await PrivateRedis.start();
  const redis = createRedis(loadConfig({ REDIS_URL: server.url, KEY_PREFIX: 'l:', PARTITIONS: '4' }));
  t.teardown(async () => {
    redis.disconnect();
    await server.stop();
  });
  const topology = new Topology('l:', 4);
  const a = new Leases(redis, 'worker-a', LEASE_MS);
  const b = new Leases(redis, 'worker-b', LEASE_MS);
  const keys = [0, 1, 2, 3].map((p) => topology.lease(p));
  await a.take(keys[0] ?? '');
  await b.take(keys[1] ?? '');
  await a.take(keys[2] ?? '');
  for (const key of keys.slice(0, 3)) await redis.pexpire(key, 1000);
  const scriptCalls = async (): Promise<number> => {
    const stats = await commandStats(redis);
    return (stats.get('evalsha')?.calls ?? 0) + (stats.get('eval')?.calls ?? 0);
  };
  await a.renew(keys[0] ?? '');
  const before = await scriptCalls();
  t.same(await Promise.all(keys.map((key) => a.renew(key))), [true, false, true, false], "ours renewed; another's and a free one not");
  t.equal((await scriptCalls()) - before, 1, 'one script call for the four');
  t.ok((await redis.pttl(keys[0] ?? '')) > 1000, 'a renewed lease lasts LEASE_MS again');
  t.ok((await redis.pttl(keys[1] ?? '')) <= 1000, "another's is left as it was");
  t.equal(await redis.exists(keys[3] ?? ''), 0, 'a free one is not created');
});
