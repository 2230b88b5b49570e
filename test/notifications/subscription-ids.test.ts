import * as OneSignal from '@onesignal/node-onesignal';
import t from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { subscriptionId } from '../../engine/state/users/subscription-ids.ts';
import { TokenIndex } from '../../engine/state/users/token-index.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { androidToken } from '../../simulators/tokens.ts';
import { deliveriesOf, iosToken, stage, until } from '../helpers/broadcast.ts';
import { call, eventually, type Answer } from '../helpers/http.ts';

/**
 * Targeting by subscription id (docs/api.md#moving-from-onesignal): the id GET /api/users shows
 * is the one a notification takes, only the subscriptions named are sent to, unknown ids are named
 * in the answer, and the view counts per platform.
 */

const s = await stage(t);
const project = s.d.project.project_id;
const phone = { a: iosToken(100), b: iosToken(101) };
const tablet = androidToken(102);
const email = 'sub2@example.com';
const subscriptions: [string, string, string][] = [
  ['u0', 'IOS_PUSH', phone.a],
  ['u0', 'IOS_PUSH', phone.b],
  ['u1', 'ANDROID_PUSH', tablet],
  ['u2', 'EMAIL', email],
];
const idOf = (type: string, token: string): string => subscriptionId(project, type as 'IOS_PUSH', token);

const batch = await call(`${s.engine.url}/api/sdk/batch`, 'POST', s.d.project.sdk_key, {
  operations: subscriptions.map(([external_id, type, token]) => ({ op: 'subscribe', external_id, type, token })),
});
if (batch.status !== 202) throw new Error(`batch answered ${batch.status}`);
// What the settle of each registration wrote, read from Redis as test/helpers/broadcast.ts register does.
const redis = createRedis(loadConfig(s.d.env));
const topology = new Topology(s.d.env['KEY_PREFIX'] ?? '', Number(s.d.env['PARTITIONS']));
try {
  await eventually('every subscription indexed', async () => {
    const found = await new TokenIndex(redis, topology).resolve(project, subscriptions.map(([, type, token]) => idOf(type, token)));
    return found.every((f) => f !== null) ? true : undefined;
  });
} finally {
  redis.disconnect();
}

function post(body: Record<string, unknown>): Promise<Answer> {
  return call(`${s.engine.url}/api/notifications`, 'POST', null, { app_id: project, ...body }, { authorization: `Key ${s.rest}` });
}

const apnsTo = async (token: string, text: string): Promise<number> =>
  (await s.sims.apns.requests()).filter((r) => r.path.endsWith(`/${token}`) && JSON.stringify(r.body).includes(text)).length;

t.test('GET /api/users shows each subscription with the id derived from its type and token', async (t) => {
  const user = (await call(`${s.engine.url}/api/users/u0`, 'GET', s.rest)).body as { subscriptions: { id: string; token_tail: string }[] };
  t.same(user.subscriptions.map((sub) => sub.id).sort(), [idOf('IOS_PUSH', phone.a), idOf('IOS_PUSH', phone.b)].sort());
  for (const sub of user.subscriptions) t.match(sub.id, /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

t.test('by subscription id: only the named subscription of a user with two gets it; an unknown id is named', async (t) => {
  const user = (await call(`${s.engine.url}/api/users/u0`, 'GET', s.rest)).body as { subscriptions: { id: string }[] };
  const second = user.subscriptions.map((sub) => sub.id).find((id) => id === idOf('IOS_PUSH', phone.b)) ?? '';
  const answer = await post({ include_subscription_ids: [second, 'no-such-id', second], contents: { en: 'Only b' } });
  t.match(answer, { status: 201, body: { recipients: 1, errors: { invalid_player_ids: ['no-such-id'] } } });
  const id = (answer.body as { id: string }).id;
  await until(s, id);
  t.equal(await apnsTo(phone.b, 'Only b'), 1, 'the targeted subscription got it once');
  t.equal(await apnsTo(phone.a, 'Only b'), 0, 'the other subscription of the user did not');
  const records = await eventually('the delivery recorded', async () => {
    const all = await deliveriesOf(s, id);
    return all.length > 0 ? all : undefined;
  });
  t.match(records, [{ external_id: 'u0', status: 'sent', subscription_type: 'IOS_PUSH' }]);

  t.equal((await call(`${s.engine.url}/api/sdk/receipts`, 'POST', s.d.project.sdk_key, { svc_message_id: id, external_id: 'u0', kind: 'clicked' })).status, 202);
  const view = await eventually('the click counted', async () => {
    const body = (await call(`${s.engine.url}/api/notifications/${id}`, 'GET', s.rest)).body as { converted: number };
    return body.converted === 1 ? body : undefined;
  });
  t.same((view as { platform_delivery_stats?: unknown }).platform_delivery_stats, { ios: { successful: 1, failed: 0, errored: 0, converted: 1, received: 1 } });
});

t.test("OneSignal's client: include_subscription_ids and include_player_ids, and platform_delivery_stats", async (t) => {
  const client = new OneSignal.DefaultApi(OneSignal.createConfiguration({ restApiKey: s.rest, baseServer: new OneSignal.ServerConfiguration(`${s.engine.url}/api`, {}) }));
  const n = new OneSignal.Notification();
  n.app_id = project;
  n.include_subscription_ids = [idOf('IOS_PUSH', phone.a), idOf('ANDROID_PUSH', tablet)];
  n.contents = { en: 'Both phones' };
  const created = await client.createNotification(n);
  await until(s, created.id ?? '');
  t.equal(await apnsTo(phone.a, 'Both phones'), 1);
  t.equal(await apnsTo(phone.b, 'Both phones'), 0);
  t.equal((await s.sims.fcm.requests()).filter((r) => JSON.stringify(r.body).includes(tablet) && JSON.stringify(r.body).includes('Both phones')).length, 1);
  const stats = await eventually('both deliveries recorded', async () => {
    const view = await client.getNotification(project, created.id ?? '');
    return view.platform_delivery_stats?.ios && view.platform_delivery_stats.android ? view.platform_delivery_stats : undefined;
  });
  t.match(stats, { ios: { successful: 1, errored: 0, failed: 0 }, android: { successful: 1, errored: 0, failed: 0 } });

  const old = await post({ include_player_ids: [idOf('IOS_PUSH', phone.a)], contents: { en: 'Old name' } });
  t.match(old, { status: 201, body: { recipients: 1, errors: { invalid_player_ids: [] } } });
  await until(s, (old.body as { id: string }).id);
  t.equal(await apnsTo(phone.a, 'Old name'), 1);
  t.equal(await apnsTo(phone.b, 'Old name'), 0);
});

t.test('no valid id: answered as a user id target with no valid user, and nothing is sent', async (t) => {
  const answer = await post({ include_subscription_ids: ['00000000-0000-8000-8000-000000000000'], contents: { en: 'Nobody' } });
  t.match(answer, { status: 201, body: { recipients: 0, status: 'queued', errors: { invalid_external_user_ids: [], invalid_player_ids: ['00000000-0000-8000-8000-000000000000'] } } });
  const view = await until(s, (answer.body as { id: string }).id);
  t.match(view, { recipients: 0, counts: { sent: 0, failed: 0, skipped: 0 } });
  t.equal((await s.sims.apns.requests()).filter((r) => JSON.stringify(r.body).includes('Nobody')).length, 0);
});

t.test('channels: from the ids, refused when they mix, the others named under target_channel', async (t) => {
  const mixed = [idOf('IOS_PUSH', phone.a), idOf('EMAIL', email)];
  const refused = await post({ include_subscription_ids: mixed, contents: { en: 'Mixed' } });
  t.match(refused, { status: 400, body: { errors: [{ code: 'validation_failed', path: '/include_subscription_ids' }] } });

  const mail = await post({ include_subscription_ids: mixed, target_channel: 'email', email_subject: 'Hello', email_body: '<p>Mail</p>' });
  t.match(mail, { status: 201, body: { recipients: 1, errors: { invalid_player_ids: [idOf('IOS_PUSH', phone.a)] } } });
  const emailOnly = await post({ include_subscription_ids: [idOf('EMAIL', email)], contents: { en: 'By its type' } });
  t.match(emailOnly, { status: 201, body: { recipients: 1 } });
  t.match((await call(`${s.engine.url}/api/notifications/${(emailOnly.body as { id: string }).id}`, 'GET', s.rest)).body, { channel: 'EMAIL' });
  await until(s, (mail.body as { id: string }).id);
  t.equal((await s.sims.sendgrid.requests()).filter((r) => JSON.stringify(r.body).includes('<p>Mail</p>')).length, 1);
});

t.test("OneSignal's token lists target the subscriptions of those tokens; an unknown token is named", async (t) => {
  const answer = await post({ include_ios_tokens: [phone.a, 'f00d'], include_android_reg_ids: [tablet], contents: { en: 'By token' } });
  t.match(answer, { status: 201, body: { recipients: 2, errors: { invalid_player_ids: ['f00d'] } } });
  await until(s, (answer.body as { id: string }).id);
  t.equal(await apnsTo(phone.a, 'By token'), 1);
  t.equal(await apnsTo(phone.b, 'By token'), 0);
  t.equal((await s.sims.fcm.requests()).filter((r) => JSON.stringify(r.body).includes('By token')).length, 1);

  // Email tokens make an email: no target_channel needed for email_subject and email_body.
  const mail = await post({ include_email_tokens: [email], email_subject: 'Token mail', email_body: '<p>Token mail</p>' });
  t.match(mail, { status: 201, body: { recipients: 1, errors: { invalid_player_ids: [] } } });
  await until(s, (mail.body as { id: string }).id);
  t.equal((await s.sims.sendgrid.requests()).filter((r) => JSON.stringify(r.body).includes('<p>Token mail</p>')).length, 1);

  // OneSignal's email_to: the same, for addresses that are EMAIL subscriptions here.
  const to = await post({ email_to: [email, 'nobody@example.com'], email_subject: 'To mail', email_body: '<p>To mail</p>' });
  t.match(to, { status: 201, body: { recipients: 1, errors: { invalid_player_ids: ['nobody@example.com'] } } });
  await until(s, (to.body as { id: string }).id);
  t.equal((await s.sims.sendgrid.requests()).filter((r) => JSON.stringify(r.body).includes('<p>To mail</p>')).length, 1);
});

t.test('consent is still checked: an opted-out targeted subscription is skipped, not sent', async (t) => {
  const out = await call(`${s.engine.url}/api/sdk/opt-out`, 'POST', s.d.project.sdk_key, { external_id: 'u1', subscription_type: 'ANDROID_PUSH' });
  t.equal(out.status, 200);
  const answer = await post({ include_subscription_ids: [idOf('ANDROID_PUSH', tablet)], contents: { en: 'Opted out' } });
  t.match(answer, { status: 201, body: { recipients: 1 } });
  const id = (answer.body as { id: string }).id;
  t.match(await until(s, id), { counts: { sent: 0, skipped: 1 } });
  t.equal((await s.sims.fcm.requests()).filter((r) => JSON.stringify(r.body).includes('Opted out')).length, 0);
  const records = await eventually('the skip recorded', async () => {
    const all = await deliveriesOf(s, id);
    return all.length > 0 ? all : undefined;
  });
  t.match(records, [{ external_id: 'u1', status: 'skipped', error_code: 'opted_out' }]);
});

t.test('an idempotency key covers the tokens: other tokens under one key are a 409', async (t) => {
  const later = new Date(Date.now() + 3_600_000).toISOString();
  const body = { include_ios_tokens: [phone.a], contents: { en: 'Keyed' }, send_after: later, idempotency_key: 'tokens-1' };
  const first = await post(body);
  t.match(first, { status: 201, body: { status: 'scheduled', recipients: 1 } });
  const again = await post(body);
  t.same([again.status, (again.body as { id: string }).id], [201, (first.body as { id: string }).id], 'the same body answers the first again');
  t.match(await post({ ...body, include_ios_tokens: [phone.b] }), { status: 409, body: { errors: [{ code: 'idempotency_conflict' }] } });
});
