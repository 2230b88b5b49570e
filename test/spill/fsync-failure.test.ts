import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { IngestEntry } from '../../schemas/ingest.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { createRedis, type RedisClient } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { IngestWriter } from '../../gateway/ingest/writer.ts';
import { UnavailableError } from '../../schemas/errors.ts';
import { readJournal, SpillJournal, type JournalFile } from '../../gateway/ingest/spill-journal.ts';
import { cleanupPrefix, REDIS_URL, testPrefix } from '../helpers/redis.ts';

const log = createLogger('error');

/** Runs before one call of a file operation; when it rejects, that call fails without reaching the file. */
type Fault = () => Promise<void>;

function fails(call: string): Fault {
  return () => Promise.reject(Object.assign(new Error(`EIO: i/o error, ${call}`), { code: 'EIO' }));
}

/** Opens journal files for real; each queued fault runs before the next call of its kind. */
class ScriptedFiles {
  readonly datasyncs: Fault[] = [];
  readonly truncates: Fault[] = [];

  readonly open = async (path: string, flags: string): Promise<JournalFile> => {
    const handle = await open(path, flags);
    return {
      fd: handle.fd,
      write: (data) => handle.write(data),
      datasync: () => this.run(this.datasyncs, () => handle.datasync()),
      truncate: (len) => this.run(this.truncates, () => handle.truncate(len)),
      close: () => handle.close(),
    };
  };

  private async run(faults: Fault[], call: () => Promise<void>): Promise<void> {
    await faults.shift()?.();
    await call();
  }
}

/** A promise and the function that resolves it. */
function gate(): [Promise<void>, () => void] {
  let release = (): void => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  return [released, release];
}

function entry(externalId: string, n: number): IngestEntry {
  return { op: 'tags', project: 'p1', external_id: externalId, at: n, tags: { n: `n${n}` } };
}

function line(n: number): string {
  return JSON.stringify(entry('u', n));
}

function bytes(...ns: number[]): number {
  return ns.reduce((sum, n) => sum + Buffer.byteLength(line(n)) + 1, 0);
}

/** The `at` of each entry in a journal file, in file order. */
async function journaled(path: string): Promise<number[]> {
  const { lines } = await readJournal(path, 0, 1 << 20);
  return lines.map((l) => (JSON.parse(l) as IngestEntry).at);
}

async function outcome(write: Promise<void>): Promise<'accepted' | 'refused'> {
  try {
    await write;
    return 'accepted';
  } catch (err) {
    if (!(err instanceof UnavailableError)) throw err;
    return 'refused';
  }
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 10000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Every entry in the ingest streams, as user -> `at` values in stream order. */
async function streamed(redis: RedisClient, topology: Topology): Promise<Map<string, number[]>> {
  const out = new Map<string, number[]>();
  for (let p = 0; p < topology.partitions; p++) {
    for (const [, fields] of await redis.xrange(topology.ingest(p), '-', '+')) {
      const e = JSON.parse(fields[1] ?? '{}') as IngestEntry;
      out.set(e.external_id, [...(out.get(e.external_id) ?? []), e.at]);
    }
  }
  return out;
}

/** The shared Redis under a fresh prefix (removed after the test), through a writer-style client. */
async function redisSetup(t: Test): Promise<{ redis: RedisClient; topology: Topology; dir: string }> {
  const prefix = testPrefix();
  t.teardown(() => cleanupPrefix(prefix));
  const redis = createRedis(loadConfig({ REDIS_URL }), { commandTimeout: 500, offlineQueue: false });
  t.teardown(() => redis.disconnect());
  await until('redis ready', () => redis.status === 'ready');
  return { redis, topology: new Topology(prefix, 4), dir: mkdtempSync(join(tmpdir(), 'spill-')) };
}

/** A started writer over scripted journal files whose client is cut off, so its writes spill. */
async function spillingWriter(t: Test, replayEveryMs: number) {
  const { redis, topology, dir } = await redisSetup(t);
  const files = new ScriptedFiles();
  const journal = new SpillJournal(dir, 'gw', 1 << 20, { openFile: files.open });
  const writer = new IngestWriter(redis, topology, journal, log, { replayEveryMs });
  await writer.start();
  t.teardown(() => writer.close());
  await cutOff(redis);
  return { redis, topology, files, journal, writer };
}

/** Cuts the writer's client off, so writes spill as they do while Redis is unreachable. */
async function cutOff(redis: RedisClient): Promise<void> {
  redis.disconnect();
  await until('client disconnected', () => redis.status === 'end');
}

t.test('a group commit whose fsync fails is cut from the file; the next commit follows the last acknowledged one', async (t) => {
  const files = new ScriptedFiles();
  const journal = new SpillJournal(mkdtempSync(join(tmpdir(), 'spill-')), 'gw', 1 << 20, { openFile: files.open });
  t.teardown(() => journal.close());
  await journal.append([line(0), line(1)]);
  files.datasyncs.push(fails('fdatasync'));
  const refused = journal.append([line(2)]);
  const later = journal.append([line(3)]);
  await t.rejects(refused, { code: 'EIO' }, 'the commit whose fsync failed is refused');
  await t.resolves(later, 'the next commit is acknowledged');
  t.equal(files.datasyncs.length, 0, 'the fsync failure was injected');

  t.same(await journaled(journal.path), [0, 1, 3], 'the refused line is not in the file');
  t.equal(statSync(journal.path).size, bytes(0, 1, 3), 'the file ends at the last acknowledged line');
  t.equal(journal.durable, bytes(0, 1, 3), 'the durable length is that of the acknowledged lines');
  const tail = await readJournal(journal.path, bytes(0, 1), 1 << 20);
  t.same(tail, { lines: [line(3)], next: journal.durable }, 'a read from a durable offset starts at a line');
});

t.test('regression: writes answered 503 for a failed fsync are never replayed; every 202 is, once, in order', async (t) => {
  const { redis, topology, files, journal, writer } = await spillingWriter(t, 20);

  const users = ['a', 'b', 'c'];
  const write = (n: number) => outcome(writer.write([entry(users[n % 3] ?? 'a', n)]));
  const outcomes: ('accepted' | 'refused')[] = [];
  for (let n = 0; n < 10; n++) outcomes.push(await write(n));
  files.datasyncs.push(fails('fdatasync'));
  // Issued together: the first goes into the commit that fails, the rest into the one after it.
  outcomes.push(...(await Promise.all(Array.from({ length: 10 }, (_, k) => write(10 + k)))));
  for (let n = 20; n < 30; n++) outcomes.push(await write(n));

  const accepted = outcomes.flatMap((o, n) => (o === 'accepted' ? [n] : []));
  const refused = outcomes.flatMap((o, n) => (o === 'refused' ? [n] : []));
  t.same(refused, [10], 'the write of the failed commit is answered 503, no other');
  t.same(await journaled(journal.path), accepted, 'the journal holds the accepted writes only');

  await redis.connect();
  await until('journal replayed', () => !writer.isSpilling).catch(() => undefined);
  t.equal(writer.isSpilling, false, 'the replay catches up with the journal and writes go to Redis again');
  const inRedis = await streamed(redis, topology);
  for (const [i, user] of users.entries()) {
    t.same(inRedis.get(user), accepted.filter((n) => n % 3 === i), `user ${user}: every accepted write once, in order, no refused one`);
  }
});

t.test('regression: replay never applies a commit whose fsync is still running and then fails', async (t) => {
  const { redis, topology, files, journal, writer } = await spillingWriter(t, 20);

  for (let n = 0; n < 5; n++) await writer.write([entry('u', n)]);
  const [heldFsync, failFsync] = gate();
  files.datasyncs.push(async () => {
    await heldFsync;
    await fails('fdatasync')();
  });
  const held = outcome(writer.write([entry('u', 5)]));
  await until('the held commit written', () => statSync(journal.path).size > journal.durable);

  await redis.connect();
  await until('acknowledged writes replayed', async () => ((await streamed(redis, topology)).get('u') ?? []).length >= 5);
  await new Promise((r) => setTimeout(r, 100)); // several replay passes while the fsync is held
  failFsync();
  t.equal(await held, 'refused', 'the held write is answered 503');
  await until('journal replayed', () => !writer.isSpilling).catch(() => undefined);
  t.equal(writer.isSpilling, false, 'writes go to Redis again');
  await writer.write([entry('u', 6)]);
  t.same((await streamed(redis, topology)).get('u'), [0, 1, 2, 3, 4, 6], 'the refused write is not in Redis');
});

t.test('regression: a journal with a refused commit, adopted after a crash, replays the acknowledged writes only', async (t) => {
  const { redis, topology, dir } = await redisSetup(t);
  const files = new ScriptedFiles();
  const dead = new SpillJournal(dir, 'dead', 1 << 20, { openFile: files.open });
  t.teardown(() => dead.close());
  await dead.append([line(0)]);
  files.datasyncs.push(fails('fdatasync'));
  await t.rejects(dead.append([line(1)]));
  await dead.append([line(2)]);
  writeFileSync(join(dir, 'torn.journal'), line(3) + '\n' + line(4).slice(0, 10));

  const writer = new IngestWriter(redis, topology, new SpillJournal(dir, 'gw', 1 << 20), log, { replayEveryMs: 20 });
  await writer.start();
  t.teardown(() => writer.close());
  await until('orphans replayed', () => !writer.isSpilling);
  t.same((await streamed(redis, topology)).get('u'), [0, 2, 3], 'acknowledged lines of both files, oldest file first; no refused or torn line');
});

t.test('while a rollback fails, appends are refused unwritten; a later rollback (or close) cuts the file back', async (t) => {
  const files = new ScriptedFiles();
  const journal = new SpillJournal(mkdtempSync(join(tmpdir(), 'spill-')), 'gw', 1 << 20, { openFile: files.open });
  await journal.append([line(0)]);

  files.datasyncs.push(fails('fdatasync'));
  files.truncates.push(fails('ftruncate'), fails('ftruncate'));
  await t.rejects(journal.append([line(1)]), 'the commit whose fsync failed is refused');
  t.same(await journaled(journal.path), [0, 1], 'its rollback failed: its line is still past the durable length');
  await t.rejects(journal.append([line(2)]), { message: /ftruncate/ }, 'the next append is refused while the rollback fails');
  t.same(await journaled(journal.path), [0, 1], 'and is not written');
  await journal.append([line(3)]);
  t.same(await journaled(journal.path), [0, 3], 'once a rollback succeeds, the next commit follows the last acknowledged line');

  files.datasyncs.push(fails('fdatasync'));
  files.truncates.push(fails('ftruncate'));
  await t.rejects(journal.append([line(4)]));
  await journal.close();
  t.equal(files.truncates.length + files.datasyncs.length, 0, 'every injected failure happened');
  t.equal(readFileSync(journal.path, 'utf8'), [line(0), line(3)].join('\n') + '\n', 'close rolls back what a failed rollback left');
});

t.test('size is the durable bytes plus every pending byte, the commit in flight included', async (t) => {
  const files = new ScriptedFiles();
  const journal = new SpillJournal(mkdtempSync(join(tmpdir(), 'spill-')), 'gw', bytes(0, 1, 2), { openFile: files.open });
  t.teardown(() => journal.close());
  const [inFlight, release] = gate();
  files.datasyncs.push(() => inFlight);

  const first = journal.append([line(0)]);
  t.same([journal.durable, journal.size], [0, bytes(0)], 'a commit in flight counts');
  const second = journal.append([line(1), line(2)]);
  t.same([journal.durable, journal.size], [0, bytes(0, 1, 2)], 'appends waiting behind it count');
  t.equal(journal.fits(1), false, 'the limit counts both');
  release();
  await first;
  t.same([journal.durable, journal.size], [bytes(0), bytes(0, 1, 2)], 'a committed append moves to durable');
  await second;
  t.same([journal.durable, journal.size], [bytes(0, 1, 2), bytes(0, 1, 2)], 'nothing pending');

  files.datasyncs.push(fails('fdatasync'));
  const refused = journal.append([line(3)]);
  t.equal(journal.size, bytes(0, 1, 2, 3), 'a pending append counts until its commit ends');
  await t.rejects(refused);
  t.same([journal.durable, journal.size], [bytes(0, 1, 2), bytes(0, 1, 2)], 'a refused append no longer counts');
  t.equal(statSync(journal.path).size, journal.size, 'the file holds what size says');
  journal.clearSync();
  t.same([journal.durable, journal.size], [0, 0], 'cleared');
});

t.test('writes that spill together share one group commit, in the order they were written', async (t) => {
  const { files, journal, writer } = await spillingWriter(t, 60_000);

  const [held, release] = gate();
  files.datasyncs.push(() => held);
  const spare = 20;
  for (let i = 0; i < spare; i++) files.datasyncs.push(() => Promise.resolve());
  const first = writer.write([entry('u', 0)]);
  await until('the first commit in its fsync', () => files.datasyncs.length === spare);
  const rest = Array.from({ length: 10 }, (_, k) => writer.write([entry('u', k + 1)]));
  release();
  await Promise.all([first, ...rest]);
  t.equal(spare - files.datasyncs.length, 1, 'the ten writes queued behind the first commit took one more fsync');
  t.same(await journaled(journal.path), Array.from({ length: 11 }, (_, n) => n), 'in the order written');
});
