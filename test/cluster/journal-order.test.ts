import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { SpillJournal } from '../../gateway/ingest/spill-journal.ts';
import { IngestWriter } from '../../gateway/ingest/writer.ts';
import type { IngestEntry } from '../../schemas/ingest.ts';
import { clusterNodes, keySlot } from '../helpers/cluster-fault.ts';
import { PrivateCluster } from '../../bench/redis-cluster.ts';

// A writer's entries must reach a partition in sequence order, or the apply takes the earlier
// ones for copies (docs/architecture.md#copies-in-the-log). A write taken by another node while an
// earlier one still waited on a stalled node let a later write of that earlier one's partition
// into the journal first; the replay then appended them in that order, and the apply skipped the
// earlier one (docs/reliability.md#redis-cluster).
const TIMEOUT_MS = 1000;
const topology = new Topology('order:', 8);

function entry(externalId: string, n: number): IngestEntry {
  return { op: 'tags', project: 'p1', external_id: externalId, at: n, tags: { n: `n${n}` } };
}

t.test('a write bound for the journal waits for every earlier write, not only the last one', async (t) => {
  const cluster = await PrivateCluster.start();
  t.teardown(() => cluster.stop());
  const first = cluster.ports[0] ?? 0;
  const primaries = (await clusterNodes(first)).filter((n) => n.primary);
  const portOf = async (externalId: string): Promise<number | undefined> => {
    const slot = await keySlot(first, topology.ingest(topology.partitionOf('p1', externalId)));
    return primaries.find((n) => n.slots.some(([lo, hi]) => slot >= lo && slot <= hi))?.port;
  };
  const stalled = primaries[0]?.port;
  // Two users of two partitions on the stalled node, one on another node.
  const users: { id: string; port: number | undefined; partition: number }[] = [];
  for (let i = 0; users.length < 400; i++) users.push({ id: `u${i}`, port: await portOf(`u${i}`), partition: topology.partitionOf('p1', `u${i}`) });
  const early = users.find((u) => u.port === stalled);
  const user = users.find((u) => u.port === stalled && u.partition !== early?.partition);
  const other = users.find((u) => u.port !== stalled);
  if (!early || !user || !other || stalled === undefined) throw new Error('no users on the nodes needed');

  const redis = createRedis(loadConfig({ REDIS_URL: cluster.url }), { commandTimeout: TIMEOUT_MS, offlineQueue: false, followRedirections: false });
  t.teardown(() => redis.disconnect());
  await new Promise((r) => redis.once('ready', r));
  const journal = new SpillJournal(mkdtempSync(join(tmpdir(), 'spill-')), 'gw', 1 << 20);
  // Not started: nothing is replayed, so the journal keeps the order the writes reached it in.
  const writer = new IngestWriter(redis, topology, journal, createLogger('error'), { replayEveryMs: 60_000 });
  t.teardown(() => writer.close());

  cluster.freeze(stalled, true);
  t.teardown(() => cluster.freeze(stalled, false));
  const writes = [writer.write([entry(early.id, 0)])];
  await new Promise((r) => setTimeout(r, TIMEOUT_MS / 2));
  writes.push(writer.write([entry(user.id, 1)]), writer.write([entry(other.id, 2)]));
  // The first write timed out and spills; the second still waits on the stalled node.
  while (!writer.isSpilling) await new Promise((r) => setTimeout(r, 20));
  writes.push(writer.write([entry(user.id, 3)]));
  await Promise.all(writes);

  const journaled = readFileSync(journal.path, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as IngestEntry);
  t.same(
    journaled.filter((e) => e.external_id === user.id).map((e) => e.at),
    [1, 3],
    "the user's writes are in the journal in the order they were accepted",
  );
  t.notOk(journaled.some((e) => e.external_id === other.id), 'the write the other node took is not in the journal');
});
