import t from 'tap';
import { iosToken, register, stage, until } from '../helpers/broadcast.ts';
import { call, eventually } from '../helpers/http.ts';
import { WebhookReceiver, type Received } from '../helpers/webhook-receiver.ts';

/**
 * Webhooks under faults: the webhooks role runs in processes of its own, SIGKILLed mid-delivery;
 * a receiver that never succeeds is disabled after the retry window; a slow receiver does not
 * slow a broadcast; dead tokens and cancels reach the receiver (docs/api.md#webhooks).
 */

const WINDOW_MS = 3000;
const webhooksEnv = { WEBHOOK_BACKOFF_MS: '100', WEBHOOK_BACKOFF_MAX_MS: '300', WEBHOOK_RETRY_WINDOW_MS: String(WINDOW_MS) };
const s = await stage(t, undefined, { KEY_CACHE_MS: '0', ...webhooksEnv });
await register(s, 60);
const pushUsers = Array.from({ length: 60 }, (_, i) => i)
  .filter((i) => i % 5 < 3)
  .map((i) => `u${i}`);
const api = (path: string, method = 'GET', body?: unknown) => call(`${s.engine.url}${path}`, method, s.rest, body);
let webhooks = await s.d.start(['webhooks'], webhooksEnv);

async function endpoint(receiver: WebhookReceiver, events: string[]): Promise<string> {
  const answer = await api('/api/webhooks', 'POST', { url: receiver.url, events });
  if (answer.status !== 201) throw new Error(`POST /api/webhooks answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  const created = answer.body as { id: string; secret: string };
  receiver.secret = created.secret;
  return created.id;
}

async function broadcast(users: string[], extra: Record<string, unknown> = {}): Promise<string> {
  const answer = await api('/api/notifications', 'POST', { include_external_user_ids: users, contents: { en: 'hi' }, ...extra });
  if (answer.status !== 201) throw new Error(`POST /api/notifications answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return (answer.body as { id: string }).id;
}

const about = (id: string) => (e: Received) => e.data['notification_id'] === id || e.data['id'] === id;

t.test('the webhooks role SIGKILLed mid-delivery: every event arrives, under its one id', async (t) => {
  const receiver = new WebhookReceiver();
  await receiver.up();
  t.teardown(() => receiver.down());
  receiver.behaviour = { status: 200, delayMs: 20 };
  await endpoint(receiver, ['delivery.sent', 'notification.completed']);
  const id = await broadcast(pushUsers);
  await eventually('some events delivered', async () => (receiver.accepted.length >= 5 ? true : undefined));
  await webhooks.kill();
  const before = receiver.accepted.length;
  webhooks = await s.d.start(['webhooks'], webhooksEnv);
  await until(s, id);
  await eventually('notification.completed', async () => receiver.of('notification.completed').find(about(id)), 60_000);
  const sent = receiver.of('delivery.sent').filter(about(id));
  const distinct = new Map(sent.map((e) => [e.id, e]));
  t.same([...distinct.values()].map((e) => e.data['external_id']).sort(), [...pushUsers].sort(), 'every user\'s delivery.sent, by id');
  t.ok(receiver.accepted.every((e) => e.verified), 'every signature verifies');
  t.comment(`killed after ${before} events; ${sent.length - distinct.size} sent again after the kill, under the same ids`);
});

t.test('a receiver that never succeeds is disabled after the retry window', async (t) => {
  const receiver = new WebhookReceiver();
  await receiver.up();
  t.teardown(() => receiver.down());
  receiver.behaviour = { status: 500 };
  const hook = await endpoint(receiver, ['delivery.sent']);
  await until(s, await broadcast(['u0']));
  const health = await eventually(
    'disabled',
    async () => {
      const view = (await api(`/api/webhooks/${hook}`)).body as { health: { state: string; disabled_reason: string | null; failures_in_row: number; last_status_code: number | null } };
      return view.health.state === 'disabled' ? view.health : undefined;
    },
    30_000,
  );
  t.match(health, { disabled_reason: 'failing', last_status_code: 500 });
  t.ok(health.failures_in_row >= 3, `retried with backoff before giving up: ${health.failures_in_row} attempts`);
});

t.test('a slow receiver does not slow a broadcast', async (t) => {
  const started = Date.now();
  await until(s, await broadcast(pushUsers));
  const alone = Date.now() - started;
  const receiver = new WebhookReceiver();
  await receiver.up();
  t.teardown(() => receiver.down());
  receiver.behaviour = { status: 200, delayMs: 2000 };
  await endpoint(receiver, ['delivery.sent']);
  const slowStart = Date.now();
  const id = await broadcast(pushUsers);
  await until(s, id);
  const withSlow = Date.now() - slowStart;
  t.ok(receiver.of('delivery.sent').filter(about(id)).length < pushUsers.length, 'the broadcast completed before the receiver took its events');
  t.comment(`broadcast to ${pushUsers.length} users: ${alone} ms with no receiver, ${withSlow} ms with one answering in 2 s`);
});

t.test('dead tokens and cancels reach the receiver', async (t) => {
  const receiver = new WebhookReceiver();
  await receiver.up();
  t.teardown(() => receiver.down());
  await endpoint(receiver, ['delivery.failed', 'subscription.retired', 'notification.canceled']);
  await s.sims.apns.script({ match: { token: iosToken(55) }, respond: { status: 410, body: { reason: 'Unregistered', timestamp: Date.now() + 60_000 } } });
  const id = await broadcast(['u55']);
  const retired = await eventually('subscription.retired', async () => receiver.of('subscription.retired').find(about(id)));
  t.match(retired.data, { external_id: 'u55', subscription_type: 'IOS_PUSH', error_code: 'apns_410_Unregistered', notification_id: id });
  t.match(receiver.of('delivery.failed').find(about(id))?.data, { status: 'failed', error_code: 'apns_410_Unregistered' });

  const later = await broadcast(['u0'], { send_after: new Date(Date.now() + 3_600_000).toISOString() });
  t.equal((await api(`/api/notifications/${later}`, 'DELETE')).status, 200);
  const canceled = await eventually('notification.canceled', async () => receiver.of('notification.canceled').find(about(later)));
  t.match(canceled.data, { id: later, recipients: 1, sent: 0 });
  t.type(canceled.data['canceled_at'], 'string');
});
