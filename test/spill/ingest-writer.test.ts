import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { IngestEntry } from '../../schemas/ingest.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { newWorkerId, workerRunsHere } from '../../engine/infra/process/worker-id.ts';
import { IngestWriter } from '../../gateway/ingest/writer.ts';
import { UnavailableError } from '../../schemas/errors.ts';
import { SpillJournal } from '../../gateway/ingest/spill-journal.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';

const log = createLogger('error');
const topology = new Topology('spill:', 4);

function entry(externalId: string, n: number): IngestEntry {
  return { op: 'tags', project: 'p1', external_id: externalId, at: n, tags: { n: `n${n}` } };
}

async function streamed(redis: ReturnType<typeof createRedis>): Promise<IngestEntry[]> {
  const all: IngestEntry[] = [];
  for (let p = 0; p < topology.partitions; p++) {
    for (const [, fields] of await redis.xrange(topology.ingest(p), '-', '+')) all.push(JSON.parse(fields[1] ?? '{}') as IngestEntry);
  }
  return all;
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 10000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function perUser(entries: IngestEntry[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const e of entries) out.set(e.external_id, [...(out.get(e.external_id) ?? []), e.at]);
  return out;
}

/** A private Redis (stopped at the end) with a writer-style client connected to it, and a journal directory. */
async function privateSetup(t: Test): Promise<{ server: PrivateRedis; redis: ReturnType<typeof createRedis>; dir: string }> {
  const server = await PrivateRedis.start();
  t.teardown(() => server.stop());
  const redis = createRedis(loadConfig({ REDIS_URL: server.url }), { commandTimeout: 500, offlineQueue: false });
  t.teardown(() => redis.disconnect());
  await new Promise((r) => redis.once('ready', r));
  return { server, redis, dir: mkdtempSync(join(tmpdir(), 'spill-')) };
}

t.test('writes accepted while Redis is down are journaled, then replayed in order', async (t) => {
  const { server, redis, dir } = await privateSetup(t);
  const writer = new IngestWriter(redis, topology, new SpillJournal(dir, 'gw1', 1 << 20), log, { replayEveryMs: 50 });
  await writer.start();
  t.teardown(() => writer.close());

  const users = ['a', 'b', 'c'];
  let n = 0;
  for (; n < 30; n++) await writer.write([entry(users[n % 3] ?? 'a', n)]);
  t.equal(writer.isSpilling, false, 'writes go to Redis while it answers');
  await server.stop();
  await until('redis seen down', () => redis.status !== 'ready');
  for (; n < 90; n++) await writer.write([entry(users[n % 3] ?? 'a', n)]);
  t.equal(writer.isSpilling, true, 'writes go to the journal while Redis is down');
  const journaled = readFileSync(join(dir, 'gw1.journal'), 'utf8').trim().split('\n');
  t.equal(journaled.length, 60, 'every write accepted during the outage is in the journal');

  await server.restart();
  await until('journal replayed', () => !writer.isSpilling);
  for (; n < 100; n++) await writer.write([entry(users[n % 3] ?? 'a', n)]);
  const after = await streamed(redis);
  const expected = new Map(users.map((u, i) => [u, Array.from({ length: 100 }, (_, k) => k).filter((k) => k % 3 === i)]));
  // Redis lost the first 30 entries with its restart (it keeps nothing on disk); the rest must be there in order.
  for (const [user, seen] of perUser(after)) {
    t.same(seen, (expected.get(user) ?? []).filter((k) => k >= 30), `user ${user}: every write after the outage began, in order`);
  }
  t.equal(readFileSync(join(dir, 'gw1.journal'), 'utf8'), '', 'the journal is emptied after replay');
});

t.test('a full journal answers UnavailableError and keeps what it took', async (t) => {
  const server = await PrivateRedis.start();
  await server.stop();
  const redis = createRedis(loadConfig({ REDIS_URL: server.url }), { commandTimeout: 200, offlineQueue: false });
  t.teardown(() => redis.disconnect());
  const dir = mkdtempSync(join(tmpdir(), 'spill-'));
  const writer = new IngestWriter(redis, topology, new SpillJournal(dir, 'gw1', 400), log, { replayEveryMs: 50 });
  await writer.start();
  t.teardown(() => writer.close());
  let accepted = 0;
  let refused = 0;
  for (let n = 0; n < 20; n++) {
    try {
      await writer.write([entry('u', n)]);
      accepted++;
    } catch (err) {
      t.type(err, UnavailableError);
      refused++;
    }
  }
  t.ok(accepted > 0 && refused > 0, `took ${accepted}, refused ${refused}`);
  t.equal(readFileSync(join(dir, 'gw1.journal'), 'utf8').trim().split('\n').length, accepted, 'every accepted write is in the journal');
});

t.test('a journal left by a crashed gateway is replayed at start, before new writes', async (t) => {
  const { redis, dir } = await privateSetup(t);
  const left = [0, 1, 2].map((n) => JSON.stringify(entry('u', n)));
  writeFileSync(join(dir, 'dead.journal'), left.join('\n') + '\n' + '{"torn', 'utf8');
  const writer = new IngestWriter(redis, topology, new SpillJournal(dir, 'gw2', 1 << 20), log, { replayEveryMs: 50 });
  await writer.start();
  t.teardown(() => writer.close());
  await writer.write([entry('u', 3)]);
  await until('orphan replayed', () => !writer.isSpilling);
  t.same(perUser(await streamed(redis)).get('u'), [0, 1, 2, 3], 'orphaned entries first, the torn line skipped, then the new write');
});

t.test('regression: a journal of a gateway still running on this host is not adopted; a dead one is', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'spill-'));
  const live = newWorkerId();
  const dead = live.replace(/-(\d+)-/, `-${2 ** 22 + 7}-`);
  writeFileSync(join(dir, `${live}.journal`), JSON.stringify(entry('u', 1)) + '\n');
  writeFileSync(join(dir, `${dead}.journal`), JSON.stringify(entry('u', 2)) + '\n');
  t.equal(workerRunsHere(live), true);
  t.equal(workerRunsHere(dead), false);
  t.equal(workerRunsHere('otherhost-1-abcdef'), false);
  const adopted = await new SpillJournal(dir, 'gw3', 1 << 20).adoptOrphans(workerRunsHere);
  t.same(adopted.map((p) => p.slice(dir.length + 1)), [`${dead}.journal.adopted-gw3`]);
  t.same(readdirSync(dir).sort(), [`${dead}.journal.adopted-gw3`, `${live}.journal`].sort(), 'the live journal stays where its gateway appends');
});
