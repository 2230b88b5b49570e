import t from 'tap';
import { writeUserRecord } from '../helpers/user-record.ts';
import { readHashes } from '../../engine/state/users/read-user.ts';
import { walkAudience } from '../../actors/fanout/audience.ts';
import { applyRole } from '../../actors/partition/role.ts';
import { insertRows } from '../../engine/infra/clickhouse/insert.ts';
import { QueryFile } from '../../engine/infra/clickhouse/query-file.ts';
import { Keystore, type CreatedProject } from '../../engine/state/keys/keystore.ts';
import { bodyHash, type Claim } from '../../engine/state/notifications/idempotency.ts';
import { Notifications, type NotificationRecord } from '../../engine/state/notifications/lifecycle.ts';
import { SegmentStore } from '../../engine/state/segments/store.ts';
import type { NotificationCreated, NotificationSpec, NotificationView } from '../../schemas/notifications.ts';
import { call, eventually, type Answer } from '../helpers/http.ts';
import { deliveryRow, type DeliveryRow } from '../query/fixtures.ts';
import { inProcessGateway, type InProcess } from '../helpers/in-process.ts';
import { NotificationKeys } from '../../engine/state/notifications/redis-keys.ts';
import { UserKeys } from '../../engine/state/users/redis-keys.ts';

let gw: InProcess;
let other: CreatedProject;
const iosToken = 'ab'.repeat(32);
const base = Date.parse('2026-11-01T00:00:00.000Z');

/** A users-mirror row as the recorder writes it (test/segments/count.test.ts). */
function mirrorUser(project: string, id: string, tags: Record<string, string>, subscriptions: string[]): Record<string, unknown> {
  return { project, external_id: id, tags, tag_numbers: {}, subscription_types: subscriptions, opted_out: [], created_at: base, updated_at: base, version: 1, stream_id: '1-0' };
}

t.before(async () => {
  gw = await inProcessGateway(t);
  await gw.run(applyRole);
  other = await new Keystore(gw.redis, gw.topology).createProject('other', false);
  const sdk = (path: string, body: unknown) => call(`${gw.url}/api/sdk${path}`, 'POST', gw.project.sdk_key, body);
  if ((await sdk('/users/ios/subscriptions', { type: 'IOS_PUSH', token: iosToken })).status !== 202) throw new Error('subscribe ios');
  if ((await sdk('/users/mail/subscriptions', { type: 'EMAIL', token: 'mail@example.com' })).status !== 202) throw new Error('subscribe mail');
  const p = gw.project.project_id;
  await eventually('both subscriptions applied', async () => {
    const [ios, mail] = await Promise.all([readHashes(gw.redis, gw.topology, p, 'ios'), readHashes(gw.redis, gw.topology, p, 'mail')]);
    return Object.keys(ios.subs).length > 0 && Object.keys(mail.subs).length > 0 ? true : undefined;
  });
  // A subscription retired by a provider: no SDK call retires one, so it is written as apply stores it.
  const retired = { type: 'IOS_PUSH', token: 'cd'.repeat(32), state: 'retired', created_at: base, updated_at: base, registered_at: base } as const;
  await writeUserRecord(gw.redis, gw.topology.own(UserKeys).user(p, 'retired'), { created_at: base, updated_at: base, subs: [retired] });

  // The users mirror, as the recorder would fill it: a, b, d gold; c, e silver; b has no subscription.
  await insertRows(gw.clickhouse, 'users', [
    mirrorUser(p, 'a', { plan: 'gold' }, ['IOS_PUSH']),
    mirrorUser(p, 'b', { plan: 'gold' }, []),
    mirrorUser(p, 'c', { plan: 'silver' }, ['EMAIL']),
    mirrorUser(p, 'd', { plan: 'gold' }, ['ANDROID_PUSH', 'EMAIL']),
    mirrorUser(p, 'e', { plan: 'silver' }, ['SMS', 'WEB_PUSH']),
    mirrorUser(other.project_id, 'x', { plan: 'gold' }, ['SMS']),
  ]);
  for (const [name, value] of [
    ['gold', 'gold'],
    ['silver', 'silver'],
  ]) {
    const created = await call(`${gw.url}/api/segments`, 'POST', gw.project.rest_key, { name, filters: [{ field: 'tag', key: 'plan', relation: '=', value }] });
    if (created.status !== 201) throw new Error(`segment ${name}`);
  }
});

const post = (body: unknown, key = gw.project.rest_key): Promise<Answer> => call(`${gw.url}/api/notifications`, 'POST', key, body);
const get = (id: string, key = gw.project.rest_key): Promise<Answer> => call(`${gw.url}/api/notifications/${encodeURIComponent(id)}`, 'GET', key);
const cancel = (id: string, key = gw.project.rest_key): Promise<Answer> => call(`${gw.url}/api/notifications/${encodeURIComponent(id)}`, 'DELETE', key);
const contents = { en: 'Hello' };

async function created(body: unknown): Promise<NotificationCreated> {
  const answer = await post(body);
  if (answer.status !== 201) throw new Error(`expected 201, got ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body as NotificationCreated;
}

function notifications(): Notifications {
  return new Notifications(gw.redis, gw.topology);
}

/** The record of notification `id`, which must exist. */
async function stored(id: string): Promise<NotificationRecord> {
  const record = await notifications().read(id);
  if (record === null) throw new Error(`no record of ${id}`);
  return record;
}

/** The ids on the notifications stream, in order. */
async function logged(): Promise<string[]> {
  const entries = await gw.redis.xrange(gw.topology.notifications(), '-', '+');
  return entries.map(([, fields]) => fields[1] ?? '');
}

function paths(answer: Answer): string[] {
  return ((answer.body as { errors: { path?: string }[] }).errors ?? []).map((e) => e.path ?? '');
}

t.test('by user ids: recipients are users with a live subscription of the channel, the others are listed', async (t) => {
  const before = Date.now();
  const body = await created({ include_external_user_ids: ['ios', 'mail', 'retired', 'nobody', 'ios'], contents, data: { deep: 'link' } });
  t.match(body.id, /^[0-9a-f-]{36}$/);
  t.same(body, {
    id: body.id,
    svc_message_id: body.id,
    recipients: 1,
    status: 'queued',
    errors: { invalid_external_user_ids: ['mail', 'retired', 'nobody'] },
    external_id: null,
    warnings: [],
  });

  const { spec, state, recipients } = await stored(body.id);
  t.same([spec.project, state, recipients], [gw.project.project_id, 'queued', 1]);
  t.match(spec, {
    id: body.id,
    project: gw.project.project_id,
    channel: 'PUSH',
    headings: null,
    contents,
    data: { deep: 'link', svc_message_id: body.id },
    ttl: 259200,
    priority: 'high',
    collapse_id: null,
    throttle_rate_per_minute: 0,
    external_ids: ['ios', 'mail', 'retired', 'nobody'],
    included_segments: null,
    excluded_segments: [],
    filters: null,
    send_after: null,
  });
  t.ok(spec.created_at >= before && spec.created_at <= Date.now());
  t.ok((await logged()).includes(body.id), 'on the notifications stream');

  const email = await created({ include_external_user_ids: ['ios', 'mail'], contents, channel: 'EMAIL' });
  t.same([email.recipients, email.errors.invalid_external_user_ids], [1, ['ios']], 'EMAIL reaches EMAIL subscriptions only');
});

t.test('the body is checked: exactly one targeting mode, contents.en, data size, known segments, filters', async (t) => {
  const none = await post({ contents });
  t.same([none.status, paths(none)], [400, ['']]);
  t.match((none.body as { errors: { message: string }[] }).errors[0]?.message, /include_external_user_ids, include_subscription_ids, included_segments, filters/);

  const two = await post({ include_external_user_ids: ['ios'], filters: [{ field: 'subscription', type: 'SMS' }], contents });
  t.same([two.status, paths(two).sort()], [400, ['/filters', '/include_external_user_ids']]);

  const three = await post({ include_external_user_ids: ['ios'], included_segments: ['All'], filters: [{ field: 'subscription', type: 'SMS' }], contents });
  t.same(paths(three).length, 3, 'every mode named');

  const exclusionsOnly = await post({ excluded_segments: ['gold'], contents });
  t.equal(exclusionsOnly.status, 400);
  t.ok(paths(exclusionsOnly).includes('/excluded_segments'));

  const noEn = await post({ include_external_user_ids: ['ios'], contents: { fr: 'Salut' } });
  t.same([noEn.status, paths(noEn)], [400, ['/contents/en']]);

  const fits = await post({ include_external_user_ids: ['ios'], contents, data: { x: 'y'.repeat(2048 - 8) } });
  t.equal(fits.status, 201, 'data of exactly 2048 bytes is taken');
  const large = await post({ include_external_user_ids: ['ios'], contents, data: { x: 'y'.repeat(2048 - 7) } });
  t.same([large.status, paths(large)], [400, ['/data']]);
  // Written as text: nested this deep, the test's own JSON.stringify would run out of stack.
  const deep = `{"include_external_user_ids":["ios"],"contents":{"en":"x"},"data":${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}}`;
  const nested = await fetch(`${gw.url}/api/notifications`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.project.rest_key}`, 'content-type': 'application/json' },
    body: deep,
  });
  const nestedBody = (await nested.json()) as { errors: { path: string }[] };
  t.same([nested.status, nestedBody.errors.map((e) => e.path)], [400, ['/data']], 'data nested too deep to serialise is a 400, not a 500');

  const unknown = await post({ included_segments: ['All', 'nope'], excluded_segments: ['gone'], contents });
  t.same([unknown.status, paths(unknown)], [400, ['/included_segments/1', '/excluded_segments/0']]);
  t.match((unknown.body as { errors: { message: string }[] }).errors[0]?.message, /"nope"/);

  const badFilter = await post({ filters: [{ field: 'tag', key: 'plan', relation: 'like', value: 'g' }], contents });
  t.same([badFilter.status, paths(badFilter)], [400, ['/filters/0/relation']]);

  const extra = await post({ include_external_user_ids: ['ios'], contents, colour: 'red' });
  t.same([extra.status, paths(extra)], [400, ['/colour']]);
});

t.test('segments and filters: recipients are the matching users with a live subscription of the channel', async (t) => {
  const count = async (body: object): Promise<number> => (await created({ ...body, contents })).recipients;
  const gold = [{ field: 'tag', key: 'plan', relation: '=', value: 'gold' }];
  // docs/api.md#the-201-answer: recipients are the users that will get a delivery attempt; b (gold) has no subscription.
  t.equal(await count({ filters: gold }), 2, 'PUSH: a and d');
  t.equal(await count({ filters: gold, channel: 'EMAIL' }), 1, 'EMAIL: d');
  t.equal(await count({ filters: gold, channel: 'SMS' }), 0, "SMS: nobody (x is another project's)");
  const either = [...gold, { operator: 'OR' }, { field: 'tag', key: 'plan', relation: '=', value: 'silver' }];
  t.equal(await count({ filters: either, channel: 'EMAIL' }), 2, 'each OR group reachable on EMAIL: d, c');
  t.equal(await count({ filters: either, channel: 'SMS' }), 1, 'each OR group reachable on SMS: e');
  t.equal(await count({ filters: [{ field: 'subscription', type: 'SMS' }], channel: 'EMAIL' }), 0, 'an SMS user is no EMAIL recipient');
  // All: a live subscription of the notification's channel.
  t.equal(await count({ included_segments: ['All'] }), 3, 'PUSH: a, d, e (c has EMAIL only)');
  t.equal(await count({ included_segments: ['All'], channel: 'EMAIL' }), 2, 'EMAIL: c, d');
  t.equal(await count({ included_segments: ['All'], channel: 'SMS' }), 1, 'SMS: e');
  t.equal(await count({ included_segments: ['silver'] }), 1, 'PUSH: e (c has EMAIL only)');
  t.equal(await count({ included_segments: ['gold', 'silver'] }), 3, 'the union: a, d, e');
  t.equal(await count({ included_segments: ['gold', 'All', 'gold'], channel: 'EMAIL' }), 2, 'c, d; d counted once');
  t.equal(await count({ included_segments: ['gold', 'All', 'gold'] }), 3, 'a, d, e; each counted once');
  t.equal(await count({ included_segments: ['All'], excluded_segments: ['gold'], channel: 'EMAIL' }), 1, 'c');
  t.equal(await count({ included_segments: ['All'], excluded_segments: ['gold'] }), 1, 'e');
  t.equal(await count({ included_segments: ['gold'], excluded_segments: ['silver'], channel: 'EMAIL' }), 1, 'd');
  t.equal(await count({ included_segments: ['gold'], excluded_segments: ['All'] }), 0, 'All holds every reachable user');
  t.equal(await count({ included_segments: ['silver'], excluded_segments: ['silver', 'gold'] }), 0);

  const body = await created({ included_segments: ['gold', 'gold'], excluded_segments: ['silver'], contents, channel: 'SMS' });
  const { spec } = await stored(body.id);
  t.same([spec.channel, spec.included_segments, spec.excluded_segments, spec.external_ids, spec.filters], ['SMS', ['gold'], ['silver'], null, null]);
  t.same(body.errors, { invalid_external_user_ids: [] });
});

t.test('the fan-out walks the users it counted: the matching users with a live subscription of the channel', async (t) => {
  const sources = { clickhouse: () => gw.store.get(), segments: new SegmentStore(gw.redis, gw.topology) };
  const walked = async (body: object): Promise<{ recipients: number; ids: string[] }> => {
    const answer = await created({ ...body, contents });
    const ids: string[] = [];
    await walkAudience((await stored(answer.id)).spec, '', sources, async (chunk) => {
      ids.push(...chunk);
    });
    return { recipients: answer.recipients, ids };
  };
  const gold = [{ field: 'tag', key: 'plan', relation: '=', value: 'gold' }];
  t.same(await walked({ filters: gold }), { recipients: 2, ids: ['a', 'd'] }, 'PUSH filters: not b');
  t.same(await walked({ filters: gold, channel: 'EMAIL' }), { recipients: 1, ids: ['d'] }, 'EMAIL filters');
  t.same(await walked({ included_segments: ['gold', 'silver'] }), { recipients: 3, ids: ['a', 'd', 'e'] }, 'PUSH segments');
  t.same(await walked({ included_segments: ['All'], excluded_segments: ['gold'], channel: 'EMAIL' }), { recipients: 1, ids: ['c'] }, 'EMAIL All minus gold');
  t.same(await walked({ included_segments: ['silver'], channel: 'SMS' }), { recipients: 1, ids: ['e'] }, 'SMS segment');
});

t.test('idempotency_key: a repeat answers the same and creates nothing; another body is 409', async (t) => {
  const body = { include_external_user_ids: ['ios'], contents, idempotency_key: 'order-1', data: { a: 1, b: [1, 2] } };
  const first = await post(body);
  t.equal(first.status, 201);
  const id = (first.body as NotificationCreated).id;
  const reordered = await post({ data: { b: [1, 2], a: 1 }, idempotency_key: 'order-1', contents, include_external_user_ids: ['ios'] });
  t.same([reordered.status, reordered.body], [201, first.body], 'the same body, its keys in another order');
  t.equal((await logged()).filter((n) => n === id).length, 1, 'one stream entry');

  const conflict = await post({ ...body, contents: { en: 'Other' } });
  t.same([conflict.status, (conflict.body as { errors: { code: string; path: string }[] }).errors], [409, [{ code: 'idempotency_conflict', message: 'idempotency_key: used before with a different body', path: '/idempotency_key' }]]);

  const elsewhere = await post(body, other.rest_key);
  t.equal(elsewhere.status, 201, 'keys are per project');
  t.not((elsewhere.body as NotificationCreated).id, id);
});

t.test('concurrent first requests with one idempotency_key create one notification', async (t) => {
  const before = new Set(await logged());
  const body = { include_external_user_ids: ['ios', 'mail'], contents, idempotency_key: 'race' };
  const answers = await Promise.all(Array.from({ length: 8 }, () => post(body)));
  t.same(new Set(answers.map((a) => a.status)), new Set([201]));
  t.equal(new Set(answers.map((a) => JSON.stringify(a.body))).size, 1, 'one answer');
  const added = (await logged()).filter((n) => !before.has(n));
  t.same(added, [(answers[0]?.body as NotificationCreated).id], 'one stream entry');
});

t.test('send_after in the future: scheduled, in the scheduled set, not on the stream', async (t) => {
  const when = new Date(Date.now() + 3_600_000);
  const body = await created({ include_external_user_ids: ['ios'], contents, send_after: when.toISOString() });
  t.equal(body.status, 'scheduled');
  t.equal(Number(await gw.redis.zscore(gw.topology.own(NotificationKeys).scheduled(), body.id)), when.getTime());
  t.notOk((await logged()).includes(body.id));
  t.equal((await stored(body.id)).state, 'scheduled');

  const view = await get(body.id);
  t.match(view.body, { status: 'scheduled', send_after: when.toISOString(), canceled: false });

  const past = await created({ include_external_user_ids: ['ios'], contents, send_after: '2020-01-01T00:00:00+02:00' });
  t.equal(past.status, 'queued', 'a send_after passed is sent now');
  t.equal((await stored(past.id)).spec.send_after, Date.parse('2019-12-31T22:00:00Z'));
  const leap = await created({ include_external_user_ids: ['ios'], contents, send_after: '2016-12-31T23:59:60Z' });
  t.equal((await stored(leap.id)).spec.send_after, Date.parse('2017-01-01T00:00:00Z'), 'a leap second is the next minute');
  const beyond = await post({ include_external_user_ids: ['ios'], contents, send_after: '9999-12-31T23:00:00-05:00' });
  t.same([beyond.status, paths(beyond)], [400, ['/send_after']], 'past year 9999 in UTC');
});

t.test('GET: the status from the record and counters, receipts counted from ClickHouse', async (t) => {
  const body = await created({ include_external_user_ids: ['ios'], contents, channel: 'PUSH' });
  const { spec } = await stored(body.id);
  const view = await get(body.id);
  t.equal(view.status, 200);
  t.same(view.body, {
    id: body.id,
    channel: 'PUSH',
    status: 'queued',
    recipients: 1,
    created_at: new Date(spec.created_at).toISOString(),
    send_after: null,
    completed_at: null,
    canceled: false,
    counts: { sent: 0, failed: 0, skipped: 0, delivered: 0, opened: 0, clicked: 0 },
    successful: 0,
    failed: 0,
    errored: 0,
    converted: 0,
    received: 0,
    remaining: 1,
    queued_at: Math.floor(spec.created_at / 1000),
    platform_delivery_stats: {},
  });

  // What the fan-out and dispatch would write: sending, then every job done.
  await notifications().start(body.id);
  await gw.redis.hset(gw.topology.own(NotificationKeys).notificationCounts(0, body.id), { jobs: 2, done: 1, sent: 1, last_at: base });
  await gw.redis.hset(gw.topology.own(NotificationKeys).notificationCounts(3, body.id), { jobs: 1, done: 1, skipped: 1, last_at: base + 5 });
  t.match((await get(body.id)).body, { status: 'sending', completed_at: null, counts: { sent: 1, skipped: 1 } });
  await notifications().finishFanout((await stored(body.id)).spec);
  t.match((await get(body.id)).body, { status: 'sending' }, 'fanned, one job still to do');
  await gw.redis.hset(gw.topology.own(NotificationKeys).notificationCounts(0, body.id), { done: 2, failed: 1 });
  const p = gw.project.project_id;
  const receipt = (id: string, kind: string, n: number) => ({ project: p, svc_message_id: body.id, external_id: id, receipt: kind, stream_id: `${n}-0`, at: base + n });
  await insertRows(gw.clickhouse, 'receipts', [
    receipt('ios', 'delivered', 1),
    receipt('ios', 'delivered', 2),
    receipt('ios', 'opened', 3),
    receipt('u2', 'clicked', 4),
    receipt('u3', 'delivered', 5),
    { ...receipt('ios', 'clicked', 6), svc_message_id: 'another' },
  ]);
  const done = (await get(body.id)).body as NotificationView;
  t.same([done.status, done.completed_at, done.canceled], ['completed', new Date(base + 5).toISOString(), false]);
  t.same(done.counts, { sent: 1, failed: 1, skipped: 1, delivered: 3, opened: 2, clicked: 1 }, 'each user once, a later stage counting as the earlier');
  t.match(done, { successful: 1, failed: 1, errored: 1, converted: 1, received: 3, remaining: 0 }, "OneSignal's names of the counts");

  // Delivery records per platform: last attempts by status, users sent to with a receipt.
  const row = (i: number, overrides: Partial<DeliveryRow>): DeliveryRow => deliveryRow(p, i, { notification_id: body.id, at: Date.now(), retrying: false, ...overrides });
  await insertRows(gw.clickhouse, 'message_deliveries', [
    row(1, { external_id: 'ios', subscription_type: 'IOS_PUSH', status: 'sent' }),
    row(2, { external_id: 'u2', subscription_type: 'ANDROID_PUSH', status: 'failed', retrying: true }),
    row(3, { external_id: 'u2', subscription_type: 'ANDROID_PUSH', status: 'failed' }),
    row(4, { external_id: 'u3', subscription_type: 'WEB_PUSH', status: 'skipped' }),
    row(5, { external_id: 'u4', subscription_type: null, status: 'skipped' }),
    row(6, { external_id: 'ios', subscription_type: 'EMAIL', status: 'sent', notification_id: 'another' }),
  ]);
  const zero = { successful: 0, failed: 0, errored: 0, converted: 0, received: 0 };
  t.same(((await get(body.id)).body as NotificationView).platform_delivery_stats, {
    ios: { ...zero, successful: 1, received: 1 },
    android: { ...zero, errored: 1 },
    web_push: { ...zero, failed: 1 },
  });
  const withStats = (await get(body.id)).body as NotificationView;

  const again = await cancel(body.id);
  t.same([again.status, again.body], [200, { ...withStats, success: true }], 'cancelling a completed notification changes nothing');
});

t.test('platform_delivery_stats: counted from the projection; without a receipt none received', async (t) => {
  const body = await created({ include_external_user_ids: ['ios'], contents, channel: 'PUSH' });
  const p = gw.project.project_id;
  const row = (i: number, overrides: Partial<DeliveryRow>): DeliveryRow => deliveryRow(p, 100 + i, { notification_id: body.id, at: Date.now(), retrying: false, ...overrides });
  // Two parts: the counts add up across them.
  await insertRows(gw.clickhouse, 'message_deliveries', [
    row(1, { external_id: 'ios', subscription_type: 'IOS_PUSH', status: 'sent' }),
    row(2, { external_id: 'u2', subscription_type: 'IOS_PUSH', status: 'failed', retrying: true }),
  ]);
  await insertRows(gw.clickhouse, 'message_deliveries', [
    row(3, { external_id: 'u2', subscription_type: 'IOS_PUSH', status: 'sent' }),
    row(4, { external_id: 'u3', subscription_type: 'IOS_PUSH', status: 'skipped', retrying: true }),
    row(5, { external_id: 'u4', subscription_type: 'SMS', status: 'failed' }),
  ]);
  const zero = { successful: 0, failed: 0, errored: 0, converted: 0, received: 0 };
  t.same(((await get(body.id)).body as NotificationView).platform_delivery_stats, { ios: { ...zero, successful: 2, failed: 1 }, sms: { ...zero, errored: 1 } });

  await insertRows(gw.clickhouse, 'receipts', [{ project: p, svc_message_id: body.id, external_id: 'u2', receipt: 'clicked', stream_id: '1-0', at: Date.now() }]);
  const withReceipt = { ios: { ...zero, successful: 2, failed: 1, received: 1, converted: 1 }, sms: { ...zero, errored: 1 } };
  t.same(((await get(body.id)).body as NotificationView).platform_delivery_stats, withReceipt, 'a receipt counts its user');

  // A page of the list counts each notification of it on its own, in the same queries.
  const next = await created({ include_external_user_ids: ['ios'], contents, channel: 'PUSH' });
  await insertRows(gw.clickhouse, 'message_deliveries', [
    deliveryRow(p, 110, { notification_id: next.id, external_id: 'u2', subscription_type: 'ANDROID_PUSH', status: 'sent', at: Date.now(), retrying: false }),
  ]);
  await insertRows(gw.clickhouse, 'receipts', [{ project: p, svc_message_id: next.id, external_id: 'u3', receipt: 'delivered', stream_id: '2-0', at: Date.now() }]);
  const listed = (await call(`${gw.url}/api/notifications?limit=2`, 'GET', gw.project.rest_key)).body as { notifications: NotificationView[] };
  t.same(
    listed.notifications.map((n) => [n.id, n.platform_delivery_stats, n.counts.delivered]),
    [
      [next.id, { android: { ...zero, successful: 1 } }, 1],
      [body.id, withReceipt, 1],
    ],
    "a receipt of another user is no platform's; each notification keeps its own",
  );

  const plan = await gw.clickhouse.query({ query: `EXPLAIN projections = 1 ${QueryFile.load('notification-platform-counts').text([])}`, query_params: { project: p, ids: [body.id, next.id] }, format: 'JSONEachRow' });
  const reads = (await plan.json<{ explain: string }>()).flatMap(({ explain }) => /ReadFromMergeTree \((?:\w+\.)?(.+)\)/.exec(explain)?.[1] ?? []);
  t.same(reads, ['counts_by_notification'], 'the counts read the projection, not the records');
});

t.test('DELETE cancels: status canceled, out of the scheduled set; twice is fine', async (t) => {
  const scheduled = await created({ include_external_user_ids: ['ios'], contents, send_after: new Date(Date.now() + 60_000).toISOString() });
  const before = Date.now();
  const canceled = await cancel(scheduled.id);
  t.equal(canceled.status, 200);
  t.match(canceled.body, { id: scheduled.id, status: 'canceled', canceled: true, completed_at: null });
  t.equal(await gw.redis.zscore(gw.topology.own(NotificationKeys).scheduled(), scheduled.id), null);
  const at = (await stored(scheduled.id)).canceledAt ?? 0;
  t.ok(at >= before && at <= Date.now(), 'the cancel time for dispatch to check');
  t.ok(await notifications().isCanceled(scheduled.id));

  const twice = await cancel(scheduled.id);
  t.same([twice.status, twice.body], [200, canceled.body]);
  t.equal((await stored(scheduled.id)).canceledAt, at, 'the first cancel time is kept');
  t.same({ ...((await get(scheduled.id)).body as object), success: true }, canceled.body, 'GET answers the same body, without success');

  const queued = await created({ include_external_user_ids: ['ios'], contents });
  t.match((await cancel(queued.id)).body, { status: 'canceled', canceled: true });
});

t.test("404 for an unknown id and for another project's notification", async (t) => {
  const mine = await created({ include_external_user_ids: ['ios'], contents });
  for (const [what, answer] of [
    ['GET unknown', await get('no-such-id')],
    ['DELETE unknown', await cancel('no-such-id')],
    ['GET other project', await get(mine.id, other.rest_key)],
    ['DELETE other project', await cancel(mine.id, other.rest_key)],
  ] as const) {
    t.same([answer.status, answer.body], [404, { errors: [{ code: 'not_found', message: 'Not found.' }] }], what);
  }
  t.equal((await stored(mine.id)).canceledAt, null, "another project's DELETE changed nothing");
  t.equal((await get('x'.repeat(129))).status, 400, 'an id is at most 128 characters');
});

t.test('REST keys only: an SDK key is 403, no key 401', async (t) => {
  const mine = await created({ include_external_user_ids: ['ios'], contents });
  for (const answer of [await post({ include_external_user_ids: ['ios'], contents }, gw.project.sdk_key), await get(mine.id, gw.project.sdk_key), await cancel(mine.id, gw.project.sdk_key)]) {
    t.equal(answer.status, 403);
    t.match(answer.body, { errors: [{ code: 'wrong_key_type' }] });
  }
  t.equal((await call(`${gw.url}/api/notifications/${mine.id}`, 'GET', null)).status, 401);
});

t.test('a repeat repairs a claim whose first request died before writing, and waits on a fresh one', async (t) => {
  const p = gw.project.project_id;
  const claimOf = (key: string, id: string, at: number): [string, Omit<Claim, 'answer'> & { answer: object }] => {
    const body = { include_external_user_ids: ['ios'], contents, idempotency_key: key };
    const spec: NotificationSpec = {
      id,
      project: p,
      channel: 'PUSH',
      headings: null,
      contents,
      data: { svc_message_id: id },
      ttl: 259200,
      priority: 'high',
      collapse_id: null,
      throttle_rate_per_minute: 0,
      external_ids: ['ios'],
      included_segments: null,
      excluded_segments: [],
      filters: null,
      created_at: at,
      send_after: null,
    };
    // As 0.7 stored it: no external_id, no warnings.
    const answer = { id, svc_message_id: id, recipients: 1, status: 'queued', errors: { invalid_external_user_ids: [] } };
    return [gw.topology.own(NotificationKeys).notificationIdempotency(p, key), { id, hash: bodyHash(body), answer, spec, at }];
  };

  // The first request claimed the key a minute ago and never wrote its notification.
  const [staleKey, stale] = claimOf('crashed', 'crashed-id', Date.now() - 60_000);
  await gw.redis.set(staleKey, JSON.stringify(stale), 'EX', 100);
  const repaired = await post({ include_external_user_ids: ['ios'], contents, idempotency_key: 'crashed' });
  const answered = { ...stale.answer, external_id: null, warnings: [] };
  t.same([repaired.status, repaired.body], [201, answered]);
  t.same((await stored('crashed-id')).spec, stale.spec, 'written from the claim');
  t.equal((await logged()).filter((n) => n === 'crashed-id').length, 1);
  t.equal((JSON.parse((await gw.redis.get(staleKey)) ?? '{}') as Claim).written, true);
  t.ok((await gw.redis.ttl(staleKey)) > 90, 'the expiry is kept');
  t.same((await post({ include_external_user_ids: ['ios'], contents, idempotency_key: 'crashed' })).body, answered);
  t.equal((await logged()).filter((n) => n === 'crashed-id').length, 1, 'written once');

  // A claim just made: its request may still be writing, so a repeat waits, then says retry.
  const [freshKey, fresh] = claimOf('in-flight', 'in-flight-id', Date.now());
  await gw.redis.set(freshKey, JSON.stringify(fresh), 'EX', 100);
  const started = Date.now();
  const busy = await post({ include_external_user_ids: ['ios'], contents, idempotency_key: 'in-flight' });
  t.same([busy.status, busy.headers.get('retry-after'), (busy.body as { errors: { code: string }[] }).errors[0]?.code], [503, '1', 'unavailable']);
  t.ok(Date.now() - started >= 1900, 'after waiting for the first request');
  t.equal(await notifications().exists('in-flight-id'), false, 'nothing written');
});

// Last: it closes the process's ClickHouse.
t.test('without ClickHouse: segment targeting answers 503; user ids, GET and DELETE still work', async (t) => {
  const mine = await created({ include_external_user_ids: ['ios'], contents });
  await gw.store.close();
  const view = await get(mine.id);
  t.match([view.status, view.body], [200, { id: mine.id, recipients: 1, counts: { sent: 0, delivered: 0 }, received: 0 }], 'GET answers from Redis');
  t.notOk('platform_delivery_stats' in (view.body as object), 'without platform_delivery_stats');
  t.match([(await cancel(mine.id)).body], [{ status: 'canceled', success: true }], 'DELETE too');
  for (const answer of [await post({ included_segments: ['All'], contents }), await post({ filters: [{ field: 'subscription', type: 'SMS' }], contents })]) {
    t.same([answer.status, answer.headers.get('retry-after'), (answer.body as { errors: { code: string }[] }).errors[0]?.code], [503, '1', 'unavailable']);
  }
  t.equal((await post({ include_external_user_ids: ['ios'], contents })).status, 201);
  t.equal((await get('no-such-id')).status, 404, 'an unknown id is still 404');
});
