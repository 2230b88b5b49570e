import t from 'tap';
import { ALL_ROLES, register, stage, until } from '../helpers/broadcast.ts';
import { call, eventually } from '../helpers/http.ts';
import { WebhookReceiver, type Received } from '../helpers/webhook-receiver.ts';

/**
 * Webhooks against real processes: the engine with the webhooks role, the provider simulators and
 * a receiver on loopback that verifies every signature with the standardwebhooks package
 * (docs/api.md#webhooks).
 */

const s = await stage(t, [...ALL_ROLES, 'webhooks'], { WEBHOOK_BACKOFF_MS: '100', WEBHOOK_BACKOFF_MAX_MS: '400', KEY_CACHE_MS: '0' });
await register(s, 10); // users u0, u1, u2, u5, u6, u7 have a push subscription
const api = (path: string, method = 'GET', body?: unknown) => call(`${s.engine.url}${path}`, method, s.rest, body);

interface Created {
  id: string;
  secret: string;
}

async function endpoint(receiver: WebhookReceiver, events: string[]): Promise<Created> {
  const answer = await api('/api/webhooks', 'POST', { url: receiver.url, events });
  if (answer.status !== 201) throw new Error(`POST /api/webhooks answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  const created = answer.body as Created;
  receiver.secret = created.secret;
  return created;
}

async function broadcast(users: string[]): Promise<string> {
  const answer = await api('/api/notifications', 'POST', { include_external_user_ids: users, contents: { en: 'hi' } });
  if (answer.status !== 201) throw new Error(`POST /api/notifications answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return (answer.body as { id: string }).id;
}

const about = (id: string) => (e: Received) => e.data['notification_id'] === id || e.data['id'] === id;
const ALL = ['delivery.sent', 'delivery.failed', 'delivery.skipped', 'receipt.delivered', 'receipt.opened', 'receipt.clicked', 'notification.completed', 'notification.canceled', 'subscription.retired', 'user.opted_out'];

t.test('every event signed, once, the end after the deliveries', async (t) => {
  const receiver = new WebhookReceiver();
  await receiver.up();
  t.teardown(() => receiver.down());
  await endpoint(receiver, ALL);
  const users = ['u0', 'u1', 'u2'];
  const id = await broadcast(users);
  await until(s, id);
  const completed = await eventually('notification.completed', async () => receiver.of('notification.completed').find(about(id)));
  const mine = receiver.accepted.filter(about(id));
  t.same(mine.filter((e) => e.type === 'delivery.sent').map((e) => e.data['external_id']).sort(), users, 'one delivery.sent per user');
  t.equal(mine[mine.length - 1], completed, 'notification.completed comes after its deliveries');
  t.match(completed.data, { id, recipients: 3, sent: 3, failed: 0, skipped: 0 });
  t.ok(receiver.accepted.every((e) => e.verified), 'every signature verifies with standardwebhooks');
  t.ok(receiver.accepted.every((e) => e.headers['webhook-id'] === e.id), 'webhook-id is the event id');
  t.equal(new Set(receiver.accepted.map((e) => e.id)).size, receiver.accepted.length, 'no event twice');
  const sent = mine.find((e) => e.type === 'delivery.sent');
  t.match(sent?.data, { notification_id: id, channel: 'PUSH', status: 'sent', attempt: 1, error_code: null }, 'the delivery record fields');

  t.equal((await api('/api/sdk/receipts', 'POST', { svc_message_id: id, external_id: 'u0', kind: 'opened' })).status, 202);
  const opened = await eventually('receipt.opened', async () => receiver.of('receipt.opened').find(about(id)));
  t.match(opened.data, { notification_id: id, external_id: 'u0', kind: 'opened' });

  t.equal((await api('/api/sdk/opt-out', 'POST', { external_id: 'u1', subscription_type: 'ANDROID_PUSH' })).status, 200);
  const optedOut = await eventually('user.opted_out', async () => receiver.of('user.opted_out').find((e) => e.data['external_id'] === 'u1'));
  t.match(optedOut.data, { external_id: 'u1', subscription_type: 'ANDROID_PUSH' });
  t.equal((await api('/api/sdk/opt-in', 'POST', { external_id: 'u1', subscription_type: 'ANDROID_PUSH' })).status, 200);
});

t.test('a receiver down for a while gets every event once, in order per notification', async (t) => {
  const receiver = new WebhookReceiver();
  await receiver.up();
  t.teardown(() => receiver.down());
  const { id: hook } = await endpoint(receiver, ['delivery.sent', 'notification.completed']);
  await receiver.down();
  const users = ['u5', 'u6', 'u7'];
  const ids = [await broadcast(users), await broadcast(users)];
  for (const id of ids) await until(s, id);
  const failing = await eventually('failures recorded', async () => {
    const view = (await api(`/api/webhooks/${hook}`)).body as { health: { failures_in_row: number; failing_since: string | null; last_error: string | null } };
    return view.health.failures_in_row >= 2 ? view.health : undefined;
  });
  t.ok(failing.failing_since, 'failing_since is shown');
  t.match(failing.last_error, /ECONNREFUSED/, `the last error says why: ${failing.last_error}`);
  await receiver.up();
  for (const id of ids) await eventually(`${id} completed event`, async () => receiver.of('notification.completed').find(about(id)));
  t.equal(new Set(receiver.accepted.map((e) => e.id)).size, receiver.accepted.length, 'each event accepted once');
  for (const id of ids) {
    const mine = receiver.accepted.filter(about(id));
    t.same(mine.filter((e) => e.type === 'delivery.sent').map((e) => e.data['external_id']).sort(), users, `${id}: every delivery`);
    t.equal(mine[mine.length - 1]?.type, 'notification.completed', `${id}: its end last`);
  }
  const health = (await api(`/api/webhooks/${hook}`)).body as { health: Record<string, unknown> };
  t.match(health.health, { state: 'active', failures_in_row: 0, failing_since: null, queued: 0, last_status_code: 200 });
});

t.test("a notification's end is told once, not again when a later one is followed", async (t) => {
  const receiver = new WebhookReceiver();
  await receiver.up();
  t.teardown(() => receiver.down());
  const { id: hook } = await endpoint(receiver, ['notification.completed']);
  const first = await broadcast(['u5']);
  await eventually(`${first} completed event`, async () => receiver.of('notification.completed').find(about(first)));
  // The watcher has told the first end; the second's end comes in a later round of it.
  const second = await broadcast(['u6']);
  await eventually(`${second} completed event, nothing queued`, async () => {
    if (receiver.of('notification.completed').find(about(second)) === undefined) return undefined;
    const view = (await api(`/api/webhooks/${hook}`)).body as { health: { queued: number } };
    return view.health.queued === 0 ? true : undefined;
  });
  t.same(receiver.accepted.map((e) => e.data['id']), [first, second], 'each end once, in turn');
});

t.test('a receiver answering 410 is disabled and sent nothing more', async (t) => {
  const receiver = new WebhookReceiver();
  await receiver.up();
  t.teardown(() => receiver.down());
  receiver.behaviour = { status: 410 };
  const { id: hook } = await endpoint(receiver, ['delivery.sent']);
  await until(s, await broadcast(['u0']));
  const health = await eventually('disabled', async () => {
    const view = (await api(`/api/webhooks/${hook}`)).body as { health: { state: string; disabled_reason: string | null } };
    return view.health.state === 'disabled' ? view.health : undefined;
  });
  t.equal(health.disabled_reason, 'gone');
  const posts = receiver.posts.length;
  t.equal(posts, 1, 'one POST, answered 410');
  await until(s, await broadcast(['u0']));
  await new Promise((resolve) => setTimeout(resolve, 1500));
  t.equal(receiver.posts.length, posts, 'nothing is sent to a disabled endpoint');
});

t.test('Retry-After is honoured and every attempt is recorded', async (t) => {
  const receiver = new WebhookReceiver();
  await receiver.up();
  t.teardown(() => receiver.down());
  receiver.behaviour = { status: 503, retryAfter: '1' };
  const { id: hook } = await endpoint(receiver, ['delivery.sent']);
  const id = await broadcast(['u2']);
  await eventually('a first POST', async () => (receiver.posts.length >= 1 ? true : undefined));
  const first = Date.now();
  await eventually('a second POST', async () => (receiver.posts.length >= 2 ? true : undefined));
  const waited = Date.now() - first;
  t.ok(waited >= 900, `the retry waited for Retry-After: ${waited} ms (backoff alone would be 50 to 100 ms)`);
  receiver.behaviour = { status: 204 };
  const event = await eventually('accepted', async () => receiver.of('delivery.sent').find(about(id)));
  t.same(new Set(receiver.posts), new Set([event.id]), 'every retry carried the same webhook-id');
  const attempts = await eventually('attempts recorded', async () => {
    const page = (await api(`/api/webhooks/${hook}/attempts`)).body as { attempts: { status: string; response_code: number | null; attempt: number; event_id: string }[] };
    return page.attempts.some((a) => a.status === 'delivered') && page.attempts.length === receiver.posts.length ? page.attempts : undefined;
  });
  t.same(attempts.map((a) => a.response_code).sort(), [...Array<number>(receiver.posts.length - 1).fill(503), 204].sort(), 'each answer recorded');
  t.same(attempts.map((a) => a.attempt).sort((a, b) => a - b), attempts.map((_, i) => i + 1), 'attempts counted from 1');
});
