import t from 'tap';
import { call, eventually } from '../helpers/http.ts';
import { deliveriesOf, register, stage, until, type Delivery, type Stage } from '../helpers/broadcast.ts';
import type { SimName, SimRequest } from '../../simulators/index.ts';

/**
 * Controls of a running broadcast, through the gateway and the provider simulators: opt-out and
 * cancel mid-broadcast, idempotency keys, send_after, throttling, receipts, segments and filters,
 * and an FCM OAuth token that expires between two broadcasts.
 *
 * Times compared: a simulator stamps each request when it arrives (Date.now() in this process),
 * and the test stamps an answer when it has read it. A request stamped after an answer reached the
 * simulator after the engine had answered: that is what the contracts forbid. A request stamped
 * before the answer was already in flight, and is allowed.
 */

// ---- helpers of this file ----
/** POST /api/notifications; its status and body. */
async function notify(s: Stage, body: Record<string, unknown>): Promise<{ status: number; body: { id: string; recipients: number; status: string; errors: { invalid_external_user_ids: string[] } } }> {
  const answer = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, body);
  return { status: answer.status, body: answer.body as { id: string; recipients: number; status: string; errors: { invalid_external_user_ids: string[] } } };
}

/** GET /api/notifications/{id}. */
async function viewOf(s: Stage, id: string): Promise<{ status: string; counts: Record<string, number>; recipients: number; canceled: boolean }> {
  return (await call(`${s.engine.url}/api/notifications/${id}`, 'GET', s.rest)).body as { status: string; counts: Record<string, number>; recipients: number; canceled: boolean };
}

/** A simulator request the provider accepted (2xx). */
const isAccepted = (r: SimRequest): boolean => r.status >= 200 && r.status < 300;

/**
 * The user (u<i>) a simulator request was for, from its token: APNs path, FCM message.token,
 * Twilio To, SendGrid recipient; web push endpoints through `webpush` (endpoint id to user, from
 * webpushUsers). Null when unknown.
 */
function userOf(sim: SimName, r: SimRequest, webpush: Map<string, string> = new Map()): string | null {
  const body = r.body as Record<string, unknown> | undefined;
  switch (sim) {
    case 'apns': {
      const m = /^\/3\/device\/([0-9a-f]+)$/.exec(r.path);
      return m?.[1] === undefined ? null : `u${parseInt(m[1].replace(/^0*f/, ''), 16)}`;
    }
    case 'fcm': {
      const token = (body?.['message'] as { token?: string } | undefined)?.token ?? '';
      return /^fcm-token-\d+$/.test(token) ? `u${token.slice('fcm-token-'.length)}` : null;
    }
    case 'twilio': {
      const to = String(body?.['To'] ?? '');
      return /^\+1555\d{7}$/.test(to) ? `u${Number(to.slice(5))}` : null;
    }
    case 'sendgrid': {
      const email = (body?.['personalizations'] as { to: { email: string }[] }[] | undefined)?.[0]?.to[0]?.email ?? '';
      const m = /^user(\d+)@example\.com$/.exec(email);
      return m?.[1] === undefined ? null : `u${m[1]}`;
    }
    case 'webpush':
      return webpush.get(r.path.split('/').pop() ?? '') ?? null;
  }
}

/**
 * Web push endpoint id to user for the WEB_PUSH users among `users` (i mod 5 = 2), read back from
 * GET /api/users: the token tail is the endpoint's last 4 characters, unique enough for a few
 * dozen users (checked).
 */
async function webpushUsers(s: Stage, endpointIds: readonly string[], users: readonly number[]): Promise<Map<string, string>> {
  const map = new Map<string, string>();
  for (const i of users.filter((u) => u % 5 === 2)) {
    const view = (await call(`${s.engine.url}/api/users/u${i}`, 'GET', s.rest)).body as { subscriptions: { type: string; token_tail: string }[] };
    const tail = view.subscriptions.find((sub) => sub.type === 'WEB_PUSH')?.token_tail.replace('…', '') ?? '?';
    const matching = endpointIds.filter((e) => e.endsWith(tail));
    if (matching.length !== 1) throw new Error(`web push tail ${tail} of u${i} matches ${matching.length} endpoints`);
    map.set(matching[0] ?? '', `u${i}`);
  }
  return map;
}

/** Every accepted request of every simulator from index `since[sim]` on, as [sim, request, user]. */
async function acceptedSends(
  s: Stage,
  since: Partial<Record<SimName, number>> = {},
  webpush: Map<string, string> = new Map(),
): Promise<{ sim: SimName; r: SimRequest; user: string | null }[]> {
  const names: SimName[] = ['apns', 'fcm', 'webpush', 'twilio', 'sendgrid'];
  const lists = await Promise.all(names.map((n) => s.sims[n].requests()));
  return names.flatMap((sim, k) => (lists[k] ?? []).slice(since[sim] ?? 0).filter(isAccepted).map((r) => ({ sim, r, user: userOf(sim, r, webpush) })));
}

/** How many requests each simulator has received so far (a `since` for acceptedSends). */
async function requestCounts(s: Stage): Promise<Record<SimName, number>> {
  const names: SimName[] = ['apns', 'fcm', 'webpush', 'twilio', 'sendgrid'];
  const lists = await Promise.all(names.map((n) => s.sims[n].requests()));
  return Object.fromEntries(names.map((n, k) => [n, lists[k]?.length ?? 0])) as Record<SimName, number>;
}

const body = { headings: { en: 'Hi' }, contents: { en: 'Control test' } };
const SMS_USERS = (count: number): number[] => Array.from({ length: count }, (_, i) => i).filter((i) => i % 5 === 3);

async function twilioSends(s: Stage): Promise<SimRequest[]> {
  return (await s.sims.twilio.requests()).filter(isAccepted);
}

/** Records of a notification once there are `count` of them (none is written twice: checked by the callers). */
async function recordsOf(s: Stage, id: string, count: number): Promise<Delivery[]> {
  return eventually(
    `${count} delivery records of ${id}`,
    async () => {
      const rows = await deliveriesOf(s, id);
      return rows.length >= count ? rows : undefined;
    },
    60_000,
  );
}

t.test('opt-out confirmed during a throttled broadcast: no send to that user after the answer; skipped opted_out', async (t) => {
  const s = await stage(t);
  await register(s, 50);
  const users = SMS_USERS(50); // 10 SMS users
  // 1 send a second (burst 1): the users still waiting for a token have not read their consent yet.
  const created = await notify(s, { ...body, channel: 'SMS', throttle_rate_per_minute: 60, include_external_user_ids: users.map((i) => `u${i}`) });
  t.equal(created.status, 201);
  const id = created.body.id;
  await eventually('two sends reached twilio', async () => ((await twilioSends(s)).length >= 2 ? true : undefined), 60_000);
  const reached = new Set((await twilioSends(s)).map((r) => userOf('twilio', r)));
  const victims = users
    .map((i) => `u${i}`)
    .filter((u) => !reached.has(u))
    .slice(-4);
  t.equal(victims.length, 4, 'four users not sent yet');
  const answered = new Map<string, number>();
  await Promise.all(
    victims.map(async (u) => {
      const answer = await call(`${s.engine.url}/api/sdk/opt-out`, 'POST', s.d.project.sdk_key, { external_id: u, subscription_type: 'SMS' });
      answered.set(u, Date.now());
      t.equal(answer.status, 200, `opt-out of ${u} answered 200`);
      t.match(answer.body, { external_id: u, subscription_type: 'SMS', opted_out: true });
    }),
  );
  const view = await until(s, id, 'completed', 120_000);
  t.equal((view.counts['sent'] ?? 0) + (view.counts['skipped'] ?? 0), users.length, 'every user counted once');

  const sends = await twilioSends(s);
  for (const u of victims) {
    const late = sends.filter((r) => userOf('twilio', r) === u && r.at > (answered.get(u) ?? 0));
    t.same(late, [], `no send to ${u} reached twilio after its opt-out answer`);
  }
  const rows = await recordsOf(s, id, users.length);
  t.equal(rows.length, users.length, 'one record per user');
  const skipped: string[] = [];
  for (const u of victims) {
    const mine = rows.filter((r) => r.external_id === u);
    const sentBefore = sends.some((r) => userOf('twilio', r) === u);
    // A victim whose send was already in flight (stamped before the answer) is `sent`; every other is skipped.
    if (sentBefore) t.match(mine, [{ status: 'sent' }], `${u}: its send was in flight before the answer`);
    else {
      t.match(mine, [{ status: 'skipped', error_code: 'opted_out', subscription_type: 'SMS', hint: String }], `${u}: skipped opted_out`);
      skipped.push(u);
    }
  }
  t.ok(skipped.length >= 3, `at least three opted-out users were pending and skipped (${skipped.join(', ')})`);
  const others = rows.filter((r) => !victims.includes(r.external_id));
  t.ok(
    others.every((r) => r.status === 'sent'),
    'the users who did not opt out were sent',
  );
  t.equal(new Set(sends.map((r) => userOf('twilio', r))).size, sends.length, 'twilio got each user at most once');
});

t.test('cancel during a throttled broadcast: no attempt starts after the answer, the rest skipped canceled', async (t) => {
  const s = await stage(t);
  await register(s, 50);
  const users = SMS_USERS(50).map((i) => `u${i}`);
  const created = await notify(s, { ...body, channel: 'SMS', throttle_rate_per_minute: 60, include_external_user_ids: users });
  t.equal(created.status, 201);
  const id = created.body.id;
  await eventually('two sends reached twilio', async () => ((await twilioSends(s)).length >= 2 ? true : undefined), 60_000);
  const canceled = await call(`${s.engine.url}/api/notifications/${id}`, 'DELETE', s.rest);
  const answeredAt = Date.now();
  t.equal(canceled.status, 200);
  t.match(canceled.body, { id, status: 'canceled', canceled: true });
  t.equal((await viewOf(s, id)).status, 'canceled', 'GET: canceled');

  // Every user was fanned out before the first send (one chunk), so each gets one record.
  const rows = await recordsOf(s, id, users.length);
  t.equal(rows.length, users.length, 'one record per user');
  const sends = (await s.sims.twilio.requests()).filter((r) => r.method === 'POST');
  const late = sends.filter((r) => r.at > answeredAt);
  t.same(late.map((r) => userOf('twilio', r)), [], 'no request reached twilio after the DELETE answer');
  const sentUsers = new Set(sends.filter(isAccepted).map((r) => userOf('twilio', r)));
  t.ok(sentUsers.size >= 2 && sentUsers.size < users.length, `some users were sent before the cancel (${sentUsers.size})`);
  for (const row of rows) {
    if (sentUsers.has(row.external_id)) t.match(row, { status: 'sent' }, `${row.external_id}: sent before the cancel`);
    else t.match(row, { status: 'skipped', error_code: 'canceled', hint: String }, `${row.external_id}: skipped canceled`);
  }
  const after = await viewOf(s, id);
  t.match(after, { status: 'canceled', canceled: true, counts: { sent: sentUsers.size, skipped: users.length - sentUsers.size } }, 'GET after: canceled, counts');
  // Nothing more arrives later either.
  await new Promise((r) => setTimeout(r, 2000));
  t.equal((await s.sims.twilio.requests()).filter((r) => r.method === 'POST').length, sends.length, 'no request later');
});

t.test('a repeated idempotency_key: same body, same answer, each user sent once; another body 409', async (t) => {
  const s = await stage(t);
  await register(s, 10);
  const push = [0, 1, 2, 5, 6, 7].map((i) => `u${i}`);
  const request = { ...body, include_external_user_ids: push, idempotency_key: 'order-42' };
  const first = await notify(s, request);
  const [second, third] = await Promise.all([notify(s, request), notify(s, { ...request })]);
  t.equal(first.status, 201);
  t.same([second.status, third.status], [201, 201]);
  t.same(second.body, first.body, 'the same 201 body');
  t.same(third.body, first.body, 'the same 201 body again');
  const other = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { ...request, contents: { en: 'Another text' } });
  t.equal(other.status, 409);
  t.match(other.body, { errors: [{ code: 'idempotency_conflict' }] });
  await until(s, first.body.id);
  const sends = await acceptedSends(s);
  t.equal(sends.length, push.length, 'one send per push user');
  t.equal(sends.filter((x) => x.sim !== 'webpush').length, new Set(sends.filter((x) => x.sim !== 'webpush').map((x) => x.user)).size, 'no user twice');
  const rows = await recordsOf(s, first.body.id, push.length);
  t.same(rows.map((r) => r.external_id).sort(), [...push].sort(), 'one record per user');
  // A repeat after completion still answers the same.
  const late = await notify(s, request);
  t.same([late.status, late.body], [201, first.body]);
  await new Promise((r) => setTimeout(r, 1000));
  t.equal((await acceptedSends(s)).length, push.length, 'nothing sent again');
});

t.test('send_after in the future: scheduled, nothing sent before it, sent after', async (t) => {
  const s = await stage(t);
  await register(s, 5);
  const sendAfter = Date.now() + 4000;
  const created = await notify(s, { ...body, include_external_user_ids: ['u0', 'u1', 'u2'], send_after: new Date(sendAfter).toISOString() });
  t.equal(created.status, 201);
  t.equal(created.body.status, 'scheduled');
  const early = await viewOf(s, created.body.id);
  if (Date.now() < sendAfter) t.equal(early.status, 'scheduled', 'GET before send_after: scheduled');
  await until(s, created.body.id);
  const sends = await acceptedSends(s);
  t.equal(sends.length, 3, 'each user sent once');
  t.ok(
    sends.every((x) => x.r.at >= sendAfter),
    `no send before send_after (${sends.map((x) => x.r.at - sendAfter).join(', ')} ms after it)`,
  );
  const rows = await recordsOf(s, created.body.id, 3);
  t.ok(
    rows.every((r) => r.status === 'sent'),
    'recorded sent',
  );
});

t.test('throttle_rate_per_minute: sends reach the provider no faster than the rate, after a burst of rate/60', async (t) => {
  const s = await stage(t);
  await register(s, 60);
  const users = SMS_USERS(60).map((i) => `u${i}`); // 12
  const rate = 120; // 2 a second, burst 2
  const burst = rate / 60;
  const created = await notify(s, { ...body, channel: 'SMS', throttle_rate_per_minute: rate, include_external_user_ids: users });
  await until(s, created.body.id);
  const times = (await twilioSends(s)).map((r) => r.at).sort((a, b) => a - b);
  t.equal(times.length, users.length, 'every user sent once');
  // A token bucket of `burst` tokens refilled at rate/60 a second hands out at most burst + k
  // tokens in any span of k/rate minutes. A request reaches the simulator a little after its token
  // was taken, later still on a loaded machine: one token's worth of slack is allowed on each
  // span. Without a throttle the twelve sends arrive within a few milliseconds of one another.
  const perTokenMs = 60_000 / rate;
  const slackMs = perTokenMs;
  const violations: string[] = [];
  for (let i = 0; i < times.length; i++) {
    for (let j = i + burst; j < times.length; j++) {
      const needed = (j - i - burst + 1) * perTokenMs - slackMs;
      const span = (times[j] ?? 0) - (times[i] ?? 0);
      if (span < needed) violations.push(`sends ${i}..${j}: ${j - i + 1} in ${span} ms (at least ${needed} ms)`);
    }
  }
  t.same(violations, [], 'no span holds more sends than the bucket allows');
});

t.test('receipts: an opened receipt shows on the delivery record and in the notification counts', async (t) => {
  const s = await stage(t);
  await register(s, 5);
  const created = await notify(s, { ...body, include_external_user_ids: ['u0', 'u1'] });
  const id = created.body.id;
  await until(s, id);
  await recordsOf(s, id, 2);
  const answer = await call(`${s.engine.url}/api/sdk/receipts`, 'POST', s.d.project.sdk_key, { external_id: 'u0', svc_message_id: id, kind: 'opened' });
  t.equal(answer.status, 202);
  const row = await eventually(
    'u0 receipt opened',
    async () => {
      const mine = (await deliveriesOf(s, id)).find((r) => r.external_id === 'u0');
      return mine?.receipt === 'opened' ? mine : undefined;
    },
    60_000,
  );
  t.match(row, { status: 'sent', receipt: 'opened' });
  const other = (await deliveriesOf(s, id)).find((r) => r.external_id === 'u1');
  t.equal(other?.receipt ?? null, null, 'the other user has no receipt');
  const view = await eventually(
    'counts show the receipt',
    async () => {
      const v = await viewOf(s, id);
      return v.counts.opened === 1 ? v : undefined;
    },
    60_000,
  );
  t.match(view.counts, { sent: 2, delivered: 1, opened: 1, clicked: 0 }, 'an open counts as delivered and opened');
});

t.test('segments, filters and All reach exactly the matching users; excluded segments are left out', async (t) => {
  const s = await stage(t);
  const n = 30;
  const all = Array.from({ length: n }, (_, i) => i);
  await register(s, n);
  const segment = async (name: string, filters: unknown[]): Promise<void> => {
    const answer = await call(`${s.engine.url}/api/segments`, 'POST', s.rest, { name, filters });
    t.equal(answer.status, 201, `segment ${name} created`);
  };
  await segment('french', [{ field: 'tag', key: 'language', relation: '=', value: 'fr' }]);
  await segment('android', [{ field: 'subscription', type: 'ANDROID_PUSH' }]);
  const french = all.filter((i) => i % 3 === 2);
  const android = all.filter((i) => i % 5 === 1);
  // The fan-out reads the users mirror, which the recorder fills: wait until it holds everyone.
  for (const [name, count] of [
    ['french', french.length],
    ['android', android.length],
    ['All', n],
  ] as const) {
    await eventually(
      `segment ${name} counts ${count}`,
      async () => {
        const c = (await call(`${s.engine.url}/api/segments/${name}/count`, 'GET', s.rest)).body as { count: number };
        return c.count === count ? true : undefined;
      },
      60_000,
    );
  }
  const names = (list: number[]): string[] => list.map((i) => `u${i}`).sort();
  const isPush = (i: number): boolean => i % 5 < 3;

  // 1. PUSH to the segment `french` minus the segment `android`.
  let since = await requestCounts(s);
  const seg = await notify(s, { ...body, included_segments: ['french'], excluded_segments: ['android'] });
  t.equal(seg.status, 201);
  await until(s, seg.body.id);
  const segSends = await acceptedSends(s, since);
  const expectedSeg = french.filter((i) => !android.includes(i));
  const webpushMap = await webpushUsers(
    s,
    segSends.filter((x) => x.sim === 'webpush').map((x) => x.r.path.split('/').pop() ?? ''),
    expectedSeg.filter(isPush),
  );
  const segUsers = (await acceptedSends(s, since, webpushMap)).map((x) => x.user ?? `?${x.sim}`).sort();
  t.same(segUsers, names(expectedSeg.filter(isPush)), 'the segment minus the excluded one, each push user once');
  // Users of the audience without a push subscription are no recipients (docs/api.md#targeting): no job, no record.
  t.equal(seg.body.recipients, expectedSeg.filter(isPush).length, 'recipients: the push users of the audience');
  const segRows = await recordsOf(s, seg.body.id, expectedSeg.filter(isPush).length);
  t.same(segRows.map((r) => r.external_id).sort(), names(expectedSeg.filter(isPush)), 'records: exactly the push users of the audience');
  t.ok(
    segRows.every((r) => r.status === 'sent'),
    'all sent',
  );

  // 2. SMS by filters: (fr AND live SMS) OR (pt-BR AND live EMAIL).
  since = await requestCounts(s);
  const filters = [
    { field: 'tag', key: 'language', relation: '=', value: 'fr' },
    { field: 'subscription', type: 'SMS' },
    { operator: 'OR' },
    { field: 'tag', key: 'language', relation: '=', value: 'pt-BR' },
    { field: 'subscription', type: 'EMAIL' },
  ];
  const byFilter = await notify(s, { ...body, channel: 'SMS', filters });
  t.equal(byFilter.status, 201);
  await until(s, byFilter.body.id);
  const filterUsers = (await acceptedSends(s, since)).map((x) => x.user ?? `?${x.sim}`).sort();
  const frenchSms = all.filter((i) => i % 3 === 2 && i % 5 === 3);
  t.same(filterUsers, names(frenchSms), 'exactly the French SMS users got an SMS');
  // The pt-BR EMAIL users match the filters but have no SMS subscription: no recipients.
  t.equal(byFilter.body.recipients, frenchSms.length, 'recipients: the SMS users the filters match');
  const filterRows = await recordsOf(s, byFilter.body.id, frenchSms.length);
  t.same(filterRows.map((r) => r.external_id).sort(), names(frenchSms), 'records: exactly the SMS users the filters match');
  t.ok(
    filterRows.every((r) => r.status === 'sent'),
    'all sent',
  );

  // 3. EMAIL to All: every user with a live EMAIL subscription.
  since = await requestCounts(s);
  const toAll = await notify(s, { ...body, channel: 'EMAIL', included_segments: ['All'] });
  t.equal(toAll.status, 201);
  await until(s, toAll.body.id);
  const allUsers = (await acceptedSends(s, since)).map((x) => x.user ?? `?${x.sim}`).sort();
  const emailUsers = all.filter((i) => i % 5 === 4);
  t.same(allUsers, names(emailUsers), 'All on EMAIL: every user with a live EMAIL subscription, once');
  t.equal(toAll.body.recipients, emailUsers.length, 'recipients: the users with a live EMAIL subscription');
  const allRows = await recordsOf(s, toAll.body.id, emailUsers.length);
  t.same(allRows.map((r) => r.external_id).sort(), names(emailUsers), 'records: the EMAIL users only');
  t.ok(
    allRows.every((r) => r.status === 'sent'),
    'all sent',
  );
  const allView = await viewOf(s, toAll.body.id);
  t.match(allView, { recipients: emailUsers.length, counts: { sent: emailUsers.length, skipped: 0 } });

  // 4. PUSH to All but the segment `android`: the iOS and web push users.
  since = await requestCounts(s);
  const allButAndroid = await notify(s, { ...body, included_segments: ['All'], excluded_segments: ['android'] });
  const expectedPush = all.filter((i) => i % 5 === 0 || i % 5 === 2);
  t.equal(allButAndroid.body.recipients, expectedPush.length, 'recipients: live push subscriptions, Android excluded');
  await until(s, allButAndroid.body.id);
  const pushSends = await acceptedSends(s, since);
  const pushMap = await webpushUsers(
    s,
    pushSends.filter((x) => x.sim === 'webpush').map((x) => x.r.path.split('/').pop() ?? ''),
    expectedPush,
  );
  t.same((await acceptedSends(s, since, pushMap)).map((x) => x.user ?? `?${x.sim}`).sort(), names(expectedPush), 'All minus android on PUSH: iOS and web push users, once');
  const pushRows = await recordsOf(s, allButAndroid.body.id, expectedPush.length);
  t.same(pushRows.map((r) => r.external_id).sort(), names(expectedPush), 'records: those users only');
});

t.test('an FCM access token expired between two broadcasts is refreshed: every Android user still gets the second', async (t) => {
  const s = await stage(t);
  await register(s, 20);
  const androids = [1, 6, 11, 16].map((i) => `u${i}`);
  const first = await notify(s, { ...body, include_external_user_ids: androids });
  await until(s, first.body.id);
  const tokensBefore = (await s.sims.fcm.tokenRequests()).length;
  t.ok(tokensBefore >= 1, 'an access token was fetched for the first broadcast');
  await s.sims.fcm.expireAccessTokens();
  const since = (await s.sims.fcm.requests()).length;
  const second = await notify(s, { ...body, include_external_user_ids: androids });
  await until(s, second.body.id);
  const sends = (await s.sims.fcm.requests()).slice(since);
  const ok = sends.filter(isAccepted);
  t.same(ok.map((r) => userOf('fcm', r)).sort(), [...androids].sort(), 'every Android user got the second broadcast once');
  t.ok(
    sends.some((r) => r.status === 401),
    'the expired token was refused (401)',
  );
  t.ok((await s.sims.fcm.tokenRequests()).length > tokensBefore, 'a new access token was fetched');
  const rows = await recordsOf(s, second.body.id, androids.length);
  t.equal(rows.length, androids.length, 'one record per user: the refresh is part of the attempt');
  t.ok(
    rows.every((r) => r.status === 'sent' && r.attempt === 1),
    'sent on the first attempt',
  );
  const firstRows = await recordsOf(s, first.body.id, androids.length);
  t.equal(firstRows.length, androids.length);
});

// Dispatch holds a slot of its provider's gate, sized to what the client runs at once, and checks
// cancel and consent with the slot in hand: a send never waits in a client queue after its check.
t.test(
  'sends queued in a provider client before an opt-out or a cancel do not go out after the answer',
  async (t) => {
    const s = await stage(t);
    await register(s, 250);
    const slow = { status: 201, body: { sid: `SM${'a'.repeat(32)}`, status: 'queued' }, delayMs: 3000 };
    await s.sims.twilio.script({ match: {}, respond: slow });
    await s.sims.sendgrid.script({ match: {}, respond: { status: 202, delayMs: 3000 } });
    const all = Array.from({ length: 250 }, (_, i) => i);

    // Opt-out: 50 SMS users, 3 s per answer.
    const sms = all.filter((i) => i % 5 === 3).map((i) => `u${i}`);
    const first = await notify(s, { ...body, channel: 'SMS', include_external_user_ids: sms });
    await eventually('a first wave of SMS', async () => ((await s.sims.twilio.requests()).length >= 1 ? true : undefined), 60_000);
    await new Promise((r) => setTimeout(r, 500));
    const reached = new Set((await s.sims.twilio.requests()).map((r) => userOf('twilio', r)));
    const victims = sms.filter((u) => !reached.has(u)).slice(-3);
    t.equal(victims.length, 3, 'three users whose SMS has not reached twilio');
    const answered = new Map<string, number>();
    await Promise.all(
      victims.map(async (u) => {
        const answer = await call(`${s.engine.url}/api/sdk/opt-out`, 'POST', s.d.project.sdk_key, { external_id: u, subscription_type: 'SMS' });
        answered.set(u, Date.now());
        t.equal(answer.status, 200);
      }),
    );
    await until(s, first.body.id);
    const smsSends = await s.sims.twilio.requests();
    for (const u of victims) {
      const late = smsSends.filter((r) => userOf('twilio', r) === u && r.at > (answered.get(u) ?? 0)).map((r) => r.at - (answered.get(u) ?? 0));
      t.same(late, [], `no SMS to ${u} after its opt-out answer (ms after: ${late.join(', ')})`);
    }

    // Cancel: 50 email users, 3 s per answer.
    const email = all.filter((i) => i % 5 === 4).map((i) => `u${i}`);
    const second = await notify(s, { ...body, channel: 'EMAIL', include_external_user_ids: email });
    await eventually('a first wave of email', async () => ((await s.sims.sendgrid.requests()).length >= 1 ? true : undefined), 60_000);
    await new Promise((r) => setTimeout(r, 500));
    const canceled = await call(`${s.engine.url}/api/notifications/${second.body.id}`, 'DELETE', s.rest);
    const answeredAt = Date.now();
    t.equal(canceled.status, 200);
    await recordsOf(s, second.body.id, email.length);
    const late = (await s.sims.sendgrid.requests()).filter((r) => r.at > answeredAt).map((r) => r.at - answeredAt);
    t.same(late, [], `no email after the DELETE answer (ms after: ${late.join(', ')})`);
  },
);
