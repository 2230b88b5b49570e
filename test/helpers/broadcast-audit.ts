import type { Test } from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { Notifications } from '../../engine/state/notifications/lifecycle.ts';
import { createRedis, type RedisClient } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import type { SimRequest, Simulators } from '../../simulators/index.ts';
import { deliveriesOf, until, type Delivery, type Stage } from './broadcast.ts';
import { call, eventually } from './http.ts';

/**
 * Broadcasts under faults (test/e2e/broadcast-sigkill.test.ts, test/cluster/broadcast-faults.test.ts):
 * notifications to disjoint audiences, and the audit of what was recorded against what the
 * simulators received.
 */

export const body = { headings: { en: 'Hello' }, contents: { en: 'Your order shipped' }, ttl: 3600 };

export interface Broadcast {
  id: string;
  recipients: number;
  users: string[];
}

/** The audiences of three notifications to disjoint users: PUSH to the users of the three push types, SMS, EMAIL (type by i mod 5). */
export function audiences(users: number): [string, string[]][] {
  const ids = Array.from({ length: users }, (_, i) => `u${i}`);
  return [
    ['PUSH', ids.filter((_, i) => i % 5 < 3)],
    ['SMS', ids.filter((_, i) => i % 5 === 3)],
    ['EMAIL', ids.filter((_, i) => i % 5 === 4)],
  ];
}

export async function post(s: Stage, channel: string, users: string[]): Promise<Broadcast> {
  const answer = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { ...body, channel, include_external_user_ids: users });
  if (answer.status !== 201) throw new Error(`notification answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  const created = answer.body as { id: string; recipients: number };
  return { id: created.id, recipients: created.recipients, users };
}

export async function broadcast(s: Stage, users: number): Promise<Broadcast[]> {
  const out: Broadcast[] = [];
  for (const [channel, audience] of audiences(users)) out.push(await post(s, channel, audience));
  return out;
}

/** The key a simulator request is told apart by: the token of the subscription it went to. */
function tokenOf(sim: keyof Omit<Simulators, 'caFile' | 'close'>, r: SimRequest): string {
  const b = r.body as Record<string, unknown> | undefined;
  switch (sim) {
    case 'apns':
      return r.path.replace(/^\/3\/device\//, '');
    case 'fcm':
      return String((b?.['message'] as Record<string, unknown> | undefined)?.['token']);
    case 'webpush':
      return r.path.split('/').pop() ?? '';
    case 'twilio':
      return String(b?.['To']);
    case 'sendgrid':
      return String(((b?.['personalizations'] as { to: { email: string }[] }[] | undefined)?.[0]?.to[0])?.email);
  }
}

const SIMS = ['apns', 'fcm', 'webpush', 'twilio', 'sendgrid'] as const;

/** Every send the simulators received: token to how many times, and how many are still unanswered. */
export async function received(sims: Simulators): Promise<{ byToken: Map<string, number>; total: number; unanswered: number; refused: number }> {
  const byToken = new Map<string, number>();
  let total = 0;
  let unanswered = 0;
  let refused = 0;
  const refusals: string[] = [];
  for (const name of SIMS) {
    for (const r of await sims[name].requests()) {
      const token = tokenOf(name, r);
      byToken.set(token, (byToken.get(token) ?? 0) + 1);
      total += 1;
      if (r.status === 0) unanswered += 1;
      else if (r.status >= 300) {
        refused += 1;
        refusals.push(`${name} ${r.status} ${typeof r.body === 'string' ? r.body.slice(0, 80) : JSON.stringify(r.body).slice(0, 80)}`);
      }
    }
  }
  if (refusals.length > 0) console.error('refusals', JSON.stringify(countBy(refusals)));
  return { byToken, total, unanswered, refused };
}

/** The key the simulators know a user's token by (a web push endpoint by its last path segment). */
const simKey = (token: string): string => (token.startsWith('https://') ? (token.split('/').pop() ?? '') : token);

export function openState(t: Test, s: Stage): { redis: RedisClient; topology: Topology; notifications: Notifications } {
  const redis = createRedis(loadConfig(s.d.env));
  t.teardown(() => redis.disconnect());
  const topology = new Topology(s.d.env['KEY_PREFIX'] ?? '', Number(s.d.env['PARTITIONS']));
  return { redis, topology, notifications: new Notifications(redis, topology) };
}

/**
 * Waits for every notification to complete, then checks its records: exactly one per (user,
 * attempt), no record id twice, and exactly one `sent` record per recipient (a failed attempt the
 * engine retried leaves its own `failed` record, which is allowed).
 */
export async function checkRecords(t: Test, s: Stage, notifications: Notifications, sent: Broadcast[]): Promise<Map<string, number>> {
  const attempts = new Map<string, number>();
  for (const n of sent) await until(s, n.id, 'completed', 240_000);
  for (const n of sent) {
    const counts = await notifications.counts(n.id);
    t.same({ jobs: counts.jobs, sent: counts.sent, failed: counts.failed, skipped: counts.skipped }, { jobs: n.recipients, sent: n.recipients, failed: 0, skipped: 0 }, `${n.id}: one job per recipient, each sent in the end`);
    await eventually(`${n.id} recorded`, async () => ((await deliveriesOf(s, n.id)).filter((r) => r.status === 'sent').length >= n.recipients ? true : undefined), 60_000);
  }
  // A record written twice would show within a second after the last one: read them after that.
  await new Promise((r) => setTimeout(r, 1000));
  for (const n of sent) {
    const all = (await deliveriesOf(s, n.id)) as (Delivery & { id: string })[];
    t.equal(new Set(all.map((r) => r.id)).size, all.length, `${n.id}: no record id twice`);
    t.equal(new Set(all.map((r) => `${r.external_id}\0${r.attempt}`)).size, all.length, `${n.id}: one record per (user, attempt)`);
    const sentBy = new Map<string, number>();
    for (const r of all) if (r.status === 'sent') sentBy.set(r.external_id, (sentBy.get(r.external_id) ?? 0) + 1);
    t.same(n.users.filter((u) => sentBy.get(u) !== 1), [], `${n.id}: every recipient has exactly one sent record`);
    t.equal(sentBy.size, n.recipients, `${n.id}: and no one else`);
    for (const r of all) attempts.set(r.external_id, (attempts.get(r.external_id) ?? 0) + 1);
    const retried = all.filter((r) => r.status !== 'sent');
    t.ok(retried.every((r) => r.status === 'failed' && r.retrying), `${n.id}: any other record is a failed attempt that was retried`);
    if (retried.length > 0) t.comment(`${n.id}: ${retried.length} attempts failed and were retried: ${JSON.stringify(countBy(retried.map((r) => `${r.subscription_type} ${r.error_code}`)))}`);
  }
  return attempts;
}

/**
 * Compares the sends the simulators received with the attempts recorded: every recipient's token
 * was received at least once, and each receipt beyond the user's recorded attempts is an excess
 * (a send whose attempt was never recorded). A recorded failure (a timeout) may or may not have
 * reached the simulator, so a token may be received fewer times than its user has attempts.
 * Returns the total excess.
 */
export function excessSends(t: Test, s: Stage, sent: Broadcast[], got: Awaited<ReturnType<typeof received>>, attempts: Map<string, number>): number {
  const users = sent.flatMap((n) => n.users);
  t.same(users.filter((u) => (got.byToken.get(simKey(s.tokens.get(u) ?? '?')) ?? 0) < 1), [], 'the simulators received every recipient at least once');
  const known = new Set(users.map((u) => simKey(s.tokens.get(u) ?? '?')));
  t.same([...got.byToken.keys()].filter((k) => !known.has(k)), [], 'and no other token');
  let excess = 0;
  for (const u of users) excess += Math.max(0, (got.byToken.get(simKey(s.tokens.get(u) ?? '?')) ?? 0) - (attempts.get(u) ?? 0));
  return excess;
}

export function countBy(keys: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of keys) out[k] = (out[k] ?? 0) + 1;
  return out;
}
