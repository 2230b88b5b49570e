import t, { type Test } from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createRedis, type RedisClient } from '../../engine/infra/redis/client.ts';
import { APPLY_GROUP, Topology } from '../../engine/infra/redis/topology.ts';
import { ApplyCode, type ApplyEntry } from '../../engine/infra/scripts/apply-batch.ts';
import { applyEntries, type ApplyChecks } from '../../engine/state/users/apply.ts';
import { UserKeys } from '../../engine/state/users/redis-keys.ts';
import { decodeUserRecord } from '../../engine/state/users/user-record.ts';
import { toRawEntries } from '../../engine/infra/runner/types.ts';
import { recordsOf } from '../../actors/recorder/rows.ts';
import { cleanupPrefix, REDIS_URL, testPrefix } from '../helpers/redis.ts';

/**
 * What applyBatch reads besides the batch, on the caller's word (engine/state/users/apply.ts): the
 * outbox's length when the batch applied nothing new or the caller asks, else the registrations
 * it appended, in its reply; the stream's length, to trim it, only when the caller asks; and several partitions in one
 * call, each on its own. Against a real Redis, under a key prefix of its own.
 */

const PARTITION = 0;
const WORKER = 'worker-a';
const PROJECT = 'p1';

interface Setup {
  redis: RedisClient;
  topology: Topology;
  /** External ids of partition 0. */
  users: string[];
}

async function setup(t: Test): Promise<Setup> {
  const prefix = testPrefix();
  const redis = createRedis(loadConfig({ REDIS_URL, KEY_PREFIX: prefix, PARTITIONS: '4' }));
  t.teardown(async () => {
    redis.disconnect();
    await cleanupPrefix(prefix);
  });
  const topology = new Topology(prefix, 4);
  await redis.set(topology.lease(PARTITION), WORKER);
  await redis.xgroup('CREATE', topology.ingest(PARTITION), APPLY_GROUP, '0', 'MKSTREAM');
  const users: string[] = [];
  for (let i = 0; users.length < 3; i++) if (topology.partitionOf(PROJECT, `u${i}`) === PARTITION) users.push(`u${i}`);
  return { redis, topology, users };
}

/** Appends entries, reads them as the apply's consumer would, and applies them with `checks`. */
async function applyNew({ redis, topology }: Setup, entries: object[], checks: ApplyChecks): Promise<{ outbox: number; registrations: ApplyEntry[]; batch: ApplyEntry[] }> {
  const stream = topology.ingest(PARTITION);
  for (const entry of entries) await redis.xadd(stream, '*', 'd', JSON.stringify(entry));
  const read = (await redis.xreadgroup('GROUP', APPLY_GROUP, WORKER, 'COUNT', 1000, 'STREAMS', stream, '>')) as [string, [string, string[]][]][] | null;
  const batch = (read?.[0]?.[1] ?? []).map(([id, fields]) => ({ id, json: fields[1] ?? '' }));
  const [reply] = await applyEntries(redis, topology, WORKER, [{ partition: PARTITION, entries: batch, checks }]);
  if (reply?.code !== ApplyCode.Ok) throw new Error(`applyBatch answered ${String(reply?.code)}`);
  return { outbox: reply.outbox, registrations: reply.registrations, batch };
}

const identify = (external_id: string): object => ({ op: 'identify', project: PROJECT, external_id, at: Date.now(), tags: { plan: 'pro' } });
const subscribe = (external_id: string): object => ({ op: 'subscribe', project: PROJECT, external_id, at: Date.now(), type: 'IOS_PUSH', token: `tok-${external_id}` });
const plain: ApplyChecks = { readOutbox: false, mayTrim: false };

t.test('the reply names what the batch registers; the outbox is read when asked and when a resent call applies nothing', async (t) => {
  const s = await setup(t);
  const [a = '', b = ''] = s.users;
  const registered = await applyNew(s, [subscribe(a), identify(b), subscribe(b)], plain);
  const outbox = (await s.redis.xrange(s.topology.outbox(PARTITION), '-', '+')).map(([id, fields]) => ({ id, json: fields[1] ?? '' }));
  t.equal(registered.outbox, 2, 'two registrations: their count');
  t.same(registered.registrations, outbox, 'and the outbox entries themselves, as the outbox holds them');
  t.same(
    registered.registrations.map((r) => (JSON.parse(r.json) as { external_id: string }).external_id),
    [a, b],
  );
  const none = await applyNew(s, [identify(b)], plain);
  t.same([none.outbox, none.registrations], [0, []], 'no registration, not asked: not read');
  t.equal(await s.redis.xlen(s.topology.outbox(PARTITION)), 2, 'though the registrations still wait there');
  const asked = await applyNew(s, [identify(a)], { readOutbox: true, mayTrim: false });
  t.same([asked.outbox, asked.registrations], [2, []], 'asked (a settlement that may have failed): its length read');
  const askedWhileRegistering = await applyNew(s, [subscribe(b)], { readOutbox: true, mayTrim: false });
  t.same([askedWhileRegistering.outbox, askedWhileRegistering.registrations], [3, []], 'asked while registering: its length, not the call alone');
  const [resent] = await applyEntries(s.redis, s.topology, WORKER, [{ partition: PARTITION, entries: registered.batch, checks: plain }]);
  t.same([resent?.code, resent?.applied, resent?.outbox, resent?.registrations], [ApplyCode.Ok, 0, 3, []], 'a call sent again applies nothing and reads the length');
});

t.test("a batch's users go to the recorder in one change, with their records as the batch stored them", async (t) => {
  const s = await setup(t);
  const [a = '', b = '', c = ''] = s.users;
  await applyNew(s, [identify(a), identify(b), identify(a), subscribe(c)], plain);
  const entries = toRawEntries(await s.redis.xrangeBuffer(s.topology.changes(PARTITION), '-', '+'));
  t.equal(entries.length, 1, 'one entry for the batch');
  const [entry] = entries;
  const change = JSON.parse(entry?.fields[1]?.toString() ?? '{}') as { kind: string; users: { external_id: string; state?: unknown }[] };
  t.equal(change.kind, 'users');
  t.same(change.users.map((u) => u.external_id), [a, b, c], 'each user once, in the order the batch first touched them');
  t.ok(change.users.every((u) => u.state === undefined), 'no state in the JSON');
  const records = entry === undefined ? [] : recordsOf(entry);
  const stored = await Promise.all([a, b, c].map((u) => s.redis.getBuffer(s.topology.own(UserKeys).user(PROJECT, u))));
  t.same(records, stored, 'a record a user, in the same order, as the batch stored it');
  t.same(Object.keys(decodeUserRecord(records[0] ?? null).tags), ['plan'], "a user's tags");
  t.equal(Object.keys(decodeUserRecord(records[2] ?? null).subs).length, 1, "and a registration's subscription");
});

t.test('a batch of many users makes several changes of at most 64 users each', async (t) => {
  const s = await setup(t);
  const many: string[] = [];
  for (let i = 0; many.length < 70; i++) if (s.topology.partitionOf(PROJECT, `many-${i}`) === PARTITION) many.push(`many-${i}`);
  await applyNew(s, many.map(identify), plain);
  const raw = toRawEntries(await s.redis.xrangeBuffer(s.topology.changes(PARTITION), '-', '+'));
  const entries = raw.map((e) => JSON.parse(e.fields[1]?.toString() ?? '{}') as { users: { external_id: string }[] });
  t.same(entries.map((e) => e.users.length), [64, 6], '70 users: two changes');
  t.same(raw.map((e) => recordsOf(e).length), [64, 6], 'each with a record a user');
  t.same(entries.flatMap((e) => e.users.map((u) => u.external_id)), many, 'every user once, in order');
});

t.test('the stream is trimmed only when the caller asks, past 512 entries', async (t) => {
  const s = await setup(t);
  const stream = s.topology.ingest(PARTITION);
  const many = Array.from({ length: 700 }, (_, i) => identify(s.users[i % s.users.length] ?? ''));
  await applyNew(s, many, plain);
  t.equal(await s.redis.xlen(stream), 700, 'not asked: left as it is');
  await applyNew(s, [identify(s.users[0] ?? '')], { readOutbox: false, mayTrim: true });
  const left = await s.redis.xlen(stream);
  t.ok(left < 512, `asked: trimmed below what was applied (${left} left)`);
});

t.test('one call applies several partitions, each fenced and checked on its own', async (t) => {
  const s = await setup(t);
  const other = 1;
  await s.redis.xgroup('CREATE', s.topology.ingest(other), APPLY_GROUP, '0', 'MKSTREAM');
  await s.redis.set(s.topology.lease(other), 'worker-b');
  let otherUser = '';
  for (let i = 0; otherUser === ''; i++) if (s.topology.partitionOf(PROJECT, `v${i}`) === other) otherUser = `v${i}`;
  const readOne = async (partition: number, entry: object): Promise<{ id: string; json: string }[]> => {
    const stream = s.topology.ingest(partition);
    await s.redis.xadd(stream, '*', 'd', JSON.stringify(entry));
    const read = (await s.redis.xreadgroup('GROUP', APPLY_GROUP, WORKER, 'COUNT', 10, 'STREAMS', stream, '>')) as [string, [string, string[]][]][];
    return (read[0]?.[1] ?? []).map(([id, fields]) => ({ id, json: fields[1] ?? '' }));
  };
  const mine = await readOne(PARTITION, identify(s.users[0] ?? ''));
  const theirs = await readOne(other, identify(otherUser));
  const replies = await applyEntries(s.redis, s.topology, WORKER, [
    { partition: other, entries: theirs, checks: plain },
    { partition: PARTITION, entries: mine, checks: plain },
  ]);
  t.same(
    replies.map((r) => [r.code, r.applied]),
    [
      [ApplyCode.NotOwner, 0],
      [ApplyCode.Ok, 1],
    ],
    'in the order given: the partition another worker holds is refused, the other applied',
  );
  t.equal(await s.redis.get(s.topology.applied(PARTITION)), mine[0]?.id, "the held partition's applied ID moved");
  t.equal(await s.redis.get(s.topology.applied(other)), null, "the other's did not");
  t.equal(await s.redis.exists(s.topology.own(UserKeys).user(PROJECT, otherUser)), 0, "nor was the other's user written");
});
