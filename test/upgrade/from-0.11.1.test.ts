import t from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { ProviderStore, type Credentials } from '../../engine/state/keys/provider-store.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { readHashes, type UserHashes } from '../../engine/state/users/read-user.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import type { ProviderName } from '../../schemas/providers.ts';
import { startSimulators } from '../../simulators/index.ts';
import { deployment } from '../helpers/engine.ts';
import { call, eventually } from '../helpers/http.ts';
import { testRedis } from '../helpers/redis.ts';
import { dumpPrefix, keyNames, loadFixture, readFixture, type FixtureKey } from '../helpers/upgrade-fixture.ts';
import { WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { UserKeys } from '../../engine/state/users/redis-keys.ts';
import { WebhookKeys } from '../../engine/state/webhooks/redis-keys.ts';

/**
 * An install written by 0.11.1 (test/upgrade/fixtures/0.11.1.json, written by
 * test/upgrade/capture.ts) upgraded in place: its Redis is loaded under a fresh prefix before any
 * role starts, then the current engine runs on it. Its users, idempotency keys, notifications,
 * webhook queue, segment and template must all carry over (docs/architecture.md#upgrading-in-place).
 * ClickHouse is not carried: the test's starts empty, so an event recorded here was recorded by
 * the current engine.
 */

const fixture = readFixture('0.11.1');
const { project_id: project, sdk_key: sdk, rest_key: rest } = fixture.project;
const DAY = 24 * 60 * 60 * 1000;
const WAIT = 120_000;

const sims = await startSimulators();
t.teardown(() => sims.close());
const receiver = new WebhookReceiver();
receiver.secret = fixture.webhook.secret;
await receiver.up();
t.teardown(() => receiver.down());
const d = await deployment(t, {
  env: { PARTITIONS: String(fixture.partitions), PROVIDER_CA_FILE: sims.caFile, WEBHOOK_BACKOFF_MS: '100', WEBHOOK_BACKOFF_MAX_MS: '400' },
});
const redis = testRedis();
t.teardown(() => redis.disconnect());
const topology = new Topology(d.prefix, fixture.partitions);

const loadedAt = Date.now();
await loadFixture(redis, d.prefix, fixture);
// Read back before anything else writes: the roles started below change some of these keys.
const loaded = await dumpPrefix(redis, d.prefix, (name) => name in fixture.keys);
const readAt = Date.now();

// The capture's simulators and webhook receiver are gone: this test's take their place, as an
// operator registers the providers again on a new machine.
const providers = createRedis(loadConfig(d.env));
const store = new ProviderStore(providers, topology);
const creds: [ProviderName, Credentials][] = [
  ['apns', sims.apns.credentials()],
  ['fcm', sims.fcm.credentials()],
  ['webpush', sims.webpush.credentials()],
  ['twilio', sims.twilio.credentials()],
  ['sendgrid', sims.sendgrid.credentials()],
];
for (const [name, value] of creds) await store.set(project, name, value);
providers.disconnect();
await redis.hset(topology.own(WebhookKeys).webhook(fixture.webhook.id), 'url', receiver.url);

const startedAt = Date.now();
let apply = await d.start(['apply']);
const engine = await d.start(['gateway', 'recorder', 'fanout', 'dispatch', 'scheduler', 'webhooks']);

t.test('the fixture is of 0.11.1 and loads as it was captured', async (t) => {
  t.notOk('layout' in fixture.keys, 'no layout record: 0.11.1 wrote none');
  t.ok(Object.keys(fixture.keys).some((k) => k.startsWith('idem:')), 'idempotency markers of 0.11.1');
  t.same(Object.keys(loaded).sort(), Object.keys(fixture.keys).sort(), 'every key');
  for (const [name, captured] of Object.entries(fixture.keys)) {
    const key = loaded[name];
    if (key === undefined) continue;
    if (name === 'projects' && key.type === 'set' && captured.type === 'set') {
      t.same(key.value.filter((id) => captured.value.includes(id)), captured.value, 'projects: the fixture project beside the deployment one');
      continue;
    }
    t.same(withoutClock(key), withoutClock(captured), name);
    if (captured.ttl_ms === null) t.equal(key.ttl_ms, null, `${name}: no expiry`);
    else t.ok(key.ttl_ms !== null && key.ttl_ms <= captured.ttl_ms && key.ttl_ms > captured.ttl_ms - (readAt - loadedAt) - 1000, `${name}: its ttl, counted from the load`);
  }
});

const api = async <T>(method: string, path: string, body?: unknown, key = rest): Promise<T> => {
  const answer = await call(`${engine.url}${path}`, method, key, body);
  if (answer.status >= 300) throw new Error(`${method} ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer.body as T;
};
const event = (externalId: string, name: string, key?: string): Promise<unknown> =>
  api('POST', '/api/sdk/events', { external_id: externalId, name, ...(key === undefined ? {} : { idempotency_key: key }) }, sdk);
/** The names of a user's events recorded by this engine, sorted. */
const recorded = async (externalId: string): Promise<string[]> =>
  (await api<{ events: { name: string }[] }>('GET', `/api/events?external_id=${encodeURIComponent(externalId)}&limit=1000`)).events.map((e) => e.name).sort();
/** Waits until the event `name` of each user is recorded: per user, whatever was sent before it is applied and recorded too. */
const recordedUpTo = (externalIds: Iterable<string>, name: string): Promise<unknown> =>
  Promise.all([...externalIds].map((id) => eventually(`${name} of ${id} recorded`, async () => ((await recorded(id)).includes(name) ? true : undefined), WAIT)));

t.test('the apply role upgrades the layout: every step recorded, the users and tokens of 0.11.1 folded', async (t) => {
  // The steps of engine/state/users/layout.ts (docs/architecture.md#upgrading-in-place).
  const steps = ['idempotency', 'tokens', ...Array.from({ length: fixture.partitions }, (_, p) => `users:${p}`)];
  await eventually('every layout step recorded', async () => {
    const layout = await redis.hgetall(topology.own(UserKeys).layout());
    return steps.every((step) => layout[step] !== undefined) ? true : undefined;
  }, WAIT);
  t.pass(`the layout record names ${steps.join(', ')}`);
  for (let p = 0; p < fixture.partitions; p++) {
    const until = Number(await redis.get(topology.own(UserKeys).legacyLayoutUntil(p)));
    t.ok(until >= startedAt + 9 * DAY && until <= Date.now() + 9 * DAY, `partition ${p}: the markers of 0.11.1 read until 9 days after the upgrade`);
  }
  const names = await keyNames(redis, d.prefix);
  t.same(names.filter((n) => /^(user|tags|subs|consent|token|subid):/.test(n)), [], 'no user hash, token record or id key of 0.11.1 left');
  t.same(
    names.filter((n) => n.startsWith('idem:')),
    Object.keys(fixture.keys).filter((n) => n.startsWith('idem:')),
    'the idempotency markers of 0.11.1 left to expire',
  );
});

t.test('every user reads back as 0.11.1 answered', async (t) => {
  for (const u of fixture.users) {
    const read = await api<{ tags: unknown; subscriptions: { type: string; token_tail: string }[]; consent: Record<string, { opted_out: boolean }> }>('GET', `/api/users/${u.external_id}`);
    t.same(bySubscriptionId(read), bySubscriptionId(fixture.reads[u.external_id]), `${u.external_id}: the same answer`);
    t.same(read.tags, u.tags, `${u.external_id}: the tags written`);
    const subscriptions = (list: { type: string; tail: string }[]): string[] => list.map((s) => `${s.type} ${s.tail}`).sort();
    t.same(
      subscriptions(read.subscriptions.map((s) => ({ type: s.type, tail: s.token_tail }))),
      subscriptions(u.subscriptions.map((s) => ({ type: s.type, tail: `…${s.token.slice(-4)}` }))),
      `${u.external_id}: the subscriptions held`,
    );
    t.same(Object.keys(read.consent).filter((type) => read.consent[type]?.opted_out).sort(), u.opted_out, `${u.external_id}: the opt-outs`);
  }
  // What the view leaves out too (a web push subscription's keys, registration times): the state
  // the engine reads is the state 0.11.1 kept, field by field.
  const ghost = fixture.consent_only.external_id;
  for (const id of [...fixture.users.map((u) => u.external_id), ghost]) {
    t.same(parsed(await readHashes(redis, topology, project, id)), parsed(legacyHashes(id)), `${id}: every field of 0.11.1's four hashes`);
  }
  t.equal((await call(`${engine.url}/api/users/${ghost}`, 'GET', rest)).status, 404, `${ghost}, known by an opt-out only, is no user yet`);
});

t.test('idempotency keys of 0.11.1 still drop copies', async (t) => {
  const { sent, same_partition: same, other_partition: other } = fixture.idempotency;
  const copies = sent.filter((e) => e.recorded);
  for (const e of copies) await event(e.external_id, `${e.name}-copy`, e.key);
  await event(other.external_id, 'key-seen-for-another-partition', other.key);
  await event(same.external_id, 'key-seen-for-this-partition', same.key);
  const involved = new Set([...sent.map((e) => e.external_id), other.external_id, same.external_id]);
  for (const id of involved) await event(id, 'fresh-key', `fresh-${id}`);
  for (const id of involved) await event(id, 'barrier');
  await recordedUpTo(involved, 'barrier');
  for (const id of involved) {
    const expected = ['barrier', 'fresh-key', ...(id === other.external_id ? ['key-seen-for-another-partition'] : [])].sort();
    t.same(await recorded(id), expected, `${id}: no copy of an event 0.11.1 recorded; a new key and a key 0.11.1 saw in another partition are recorded`);
  }
  // 0.11.1 kept a key per project and partition, not per user; until its markers expire a key
  // it saw for one user still drops that key for another user of the partition (as 0.11.1 did),
  // where docs/api.md promises one event per user and key.
  t.notOk((await recorded(same.external_id)).includes('key-seen-for-this-partition'), `${same.key}, seen for ${same.seen_for}, is dropped for ${same.external_id} of the same partition`);
});

t.test('the notification in flight completes; the others read back the same', async (t) => {
  const { completed, in_flight: inFlight, scheduled } = fixture.notifications;
  const summary = (v: Record<string, unknown>): unknown => {
    const counts = v['counts'] as Record<string, unknown>;
    return { status: v['status'], recipients: v['recipients'], completed_at: v['completed_at'], send_after: v['send_after'], sent: counts['sent'], failed: counts['failed'], skipped: counts['skipped'] };
  };
  const view = await eventually('the notification in flight completed', async () => {
    const v = await api<Record<string, unknown>>('GET', `/api/notifications/${inFlight.id}`);
    return v['status'] === 'completed' ? v : undefined;
  }, WAIT);
  t.match(summary(view), { recipients: inFlight.view['recipients'], sent: inFlight.view['recipients'], failed: 0, skipped: 0 }, 'every recipient sent to');
  const sentTo = (await sims.apns.requests()).filter((r) => r.status === 200).map((r) => r.path);
  for (const u of inFlight.held) {
    const token = fixture.users.find((x) => x.external_id === u)?.subscriptions.find((s) => s.type === 'IOS_PUSH')?.token;
    t.ok(token !== undefined && sentTo.includes(`/3/device/${token}`), `${u}'s held send made again`);
  }
  const deliveries = await eventually('its new deliveries recorded', async () => {
    const { deliveries } = await api<{ deliveries: { external_id: string; status: string }[] }>('GET', `/api/deliveries?notification_id=${inFlight.id}`);
    return deliveries.length >= inFlight.held.length ? deliveries : undefined;
  }, WAIT);
  t.same(deliveries.map((r) => `${r.external_id} ${r.status}`).sort(), inFlight.held.map((u) => `${u} sent`), 'one record per held user');
  for (const n of [completed, scheduled]) t.same(summary(await api('GET', `/api/notifications/${n.id}`)), summary(n.view), `${n.id}: its status and counts`);
});

t.test('the webhook events queued by 0.11.1 are delivered, and the end of the notification in flight', async (t) => {
  const ids = fixture.webhook.queued.map((e) => e.id);
  await eventually('the queued events', async () => (ids.every((id) => receiver.accepted.some((e) => e.id === id)) ? true : undefined), WAIT);
  const id = fixture.notifications.in_flight.id;
  const done = await eventually('notification.completed', async () => receiver.of('notification.completed').find((e) => e.data['id'] === id), WAIT);
  t.match(done.data, { id, sent: fixture.notifications.in_flight.view['recipients'] });
  const sent = receiver.of('delivery.sent').filter((e) => e.data['notification_id'] === id).map((e) => String(e.data['external_id']));
  for (const u of fixture.notifications.in_flight.held) t.ok(sent.includes(u), `delivery.sent for ${u}`);
  t.ok(receiver.accepted.every((e) => e.verified), 'signed with the endpoint secret 0.11.1 made');
});

t.test('the segment and the template read back the same', async (t) => {
  t.same(await api('GET', `/api/segments/${encodeURIComponent(String(fixture.segment['name']))}`), fixture.segment);
  t.same(await api('GET', `/api/templates/${String(fixture.template['id'])}`), fixture.template);
});

t.test('a restart of the apply role changes nothing', async (t) => {
  const before = await state();
  t.ok(Object.keys(before).some((k) => k.startsWith('layout')), 'the layout record is among the keys compared');
  const kinds = new Map<string, number>();
  for (const name of Object.keys(before)) {
    const kind = name.split(':')[0] ?? '';
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  t.comment(`compared: ${[...kinds].map(([kind, n]) => `${n} ${kind}`).join(', ')}`);
  await apply.stop();
  apply = await d.start(['apply']);
  const { sent, other_partition: other } = fixture.idempotency;
  const copies = [...sent.filter((e) => e.recorded), { external_id: other.external_id, name: 'key-seen-for-another-partition', key: other.key }];
  for (const e of copies) await event(e.external_id, `${e.name}-copy-after-restart`, e.key);
  // A write in every partition a user of the fixture is in: the new process has opened each of them.
  const everywhere = [...new Map(fixture.users.map((u) => [u.partition, u.external_id])).values()];
  for (const id of everywhere) await event(id, 'barrier-after-restart');
  await recordedUpTo(everywhere, 'barrier-after-restart');
  for (const e of copies) t.notOk((await recorded(e.external_id)).includes(`${e.name}-copy-after-restart`), `${e.external_id}: the copy of ${e.key} dropped`);
  t.same(await state(), before, 'the same keys with the same values');
});

t.test("0.11.1's consent, subscription ids and token owners hold for new sends and writes", async (t) => {
  const optedOut = fixture.users.find((u) => u.opted_out.includes('EMAIL'));
  const other = fixture.users.find((u) => u.opted_out.length === 0 && u.subscriptions.some((s) => s.type === 'EMAIL'));
  if (optedOut === undefined || other === undefined) throw new Error('the fixture has no EMAIL users');
  const { id } = await api<{ id: string }>('POST', '/api/notifications', { include_external_user_ids: [optedOut.external_id, other.external_id], channel: 'EMAIL', headings: { en: 'Hi' }, contents: { en: 'After the upgrade' } });
  const deliveries = await eventually('its deliveries recorded', async () => {
    const { deliveries } = await api<{ deliveries: { external_id: string; status: string; error_code: string | null }[] }>('GET', `/api/deliveries?notification_id=${id}`);
    return deliveries.length >= 2 ? deliveries : undefined;
  }, WAIT);
  t.same(deliveries.map((r) => `${r.external_id} ${r.status} ${r.error_code}`).sort(), [`${optedOut.external_id} skipped opted_out`, `${other.external_id} sent null`].sort(), 'the opt-out of 0.11.1 skips the send');

  // A subscription id of 0.11.1, found through the token index the upgrade adopted its records into.
  type Read = { external_id: string; subscriptions: { id: string; type: string; state: string }[] };
  const live = Object.values(fixture.reads as Record<string, Read>).flatMap((r) => r.subscriptions.filter((s) => s.type === 'IOS_PUSH' && s.state === 'live').map((s) => ({ holder: r.external_id, id: s.id })));
  const subscription = live.find((s) => s.holder !== fixture.moved_token.to);
  if (subscription === undefined) throw new Error('the fixture has no live IOS_PUSH subscription');
  const byId = await api<{ id: string; recipients: number }>('POST', '/api/notifications', { include_subscription_ids: [subscription.id], contents: { en: 'By id' } });
  t.equal(byId.recipients, 1, 'the id names its subscription');
  const sentById = await eventually('its delivery recorded', async () => {
    const { deliveries } = await api<{ deliveries: { external_id: string; status: string }[] }>('GET', `/api/deliveries?notification_id=${byId.id}`);
    return deliveries.length > 0 ? deliveries : undefined;
  }, WAIT);
  t.same(sentById.map((r) => `${r.external_id} ${r.status}`), [`${subscription.holder} sent`], 'sent to its holder');

  const ghost = fixture.consent_only;
  await api('POST', '/api/sdk/users', { external_id: ghost.external_id }, sdk);
  const ghostView = await eventually(`${ghost.external_id} created`, async () => {
    const answer = await call(`${engine.url}/api/users/${ghost.external_id}`, 'GET', rest);
    return answer.status === 200 ? (answer.body as { consent: Record<string, { opted_out: boolean }> }) : undefined;
  }, WAIT);
  t.equal(ghostView.consent[ghost.subscription_type]?.opted_out, true, `the opt-out ${ghost.external_id} sent before it existed holds`);

  const { type, token, to } = fixture.moved_token;
  const next = fixture.users.find((u) => u.external_id !== to && u.external_id !== fixture.moved_token.from);
  if (next === undefined) throw new Error('the fixture has too few users');
  await api('POST', `/api/sdk/users/${next.external_id}/subscriptions`, { type, token }, sdk);
  const tail = `…${token.slice(-4)}`;
  const holds = async (externalId: string): Promise<boolean> =>
    (await api<{ subscriptions: { type: string; token_tail: string }[] }>('GET', `/api/users/${externalId}`)).subscriptions.some((s) => s.type === type && s.token_tail === tail);
  await eventually('the token moved on', async () => ((await holds(next.external_id)) && !(await holds(to)) ? true : undefined), WAIT);
  t.pass(`the token ${to} took over under 0.11.1 moved to ${next.external_id}, and ${to} lost it`);
});

/** A user's four hashes as 0.11.1 left them in the fixture. */
function legacyHashes(externalId: string): UserHashes {
  const names = topology.own(UserKeys).legacyUser(project, externalId);
  const hash = (full: string): Record<string, string> => {
    const key = fixture.keys[full.slice(d.prefix.length)];
    return key?.type === 'hash' ? key.value : {};
  };
  return { user: hash(names.user), tags: hash(names.tags), subs: hash(names.subs), consent: hash(names.consent) };
}

/** The hashes with their JSON values parsed: the same subscription or consent may be written with its fields in another order. */
function parsed(h: UserHashes): unknown {
  const json = (o: Record<string, string>): Record<string, unknown> => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, JSON.parse(v) as unknown]));
  return { user: h.user, tags: { ...h.tags }, subs: json(h.subs), consent: json(h.consent) };
}

/**
 * Every key that holds state, as DUMP serializes its value (binary values included, ttl left out):
 * all but streams and the keys of running processes, sends and webhook deliveries.
 */
async function state(): Promise<Record<string, string>> {
  const running = /^(lease|workers|applied|writer|recorder|whlease|webhook|webhooks|notif|nrate|ncount|nfan|ncancel|retry|rate|apns-token)[:]|^workers|^\{notifications\}/;
  const out: Record<string, string> = {};
  for (const name of await keyNames(redis, d.prefix)) {
    if (running.test(name) || (await redis.type(d.prefix + name)) === 'stream') continue;
    out[name] = (await redis.dumpBuffer(d.prefix + name))?.toString('base64') ?? 'gone';
  }
  return out;
}

/**
 * A user's answer with its subscriptions by id: those registered in the same millisecond come in
 * the order Redis iterates the hash, which differs from one Redis server to another.
 */
function bySubscriptionId(view: unknown): unknown {
  const v = view as { subscriptions: { id: string }[] };
  return { ...v, subscriptions: [...v.subscriptions].sort((a, b) => a.id.localeCompare(b.id)) };
}

/** A key without what changes with the clock: its remaining ttl, and the idle time of pending entries. */
function withoutClock(key: FixtureKey): unknown {
  const { ttl_ms: ttl, ...rest } = key;
  const kept = { ...rest, expires: ttl !== null };
  if (kept.type !== 'stream') return kept;
  return { ...kept, value: { ...kept.value, groups: kept.value.groups.map((g) => ({ ...g, pending: g.pending.map((p) => ({ id: p.id, consumer: p.consumer, deliveries: p.deliveries })) })) } };
}
