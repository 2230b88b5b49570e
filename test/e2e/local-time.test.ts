import t from 'tap';
import { Keystore } from '../../engine/state/keys/keystore.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { readHashes } from '../../engine/state/users/read-user.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { iosToken, stage, until } from '../helpers/broadcast.ts';
import { call, eventually } from '../helpers/http.ts';

/**
 * `delayed_option: timezone` (docs/api.md#local-time): each user gets the notification when their
 * own clock shows `delivery_time_of_day`. The clock is controlled through the only place a put-off
 * job waits, the partition's retry set: its due time is checked, then brought to now.
 */

const s = await stage(t);
const project = s.d.project.project_id;
const redis = createRedis(loadConfig(s.d.env));
const topology = new Topology(s.d.env['KEY_PREFIX'] ?? '', Number(s.d.env['PARTITIONS']));
t.teardown(() => redis.disconnect());
await new Keystore(redis, topology).setTimeZone(project, '+05:30');

const users = { utc: iosToken(1), tokyo: iosToken(2), none: iosToken(3) };
const sdk = (path: string, body: unknown) => call(`${s.engine.url}/api/sdk${path}`, 'POST', s.d.project.sdk_key, body);
const accepted = [
  await sdk('/users', { external_id: 'utc', timezone: 'UTC' }),
  await sdk('/users', { external_id: 'tokyo', tags: { timezone: 'Asia/Tokyo' } }),
  await sdk('/users', { external_id: 'none' }),
  ...(await Promise.all(Object.entries(users).map(([user, token]) => sdk(`/users/${user}/subscriptions`, { type: 'IOS_PUSH', token })))),
].map((a) => a.status);
await eventually('users applied', async () => (Object.keys((await readHashes(redis, topology, project, 'none')).subs).length > 0 && (await readHashes(redis, topology, project, 'tokyo')).tags['timezone'] !== undefined ? true : undefined));

const pushesTo = async (token: string): Promise<number> => (await s.sims.apns.requests()).filter((r) => r.path.endsWith(`/${token}`)).length;

/** The user's put-off job of notification `id` as the retry set holds it, with its due time. */
async function waiting(user: string, id: string): Promise<{ member: string; due: number } | undefined> {
  const members = await redis.zrange(topology.retries(topology.partitionOf(project, user)), 0, -1, 'WITHSCORES');
  for (let i = 0; i < members.length; i += 2) {
    const member = members[i] ?? '';
    const job = JSON.parse(member) as { n?: string; external_id?: string };
    if (job.n === id && job.external_id === user) return { member, due: Number(members[i + 1]) };
  }
  return undefined;
}

t.test('each user at their own 9:00, once', async (t) => {
  t.same(accepted, [202, 202, 202, 202, 202, 202], 'users with a timezone field, a timezone tag and none');
  const now = Date.now();
  // Started five minutes ago, at a time of day two minutes ago: already due in UTC, not elsewhere.
  const start = Math.floor((now - 300_000) / 60_000) * 60_000;
  const clock = new Date(now - 120_000);
  const minute = clock.getUTCHours() * 60 + clock.getUTCMinutes();
  const time = `${clock.getUTCHours()}:${String(clock.getUTCMinutes()).padStart(2, '0')}`;
  const created = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, {
    include_aliases: { external_id: ['utc', 'tokyo', 'none'] },
    contents: { en: 'Good morning' },
    send_after: new Date(start).toISOString(),
    delayed_option: 'timezone',
    delivery_time_of_day: time,
  });
  t.equal(created.status, 201, JSON.stringify(created.body));
  const { id, warnings } = created.body as { id: string; warnings: unknown[] };
  t.same(warnings, []);

  await eventually('the UTC user sent to', async () => ((await pushesTo(users.utc)) === 1 ? true : undefined));
  /** The first instant at or after `start` when a clock `offset` minutes east of UTC shows `minute`. */
  const expected = (offset: number): number => {
    let at = Date.UTC(clock.getUTCFullYear(), clock.getUTCMonth(), clock.getUTCDate()) + (minute - offset) * 60_000 - 86_400_000;
    while (at < start) at += 86_400_000;
    return at;
  };
  const tokyo = await eventually('the Tokyo user put off', () => waiting('tokyo', id));
  const none = await eventually('the user without a zone put off', () => waiting('none', id));
  t.equal(tokyo.due, expected(9 * 60), 'Tokyo (UTC+9): its next such local time');
  t.equal(none.due, expected(5 * 60 + 30), "no timezone tag: the project's zone (+05:30)");
  t.equal(await pushesTo(users.tokyo), 0, 'not before');
  // The simulator has the push before dispatch records it: the view counts it a moment later.
  const sending = await eventually('the UTC send counted', async () => {
    const body = (await call(`${s.engine.url}/api/notifications/${id}`, 'GET', s.rest)).body as { successful?: number };
    return body.successful === 1 ? body : undefined;
  });
  t.match(sending, { status: 'sending', successful: 1, remaining: 2 });

  // Their clocks reach it.
  for (const [user, job] of [['tokyo', tokyo], ['none', none]] as const) await redis.zadd(topology.retries(topology.partitionOf(project, user)), 'XX', 0, job.member);
  const view = await until(s, id);
  t.match(view.counts, { sent: 3, failed: 0, skipped: 0 });
  for (const token of Object.values(users)) t.equal(await pushesTo(token), 1, 'once each');
});

t.test('a time of day without delayed_option is a warning; a bad one is a 400', async (t) => {
  const body = { include_aliases: { external_id: ['nobody'] }, contents: { en: 'x' } };
  const warned = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { ...body, delivery_time_of_day: '9:00AM' });
  t.match(warned.body, { warnings: [{ field: 'delivery_time_of_day' }] });
  const bad = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { ...body, delayed_option: 'timezone', delivery_time_of_day: '25:00' });
  t.match([bad.status, bad.body], [400, { errors: [{ path: '/delivery_time_of_day' }] }]);
  const zone = await call(`${s.engine.url}/api/sdk/users`, 'POST', s.d.project.sdk_key, { external_id: 'x', tags: { timezone: 'Mars/Olympus' } });
  t.match([zone.status, zone.body], [400, { errors: [{ path: '/tags/timezone' }] }]);
});
