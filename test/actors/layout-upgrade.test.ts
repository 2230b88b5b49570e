import t, { type Test } from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { writeConsent } from '../../engine/state/users/consent.ts';
import { upgradeLayout, upgradeUsers } from '../../engine/state/users/layout.ts';
import { readHashes } from '../../engine/state/users/read-user.ts';
import { subscriptionId, type SubscriptionRef } from '../../engine/state/users/subscription-ids.ts';
import { TokenIndex } from '../../engine/state/users/token-index.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { deployment } from '../helpers/engine.ts';
import { writeUserRecord } from '../helpers/user-record.ts';
import { UserKeys } from '../../engine/state/users/redis-keys.ts';

// engine/state/users/layout.ts: which installs read 0.11.1's idempotency markers, and for how long.
const NOW = Date.UTC(2026, 10, 1);
const DAY = 24 * 60 * 60 * 1000;

async function setup(t: Test): Promise<{ redis: ReturnType<typeof createRedis>; topology: Topology }> {
  const d = await deployment(t);
  const config = loadConfig(d.env);
  const redis = createRedis(config);
  t.teardown(() => redis.disconnect());
  return { redis, topology: new Topology(config.KEY_PREFIX, config.PARTITIONS) };
}

t.test('a new install records the step and reads no old markers', async (t) => {
  const { redis, topology } = await setup(t);
  await upgradeLayout(redis, topology, NOW);
  t.equal(await redis.hget(topology.own(UserKeys).layout(), 'idempotency'), 'done');
  t.equal(await redis.get(topology.own(UserKeys).legacyLayoutUntil(0)), null);
});

t.test('an install of 0.11.1 reads them for 9 days in every partition, and a second run changes nothing', async (t) => {
  const { redis, topology } = await setup(t);
  await redis.set(topology.applied(topology.partitions - 1), '1-0');
  await upgradeLayout(redis, topology, NOW);
  for (let p = 0; p < topology.partitions; p++) t.equal(await redis.get(topology.own(UserKeys).legacyLayoutUntil(p)), String(NOW + 9 * DAY), `partition ${p}`);
  await upgradeLayout(redis, topology, NOW + DAY);
  t.equal(await redis.get(topology.own(UserKeys).legacyLayoutUntil(0)), String(NOW + 9 * DAY), 'the step ran once');
});

t.test("a user in 0.11.1's four hashes is read as such, then folded into one record with nothing lost", async (t) => {
  const { redis, topology } = await setup(t);
  const legacy = topology.own(UserKeys).legacyUser('proj', 'ada');
  const sub = { type: 'IOS_PUSH', token: 'ab'.repeat(32), state: 'live', created_at: 1, updated_at: 2, registered_at: 3, device_model: 'iPhone15,2' };
  await redis.hset(legacy.user, { created_at: '1', updated_at: '9' });
  await redis.hset(legacy.tags, { plan: 'spro', level: 'n4' });
  await redis.hset(legacy.subs, `IOS_PUSH:${sub.token}`, JSON.stringify(sub));
  await redis.hset(legacy.consent, 'SMS', JSON.stringify({ opted_out: true, at: 5 }));
  await redis.hset(topology.own(UserKeys).legacyUser('proj', 'bob').consent, 'EMAIL', JSON.stringify({ opted_out: true, at: 6 }));
  const before = await readHashes(redis, topology, 'proj', 'ada');
  t.same(before.tags, { plan: 'spro', level: 'n4' }, 'read from the old hashes before the upgrade');

  const partitions = new Set([topology.partitionOf('proj', 'ada'), topology.partitionOf('proj', 'bob')]);
  for (const p of partitions) await upgradeUsers(redis, topology, p);
  t.same(await readHashes(redis, topology, 'proj', 'ada'), before, 'the record holds the same state');
  t.same(JSON.parse((await readHashes(redis, topology, 'proj', 'ada')).subs[`IOS_PUSH:${sub.token}`] ?? 'null'), sub);
  t.same((await readHashes(redis, topology, 'proj', 'bob')).consent, { EMAIL: JSON.stringify({ opted_out: true, at: 6 }) }, 'a consent alone too');
  t.equal(await redis.exists(legacy.user, legacy.tags, legacy.subs, legacy.consent), 0, 'the old hashes are gone');
  for (const p of partitions) t.equal(await redis.hget(topology.own(UserKeys).layout(), `users:${p}`), 'done', `partition ${p} is recorded done`);
});

t.test("a write to a user of 0.11.1 not folded yet folds them first", async (t) => {
  const { redis, topology } = await setup(t);
  const legacy = topology.own(UserKeys).legacyUser('proj', 'cy');
  await redis.hset(legacy.user, { created_at: '1', updated_at: '1' });
  await redis.hset(legacy.tags, { plan: 'spro' });
  await writeConsent(redis, topology, 'proj', 'cy', 'EMAIL', true, 7);
  const after = await readHashes(redis, topology, 'proj', 'cy');
  t.same([after.user, after.tags, after.consent], [{ created_at: '1', updated_at: '1' }, { plan: 'spro' }, { EMAIL: JSON.stringify({ opted_out: true, at: 7 }) }]);
  t.equal(await redis.exists(legacy.user, legacy.tags), 0);
});

t.test("0.11.1's token records are adopted on first use and by the upgrade, detaches owed included", async (t) => {
  const { redis, topology } = await setup(t);
  const tokens = new TokenIndex(redis, topology);
  const seed = async (token: string, owner: string, at: number, owed: Record<string, string> = {}): Promise<{ ref: SubscriptionRef; id: string }> => {
    const ref: SubscriptionRef = { type: 'EMAIL', token };
    const id = subscriptionId('proj', 'EMAIL', token);
    const extra = Object.fromEntries(Object.entries(owed).map(([ext, ms]) => [`d:${ext}`, ms]));
    await redis.hset(topology.own(UserKeys).legacyToken('proj', 'EMAIL', token), { owner, registered_at: String(at), ...extra });
    await redis.set(topology.own(UserKeys).legacySubscriptionId('proj', id), `EMAIL:${token}`);
    await writeUserRecord(redis, topology.own(UserKeys).user('proj', owner), { created_at: at, updated_at: at, subs: [{ ...ref, state: 'live', created_at: at, updated_at: at, registered_at: at }] });
    return { ref, id };
  };
  const first = await seed('a@example.com', 'old', 100, { stale: '50' });
  const second = await seed('b@example.com', 'kept', 300);
  t.equal(await tokens.owner('proj', first.ref), 'old', 'read from the old record before it is adopted');
  t.same(await tokens.resolve('proj', [first.id]), [first.ref], 'and found by its id');

  const owed = await tokens.claim('proj', first.ref, 'new', 200, true);
  t.same(Object.fromEntries(owed.map((o) => [o.externalId, o.registeredAt])), { old: '200', stale: '50' }, 'the old owner and what it owed are detached');
  t.equal(await redis.exists(topology.own(UserKeys).legacyToken('proj', 'EMAIL', first.ref.token), topology.own(UserKeys).legacySubscriptionId('proj', first.id)), 0, 'its old keys are gone');

  await upgradeLayout(redis, topology, NOW);
  t.equal(await tokens.owner('proj', second.ref), 'kept', 'the upgrade adopted the other token');
  t.same(await tokens.resolve('proj', [second.id]), [second.ref]);
  t.same(await redis.keys(`${topology.prefix}token:*`), [], 'no record of 0.11.1 is left');
  t.same(await redis.keys(`${topology.prefix}subid:*`), []);
  t.equal(await tokens.owner('proj', first.ref), 'new', 'a claim made meanwhile stands');
});
