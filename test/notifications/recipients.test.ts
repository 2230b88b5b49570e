import t, { type Test } from 'tap';
import { call, eventually } from '../helpers/http.ts';
import { deliveriesOf, register, stage, until, type Stage } from '../helpers/broadcast.ts';
import type { SimName } from '../../simulators/index.ts';

/**
 * `recipients` of a notification to segments, filters and All, through the whole engine against
 * the provider simulators: the users that will get a delivery attempt (docs/api.md#the-201-answer), so the
 * matching users with a live subscription of the channel, as for user ids. The answer, the
 * GET view after the fan-out, the delivery records and the provider requests agree.
 *
 * Users u0..u19 have one subscription each, its type by i mod 5 (IOS_PUSH, ANDROID_PUSH,
 * WEB_PUSH, SMS, EMAIL), and a language by i mod 3 (none, pt-BR, fr); users n0..n5 have a
 * language and no subscription.
 */

const SIMS: SimName[] = ['apns', 'fcm', 'webpush', 'twilio', 'sendgrid'];
const body = { headings: { en: 'Hi' }, contents: { en: 'Recipients test' } };
const users = Array.from({ length: 20 }, (_, i) => i);
const bare = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5'];
const language = (i: number): string | null => [null, 'pt-BR', 'fr'][i % 3] ?? null;
const isPush = (i: number): boolean => i % 5 < 3;
const names = (list: number[]): string[] => list.map((i) => `u${i}`).sort();

/** Accepted (2xx) requests of every simulator so far. */
async function accepted(s: Stage): Promise<number> {
  const lists = await Promise.all(SIMS.map((n) => s.sims[n].requests()));
  return lists.flat().filter((r) => r.status >= 200 && r.status < 300).length;
}

/**
 * Sends `request`, waits until it completes and checks that `recipients` is `expected.length` in
 * the answer and the GET view, that each of `expected` (and no one else) has one `sent` record,
 * and that the providers accepted as many requests as were recorded sent.
 */
async function sendsTo(t: Test, s: Stage, request: Record<string, unknown>, expected: string[]): Promise<void> {
  const before = await accepted(s);
  const answer = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { ...body, ...request });
  t.equal(answer.status, 201);
  const created = answer.body as { id: string; recipients: number };
  t.equal(created.recipients, expected.length, 'recipients in the answer: the reachable users');
  const view = await until(s, created.id);
  t.equal(view.recipients, expected.length, 'recipients in GET after the fan-out: the same');
  t.match(view.counts, { sent: expected.length, failed: 0, skipped: 0 }, 'counts: each recipient sent, nobody skipped');
  const rows = await eventually(
    `${expected.length} records of ${created.id}`,
    async () => {
      const all = await deliveriesOf(s, created.id);
      return all.length >= expected.length ? all : undefined;
    },
    60_000,
  );
  t.same(rows.map((r) => r.external_id).sort(), expected, 'one record per recipient, no one else');
  t.ok(
    rows.every((r) => r.status === 'sent'),
    'every record sent',
  );
  t.equal((await accepted(s)) - before, expected.length, 'the providers accepted one request per recipient');
}

t.test('segments, filters and All: recipients are the matching users with a live subscription of the channel', async (t) => {
  const s = await stage(t);
  await register(s, users.length);
  const operations = bare.map((id, k) => ({ op: 'identify', external_id: id, tags: { language: k % 2 === 0 ? 'fr' : 'pt-BR' } }));
  t.equal((await call(`${s.engine.url}/api/sdk/batch`, 'POST', s.d.project.sdk_key, { operations })).status, 202);
  for (const [name, filters] of [
    ['french', [{ field: 'tag', key: 'language', relation: '=', value: 'fr' }]],
    ['ios', [{ field: 'subscription', type: 'IOS_PUSH' }]],
    ['speakers', [{ field: 'tag', key: 'language', relation: 'exists' }]],
  ] as const) {
    t.equal((await call(`${s.engine.url}/api/segments`, 'POST', s.rest, { name, filters })).status, 201, `segment ${name}`);
  }
  const french = users.filter((i) => language(i) === 'fr');
  // The audience is read from the users mirror, which the recorder fills: wait until it holds everyone.
  for (const [name, count] of [
    ['speakers', users.filter((i) => language(i) !== null).length + bare.length],
    ['All', users.length],
  ] as const) {
    await eventually(
      `segment ${name} counts ${count}`,
      async () => ((await call(`${s.engine.url}/api/segments/${name}/count`, 'GET', s.rest)).body as { count: number }).count === count || undefined,
      60_000,
    );
  }

  await t.test('PUSH to All', (t) => sendsTo(t, s, { included_segments: ['All'] }, names(users.filter(isPush))));
  await t.test('EMAIL to All', (t) => sendsTo(t, s, { channel: 'EMAIL', included_segments: ['All'] }, names(users.filter((i) => i % 5 === 4))));
  await t.test('PUSH to a segment: its users without push (and without any subscription) are no recipients', (t) =>
    sendsTo(t, s, { included_segments: ['french'] }, names(french.filter(isPush))),
  );
  await t.test('PUSH to a segment minus another', (t) =>
    sendsTo(t, s, { included_segments: ['french'], excluded_segments: ['ios'] }, names(french.filter((i) => isPush(i) && i % 5 !== 0))),
  );
  await t.test('SMS to a segment', (t) => sendsTo(t, s, { channel: 'SMS', included_segments: ['french'] }, names(french.filter((i) => i % 5 === 3))));
  await t.test('EMAIL by filters: each OR group counts only users with a live EMAIL subscription', (t) =>
    sendsTo(
      t,
      s,
      {
        channel: 'EMAIL',
        filters: [
          { field: 'tag', key: 'language', relation: '=', value: 'fr' },
          { operator: 'OR' },
          { field: 'tag', key: 'language', relation: '=', value: 'pt-BR' },
        ],
      },
      names(users.filter((i) => language(i) !== null && i % 5 === 4)),
    ),
  );
  await t.test('SMS by a filter no SMS user matches: no recipient, completed', (t) =>
    sendsTo(t, s, { channel: 'SMS', filters: [{ field: 'subscription', type: 'EMAIL' }] }, []),
  );
});
