import t, { type Test } from 'tap';
import type { SimRequest } from '../../simulators/index.ts';
import { register, stage, until } from '../helpers/broadcast.ts';
import { call, eventually, type Answer } from '../helpers/http.ts';

/**
 * Bodies written as OneSignal's API reference writes them, sent with `Authorization: Key`: each is
 * taken (every field honoured or named in `warnings`), and the provider simulators receive what
 * each honoured field asks for (docs/api.md#moving-from-onesignal).
 */

const s = await stage(t);
await register(s, 5); // u0 IOS_PUSH, u1 ANDROID_PUSH, u2 WEB_PUSH, u3 SMS, u4 EMAIL
const project = s.d.project.project_id;
const token = (user: string): string => s.tokens.get(user) ?? '';

function post(body: unknown): Promise<Answer> {
  return call(`${s.engine.url}/api/notifications`, 'POST', null, body, { authorization: `Key ${s.rest}` });
}

/** Creates, waits for completion, and answers the 201 body. */
async function sent(t: Test, body: Record<string, unknown>): Promise<{ id: string; warnings: { field: string }[] }> {
  const answer = await post({ app_id: project, ...body });
  t.equal(answer.status, 201, JSON.stringify(answer.body));
  const created = answer.body as { id: string; warnings: { field: string }[] };
  await until(s, created.id);
  return created;
}

const warned = (created: { warnings: { field: string }[] }): string[] => created.warnings.map((w) => w.field).sort();

/** The one request a simulator got for a user of this test. */
function one(t: Test, requests: SimRequest[], match: (r: SimRequest) => boolean, what: string): SimRequest | undefined {
  const found = requests.filter(match);
  t.equal(found.length, 1, `one request to ${what}`);
  return found[0];
}

t.test('push: every content option reaches APNs, FCM and Web Push as each expects it', async (t) => {
  const created = await sent(t, {
    include_aliases: { external_id: ['u0', 'u1', 'u2'] },
    target_channel: 'push',
    headings: { en: 'Sale' },
    subtitle: { en: 'Today only' },
    contents: { en: 'Half price' },
    url: 'https://example.com/sale',
    web_url: 'https://example.com/web-sale',
    ios_sound: 'ping.aiff',
    ios_badgeType: 'SetTo',
    ios_badgeCount: 3,
    thread_id: 'sales',
    ios_category: 'offer',
    ios_interruption_level: 'time_sensitive',
    ios_attachments: { banner: 'https://example.com/banner.png' },
    android_channel_id: 'offers',
    big_picture: 'https://example.com/big.png',
    chrome_web_icon: 'https://example.com/icon.png',
    chrome_web_image: 'https://example.com/image.png',
    web_buttons: [{ id: 'like', text: 'Like', url: 'https://example.com/like' }],
    priority: 10,
    buttons: [{ id: 'b1', text: 'Open' }],
    small_icon: 'ic_stat',
    is_ios: true,
  });
  t.same(warned(created), ['buttons', 'is_ios', 'small_icon']);

  const apns = one(t, await s.sims.apns.requests(), (r) => r.path.endsWith(`/${token('u0')}`), 'u0');
  t.equal(apns?.headers['apns-priority'], '10');
  t.match(apns?.body, {
    aps: {
      alert: { title: 'Sale', subtitle: 'Today only', body: 'Half price' },
      sound: 'ping.aiff',
      badge: 3,
      'thread-id': 'sales',
      category: 'offer',
      'mutable-content': 1,
      'interruption-level': 'time-sensitive',
    },
    url: 'https://example.com/sale',
    attachments: { banner: 'https://example.com/banner.png' },
  });

  const fcm = one(t, await s.sims.fcm.requests(), (r) => JSON.stringify(r.body).includes(`"token":"${token('u1')}"`), 'u1');
  t.match(fcm?.body, {
    message: {
      notification: { title: 'Sale', body: 'Half price' },
      data: { url: 'https://example.com/sale' },
      android: { priority: 'HIGH', notification: { channel_id: 'offers', image: 'https://example.com/big.png', click_action: 'https://example.com/sale' } },
    },
  });

  const web = one(t, await s.sims.webpush.requests(), (r) => r.path === new URL(token('u2')).pathname, 'u2');
  t.match(JSON.parse(String(web?.body)), {
    title: 'Sale',
    body: 'Half price',
    icon: 'https://example.com/icon.png',
    image: 'https://example.com/image.png',
    url: 'https://example.com/web-sale',
    actions: [{ action: 'like', title: 'Like', url: 'https://example.com/like' }],
  });
});

t.test('email: subject, HTML body, sender name and preheader reach SendGrid', async (t) => {
  const created = await sent(t, {
    include_aliases: { external_id: ['u4'] },
    target_channel: 'email',
    email_subject: 'Your receipt',
    email_body: '<p>Thanks!</p>',
    email_from_name: 'The Shop',
    email_preheader: 'Order <42>',
    disable_email_click_tracking: true,
  });
  t.same(warned(created), ['disable_email_click_tracking']);
  const mail = one(t, await s.sims.sendgrid.requests(), (r) => JSON.stringify(r.body).includes(token('u4')), 'u4');
  t.match(mail?.body, {
    subject: 'Your receipt',
    from: { email: s.sims.sendgrid.credentials().from, name: 'The Shop' },
    content: [{ type: 'text/html', value: '<div style="display:none;max-height:0;overflow:hidden">Order &#60;42&#62;</div><p>Thanks!</p>' }],
  });
});

t.test('sms: the sender and media reach Twilio', async (t) => {
  const from = (s.sims.twilio.credentials('from') as { from: string }).from;
  await sent(t, {
    include_aliases: { external_id: ['u3'] },
    target_channel: 'sms',
    contents: { en: 'Your code is 1234' },
    sms_from: from,
    sms_media_urls: ['https://example.com/a.png', 'https://example.com/b.png'],
  });
  const sms = one(t, await s.sims.twilio.requests(), (r) => (r.body as { To?: string }).To === token('u3'), 'u3');
  t.match(sms?.body, { From: from, Body: 'Your code is 1234', MediaUrl: ['https://example.com/a.png', 'https://example.com/b.png'] });
});

t.test("delivery fields in OneSignal's spellings", async (t) => {
  const body = {
    include_aliases: { external_id: ['u1'] },
    contents: { en: 'Spelled' },
    send_after: '2015-09-24 14:00:00 GMT-0700',
    throttle_rate_per_minute: '0',
    priority: 5,
    external_id: 'order-42',
    delayed_option: 'last-active',
    delivery_time_of_day: '9:00AM',
  };
  const created = await sent(t, body);
  t.same(warned(created), ['delayed_option', 'delivery_time_of_day']);
  const again = await post({ app_id: project, ...body });
  t.same([again.status, (again.body as { id: string }).id], [201, created.id], 'external_id is the idempotency key');
  const fcm = (await s.sims.fcm.requests()).filter((r) => JSON.stringify(r.body).includes('"Spelled"'));
  t.equal(fcm.length, 1, 'sent once');
  t.match(fcm[0]?.body, { message: { android: { priority: 'NORMAL' } } });
  for (const sendAfter of ['Thu, 24 Sep 2015 21:00:00 GMT', 'Thu Sep 24 2015 14:00:00 GMT-0700 (Pacific Daylight Time)']) {
    const answer = await post({ include_aliases: { external_id: ['nobody'] }, contents: { en: 'x' }, send_after: sendAfter });
    t.same([answer.status, (answer.body as { status: string }).status], [201, 'queued'], sendAfter);
  }
  const badge = await post({ include_aliases: { external_id: ['nobody'] }, contents: { en: 'x' }, ios_badgeType: 'Increase', ios_badgeCount: 1 });
  t.same(warned(badge.body as { warnings: { field: string }[] }), ['ios_badgeType']);
});

t.test('tokens of Amazon and Windows devices are taken, warned and listed as unreachable; Chrome ones are looked up', async (t) => {
  const amazon = await post({ include_amazon_reg_ids: ['amzn1.adm-registration.v3.x'], include_wp_wns_uris: ['https://db5.notify.windows.com/?token=x'], contents: { en: 'x' } });
  t.equal(amazon.status, 201, JSON.stringify(amazon.body));
  t.match(amazon.body, { recipients: 0, errors: { invalid_player_ids: ['amzn1.adm-registration.v3.x', 'https://db5.notify.windows.com/?token=x'] } });
  t.same(warned(amazon.body as { warnings: { field: string }[] }), ['include_amazon_reg_ids', 'include_wp_wns_uris']);
  const web = await post({ include_chrome_web_reg_ids: [token('u2'), 'https://push.example/unknown'], contents: { en: 'Chrome web' } });
  t.match(web, { status: 201, body: { recipients: 1, errors: { invalid_player_ids: ['https://push.example/unknown'] } } });
  await until(s, (web.body as { id: string }).id);
  t.equal((await s.sims.webpush.requests()).filter((r) => JSON.stringify(r.body).includes('Chrome web')).length, 1, 'the endpoint was sent to');
});

t.test('what is still refused: another app, bad values, unknown fields', async (t) => {
  const base = { include_aliases: { external_id: ['u0'] }, contents: { en: 'x' } };
  const cases: [string, Record<string, unknown>, number, string, string | undefined][] = [
    ['another app', { ...base, app_id: '00000000-0000-4000-8000-000000000000' }, 403, 'project_mismatch', undefined],
    ['an empty list of subscription ids', { include_subscription_ids: [], contents: { en: 'x' } }, 400, 'validation_failed', '/include_subscription_ids'],
    ['both player and subscription ids', { include_player_ids: ['a'], include_subscription_ids: ['a'], contents: { en: 'x' } }, 400, 'validation_failed', '/include_player_ids'],
    ['subscription ids and aliases', { ...base, include_subscription_ids: ['a'] }, 400, 'validation_failed', '/include_'],
    ['priority 11', { ...base, priority: 11 }, 400, 'validation_failed', '/priority'],
    ['a badge type OneSignal has not', { ...base, ios_badgeType: 'Sometimes' }, 400, 'validation_failed', '/ios_badgeType'],
    ['send_after in no format', { ...base, send_after: 'tomorrow morning' }, 400, 'validation_failed', '/send_after'],
    ['both alias and user ids', { ...base, include_external_user_ids: ['u0'] }, 400, 'validation_failed', '/include_aliases'],
    ['channel and target_channel disagree', { ...base, channel: 'SMS', target_channel: 'email' }, 400, 'validation_failed', '/target_channel'],
    ['another alias label', { include_aliases: { onesignal_id: ['x'] }, contents: { en: 'x' } }, 400, 'validation_failed', '/include_aliases'],
    ['a field OneSignal does not have', { ...base, bogus: 1 }, 400, 'validation_failed', ''],
  ];
  for (const [name, body, status, code, path] of cases) {
    const answer = await post(body);
    const first = (answer.body as { errors: { code: string; path?: string }[] }).errors[0];
    t.same([answer.status, first?.code], [status, code], name);
    if (path !== undefined) t.ok(first?.path?.startsWith(path), `${name}: ${first?.path ?? 'no path'}`);
  }
});

t.test('personal contents: placeholders filled from each user\'s tags, HTML-escaped in an email body', async (t) => {
  const tags = (user: string, body: unknown) => call(`${s.engine.url}/api/sdk/users/${user}/tags`, 'PUT', s.d.project.sdk_key, body);
  t.equal((await tags('u1', { first_name: 'Ann', points: 41 })).status, 202);
  t.equal((await tags('u4', { first_name: '<b>Bob</b>' })).status, 202);
  await eventually('tags applied', async () => {
    const [ann, bob] = await Promise.all(['u1', 'u4'].map((u) => call(`${s.engine.url}/api/users/${u}`, 'GET', s.rest)));
    return (ann?.body as { tags?: Record<string, unknown> }).tags?.['points'] === 41 && (bob?.body as { tags?: Record<string, unknown> }).tags?.['first_name'] ? true : undefined;
  });

  await sent(t, {
    include_aliases: { external_id: ['u0', 'u1'] },
    headings: { en: 'Hi {{ first_name | default: "there" }}' },
    contents: { en: '{{ first_name | upcase }} has {{ points | plus: 1 }} points; {{ nothing }}.' },
  });
  const apns = one(t, await s.sims.apns.requests(), (r) => r.path.endsWith(`/${token('u0')}`) && JSON.stringify(r.body).includes('Hi there'), 'u0');
  t.match(apns?.body, { aps: { alert: { title: 'Hi there', body: ' has 1 points; .' } } }, 'no tag, no default: empty (and nil plus 1 is 1)');
  const fcm = one(t, await s.sims.fcm.requests(), (r) => JSON.stringify(r.body).includes('Hi Ann'), 'u1');
  t.match(fcm?.body, { message: { notification: { title: 'Hi Ann', body: 'ANN has 42 points; .' } } });

  await sent(t, {
    include_aliases: { external_id: ['u4'] },
    target_channel: 'email',
    email_subject: 'For {{ first_name }}',
    email_body: '<p>Dear {{ first_name }}</p>',
  });
  const mail = one(t, await s.sims.sendgrid.requests(), (r) => JSON.stringify(r.body).includes('For <b>Bob</b>'), 'u4');
  t.match(mail?.body, { subject: 'For <b>Bob</b>', content: [{ type: 'text/html', value: '<p>Dear &lt;b&gt;Bob&lt;/b&gt;</p>' }] });

  for (const [text, what] of [
    ['{% for i in (1..9) %}x{% endfor %}', 'a tag'],
    ['{{ name | nonesuch }}', 'an unknown filter'],
    ['{{ name ', 'an unclosed placeholder'],
  ] as const) {
    const answer = await post({ include_aliases: { external_id: ['u0'] }, contents: { en: text } });
    t.match([answer.status, answer.body], [400, { errors: [{ path: '/contents/en' }] }], what);
  }
});
