import t, { type Test } from 'tap';
import { commandStats, type CommandStats } from '../../bench/commandstats.ts';
import type { IngestEntry } from '../../schemas/ingest.ts';
import { UserKeys } from '../../engine/state/users/redis-keys.ts';
import { deployment } from '../helpers/engine.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';
import { Harness, until } from './harness.ts';

/**
 * What Redis runs for the apply, counted on a server of the test's own (INFO commandstats):
 * the commands a write needs, not probes for what cannot be there (docs/performance.md,
 * "Batches end to end").
 */

const WRITES = 40;

async function setup(t: Test): Promise<{ h: Harness; project: string }> {
  const redis = await PrivateRedis.start();
  t.teardown(() => redis.stop());
  const d = await deployment(t, { env: { REDIS_URL: redis.url } });
  const h = new Harness(d.env);
  t.teardown(() => h.close());
  await d.start(['apply']);
  const project = d.project.project_id;
  // A write in every partition first: the worker has taken them all (and upgraded the layout)
  // before anything is counted.
  const warm = new Map<number, string>();
  for (let i = 0; warm.size < h.topology.partitions; i++) warm.set(h.topology.partitionOf(project, `warm-${i}`), `warm-${i}`);
  await oneByOne(h, [...warm.values()].map((id) => ({ op: 'identify', project, external_id: id, at: Date.now() })));
  return { h, project };
}

/** Calls of each command Redis ran while `work` ran. */
async function callsDuring(h: Harness, work: () => Promise<void>): Promise<(command: string) => number> {
  const before = await commandStats(h.redis);
  await work();
  const after: CommandStats = await commandStats(h.redis);
  return (command) => (after.get(command)?.calls ?? 0) - (before.get(command)?.calls ?? 0);
}

/**
 * One write at a time, each applied and settled before the next: a batch each. Waited for with
 * XINFO alone, a command the apply does not run, so the counts are the apply's.
 */
async function oneByOne(h: Harness, entries: IngestEntry[]): Promise<void> {
  for (const entry of entries) {
    const p = h.topology.partitionOf(entry.project, entry.external_id);
    await h.append(entry);
    await until('applied', async () => {
      const groups = (await h.redis.xinfo('GROUPS', h.topology.ingest(p))) as unknown[][];
      const group = fields(groups[0] ?? []);
      const outbox = fields((await h.redis.xinfo('STREAM', h.topology.outbox(p)).catch(() => ['length', 0])) as unknown[]);
      return group['pending'] === 0 && group['lag'] === 0 && (outbox['length'] ?? 0) === 0;
    });
  }
}

function fields(reply: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = reply[i + 1];
  return out;
}

const identify = (project: string, i: number): IngestEntry => ({ op: 'identify', project, external_id: `new-${i}`, at: Date.now(), tags: { plan: 'pro' } });
const subscribe = (project: string, i: number): IngestEntry => ({ op: 'subscribe', project, external_id: `sub-${i}`, at: Date.now(), type: 'EMAIL', token: `sub-${i}@example.com` });

t.test('an install that never ran 0.11.1 looks for none of its users, and pending entries are counted now and then', async (t) => {
  const { h, project } = await setup(t);
  const calls = await callsDuring(h, () => oneByOne(h, Array.from({ length: WRITES }, (_, i) => identify(project, i))));
  t.equal(calls('exists'), 0, 'no user looked up in the hashes of 0.11.1');
  t.ok(calls('xpending') < WRITES / 2, `the group's pending entries counted ${calls('xpending')} times for ${WRITES} batches, not once a batch`);
  const user = await h.state(project, 'new-0');
  t.same(user.tags, { plan: 'pro' }, 'and the writes are applied');
});

t.test("a batch that registers a subscription reads neither its outbox nor the detaches a new token cannot owe, nor looks for 0.11.1's token", async (t) => {
  const { h, project } = await setup(t);
  const calls = await callsDuring(h, () => oneByOne(h, Array.from({ length: 10 }, (_, i) => subscribe(project, i))));
  t.equal(calls('xlen'), 0, "the outbox's length is not read: the script knows it appended");
  t.equal(calls('xrange'), 10, "one XRANGE a batch, the stream's check: the outbox is settled from the apply's reply");
  t.equal(calls('xdel'), 10, 'and every registration was settled');
  t.equal(calls('hgetall'), 0, "no HGETALL: neither the detaches owed on a token no one held, nor 0.11.1's record of it");
});

t.test('an install of 0.11.1 still looks for its users until the window ends', async (t) => {
  const { h, project } = await setup(t);
  for (let p = 0; p < h.topology.partitions; p++) await h.redis.set(h.topology.own(UserKeys).legacyLayoutUntil(p), String(Date.now() + 60_000));
  const calls = await callsDuring(h, () => oneByOne(h, Array.from({ length: 10 }, (_, i) => identify(project, i))));
  t.equal(calls('exists'), 10, 'one look-up a new user');
});
