import t from 'tap';
import { deployment } from '../helpers/engine.ts';
import { Harness } from './harness.ts';
import type { IngestEntry } from '../../schemas/ingest.ts';
import { writeConsent } from '../../engine/state/users/consent.ts';
import { readHashes } from '../../engine/state/users/read-user.ts';

// One apply worker serves every subtest; each subtest uses its own users.
const d = await deployment(t);
const h = new Harness(d.env);
t.teardown(() => h.close());
await d.start(['apply']);
const project = d.project.project_id;
const T0 = Date.now();

const identify = (external_id: string, at: number, tags?: Record<string, string>): IngestEntry => ({
  op: 'identify',
  project,
  external_id,
  at,
  ...(tags ? { tags } : {}),
});
const setTags = (external_id: string, at: number, tags: Record<string, string>): IngestEntry => ({ op: 'tags', project, external_id, at, tags });
const subscribe = (external_id: string, at: number, token: string, extra: Record<string, string> = {}): IngestEntry => ({
  op: 'subscribe',
  project,
  external_id,
  at,
  type: 'EMAIL',
  token,
  ...extra,
});

t.test('a user is created on first mention and updated_at follows state changes', async (t) => {
  await h.append(identify('create-1', T0), setTags('create-1', T0 + 10, { a: 'sx' }), {
    op: 'event',
    project,
    external_id: 'create-2',
    at: T0 + 5,
    name: 'opened',
    ts: T0 + 5,
  });
  await h.settled();
  const one = await h.state(project, 'create-1');
  t.same(one.user, { created_at: String(T0), updated_at: String(T0 + 10) });
  const two = await h.state(project, 'create-2');
  t.same(two.user, { created_at: String(T0 + 5), updated_at: String(T0 + 5) }, 'an event alone creates the user');
});

t.test('tags merge, "" deletes, encoded values are kept as sent', async (t) => {
  await h.append(identify('tags-1', T0, { a: 's1', b: 'n2', c: 'sc' }), setTags('tags-1', T0 + 1, { b: 'n3.5', c: '', d: 's' }));
  await h.settled();
  t.same((await h.state(project, 'tags-1')).tags, { a: 's1', b: 'n3.5', d: 's' });
});

t.test('at most 200 tags: new keys past the limit are ignored, existing ones still update', async (t) => {
  const first: Record<string, string> = {};
  for (let i = 0; i < 150; i++) first[`k${String(i).padStart(3, '0')}`] = `n${i}`;
  const second: Record<string, string> = { k000: 'supdated' };
  for (let i = 150; i < 260; i++) second[`k${String(i).padStart(3, '0')}`] = `n${i}`;
  await h.append(setTags('tags-limit', T0, first), setTags('tags-limit', T0 + 1, second));
  await h.settled();
  let tags = (await h.state(project, 'tags-limit')).tags;
  t.equal(Object.keys(tags).length, 200);
  t.equal(tags['k000'], 'supdated', 'an existing key updates at the limit');
  t.equal(tags['k199'], 'n199', 'new keys are taken in key order up to the limit');
  t.notOk('k200' in tags, 'new keys past the limit are ignored');

  await h.append(setTags('tags-limit', T0 + 2, { k001: '', k300: 'snew', k301: 'sover' }));
  await h.settled();
  tags = (await h.state(project, 'tags-limit')).tags;
  t.equal(Object.keys(tags).length, 200);
  t.equal(tags['k300'], 'snew', 'a delete in the same write frees a place');
  t.notOk('k301' in tags);
});

t.test('a subscription is stored with its fields; re-registration updates them', async (t) => {
  await h.append(
    subscribe('subs-1', T0, 'a@example.com', { device_model: 'Pixel', device_os: '14', app_version: '1.0' }),
    subscribe('subs-1', T0 + 100, 'a@example.com', { app_version: '1.1' }),
  );
  await h.settled();
  const { subs } = await h.state(project, 'subs-1');
  t.same(subs, {
    'EMAIL:a@example.com': {
      type: 'EMAIL',
      token: 'a@example.com',
      device_model: 'Pixel',
      device_os: '14',
      app_version: '1.1',
      state: 'live',
      created_at: T0,
      updated_at: T0 + 100,
      registered_at: T0 + 100,
    },
  });
});

t.test('registering a subscription never touches consent', async (t) => {
  await writeConsent(h.redis, h.topology, project, 'consent-1', 'EMAIL', true, T0);
  await h.append(subscribe('consent-1', T0 + 1, 'c@example.com'));
  await h.settled();
  t.same((await readHashes(h.redis, h.topology, project, 'consent-1')).consent, { EMAIL: JSON.stringify({ opted_out: true, at: T0 }) });
  t.ok((await h.state(project, 'consent-1')).subs['EMAIL:c@example.com']);
});

t.test('at most 20 subscriptions: the oldest by last registration is dropped', async (t) => {
  const entries: IngestEntry[] = [];
  for (let i = 0; i < 21; i++) entries.push(subscribe('subs-limit', T0 + i, `s${i}@example.com`));
  await h.append(...entries);
  await h.settled();
  let fields = Object.keys((await h.state(project, 'subs-limit')).subs);
  t.equal(fields.length, 20);
  t.notOk(fields.includes('EMAIL:s0@example.com'), 'the oldest went');

  await h.append(subscribe('subs-limit', T0 + 100, 's1@example.com'), subscribe('subs-limit', T0 + 101, 'new@example.com'));
  await h.settled();
  fields = Object.keys((await h.state(project, 'subs-limit')).subs);
  t.equal(fields.length, 20);
  t.ok(fields.includes('EMAIL:s1@example.com'), 're-registering makes a subscription young again');
  t.notOk(fields.includes('EMAIL:s2@example.com'), 'the oldest by last registration went');
  t.ok(fields.includes('EMAIL:new@example.com'));
});

t.test('registering a known token under another user moves it; the newest registrant keeps it', async (t) => {
  const token = 'moving@example.com';
  const field = `EMAIL:${token}`;
  const holders = async (users: string[]) => {
    const out: string[] = [];
    for (const u of users) if ((await h.state(project, u)).subs[field]) out.push(u);
    return out;
  };
  const users = ['move-a', 'move-b', 'move-c'];

  await h.append(subscribe('move-a', T0, token), subscribe('move-b', T0 + 10, token));
  await h.settled();
  t.same(await holders(users), ['move-b'], 'moved to the newer registrant');

  await h.append(subscribe('move-a', T0 + 20, token));
  await h.settled();
  t.same(await holders(users), ['move-a'], 'moved back');

  // Accepted earlier than the current registration (a late replay): the newest still keeps it.
  await h.append(subscribe('move-c', T0 + 15, token));
  await h.settled();
  t.same(await holders(users), ['move-a'], 'an older registration does not take it');
  t.same(await h.tokenEntry(project, { type: 'EMAIL', token }), { owner: 'move-a', registered_at: String(T0 + 20), clear: false });
});

t.test('several users registering one token at once: only the newest keeps it', async (t) => {
  const token = 'race@example.com';
  const offsets = [3, 0, 5, 1, 4, 2];
  await h.append(...offsets.map((offset, i) => subscribe(`race-${i}`, T0 + 1000 + offset, token)));
  await h.settled();
  const kept: string[] = [];
  for (let i = 0; i < offsets.length; i++) if ((await h.state(project, `race-${i}`)).subs[`EMAIL:${token}`]) kept.push(`race-${i}`);
  t.same(kept, ['race-2']);
});

t.test('two users registering one token in the same millisecond: exactly one keeps it', async (t) => {
  const token = 'tie@example.com';
  await h.append(subscribe('tie-a', T0 + 2000, token), subscribe('tie-b', T0 + 2000, token));
  await h.settled();
  const a = (await h.state(project, 'tie-a')).subs[`EMAIL:${token}`];
  const b = (await h.state(project, 'tie-b')).subs[`EMAIL:${token}`];
  t.equal([a, b].filter(Boolean).length, 1);
  const owner = (await h.tokenEntry(project, { type: 'EMAIL', token }))?.owner;
  t.equal(owner, a ? 'tie-a' : 'tie-b', 'the token record names the holder');
});

t.test('events: an idempotency key is recorded once, without a key retries duplicate; receipts recorded', async (t) => {
  const event = (at: number, key?: string): IngestEntry => ({
    op: 'event',
    project,
    external_id: 'events-1',
    at,
    name: 'purchase',
    properties: { amount: 12.5, sku: 'A-1', big: 1234567890.123456 },
    ts: T0 - 1000,
    ...(key ? { idempotency_key: key } : {}),
  });
  const ids = await h.append(event(T0, 'order-1'), event(T0 + 1, 'order-1'), event(T0 + 2, 'order-1'), event(T0 + 3), event(T0 + 4), {
    op: 'receipt',
    project,
    external_id: 'events-1',
    at: T0 + 5,
    svc_message_id: 'm-1',
    kind: 'opened',
    ts: T0 + 5,
  });
  await h.settled();
  const mine = (await h.changes()).filter((c) => c.external_id === 'events-1');
  t.same(
    mine.map((c) => c.id),
    [ids[0], ids[3], ids[4], ids[5]],
  );
  // The change is the entry's own JSON with kind and id in front: op, at and the like ride along.
  t.has(mine[0], {
    kind: 'event',
    id: ids[0],
    project,
    external_id: 'events-1',
    name: 'purchase',
    properties: { amount: 12.5, sku: 'A-1', big: 1234567890.123456 },
    idempotency_key: 'order-1',
    ts: T0 - 1000,
  }, 'numbers keep their exact value');
  t.same(mine[3], { kind: 'receipt', id: ids[5], project, external_id: 'events-1', svc_message_id: 'm-1', receipt: 'opened', ts: T0 + 5 });
});

t.test('an invalid entry is skipped and the partition keeps going', async (t) => {
  const partition = h.topology.partitionOf(project, 'invalid-1');
  await h.redis.xadd(h.topology.ingest(partition), '*', 'd', '{not json');
  await h.redis.xadd(h.topology.ingest(partition), '*', 'd', JSON.stringify({ op: 'tags', project, external_id: 'invalid-1', at: 'soon' }));
  await h.append(setTags('invalid-1', T0, { ok: 'syes' }));
  await h.settled();
  t.same((await h.state(project, 'invalid-1')).tags, { ok: 'syes' });
});

t.test('applies publish user changes for created or changed users, and none for events of known users', async (t) => {
  const before = (await h.userChanges()).filter((u) => u.includes(':mirror-'));
  t.same(before, [], 'no changes for these users yet');
  await h.append(identify('mirror-1', T0), setTags('mirror-1', T0 + 1, { a: 's1' }), subscribe('mirror-2', T0 + 2, 'mirror2@example.com'));
  await h.settled();
  const first = (await h.userChanges()).filter((u) => u.includes(':mirror-'));
  // The entries may be applied in one batch or several: at most one change per user and batch.
  t.same([...new Set(first)].sort(), [`${project}:mirror-1`, `${project}:mirror-2`], 'created and changed users');
  t.ok(first.filter((u) => u.endsWith(':mirror-1')).length <= 2, 'mirror-1 at most once per entry');
  await h.append({ op: 'event', project, external_id: 'mirror-1', at: T0 + 3, name: 'opened', ts: T0 + 3 });
  await h.settled();
  const second = (await h.userChanges()).filter((u) => u.includes(':mirror-'));
  t.equal(second.length, first.length, 'an event of a known user changes nothing in the mirror');
});

t.test('the ingest stream is trimmed once it holds more than 512 entries, never below what is applied', async (t) => {
  const user = 'trim-1';
  const stream = h.topology.ingest(h.topology.partitionOf(project, user));
  for (let round = 0; round < 4; round++) {
    await h.append(...Array.from({ length: 300 }, (_, i) => setTags(user, T0 + round * 300 + i, { n: `n${round * 300 + i}` })));
  }
  await h.settled();
  const length = await h.redis.xlen(stream);
  t.ok(length < 1200, `trimmed: ${length} of 1200 entries left`);
  t.ok(length > 0, 'the last applied entry stays');
  t.same((await h.state(project, user)).tags, { n: 'n1199' }, 'every entry applied');
});
