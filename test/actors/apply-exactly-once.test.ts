import t from 'tap';
import { createLogger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import { TokenIndex } from '../../engine/state/users/token-index.ts';
import { toEntries, type StreamEntry } from '../../engine/infra/runner/types.ts';
import { APPLY_GROUP } from '../../engine/infra/redis/topology.ts';
import { OutboxSettler } from '../../actors/partition/outbox-settler.ts';
import { PartitionActor } from '../../actors/partition/partition-actor.ts';
import type { IngestEntry } from '../../schemas/ingest.ts';
import { deployment } from '../helpers/engine.ts';
import { Harness } from './harness.ts';

// The apply script is called directly here, as the runner would call it, without a worker process.
const WORKER = 'test-worker';
const d = await deployment(t);
const h = new Harness(d.env);
t.teardown(() => h.close());
const project = d.project.project_id;
const metrics = new Metrics();
const actor = new PartitionActor({
  redis: h.redis,
  topology: h.topology,
  workerId: WORKER,
  settler: new OutboxSettler(h.redis, h.topology),
  log: createLogger('error'),
  metrics,
});

/** Every key under the deployment's prefix with its full value. */
async function dump(): Promise<Record<string, unknown>> {
  const keys = (await h.redis.keys(`${d.prefix}*`)).sort();
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const type = await h.redis.type(key);
    if (type === 'hash') out[key] = await h.redis.hgetall(key);
    else if (type === 'string') out[key] = await h.redis.get(key);
    else if (type === 'stream') out[key] = await h.redis.xrange(key, '-', '+');
    else if (type === 'set') out[key] = (await h.redis.smembers(key)).sort();
    else out[key] = type;
  }
  return out;
}

/** A user in the given partition, found by trying names. */
function userIn(partition: number, seed: string): string {
  for (let i = 0; ; i++) if (h.topology.partitionOf(project, `${seed}-${i}`) === partition) return `${seed}-${i}`;
}

async function readGroup(partition: number): Promise<StreamEntry[]> {
  const reply = (await h.redis.xreadgroup('GROUP', APPLY_GROUP, WORKER, 'COUNT', 1000, 'STREAMS', h.topology.ingest(partition), '>')) as
    | [string, unknown][]
    | null;
  return toEntries(reply?.[0]?.[1]);
}

const P = 3;
const user = userIn(P, 'eo');
const other = userIn((P + 1) % h.topology.partitions, 'eo-other');
await h.redis.xgroup('CREATE', h.topology.ingest(P), APPLY_GROUP, '0', 'MKSTREAM');
await h.redis.set(h.topology.lease(P), WORKER, 'PX', 60_000);
const at = Date.now();
const batch: IngestEntry[] = [
  { op: 'identify', project, external_id: user, at, tags: { n: 'n1' } },
  { op: 'tags', project, external_id: user, at: at + 1, tags: { n: 'n2', s: 'sx' } },
  { op: 'subscribe', project, external_id: user, at: at + 2, type: 'SMS', token: '+15550001111' },
  { op: 'event', project, external_id: user, at: at + 3, name: 'e', ts: at, idempotency_key: 'k1' },
  { op: 'event', project, external_id: user, at: at + 4, name: 'e', ts: at },
  { op: 'receipt', project, external_id: user, at: at + 5, svc_message_id: 'm', kind: 'delivered', ts: at },
];

t.test('re-running a batch (redelivery) changes nothing', async (t) => {
  // Another user holds the token first, so the batch's registration must also move it.
  await new TokenIndex(h.redis, h.topology).claim(project, { type: 'SMS', token: '+15550001111' }, other, at - 1000, false);
  await h.append(...batch);
  const entries = await readGroup(P);
  t.equal(entries.length, batch.length);

  t.same(await actor.apply(P, entries), { kind: 'applied' });
  const after = await dump();
  t.equal((await h.changes()).length, 3, 'two events and a receipt');
  t.equal(await h.redis.get(h.topology.applied(P)), entries[entries.length - 1]?.id);
  t.same(await h.redis.xpending(h.topology.ingest(P), APPLY_GROUP), [0, null, null, null], 'every entry acknowledged');

  t.same(await actor.apply(P, entries), { kind: 'applied' });
  t.same(await dump(), after, 'the second run changed nothing');
});

t.test('a redelivered batch that also holds new entries applies only the new ones', async (t) => {
  const old = toEntries(await h.redis.xrange(h.topology.ingest(P), '-', '+'));
  await h.append({ op: 'tags', project, external_id: user, at: at + 10, tags: { n: 'n3' } });
  const fresh = await readGroup(P);
  t.same(await actor.apply(P, [...old, ...fresh]), { kind: 'applied' });
  t.same((await h.state(project, user)).tags, { n: 'n3', s: 'sx' });
  t.equal((await h.changes()).length, 3, 'no event recorded twice');
});

t.test('an apply by a worker that lost the lease writes nothing', async (t) => {
  await h.append({ op: 'tags', project, external_id: user, at: at + 20, tags: { n: 'n4' } });
  const entries = await readGroup(P);
  await h.redis.set(h.topology.lease(P), 'someone-else', 'PX', 60_000);
  const before = await dump();
  t.same(await actor.apply(P, entries), { kind: 'lost' });
  t.same(await dump(), before);
  await h.redis.set(h.topology.lease(P), WORKER, 'PX', 60_000);
  t.same(await actor.apply(P, entries), { kind: 'applied' }, 'applies once the lease is back');
});

t.test('a batch that skips entries after the last applied one is refused as a gap', async (t) => {
  const applied = await h.redis.get(h.topology.applied(P));
  await h.append(
    { op: 'tags', project, external_id: user, at: at + 30, tags: { n: 'n5' } },
    { op: 'tags', project, external_id: user, at: at + 31, tags: { n: 'n6' } },
  );
  const [first, second] = await readGroup(P);
  if (!first || !second) throw new Error('expected two entries');
  const before = await dump();
  t.same(await actor.apply(P, [second]), { kind: 'gap', after: applied });
  t.same(await dump(), before, 'nothing written');
  t.same(await actor.apply(P, [first, second]), { kind: 'applied' });
  t.equal((await h.state(project, user)).tags['n'], 'n6');
});

t.test('a settlement cut short after the token claim still detaches the former holder', async (t) => {
  const token = '+15550002222';
  const holder = userIn((P + 2) % h.topology.partitions, 'holder');
  const holderPartition = h.topology.partitionOf(project, holder);
  await h.redis.xgroup('CREATE', h.topology.ingest(holderPartition), APPLY_GROUP, '0', 'MKSTREAM');
  await h.redis.set(h.topology.lease(holderPartition), WORKER, 'PX', 60_000);
  await h.append({ op: 'subscribe', project, external_id: holder, at: at + 40, type: 'SMS', token });
  t.same(await actor.apply(holderPartition, await readGroup(holderPartition)), { kind: 'applied' });

  // The crashed settlement got as far as the claim: the token already names the new holder.
  await new TokenIndex(h.redis, h.topology).claim(project, { type: 'SMS', token }, user, at + 50, false);
  await h.append({ op: 'subscribe', project, external_id: user, at: at + 50, type: 'SMS', token });
  t.same(await actor.apply(P, await readGroup(P)), { kind: 'applied' });
  t.equal(await h.redis.xlen(h.topology.outbox(P)), 0, 'outbox settled');

  const detaches = await readGroup(holderPartition);
  t.match(JSON.parse(detaches[0]?.fields[1] ?? '{}'), { op: 'detach', external_id: holder, type: 'SMS', token, registered_at: at + 50 });
  t.same(await actor.apply(holderPartition, detaches), { kind: 'applied' });
  t.notOk((await h.state(project, holder)).subs[`SMS:${token}`], 'the former holder dropped it');
  t.ok((await h.state(project, user)).subs[`SMS:${token}`], 'the new holder has it');
});

t.test('a copy of a writer-stamped entry (an append resent or replayed) is applied once', async (t) => {
  const events = async (): Promise<unknown[]> =>
    (await h.changes()).filter((c) => c.kind === 'event' && c.name === 'stamped').map((c) => (c.kind === 'event' ? c.properties?.['k'] : undefined));
  const stamped = (k: string, w: string | undefined, n: number | undefined): IngestEntry => ({
    op: 'event',
    project,
    external_id: user,
    at,
    name: 'stamped',
    ts: at,
    properties: { k },
    ...(w === undefined ? {} : { w }),
    ...(n === undefined ? {} : { n }),
  });
  await h.append(
    stamped('a1', 'gw-a', 1),
    stamped('a2', 'gw-a', 2),
    stamped('a2-copy', 'gw-a', 2),
    stamped('b1', 'gw-b', 1),
    stamped('a1-copy', 'gw-a', 1),
    stamped('unstamped', undefined, undefined),
    stamped('unstamped', undefined, undefined),
  );
  t.same(await actor.apply(P, await readGroup(P)), { kind: 'applied' });
  t.same(await events(), ['a1', 'a2', 'b1', 'unstamped', 'unstamped'], 'copies skipped in the batch, other writers and unstamped entries kept');

  await h.append(stamped('a2-late-copy', 'gw-a', 2), stamped('a3', 'gw-a', 3), stamped('b1-late-copy', 'gw-b', 1));
  t.same(await actor.apply(P, await readGroup(P)), { kind: 'applied' });
  t.same((await events()).slice(5), ['a3'], 'a later batch skips copies of what an earlier one applied');
  t.same(await h.redis.xpending(h.topology.ingest(P), APPLY_GROUP), [0, null, null, null], 'copies are acknowledged too');
});
