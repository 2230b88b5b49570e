import { readFileSync } from 'node:fs';
import t from 'tap';
import { call, eventually } from '../helpers/http.ts';
import { ALL_ROLES, deliveriesOf, register, stageWithoutEngine, until, type Stage } from '../helpers/broadcast.ts';

/**
 * A broadcast while APNs never answers and Web Push answers slowly (docs/providers.md#connections):
 * the other providers' sends go on, the silent one is paused by its circuit breaker instead of
 * being sent every attempt, the notification finishes with every attempt recorded, and the
 * dispatch process's memory stays bounded. One partition, so every job shares one dispatch window.
 */

const TIMEOUT_MS = 1500;
const USERS = 150;
/** Growth of the dispatch process's RSS over the broadcast that would mean memory is not bounded. */
const RSS_BOUND_MB = 100;

function rssMb(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb ?? 0) / 1024;
}

t.test('a silent and a slow provider during a broadcast: the others unaffected, every attempt recorded', async (t) => {
  const setting = await stageWithoutEngine(t, { PARTITIONS: '1', PROVIDER_TIMEOUT_MS: String(TIMEOUT_MS) });
  const engine = await setting.d.start(ALL_ROLES.filter((r) => r !== 'dispatch'));
  const dispatch = await setting.d.start(['dispatch']);
  const s: Stage = { ...setting, engine };
  await register(s, USERS);
  const pid = dispatch.proc.pid ?? 0;
  const before = rssMb(pid);

  await s.sims.apns.script({ match: {}, respond: { status: 200, delayMs: 120_000 } });
  await s.sims.webpush.script({ match: {}, respond: { status: 201, delayMs: TIMEOUT_MS / 2 } });
  // Users i mod 5 = 0, 1, 2 have an iOS, an Android, a Web Push subscription (subscriptionOf).
  const types = ['IOS_PUSH', 'ANDROID_PUSH', 'WEB_PUSH'];
  const users = Array.from({ length: USERS }, (_, i) => i).filter((i) => i % 5 < types.length);
  const typeOf = new Map(users.map((i) => [`u${i}`, types[i % 5] ?? '']));
  const created = await call(`${engine.url}/api/notifications`, 'POST', s.rest, { include_external_user_ids: [...typeOf.keys()], contents: { en: 'hi' } });
  t.equal(created.status, 201);
  const id = (created.body as { id: string }).id;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 200);
  const view = await until(s, id, 'completed', 120_000);
  clearInterval(sampler);

  const byType = (type: string): string[] => [...typeOf].filter(([, t]) => t === type).map(([u]) => u);
  const ios = byType('IOS_PUSH');
  // Each user's records: one sent, or five attempts; recorded after the counters move, later on a
  // loaded machine (the recorder's insert into ClickHouse waits for the CPU too).
  const records = await eventually(
    'every attempt recorded',
    async () => {
      const all = await deliveriesOf(s, id);
      return all.length === 2 * ios.length + 5 * ios.length ? all : undefined;
    },
    120_000,
  );
  const of = (u: string) => records.filter((r) => r.external_id === u).sort((a, b) => a.attempt - b.attempt);
  for (const u of [...byType('ANDROID_PUSH'), ...byType('WEB_PUSH')]) {
    t.same(of(u).map((r) => [r.status, r.attempt]), [['sent', 1]], `${u}: sent on its first attempt`);
  }
  for (const u of ios) {
    const attempts = of(u);
    t.same(attempts.map((r) => r.attempt), [1, 2, 3, 4, 5], `${u}: five attempts recorded`);
    t.ok(
      attempts.every((r) => r.status === 'failed' && ['timeout', 'provider_unavailable'].includes(r.error_code ?? '')),
      `${u}: each a timeout or paused by the breaker (${attempts.map((r) => r.error_code).join(', ')})`,
    );
    t.same(attempts.map((r) => r.retrying), [true, true, true, true, false], `${u}: retried until the last`);
  }
  t.same(view.counts, { sent: 2 * ios.length, failed: ios.length, skipped: 0, delivered: 0, opened: 0, clicked: 0 }, 'counts: every attempt recorded');

  const apnsRequests = (await s.sims.apns.requests()).length;
  t.ok(apnsRequests < (ios.length * 5) / 2, `the silent provider got ${apnsRequests} requests, not one per attempt (${ios.length * 5})`);
  t.equal((await s.sims.fcm.requests()).length, ios.length, 'FCM got one request per Android user');
  t.comment(`dispatch RSS ${before.toFixed(0)} MB before, ${peak.toFixed(0)} MB at most during the broadcast`);
  t.ok(peak - before < RSS_BOUND_MB, `dispatch RSS grew ${(peak - before).toFixed(0)} MB (bound ${RSS_BOUND_MB} MB)`);
});
