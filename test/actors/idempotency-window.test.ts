import t from 'tap';
import { deployment } from '../helpers/engine.ts';
import { Harness } from './harness.ts';
import type { IngestEntry } from '../../schemas/ingest.ts';
import { UserKeys } from '../../engine/state/users/redis-keys.ts';

// The idempotency window of engine/infra/scripts/lua/applyBatch-n.lua: copies within 7 days of the original are
// dropped, exactly; it costs a few dozen bytes per event, in listpack-encoded buckets.
const d = await deployment(t);
const h = new Harness(d.env);
t.teardown(() => h.close());
await d.start(['apply']);
const project = d.project.project_id;
const T0 = Date.now();
const DAY = 24 * 60 * 60 * 1000;
const WINDOW = 7 * DAY;

const event = (external_id: string, at: number, key: string, name = 'purchase'): IngestEntry => ({
  op: 'event',
  project,
  external_id,
  at,
  name,
  ts: at,
  idempotency_key: key,
});

/** The changes of `external_id`'s events, as `name@at`. */
async function recorded(external_id: string): Promise<string[]> {
  const all = await h.changes();
  return all.flatMap((c) => (c.kind === 'event' && c.external_id === external_id ? [`${c.name}@${(c as { at?: number }).at ?? '?'}`] : []));
}

/** The window's keys of one partition: the day tables' records and buckets. */
async function windowKeys(partition: number): Promise<string[]> {
  const prefix = `${d.prefix}idw:{p${partition}}:`;
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await h.redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    keys.push(...found);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

t.test('a copy within 7 days of the original is dropped; one later is a new event', async (t) => {
  const user = 'window-1';
  await h.append(
    event(user, T0, 'k1', 'original'),
    event(user, T0 + 1, 'k1', 'retry'),
    event(user, T0 + WINDOW, 'k1', 'at-7-days'),
    event(user, T0 - 60 * 60 * 1000, 'k1', 'clock-behind'),
    event(user, T0 + WINDOW + 1, 'k1', 'past-7-days'),
    event(user, T0 + WINDOW + 2, 'k1', 'copy-of-the-new-one'),
  );
  await h.settled();
  t.same(await recorded(user), [`original@${T0}`, `past-7-days@${T0 + WINDOW + 1}`]);
});

t.test('the key is scoped to the user: two users of one partition with one key are two events', async (t) => {
  const partition = h.topology.partitionOf(project, 'scope-a');
  let other = 'scope-b';
  for (let i = 0; h.topology.partitionOf(project, other) !== partition; i++) other = `scope-b${i}`;
  await h.append(event('scope-a', T0, 'shared'), event(other, T0 + 1, 'shared'), event('scope-a', T0 + 2, 'shared'));
  await h.settled();
  t.equal((await recorded('scope-a')).length, 1);
  t.equal((await recorded(other)).length, 1, 'the same key for another user of the partition');
});

t.test('thousands of keys in one partition: every copy is found across splits, in under 40 bytes an event', async (t) => {
  const user = 'many-1';
  const partition = h.topology.partitionOf(project, user);
  const before = await windowKeys(partition);
  const n = 4000;
  const originals = Array.from({ length: n }, (_, i) => event(user, T0 + i, `order-${i}`));
  await h.append(...originals);
  await h.settled();
  const keys = (await windowKeys(partition)).filter((k) => !before.includes(k));
  t.ok(keys.length > n / 128, `${keys.length} keys: the table split its buckets`);
  let bytes = 0;
  const loose: string[] = [];
  for (const key of keys) {
    bytes += (await h.redis.memory('USAGE', key, 'SAMPLES', '0')) ?? 0;
    if ((await h.redis.object('ENCODING', key)) !== 'listpack') loose.push(key);
  }
  t.same(loose, [], 'every table key stays listpack-encoded');
  t.ok(bytes / n <= 40, `${(bytes / n).toFixed(1)} bytes of Redis an event`);
  await h.append(...originals.map((e, i) => ({ ...e, at: T0 + DAY + i, name: 'copy' })));
  await h.settled();
  const names = await recorded(user);
  t.equal(names.length, n, 'no copy recorded');
  t.notOk(names.some((x) => x.startsWith('copy@')));
});

t.test('markers of 0.11.1 are honoured until the partition says they are gone', async (t) => {
  const user = 'legacy-1';
  const partition = h.topology.partitionOf(project, user);
  await h.redis.set(h.topology.own(UserKeys).legacyEventIdempotency(partition, project, 'old-key'), '1', 'PX', DAY);
  await h.redis.set(h.topology.own(UserKeys).legacyLayoutUntil(partition), String(T0 + DAY));
  await h.append(event(user, T0, 'old-key', 'copy-of-old'), event(user, T0 + DAY, 'old-key', 'after-the-legacy-window'));
  await h.settled();
  t.same(await recorded(user), [`after-the-legacy-window@${T0 + DAY}`]);
});
