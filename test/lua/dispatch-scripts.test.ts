import t, { type Test } from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { Notifications, settlementOf, USERS_PER_JOB, type NotificationRecord } from '../../engine/state/notifications/lifecycle.ts';
import { createRedis, type RedisClient } from '../../engine/infra/redis/client.ts';
import { scripts } from '../../engine/infra/scripts/registry.ts';
import { writeConsent } from '../../engine/state/users/consent.ts';
import type { UsersJob } from '../../schemas/notifications.ts';
import type { SubscriptionType } from '../../schemas/sdk.ts';
import type { StoredSubscription } from '../../schemas/state.ts';
import { writeUserRecord } from '../helpers/user-record.ts';
import { DISPATCH_GROUP, Topology } from '../../engine/infra/redis/topology.ts';
import { PrivateCluster } from '../../bench/redis-cluster.ts';
import { REDIS_URL, cleanupPrefix, testPrefix } from '../helpers/redis.ts';
import { NotificationKeys } from '../../engine/state/notifications/redis-keys.ts';
import { UserKeys } from '../../engine/state/users/redis-keys.ts';
import { recipientOfRecord } from '../../engine/state/users/user-record.ts';
import type { RecipientKeys, StoredRecipient } from '../../engine/infra/scripts/dispatch.ts';

/** The fan-out and dispatch scripts against the real Redis: each effect once. */

async function setup(t: Test, url = REDIS_URL) {
  const prefix = testPrefix();
  const redis = createRedis(loadConfig({ REDIS_URL: url, KEY_PREFIX: prefix }));
  t.teardown(async () => {
    redis.disconnect();
    await cleanupPrefix(prefix);
  });
  const topology = new Topology(prefix, 8);
  return { redis, topology, notifications: new Notifications(redis, topology) };
}

/** Accepts a notification `id` of project p, to dispatch or cancel. */
async function accepted(notifications: Notifications, id: string): Promise<NotificationRecord> {
  const spec = {
    id,
    project: 'p',
    channel: 'PUSH' as const,
    headings: null,
    contents: { en: 'hi' },
    data: { svc_message_id: id },
    ttl: 60,
    priority: 'high' as const,
    collapse_id: null,
    throttle_rate_per_minute: 0,
    external_ids: ['u1'],
    included_segments: null,
    excluded_segments: [],
    filters: null,
    created_at: 1000,
    send_after: null,
  };
  await notifications.accept(spec, 1, 1000);
  const record = await notifications.read(id);
  if (record === null) throw new Error('accepted notification not found');
  return record;
}

t.test('appendJobs appends each user once per notification, however often a chunk is appended, USERS_PER_JOB a job', async (t) => {
  const { redis, topology, notifications } = await setup(t);
  const spec = { id: 'n1', project: 'p"q', ttl: 60 };
  t.equal(await notifications.appendJobs(spec, 3, ['a', 'b']), 2);
  t.equal(await notifications.appendJobs(spec, 3, ['b', 'c']), 1, 'a resumed chunk appends only the new user');
  const many = Array.from({ length: USERS_PER_JOB + 2 }, (_, i) => `m${i}/"é`);
  t.equal(await notifications.appendJobs(spec, 3, ['c', ...many]), many.length);
  const jobs = (await redis.xrange(topology.dispatch(3), '-', '+')).map(([, f]) => JSON.parse(f[1] ?? '{}') as UsersJob);
  t.same(
    jobs,
    [['a', 'b'], ['c'], many.slice(0, USERS_PER_JOB), many.slice(USERS_PER_JOB)].map((users) => ({ n: 'n1', project: 'p"q', attempt: 1, users })),
    'one job per chunk, split at USERS_PER_JOB users; names escaped',
  );
  t.same(await notifications.counts('n1'), { jobs: 3 + many.length, done: 0, sent: 0, failed: 0, skipped: 0, lastAt: 0 }, 'the jobs counter counts users');
  t.ok((await redis.ttl(topology.own(NotificationKeys).notificationFanned(3, 'n1'))) > 0, 'the set expires');
});

t.test('recordAttempts records a job once: a call resent after a lost reply writes nothing again', async (t) => {
  const { redis, topology, notifications } = await setup(t);
  const p = 2;
  const keys = { dispatch: topology.dispatch(p), counts: topology.own(NotificationKeys).notificationCounts(p, 'n1'), outcomes: topology.outcomes(p), retries: topology.retries(p), ingest: topology.ingest(p) };
  await redis.xgroup('CREATE', keys.dispatch, DISPATCH_GROUP, '0', 'MKSTREAM');
  const id = await redis.xadd(keys.dispatch, '*', 'd', '{}');
  await redis.xreadgroup('GROUP', DISPATCH_GROUP, 'w1', 'COUNT', 10, 'STREAMS', keys.dispatch, '>');
  const outcomes = [
    { status: 'sent' as const, retrying: false },
    { status: 'failed' as const, retrying: true },
  ];
  const job = {
    entryId: id ?? '',
    ...settlementOf(outcomes, 0),
    retries: [{ job: '{"n":"n1","attempt":2}', at: 5000 }],
    outcomes: outcomes.map((o) => JSON.stringify(o)),
    retire: [JSON.stringify({ op: 'retire' })],
  };
  const call = { keys, args: { group: DISPATCH_GROUP, now: 1000, perEntry: 8 }, jobs: [job] };
  t.same(await scripts.recordAttempts(redis, call), { recorded: 1 });
  t.same(await scripts.recordAttempts(redis, call), { recorded: 0 }, 'the second call finds the job acknowledged');
  t.same(outcomeLines(await redis.xrange(keys.outcomes, '-', '+')), outcomes, 'one outcome per attempt, each whole, in one entry');
  t.equal(await redis.xlen(keys.ingest), 1, 'the retire entry goes to the partition log');
  t.same(await notifications.counts('n1'), { jobs: 0, done: 0, sent: 1, failed: 0, skipped: 0, lastAt: 0 }, 'a failure that will be retried is not counted; the job is not done');
  t.same(await redis.zrange(keys.retries, 0, -1, 'WITHSCORES'), ['{"n":"n1","attempt":2}', '5000']);
  t.equal(await redis.xlen(keys.dispatch), 0, 'the job is deleted');
  const retry = await redis.xadd(keys.dispatch, '*', 'd', '{}');
  await redis.xreadgroup('GROUP', DISPATCH_GROUP, 'w1', 'COUNT', 10, 'STREAMS', keys.dispatch, '>');
  const last = [{ status: 'failed' as const, retrying: false }, { status: 'skipped' as const, retrying: false }];
  const settled = { entryId: retry ?? '', ...settlementOf(last, 1), retries: [], outcomes: last.map((o) => JSON.stringify(o)), retire: [] };
  await scripts.recordAttempts(redis, { keys, args: { group: DISPATCH_GROUP, now: 7000, perEntry: 8 }, jobs: [settled] });
  t.same(await notifications.counts('n1'), { jobs: 0, done: 1, sent: 1, failed: 1, skipped: 1, lastAt: 7000 }, 'the last attempt counts each outcome and the job as done, at its time');
});

t.test('recordAttempts records a batch: each job once, its counters summed, one already recorded left alone', async (t) => {
  const { redis, topology, notifications } = await setup(t);
  const p = 4;
  const keys = { dispatch: topology.dispatch(p), counts: topology.own(NotificationKeys).notificationCounts(p, 'n2'), outcomes: topology.outcomes(p), retries: topology.retries(p), ingest: topology.ingest(p) };
  await redis.xgroup('CREATE', keys.dispatch, DISPATCH_GROUP, '0', 'MKSTREAM');
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) ids.push((await redis.xadd(keys.dispatch, '*', 'd', '{}')) ?? '');
  await redis.xreadgroup('GROUP', DISPATCH_GROUP, 'w1', 'COUNT', 10, 'STREAMS', keys.dispatch, '>');
  const sent = [{ status: 'sent' as const, retrying: false, text: 'two\nlines' }];
  const none = { retries: [], retire: [] };
  const jobs = ids.map((entryId) => ({ entryId, ...settlementOf(sent, 1), ...none, outcomes: sent.map((o) => JSON.stringify(o)) }));
  const first = jobs[0];
  if (first === undefined) throw new Error('no job');
  t.same(await scripts.recordAttempts(redis, { keys, args: { group: DISPATCH_GROUP, now: 10, perEntry: 2 }, jobs: [first] }), { recorded: 1 });
  t.same(await scripts.recordAttempts(redis, { keys, args: { group: DISPATCH_GROUP, now: 20, perEntry: 2 }, jobs }), { recorded: 3 }, 'the job recorded before is not counted');
  t.same(await notifications.counts('n2'), { jobs: 0, done: 4, sent: 4, failed: 0, skipped: 0, lastAt: 20 }, 'each job moves the counters once');
  const recorded = await redis.xrange(keys.outcomes, '-', '+');
  t.same(recorded.map(([, f]) => (f[1] ?? '').split('\n').length), [1, 2, 1], 'one outcome per job, at most perEntry an entry');
  t.same(outcomeLines(recorded), [sent[0], sent[0], sent[0], sent[0]], 'an outcome holding an escaped newline stays one line');
  t.equal(await redis.xlen(keys.dispatch), 0, 'every job is deleted');
});

t.test('recordAttempts records a job of several users: its users done, each retry queued', async (t) => {
  const { redis, topology, notifications } = await setup(t);
  const p = 5;
  const keys = { dispatch: topology.dispatch(p), counts: topology.own(NotificationKeys).notificationCounts(p, 'n3'), outcomes: topology.outcomes(p), retries: topology.retries(p), ingest: topology.ingest(p) };
  await redis.xgroup('CREATE', keys.dispatch, DISPATCH_GROUP, '0', 'MKSTREAM');
  const id = (await redis.xadd(keys.dispatch, '*', 'd', '{}')) ?? '';
  await redis.xreadgroup('GROUP', DISPATCH_GROUP, 'w1', 'COUNT', 10, 'STREAMS', keys.dispatch, '>');
  const outcomes = [
    { status: 'sent' as const, retrying: false },
    { status: 'failed' as const, retrying: true },
    { status: 'skipped' as const, retrying: false },
    { status: 'failed' as const, retrying: true },
  ];
  const retries = [
    { job: '{"n":"n3","external_id":"b","attempt":2}', at: 5000 },
    { job: '{"n":"n3","external_id":"d 1","attempt":2}', at: 6000 },
  ];
  const job = { entryId: id, ...settlementOf(outcomes, 2), retries, outcomes: outcomes.map((o) => JSON.stringify(o)), retire: [] };
  t.same(await scripts.recordAttempts(redis, { keys, args: { group: DISPATCH_GROUP, now: 900, perEntry: 8 }, jobs: [job] }), { recorded: 1 });
  t.same(await notifications.counts('n3'), { jobs: 0, done: 2, sent: 1, failed: 0, skipped: 1, lastAt: 900 }, 'two of four users done; the retried failures not counted');
  t.same(await redis.zrange(keys.retries, 0, -1, 'WITHSCORES'), [retries[0]?.job, '5000', retries[1]?.job, '6000'], 'each retry queued at its own time');
  t.same(outcomeLines(await redis.xrange(keys.outcomes, '-', '+')), outcomes, 'every outcome, in one entry');
});

t.test('releaseDue moves only due members, each once, and says when the next is due', async (t) => {
  const { redis, topology } = await setup(t);
  const keys = { waiting: topology.retries(1), stream: topology.dispatch(1) };
  await redis.zadd(keys.waiting, 100, 'a', 200, 'b', 300, 'c');
  t.same(await scripts.releaseDue(redis, { keys, args: { now: 250, max: 1 } }), { moved: 1, next: 200 }, 'at most max: the next is due already');
  t.same(await scripts.releaseDue(redis, { keys, args: { now: 250, max: 10 } }), { moved: 1, next: 300 });
  t.same(await scripts.releaseDue(redis, { keys, args: { now: 250, max: 10 } }), { moved: 0, next: 300 });
  t.same((await redis.xrange(keys.stream, '-', '+')).map(([, f]) => f[1]), ['a', 'b']);
  t.same(await redis.zrange(keys.waiting, 0, -1), ['c']);
  t.same(await scripts.releaseDue(redis, { keys, args: { now: 300, max: 10 } }), { moved: 1, next: null }, 'none left');
});

const SEEDED_TAGS = { language: 'spt-BR', plan: 'sgold' };

/** A user with two push subscriptions (one retired), an SMS one and a language tag, and more tags when given. */
async function seedUser(redis: RedisClient, topology: Topology, user: string, tags: Record<string, string> = {}): Promise<Record<string, StoredSubscription>> {
  const sub = (type: SubscriptionType, token: string, state: 'live' | 'retired', registeredAt: number): StoredSubscription => ({ type, token, state, created_at: 1, updated_at: 1, registered_at: registeredAt });
  const subs = [sub('IOS_PUSH', 'aa', 'live', 2), sub('ANDROID_PUSH', 'bb', 'live', 1), sub('IOS_PUSH', 'cc', 'retired', 3), sub('SMS', '+15550000001', 'live', 4)];
  await writeUserRecord(redis, topology.own(UserKeys).user('p', user), { created_at: 1, updated_at: 1, tags: { ...SEEDED_TAGS, ...tags }, subs });
  return Object.fromEntries(subs.map((s) => [`${s.type}:${s.token}`, s]));
}

/** One user's answer of loadRecipients. */
async function loadOne(redis: RedisClient, keys: RecipientKeys): Promise<StoredRecipient | undefined> {
  const [stored] = await scripts.loadRecipients(redis, { keys: {}, args: {}, users: [keys] });
  return stored;
}

/** loadRecipients' answer for one user as dispatch reads it (engine/state/users/user-record.ts recipientOfRecord). */
async function loadAs(redis: RedisClient, keys: RecipientKeys, types: string, only: readonly string[] | null = null, allTags = false) {
  const stored = await loadOne(redis, keys);
  if (stored === undefined) throw new Error('loadRecipients answered no user');
  return { ...recipientOfRecord(stored.record, new Set(types.split(' ')), only === null ? null : new Set(only), allTags), canceled: stored.canceled };
}

const byToken = (subs: readonly StoredSubscription[]) => [...subs].sort((a, b) => a.token.localeCompare(b.token));

function recipientKeys(notifications: Notifications, topology: Topology, user: string, notification = 'n1') {
  const keys = topology.own(UserKeys).recordOf('p', user);
  return { user: keys.user, canceled: notifications.cancelMark(keys.partition, notification) };
}

/** The outcomes of entries of `outcomes:{pN}`, one a line, in order. */
function outcomeLines(entries: [string, string[]][]): unknown[] {
  return entries.flatMap(([, f]) => (f[1] ?? '').split('\n').map((line) => JSON.parse(line) as unknown));
}

/** A flat field, value list as sorted pairs. */
function pairs(flat: readonly string[] | null): string[] {
  const out: string[] = [];
  for (let i = 0; flat !== null && i + 1 < flat.length; i += 2) out.push(`${flat[i]}=${flat[i + 1]}`);
  return out.sort();
}

t.test('userKeys names the user record, with the user partition', async (t) => {
  const topology = new Topology('x:', 8);
  for (const user of ['u1', 'u2', 'ü3']) {
    t.same(topology.own(UserKeys).recordOf('p', user), { partition: topology.partitionOf('p', user), user: topology.own(UserKeys).user('p', user) });
  }
});

t.test("loadRecipients answers the user's record: the language and the subscriptions of the channel, or of a retry", async (t) => {
  const { redis, topology, notifications } = await setup(t);
  const subs = await seedUser(redis, topology, 'u1');
  const keys = recipientKeys(notifications, topology, 'u1');
  const push = await loadAs(redis, keys, 'IOS_PUSH ANDROID_PUSH WEB_PUSH');
  t.equal(push.language, 'spt-BR', 'the stored tag, as stored');
  t.same(byToken(push.subs), [subs['IOS_PUSH:aa'], subs['ANDROID_PUSH:bb'], subs['IOS_PUSH:cc']], 'every push subscription, retired too: the handler keeps the live ones');
  const sms = await loadAs(redis, keys, 'SMS');
  t.same(sms.subs, [subs['SMS:+15550000001']]);
  const retry = await loadAs(redis, keys, 'IOS_PUSH ANDROID_PUSH WEB_PUSH', ['IOS_PUSH:aa', 'SMS:+15550000001']);
  t.same(retry.subs, [subs['IOS_PUSH:aa']], 'a retry gets only the listed subscriptions of the channel');
  const none = await loadAs(redis, keys, 'IOS_PUSH', []);
  t.same(none.subs, [], 'a retry listing nothing gets nothing');
  t.same(await loadOne(redis, recipientKeys(notifications, topology, 'nobody')), { record: null, canceled: false }, 'an unknown user: no record');
  t.same(await loadAs(redis, recipientKeys(notifications, topology, 'nobody'), 'SMS'), { language: null, subs: [], timezone: null, tags: null, canceled: false, consent: {} }, 'read as no tag, subscription or consent');
  await seedUser(redis, topology, 'u1', { timezone: 'sAsia/Tokyo' });
  const all = await loadAs(redis, keys, 'SMS', null, true);
  t.equal(all.timezone, 'sAsia/Tokyo', 'the timezone tag, as stored');
  t.same(pairs(all.tags), pairs(Object.entries({ ...SEEDED_TAGS, timezone: 'sAsia/Tokyo' }).flat()), 'every tag, for personal texts');
});

t.test('loadRecipients answers the cancel mark, and the record the consent of the channel types', async (t) => {
  const { redis, topology, notifications } = await setup(t);
  await seedUser(redis, topology, 'u1');
  const keys = recipientKeys(notifications, topology, 'u1');
  const push = 'IOS_PUSH ANDROID_PUSH WEB_PUSH';
  t.match(await loadAs(redis, keys, push), { canceled: false, consent: {} }, 'nothing in the way');
  const ios = await writeConsent(redis, topology, 'p', 'u1', 'IOS_PUSH', true, 1234);
  await writeConsent(redis, topology, 'p', 'u1', 'SMS', true, 1234);
  t.same((await loadAs(redis, keys, push)).consent, { IOS_PUSH: ios }, 'the consent of the channel types only');
  await notifications.cancel(await accepted(notifications, 'n1'), 1000);
  t.match(await loadAs(redis, keys, push), { canceled: true }, 'canceled');
  t.match(await loadAs(redis, recipientKeys(notifications, topology, 'u1', 'n2'), push), { canceled: false }, 'another notification is not');
});

t.test("loadRecipients answers a user still in 0.11.1's four hashes as their record would hold them", async (t) => {
  const { redis, topology, notifications } = await setup(t);
  const legacy = topology.own(UserKeys).legacyUser('p', 'old');
  const sub: StoredSubscription = { type: 'IOS_PUSH', token: 'ab'.repeat(32), state: 'live', created_at: 1, updated_at: 2, registered_at: 3, device_model: 'iPhone15,2' };
  await redis.hset(legacy.user, { created_at: '1', updated_at: '9' });
  await redis.hset(legacy.tags, { language: 'sfr', plan: 'spro' });
  await redis.hset(legacy.subs, `IOS_PUSH:${sub.token}`, JSON.stringify(sub), 'SMS:+15550000002', JSON.stringify({ ...sub, type: 'SMS', token: '+15550000002' }));
  await redis.hset(legacy.consent, 'IOS_PUSH', JSON.stringify({ opted_out: true, at: 5 }));
  const loaded = await loadAs(redis, recipientKeys(notifications, topology, 'old'), 'IOS_PUSH ANDROID_PUSH WEB_PUSH', null, true);
  t.same(loaded, { language: 'sfr', timezone: null, tags: loaded.tags, subs: [sub], consent: { IOS_PUSH: { opted_out: true, at: 5 } }, canceled: false });
  t.same(pairs(loaded.tags), ['language=sfr', 'plan=spro'], 'every tag');
  t.equal(await redis.exists(legacy.user, legacy.tags, legacy.subs, legacy.consent), 4, 'a read changes nothing');
});

t.test('loadRecipients answers, in one call, what it answers for each user alone', async (t) => {
  const { redis, topology, notifications } = await setup(t);
  const users = ['u1', 'u2', 'nobody', 'u3'];
  for (const user of ['u1', 'u2']) await seedUser(redis, topology, user);
  await seedUser(redis, topology, 'u3', { timezone: 'sAsia/Tokyo' });
  await writeConsent(redis, topology, 'p', 'u2', 'IOS_PUSH', true, 1234);
  const each = await Promise.all(users.map((u) => loadOne(redis, recipientKeys(notifications, topology, u))));
  const all = await scripts.loadRecipients(redis, { keys: {}, args: {}, users: users.map((u) => recipientKeys(notifications, topology, u)) });
  t.same(all, each, 'the same answers, in the order of the users');
  t.same(await scripts.loadRecipients(redis, { keys: {}, args: {}, users: [] }), [], 'no user, no answer');
});

t.test('cancel marks every partition once, keeps the first time, and the marks expire', async (t) => {
  const { redis, topology, notifications } = await setup(t);
  const record = await accepted(notifications, 'n1');
  // A crash after some marks: a repeated DELETE completes them and keeps the ones written.
  await redis.set(notifications.cancelMark(5, 'n1'), '1000', 'PX', 60_000);
  t.equal(await notifications.cancel(record, 2000), 2000);
  t.equal(await notifications.cancel({ ...record, canceledAt: 2000 }, 3000), 2000, 'a repeat keeps the first time');
  t.ok(await notifications.isCanceled('n1'));
  const marks = await Promise.all(Array.from({ length: topology.partitions }, (_, p) => redis.get(notifications.cancelMark(p, 'n1'))));
  t.same(marks, ['2000', '2000', '2000', '2000', '2000', '1000', '2000', '2000'], 'each partition has its mark; the first time of each is kept');
  const ttl = await redis.pttl(notifications.cancelMark(0, 'n1'));
  t.ok(ttl > 60_000 && ttl <= (60 + 7 * 24 * 3600) * 1000, `a mark outlives the ttl by the counters' margin (${ttl} ms)`);
});

t.test('on a Redis Cluster each dispatch script call stays in one slot, and cancel marks reach every partition', async (t) => {
  const cluster = await PrivateCluster.start();
  t.teardown(() => cluster.stop());
  const { redis, topology, notifications } = await setup(t, cluster.url);
  const users = ['u1', 'u2', 'u3', 'u4', 'u5', 'u6'];
  t.ok(new Set(users.map((u) => topology.partitionOf('p', u))).size > 2, 'the users are spread over partitions');
  for (const user of users) {
    const subs = await seedUser(redis, topology, user);
    const loaded = await loadAs(redis, recipientKeys(notifications, topology, user), 'SMS');
    t.same(loaded, { language: 'spt-BR', subs: [subs['SMS:+15550000001']], timezone: null, tags: null, canceled: false, consent: {} }, `loadRecipients of ${user} alone`);
  }
  const byPartition = new Map<number, string[]>();
  for (const user of users) byPartition.set(topology.partitionOf('p', user), [...(byPartition.get(topology.partitionOf('p', user)) ?? []), user]);
  for (const [partition, together] of byPartition) {
    const loaded = await scripts.loadRecipients(redis, { keys: {}, args: {}, users: together.map((u) => recipientKeys(notifications, topology, u)) });
    t.equal(loaded.length, together.length, `loadRecipients of partition ${partition}, in its slot`);
  }
  await notifications.cancel(await accepted(notifications, 'n1'), 1000);
  for (const user of users) {
    t.match(await loadAs(redis, recipientKeys(notifications, topology, user), 'SMS'), { canceled: true }, `${user} sees the cancel`);
  }
});
