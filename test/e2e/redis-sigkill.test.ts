import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { deployment } from '../helpers/engine.ts';
import { eventually } from '../helpers/http.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';

// Production's Redis (append-only file, fsync always) SIGKILLed under load and started again on
// its data, with one engine process running every role: every event the gateway accepted must be
// in ClickHouse exactly once. Before, reads whose replies the kill lost left entries pending that
// no batch held; the recorder's next trim deleted them, and their events were never recorded.
const USERS = 20;
const PAUSE_MS = 5;
const DOWN_MS = 3000;

interface Sent {
  accepted: Set<number>;
  refused: Set<number>;
}

t.test('Redis SIGKILLed under load and restarted on its data: every accepted event recorded exactly once', async (t) => {
  const redisDir = mkdtempSync(join(tmpdir(), 'redis-aof-'));
  const redis = await PrivateRedis.start({ dataDir: redisDir });
  t.teardown(async () => {
    await redis.stop();
    rmSync(redisDir, { recursive: true, force: true });
  });
  const d = await deployment(t, { env: { REDIS_URL: redis.url } });
  const engine = await d.start(['gateway', 'apply', 'recorder']);
  const { sdk_key: sdk, rest_key: rest } = d.project;

  const sent = Array.from({ length: USERS }, (): Sent => ({ accepted: new Set(), refused: new Set() }));
  let phase: 'before' | 'down' | 'after' = 'before';
  const acceptedIn = { before: 0, down: 0, after: 0 };
  let running = true;
  const send = async (user: number): Promise<void> => {
    for (let seq = 0; running; seq++) {
      const status = await fetch(`${engine.url}/api/sdk/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${sdk}`, 'content-type': 'application/json' },
        body: JSON.stringify({ external_id: `u${user}`, name: 'tick', properties: { seq } }),
        signal: AbortSignal.timeout(10_000),
      }).then(
        async (res) => (await res.arrayBuffer(), res.status),
        () => 0,
      );
      (status === 202 ? sent[user]?.accepted : sent[user]?.refused)?.add(seq);
      if (status === 202) acceptedIn[phase]++;
      await new Promise((r) => setTimeout(r, PAUSE_MS));
    }
  };
  const load = Promise.all(sent.map((_, user) => send(user)));
  await new Promise((r) => setTimeout(r, 2000));
  await redis.stop();
  phase = 'down';
  await new Promise((r) => setTimeout(r, DOWN_MS));
  await redis.restart();
  phase = 'after';
  await new Promise((r) => setTimeout(r, 2000));
  running = false;
  await load;

  const accepted = sent.reduce((n, s) => n + s.accepted.size, 0);
  const refused = sent.reduce((n, s) => n + s.refused.size, 0);
  t.comment(`${accepted} events accepted (${acceptedIn.before} before the kill, ${acceptedIn.down} while Redis was down, ${acceptedIn.after} after), ${refused} refused`);
  t.ok(acceptedIn.before > 0 && acceptedIn.down > 0 && acceptedIn.after > 0, 'events were accepted before, during and after the outage');
  t.equal(refused, 0, 'every event accepted (the spill journal took them while Redis was down)');

  const recorded = async (user: number): Promise<number[]> => {
    const seqs: number[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `external_id=u${user}&limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await fetch(`${engine.url}/api/events?${query}`, { headers: { authorization: `Bearer ${rest}` } });
      if (res.status !== 200) throw new Error(`GET /api/events answered ${res.status}`);
      const page = (await res.json()) as { events: { properties: { seq: number } }[]; next_cursor: string | null };
      seqs.push(...page.events.map((e) => e.properties.seq));
      cursor = page.next_cursor;
    } while (cursor !== null);
    return seqs.sort((a, b) => a - b);
  };
  const all = async (): Promise<number[][]> => Promise.all(sent.map((_, user) => recorded(user)));
  const lists = await eventually(
    'every accepted event recorded',
    async () => {
      const lists = await all();
      return lists.every((seqs, user) => seqs.length >= (sent[user]?.accepted.size ?? 0)) ? lists : undefined;
    },
    90_000,
  ).catch(async (err: unknown) => {
    const lists = await all();
    t.comment(`recorded ${lists.reduce((n, l) => n + l.length, 0)} of ${accepted}`);
    throw err;
  });
  // Late duplicates would show up after the counts first match.
  await new Promise((r) => setTimeout(r, 2000));
  const final = await all();
  t.same(final, lists, 'nothing more recorded later');
  const problems: string[] = [];
  final.forEach((seqs, user) => {
    const want = [...(sent[user]?.accepted ?? [])].sort((a, b) => a - b);
    if (JSON.stringify(seqs) !== JSON.stringify(want)) {
      const twice = seqs.filter((s, i) => seqs[i - 1] === s);
      const missing = want.filter((s) => !seqs.includes(s));
      problems.push(`u${user}: ${missing.length} missing (${missing.slice(0, 5).join(',')}), ${twice.length} twice (${twice.slice(0, 5).join(',')})`);
    }
  });
  t.same(problems, [], 'each accepted event recorded exactly once');
  t.equal(await engine.stop(), 0, 'the engine stops cleanly');
});
