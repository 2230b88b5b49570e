import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { deployment } from '../helpers/engine.ts';
import { eventually } from '../helpers/http.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';

// The idempotency window lives in Redis with the rest of the state: a retry sent after every role
// and Redis itself were killed and restarted on their data is still recognised.
const USERS = 8;
const PER_USER = 6;

t.test('copies sent after a SIGKILL of every role and of Redis are still dropped', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'idem-redis-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const redis = await PrivateRedis.start({ dataDir });
  t.teardown(() => redis.stop());
  const d = await deployment(t, { env: { REDIS_URL: redis.url } });
  const { sdk_key: sdk, rest_key: rest } = d.project;
  const roles = ['gateway', 'apply', 'recorder'];

  const send = async (url: string, user: number, key: string, name: string): Promise<void> => {
    const res = await fetch(`${url}/api/sdk/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sdk}`, 'content-type': 'application/json' },
      body: JSON.stringify({ external_id: `u${user}`, name, idempotency_key: key }),
    });
    if (res.status !== 202) throw new Error(`POST /api/sdk/events answered ${res.status}: ${await res.text()}`);
  };
  /** The names of user u's recorded events, sorted. */
  const recorded = async (url: string, user: number): Promise<string[]> => {
    const res = await fetch(`${url}/api/events?external_id=u${user}&limit=1000`, { headers: { authorization: `Bearer ${rest}` } });
    if (res.status !== 200) throw new Error(`GET /api/events answered ${res.status}`);
    return ((await res.json()) as { events: { name: string }[] }).events.map((e) => e.name).sort();
  };
  const all = (fn: (user: number) => Promise<void>): Promise<void[]> => Promise.all(Array.from({ length: USERS }, (_, u) => fn(u)));
  const originals = Array.from({ length: PER_USER }, (_, i) => `original-${i}`);

  const first = await d.start(roles);
  await all(async (u) => {
    for (let i = 0; i < PER_USER; i++) await send(first.url, u, `k${i}`, `original-${i}`);
  });
  await all(async (u) => {
    await eventually(`u${u}'s events recorded`, async () => ((await recorded(first.url, u)).length === PER_USER ? true : undefined), 60_000);
  });
  await first.kill();
  await redis.stop();
  await redis.restart();

  const second = await d.start(roles);
  // Per user, the copies are applied before the new event sent after them.
  await all(async (u) => {
    for (let i = 0; i < PER_USER; i++) await send(second.url, u, `k${i}`, `copy-${i}`);
    await send(second.url, u, 'k-new', 'after-restart');
  });
  await all(async (u) => {
    await eventually(`u${u}'s new event recorded`, async () => ((await recorded(second.url, u)).includes('after-restart') ? true : undefined), 60_000);
  });
  for (let u = 0; u < USERS; u++) t.same(await recorded(second.url, u), ['after-restart', ...originals], `u${u}: the originals and the new event, no copy`);
});
