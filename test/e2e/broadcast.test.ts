import t from 'tap';
import { call, eventually } from '../helpers/http.ts';
import { deliveriesOf, iosToken, register, stage, type Delivery } from '../helpers/broadcast.ts';
import type { SimRequest } from '../../simulators/index.ts';
/** A broadcast through the whole engine, one process with every role, against the provider simulators. */

const body = {
  headings: { en: 'Hello', pt: 'Olá', fr: 'Bonjour' },
  contents: { en: 'Your order shipped', 'pt-BR': 'Seu pedido foi enviado', fr: 'Votre commande est partie' },
  data: { order: 'A1' },
  priority: 'normal',
  collapse_id: 'orders',
  ttl: 3600,
};

t.test('a broadcast to 1000 users across five channels reaches each simulator once, localized, each attempt recorded once', async (t) => {
  const s = await stage(t);
  const users = 1000;
  await register(s, users);
  const ids = Array.from({ length: users }, (_, i) => `u${i}`);
  const push = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { ...body, include_external_user_ids: ids.filter((_, i) => i % 5 < 3) });
  const sms = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { ...body, channel: 'SMS', include_external_user_ids: ids.filter((_, i) => i % 5 === 3) });
  const email = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { ...body, channel: 'EMAIL', include_external_user_ids: ids.filter((_, i) => i % 5 === 4) });
  t.same([push.status, sms.status, email.status], [201, 201, 201]);
  const created = [push, sms, email].map((a) => a.body as { id: string; recipients: number });
  t.same(created.map((c) => c.recipients), [600, 200, 200], 'recipients: the targeted users with a live subscription of the channel');

  for (const { id } of created) {
    const done = await eventually(`notification ${id} completed`, async () => {
      const view = (await call(`${s.engine.url}/api/notifications/${id}`, 'GET', s.rest)).body as { status: string; counts: { sent: number } };
      return view.status === 'completed' ? view : undefined;
    }, 120_000);
    t.equal(done.status, 'completed');
  }
  const views = await Promise.all(created.map(async ({ id }) => (await call(`${s.engine.url}/api/notifications/${id}`, 'GET', s.rest)).body as { counts: Record<string, number> }));
  t.same(views.map((v) => v.counts.sent), [600, 200, 200], 'every attempt sent');

  const [apns, fcm, webpush, twilio, sendgrid] = await Promise.all([s.sims.apns, s.sims.fcm, s.sims.webpush, s.sims.twilio, s.sims.sendgrid].map((sim) => sim.requests()));
  const accepted = (list: SimRequest[] | undefined): SimRequest[] => (list ?? []).filter((r) => r.status >= 200 && r.status < 300);
  t.same([apns, fcm, webpush, twilio, sendgrid].map((l) => accepted(l).length), [200, 200, 200, 200, 200], 'each simulator got each of its users once');

  const apnsOf = (i: number): SimRequest | undefined => accepted(apns).find((r) => r.path === `/3/device/${iosToken(i)}`);
  const ptUser = apnsOf(10);
  t.match(ptUser?.body, { aps: { alert: { title: 'Olá', body: 'Seu pedido foi enviado' } }, order: 'A1', svc_message_id: created[0]?.id }, 'pt-BR user: pt-BR body, pt title');
  t.match(ptUser?.headers, { 'apns-priority': '5', 'apns-collapse-id': 'orders', 'apns-topic': String }, 'priority and collapse id');
  t.match(apnsOf(5)?.body, { aps: { alert: { title: 'Bonjour', body: 'Votre commande est partie' } } }, 'fr user');
  t.match(apnsOf(0)?.body, { aps: { alert: { title: 'Hello', body: 'Your order shipped' } } }, 'no language: en');
  const androidMessage = accepted(fcm).find((r) => JSON.stringify(r.body).includes('fcm-token-1"'))?.body as { message: { data: Record<string, string>; android: Record<string, string> } } | undefined;
  t.match(androidMessage?.message, { data: { svc_message_id: created[0]?.id, order: 'A1' }, android: { priority: 'NORMAL', collapse_key: 'orders' } });
  t.ok(accepted(webpush).every((r) => typeof r.body === 'string' && r.body.includes(created[0]?.id ?? '?')), 'web push bodies decrypt and carry svc_message_id');
  t.ok(accepted(twilio).some((r) => JSON.stringify(r.body).includes('Your order shipped')), 'SMS body');
  t.ok(accepted(sendgrid).some((r) => JSON.stringify(r.body).includes('Hello')), 'email subject');

  const rows = await eventually('every delivery recorded', async () => {
    const all = (await Promise.all(created.map(({ id }) => deliveriesOf(s, id)))).flat();
    return all.length >= users ? all : undefined;
  }, 60_000);
  t.equal(rows.length, users, 'exactly one MessageDelivery per attempt');
  t.ok(rows.every((r) => r.status === 'sent' && r.attempt === 1));
});

t.test('a dead token is retired, a 429 is retried after Retry-After, a permanent failure is recorded once with its hint', async (t) => {
  const s = await stage(t);
  await register(s, 10);
  const dead = iosToken(0);
  await s.sims.apns.script({ match: { token: dead }, respond: { status: 410, body: { reason: 'Unregistered', timestamp: Date.now() + 60_000 } } });
  await s.sims.fcm.script({ match: { token: 'fcm-token-1' }, respond: { status: 429, headers: { 'retry-after': '1' }, body: { error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: 'quota', details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'QUOTA_EXCEEDED' }] } } }, times: 1 });
  await s.sims.apns.script({ match: { token: iosToken(5) }, respond: { status: 400, body: { reason: 'BadTopic' } } });
  const created = (await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { ...body, include_external_user_ids: ['u0', 'u1', 'u5'] })).body as { id: string };
  await eventually('completed', async () => (((await call(`${s.engine.url}/api/notifications/${created.id}`, 'GET', s.rest)).body as { status: string }).status === 'completed' ? true : undefined), 60_000);
  const rows = await eventually('recorded', async () => {
    const all = await deliveriesOf(s, created.id);
    return all.length >= 4 ? all : undefined;
  }, 60_000);
  const of = (user: string): Delivery[] => rows.filter((r) => r.external_id === user).sort((a, b) => a.attempt - b.attempt);
  t.match(of('u0'), [{ status: 'failed', error_code: 'apns_410_Unregistered', hint: /retired/i }], 'dead token: failed once');
  t.match(of('u1'), [{ status: 'failed', error_code: 'fcm_429_QUOTA_EXCEEDED', retrying: true, attempt: 1 }, { status: 'sent', attempt: 2 }], '429: retried');
  t.match(of('u5'), [{ status: 'failed', error_code: 'apns_400_BadTopic', hint: String }], 'permanent failure recorded once');
  t.equal(of('u5').length, 1);
  const fcmSends = (await s.sims.fcm.requests()).filter((r) => JSON.stringify(r.body).includes('fcm-token-1"'));
  t.ok((fcmSends[1]?.at ?? 0) - (fcmSends[0]?.at ?? 0) >= 1000, 'the retry waited for Retry-After');
  const user = await eventually('u0 retired', async () => {
    const view = (await call(`${s.engine.url}/api/users/u0`, 'GET', s.rest)).body as { subscriptions: { state: string }[] };
    return view.subscriptions[0]?.state === 'retired' ? view : undefined;
  });
  t.equal(user.subscriptions[0]?.state, 'retired', 'the subscription shows retired');
  const again = (await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { ...body, include_external_user_ids: ['u0'] })).body as { recipients: number; errors: { invalid_external_user_ids: string[] } };
  t.same([again.recipients, again.errors.invalid_external_user_ids], [0, ['u0']], 'a retired token is not a recipient again');
});
