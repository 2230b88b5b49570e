import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { IngestEntry } from '../../schemas/ingest.ts';
import { OverloadedError, UnavailableError } from '../../schemas/errors.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { Metrics } from '../../engine/infra/process/metrics.ts';
import { createRedis, type RedisClient } from '../../engine/infra/redis/client.ts';
import { APPLY_GROUP, Topology } from '../../engine/infra/redis/topology.ts';
import { RedisPressure, type Admission } from '../../gateway/ingest/pressure.ts';
import { SpillJournal } from '../../gateway/ingest/spill-journal.ts';
import { IngestWriter, type RefusalReason } from '../../gateway/ingest/writer.ts';
import { eventually } from '../helpers/http.ts';
import { fillWithLiveState, freeLiveState, redisMemory } from '../helpers/overload.ts';
import { PrivateRedis } from '../helpers/private-redis.ts';
import { testPrefix } from '../helpers/redis.ts';

// The writer asks admission before each append. Held back, writes go to the journal (202) only up
// to what draining the workers' backlog makes room for; past that, or once the journal is full,
// they are refused `overloaded`. Admitted again, the journal replays in order before later writes.
// Redis unreachable, the journal takes writes until it is full.
const log = createLogger('error');
const MAXMEMORY = '24mb';
const config = { ADMISSION_HIGH_PERCENT: 80, ADMISSION_LOW_PERCENT: 70, REDIS_MEMORY_BUDGET: 0 };

/** Admission as a test sets it. */
class Gate implements Admission {
  admits = true;
  spill = Infinity;
  appended(): void {}
  room(): number {
    return Infinity;
  }
  spillRoom(): number {
    return this.spill;
  }
  describe(): string {
    return 'Redis holds 9 of its 10 MiB limit (test)';
  }
  describeNoRoom(journaled: number): string {
    return `Redis holds 9 of its 10 MiB limit in live state (test), the journal ${journaled} bytes`;
  }
}

function entry(n: number, tag = `n${n}`): IngestEntry {
  return { op: 'tags', project: 'p1', external_id: `u${n % 3}`, at: n, tags: { n: tag } };
}

/** A private Redis (stopped at the end), a writer-style client on it, a key prefix and a journal directory of the test's own. */
async function privateSetup(t: Test, maxmemory?: string): Promise<{ server: PrivateRedis; redis: RedisClient; topology: Topology; dir: string }> {
  const server = await PrivateRedis.start(maxmemory === undefined ? {} : { maxmemory });
  t.teardown(() => server.stop());
  const redis = createRedis(loadConfig({ REDIS_URL: server.url }), { commandTimeout: 2000, offlineQueue: false });
  t.teardown(() => redis.disconnect());
  await new Promise((r) => redis.once('ready', r));
  return { server, redis, topology: new Topology(testPrefix(), 2), dir: mkdtempSync(join(tmpdir(), 'adm-')) };
}

/** A started RedisPressure on `server` (closed at the end), and the client of its own it reads with. */
async function startPressure(t: Test, server: PrivateRedis, topology: Topology): Promise<{ reader: RedisClient; pressure: RedisPressure }> {
  const reader = createRedis(loadConfig({ REDIS_URL: server.url }), { commandTimeout: 2000 });
  t.teardown(() => reader.disconnect());
  const pressure = new RedisPressure(reader, topology, config, new Metrics(), log);
  await pressure.start();
  t.teardown(() => pressure.close());
  return { reader, pressure };
}

/** The entries of every ingest stream, in stream order. */
async function streamed(redis: RedisClient, topology: Topology): Promise<IngestEntry[]> {
  const all: IngestEntry[] = [];
  for (let p = 0; p < topology.partitions; p++) {
    for (const [, fields] of await redis.xrange(topology.ingest(p), '-', '+')) all.push(JSON.parse(fields[1] ?? '{}') as IngestEntry);
  }
  return all;
}

/** Each user's `at` values in stream order. */
function perUser(entries: IngestEntry[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const e of entries) out.set(e.external_id, [...(out.get(e.external_id) ?? []), e.at]);
  return out;
}

/** The error a write rejects with, or null when it is accepted. */
function outcome(write: Promise<void>): Promise<unknown> {
  return write.then(
    () => null,
    (err: unknown) => err,
  );
}

/**
 * Another gateway's writes that the workers have not applied yet: `count` entries of user `other`
 * whose field and value come to `size` bytes each. Returns their bytes.
 */
async function addBacklog(redis: RedisClient, topology: Topology, count: number, size: number): Promise<number> {
  const value = JSON.stringify({ op: 'tags', project: 'p1', external_id: 'other', at: 0, tags: { pad: '' } });
  const padded = value.replace('"pad":""', `"pad":"${'x'.repeat(size - 1 - value.length)}"`);
  await Promise.all(Array.from({ length: count }, (_, i) => redis.xadd(topology.ingest(i % topology.partitions), '*', 'd', padded)));
  return count * size;
}

/** What the apply workers would do with the backlog: read it in their group, acknowledge it, trim it. */
async function applyAll(redis: RedisClient, topology: Topology): Promise<void> {
  for (let p = 0; p < topology.partitions; p++) {
    const stream = topology.ingest(p);
    await redis.xgroup('CREATE', stream, APPLY_GROUP, '0', 'MKSTREAM').catch(() => undefined);
    const read = (await redis.xreadgroup('GROUP', APPLY_GROUP, 'test', 'COUNT', 1_000_000, 'STREAMS', stream, '>')) as [string, [string, string[]][]][] | null;
    const ids = read?.[0]?.[1].map(([id]) => id) ?? [];
    if (ids.length > 0) await redis.xack(stream, APPLY_GROUP, ...ids);
    await redis.xtrim(stream, 'MAXLEN', 0);
  }
}

t.test('held back: journaled, then refused overloaded once the journal is full; admitted: replayed in order', async (t) => {
  const { redis, topology, dir } = await privateSetup(t);
  const gate = new Gate();
  const refused: RefusalReason[] = [];
  const journal = new SpillJournal(dir, 'gw', 2000);
  const writer = new IngestWriter(redis, topology, journal, log, { replayEveryMs: 50, admission: gate, refused: (r) => refused.push(r) });
  await writer.start();
  t.teardown(() => writer.close());

  await writer.write([entry(0)]);
  gate.admits = false;
  const accepted = [0];
  let refusal: unknown = null;
  for (let n = 1; n < 100 && refusal === null; n++) {
    refusal = await outcome(writer.write([entry(n)]));
    if (refusal === null) accepted.push(n);
  }
  t.ok(accepted.length > 5, `${accepted.length} writes accepted, the later ones into the journal`);
  t.equal((await redis.xlen(topology.ingest(0))) + (await redis.xlen(topology.ingest(1))), 1, 'only the first reached Redis');
  t.type(refusal, OverloadedError, 'once the journal is full, a write is refused overloaded');
  t.match((refusal as OverloadedError).message, /Redis holds 9 of its 10 MiB limit \(test\), and this gateway's spill journal is full/, 'saying why');
  t.equal((refusal as OverloadedError).retryAfter, 5, 'with Retry-After');
  t.same(refused, ['overloaded'], 'counted by reason');
  t.match(writer.refusing(), /spill journal is full/, '/readyz is told the gateway refuses');
  t.ok(writer.isSpilling, 'the journal waits while Redis is past its watermark');

  gate.admits = true;
  await eventually('the journal replayed', async () => (writer.isSpilling ? undefined : true));
  const inRedis = (await streamed(redis, topology)).map((e) => e.at);
  t.same(inRedis.sort((a, b) => a - b), accepted, 'every accepted write is in Redis once');
  t.equal(writer.refusing(), null, 'and the gateway no longer refuses');
});

t.test('held back: the journal takes only what waiting makes room for, the rest is refused live_state; admitted, the journal goes first', async (t) => {
  const { redis, topology, dir } = await privateSetup(t);
  const gate = new Gate();
  gate.admits = false;
  gate.spill = 0;
  const refused: RefusalReason[] = [];
  const journal = new SpillJournal(dir, 'gw', 1 << 20);
  const writer = new IngestWriter(redis, topology, journal, log, { replayEveryMs: 50, admission: gate, refused: (r) => refused.push(r) });
  await writer.start();
  t.teardown(() => writer.close());

  t.match(writer.refusing(), /^Buffered writes are refused: Redis holds 9 of its 10 MiB limit in live state \(test\), the journal 0 bytes/, '/readyz says so before any write came');
  const first = await outcome(writer.write([entry(0)]));
  t.type(first, OverloadedError, 'nothing to wait for: the write is refused overloaded');
  t.equal((first as OverloadedError).retryAfter, 5, 'with Retry-After');
  t.equal(journal.size, 0, 'and not journaled');
  t.same(refused, ['live_state'], 'counted as live_state');

  gate.spill = 1000;
  const accepted: number[] = [];
  let refusal: unknown = null;
  for (let n = 1; n < 100 && refusal === null; n++) {
    refusal = await outcome(writer.write([entry(n)]));
    if (refusal === null) accepted.push(n);
  }
  t.ok(accepted.length >= 2, `${accepted.length} writes journaled while waiting makes room for them`);
  t.ok(journal.size <= 1000, `the journal holds ${journal.size} bytes, no more than the room waiting makes`);
  t.type(refusal, OverloadedError, 'past it, writes are refused overloaded');
  t.match((refusal as OverloadedError).message, new RegExp(`in live state \\(test\\), the journal ${journal.size} bytes\\. Retry later`), 'saying what the journal already holds');
  t.same(refused, ['live_state', 'live_state'], 'counted as live_state');
  t.equal((await streamed(redis, topology)).length, 0, 'nothing reached Redis');

  gate.admits = true;
  const later = [200, 201, 202, 203, 204, 205];
  for (const n of later) await writer.write([entry(n)]);
  await eventually('the journal replayed', async () => (writer.isSpilling ? undefined : true));
  const expected = perUser([...accepted, ...later].map((n) => entry(n)));
  t.same(perUser(await streamed(redis, topology)), expected, 'each user: every journaled write once, in order, before every later one');
  t.equal(writer.refusing(), null, 'and the gateway no longer refuses');
});

t.test('Redis unreachable: the journal takes writes until it is full, whatever the memory readings said', async (t) => {
  const { server, redis, topology, dir } = await privateSetup(t);
  await server.stop();
  await eventually('redis seen down', async () => (redis.status === 'ready' ? undefined : true));
  const gate = new Gate();
  gate.admits = false;
  gate.spill = 0;
  const refused: RefusalReason[] = [];
  const writer = new IngestWriter(redis, topology, new SpillJournal(dir, 'gw', 1000), log, { replayEveryMs: 50, admission: gate, refused: (r) => refused.push(r) });
  await writer.start();
  t.teardown(() => writer.close());
  t.equal(writer.refusing(), null, '/readyz does not say overloaded (its ping says unavailable)');
  let accepted = 0;
  let refusal: unknown = null;
  for (let n = 0; n < 100 && refusal === null; n++) {
    refusal = await outcome(writer.write([entry(n)]));
    if (refusal === null) accepted++;
  }
  t.ok(accepted > 2, `${accepted} writes journaled`);
  t.type(refusal, UnavailableError, 'then refused unavailable, once the journal is full');
  t.same(refused, ['unavailable']);
});

t.test('RedisPressure on a real Redis: past the high watermark the journal may hold about what draining the backlog frees; drained, nothing', async (t) => {
  const { server, topology } = await privateSetup(t, MAXMEMORY);
  const { reader: redis, pressure } = await startPressure(t, server, topology);
  t.ok(pressure.admits, 'an empty Redis admits');
  const high = ((await redisMemory(server.url)).maxmemory * config.ADMISSION_HIGH_PERCENT) / 100;

  const backlog = await addBacklog(redis, topology, 2000, 1000);
  const keys = await fillWithLiveState(server.url, topology.prefix, high + 256 * 1024);
  await eventually('writes held back', async () => (pressure.admits ? undefined : true));
  const room = pressure.spillRoom();
  t.ok(room > 0, `the journal may hold ${room} bytes: draining the backlog frees room`);
  t.ok(room <= backlog / 2, `no more than half the backlog's ${backlog} bytes, Redis being past the watermark`);
  t.match(pressure.describeNoRoom(room), /^Redis holds [\d.]+ MiB of its 24\.0 MiB limit \(\d+%\), past its 80% watermark; draining the workers' backlog \(about [\d.]+ MiB\)/, 'and says so');

  await applyAll(redis, topology);
  await eventually('admitted again', async () => (pressure.admits ? true : undefined));
  t.pass('the workers drained the backlog: under the high watermark again, writes and the journal go to Redis');

  keys.push(...(await fillWithLiveState(server.url, topology.prefix, high + 256 * 1024)));
  await eventually('writes held back', async () => (pressure.admits ? undefined : true));
  t.equal(pressure.spillRoom(), 0, 'past the watermark with nothing left to drain: no room in the journal');
  t.match(pressure.describeNoRoom(0), /^Redis holds [\d.]+ MiB of its 24\.0 MiB limit \(\d+%\) in live state that waiting does not free: the workers have applied and recorded everything/, 'saying why');

  await freeLiveState(server.url, keys);
  await eventually('admitted once the live state is gone', async () => (pressure.admits ? true : undefined));
  t.pass('admitted once the live state is gone');
});

t.test('RedisPressure past the high watermark between two readings: what the gateway appended since counts as backlog', async (t) => {
  const { server, topology } = await privateSetup(t, MAXMEMORY);
  const { pressure } = await startPressure(t, server, topology);
  const { used, maxmemory } = await redisMemory(server.url);
  const high = (maxmemory * config.ADMISSION_HIGH_PERCENT) / 100;

  // The reading saw an empty Redis with nothing to drain; a surge crosses the watermark before the
  // next one (no await in between: no reading can come).
  const surge = Math.ceil(high - used) + 1024 * 1024;
  pressure.appended(surge);
  t.notOk(pressure.admits, 'held back on what was appended since the reading');
  const room = pressure.spillRoom();
  t.ok(room > surge / 4, `the journal may hold ${room} bytes: the ${surge} bytes appended since are a backlog the workers will drain`);
  t.ok(room <= surge / 2, 'no more than half of them');
  t.notMatch(pressure.describeNoRoom(room), /the workers have applied and recorded everything/, 'and the backlog is not called drained');
});

t.test('a writer on a real Redis full of live state: refused at once, journaled only up to what draining frees, applied first once memory is freed', async (t) => {
  const { server, redis, topology, dir } = await privateSetup(t, MAXMEMORY);
  const { reader, pressure } = await startPressure(t, server, topology);
  const refused: RefusalReason[] = [];
  const journal = new SpillJournal(dir, 'gw', 64 << 20);
  const writer = new IngestWriter(redis, topology, journal, log, { replayEveryMs: 50, admission: pressure, refused: (r) => refused.push(r) });
  await writer.start();
  t.teardown(() => writer.close());
  const high = ((await redisMemory(server.url)).maxmemory * config.ADMISSION_HIGH_PERCENT) / 100;
  let next = 0;
  /** One write of 10 entries (~6 KB); its `at` values. */
  const write = async (): Promise<{ ats: number[]; err: unknown }> => {
    const ats = Array.from({ length: 10 }, () => next++);
    return { ats, err: await outcome(writer.write(ats.map((n) => entry(n, 'x'.repeat(500))))) };
  };

  // Live state past the watermark and nothing to drain.
  const keys = await fillWithLiveState(server.url, topology.prefix, high + 256 * 1024);
  await eventually('writes held back', async () => (pressure.admits ? undefined : true));
  t.match(writer.refusing(), /in live state that waiting does not free/, '/readyz says overloaded before any write came');
  const first = await write();
  t.type(first.err, OverloadedError, 'a write is refused overloaded, not journaled');
  t.match((first.err as OverloadedError).message, /^Buffered writes are refused: Redis holds [\d.]+ MiB of its 24\.0 MiB limit \(\d+%\) in live state that waiting does not free/, 'naming the cause');
  t.equal((first.err as OverloadedError).retryAfter, 5, 'with Retry-After');
  t.equal(journal.size, 0, 'the journal holds nothing');

  // A backlog the workers have not applied (some live state made way for it): the journal takes
  // about what draining it frees.
  const backlog = await addBacklog(reader, topology, 2000, 1000);
  await freeLiveState(server.url, keys, high + 256 * 1024);
  await eventually('the backlog seen', async () => (pressure.spillRoom() > 100 * 1024 ? true : undefined));
  const accepted: number[] = [];
  let refusal: unknown = null;
  while (refusal === null) {
    const w = await write();
    refusal = w.err;
    if (w.err === null) accepted.push(...w.ats);
  }
  t.ok(accepted.length > 0, `${accepted.length} entries journaled (202) while draining the backlog makes room for them`);
  t.ok(journal.size <= backlog / 2, `the journal holds ${journal.size} bytes, at most half the backlog's ${backlog}`);
  t.match((refusal as OverloadedError).message, /draining the workers' backlog .* and this gateway's spill journal already holds/, 'then writes are refused: the journal holds what draining frees');

  // Live state takes that room before the workers drain: waiting frees nothing more.
  keys.push(...(await fillWithLiveState(server.url, topology.prefix, (await redisMemory(server.url)).used + 1.5 * backlog)));
  await applyAll(reader, topology);
  await eventually('drained', async () => (/the workers have applied and recorded everything/.test(writer.refusing() ?? '') ? true : undefined));
  const stuck = await write();
  t.match((stuck.err as OverloadedError | null)?.message, /in live state that waiting does not free/, 'drained and still past the watermark: refused');
  t.ok(writer.isSpilling, 'the journaled writes wait for room');
  t.equal(refused.filter((r) => r !== 'live_state').length, 0, 'every refusal counted as live_state');

  // Memory freed: the journal first, then later writes.
  await freeLiveState(server.url, keys);
  await eventually('admitted again', async () => (pressure.admits ? true : undefined));
  const later: number[] = [];
  for (let i = 0; i < 5; i++) {
    const w = await write();
    t.equal(w.err, null, 'a later write is accepted');
    later.push(...w.ats);
  }
  await eventually('the journal replayed', async () => (writer.isSpilling ? undefined : true));
  const mine = (await streamed(redis, topology)).filter((e) => e.external_id !== 'other');
  t.same(perUser(mine), perUser([...accepted, ...later].map((n) => entry(n))), 'each user: every journaled write once, in order, before every later one');
  t.equal(writer.refusing(), null, 'and the gateway no longer refuses');
});
