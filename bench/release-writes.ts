/**
 * SDK writes against the last release, in the same run: this tree's engine and the release's
 * (bench/release.ts; `releases.json` names it, BENCH_RELEASE overrides), each its default
 * deployment (`engine start`: every role in one process, embedded ClickHouse) on a redis-server
 * of its own, so neither's idle work counts in the other's figures; loaded in turn by autocannon,
 * 100 connections, no pipelining, over 100 000 users:
 *  - identify with tags: POST /api/sdk/users with two tags;
 *  - the SDK mix of bench/sdk-ingest-mix.ts (identify, tags, events, subscriptions).
 * Per load and engine: writes accepted per second; CPU per write of the engine's processes (its
 * ClickHouse child included) and Redis, from the start of the measured seconds until everything
 * accepted is applied and recorded; Redis commands per write (INFO commandstats, commands scripts
 * call included) over the same window.
 *
 * `node --import tsx bench/release-writes.ts [--seconds N] [--warmup N] [--connections N] [--release V]`;
 * writes bench/reports/release-writes.json.
 */
import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../engine/infra/process/config.ts';
import { Redis } from 'ioredis';
import { createRedis, type RedisClient } from '../engine/infra/redis/client.ts';
import { Topology } from '../engine/infra/redis/topology.ts';
import { costSample, costsBetween, type CostSample } from './cost-window.ts';
import type { CpuShare } from './cpu.ts';
import { backlog, startEngine, waitFor, type Engine, type Project } from './deployment.ts';
import { measure, type LoadSettings, type Target } from './load.ts';
import { root } from './paths.ts';
import { buildRelease, releaseNamed, type BuiltRelease } from './release.ts';
import { startRedisServer } from './redis-server.ts';
import { writeReport } from './report.ts';
import { log, runBench, Teardown } from './run.ts';
import { IngestMix, USERS } from './sdk-ingest-mix.ts';
import { positive } from './settings.ts';
import { machine, round } from './table.ts';
import { LOADS, print, summaryRows, type Figures, type LoadName } from './release-writes-report.ts';

/** The most an engine may take to apply and record its backlog after a load. */
const DRAIN_MS = 300_000;

const { values: flags } = parseArgs({
  options: { seconds: { type: 'string' }, warmup: { type: 'string' }, connections: { type: 'string' }, release: { type: 'string' } },
});
if (flags.seconds !== undefined) process.env['BENCH_SECONDS'] = flags.seconds;
if (flags.warmup !== undefined) process.env['BENCH_WARMUP_SECONDS'] = flags.warmup;
if (flags.connections !== undefined) process.env['BENCH_CONNECTIONS'] = flags.connections;
const settings: LoadSettings = {
  seconds: positive('BENCH_SECONDS', 10),
  warmupSeconds: positive('BENCH_WARMUP_SECONDS', 3, true),
  connections: positive('BENCH_CONNECTIONS', 100),
};

const config = loadConfig(process.env);
const teardown = new Teardown();
const run = `bench${Date.now().toString(36)}`;

/** One engine under test: this tree's or the release's, on its own Redis. */
interface Subject {
  name: string;
  engine: Engine;
  project: Project;
  topology: Topology;
  connections: Connections;
}

/** A load's requests: identify with two tags for one of the 100k users, or the next write of the mix. */
function loadTarget(load: LoadName, subject: Subject): Target {
  const headers = { authorization: `Bearer ${subject.project.sdk_key}` };
  const base = { server: subject.name, load, url: subject.engine.base, headers };
  if (load === 'mix') {
    const mix = new IngestMix();
    return { ...base, path: 'the SDK mix', next: () => mix.nextRequest('PUT') };
  }
  let n = 0;
  const body = (): string => {
    const user = Math.floor(((Math.imul(n++, 0x9e3779b1) >>> 0) / 2 ** 32) * USERS);
    return JSON.stringify({ external_id: `sdk-user-${user}`, tags: { plan: n % 3 === 0 ? 'pro' : 'free', level: String(n % 10) } });
  };
  return { ...base, path: '/api/sdk/users', body };
}

/** Loads one engine, then waits until it applied and recorded everything: the figures of the window. */
/** CPU and Redis's counters are read with the engine's client; the streams' progress with a plain one. */
interface Connections {
  redis: RedisClient;
  plain: Redis;
}

async function measureOne(subject: Subject, load: LoadName): Promise<Figures> {
  const { redis, plain } = subject.connections;
  log(`bench: ${LOADS[load]}: ${subject.name}`);
  let start: CostSample | null = null;
  // The window opens when the measured seconds start (after the warm-up) and closes once the
  // engine applied and recorded everything, so the apply and recorder's share of the writes is in.
  const openWindow = async (): Promise<{ stop(): Promise<CpuShare> }> => {
    start = await costSample(subject.engine, redis);
    return { stop: () => Promise.resolve({ load_generator: 0, server: 0, redis: 0 }) };
  };
  const m = await measure(loadTarget(load, subject), settings, openWindow);
  const loaded = Date.now();
  await waitFor(`${subject.name} to apply and record its backlog`, async () => {
    const left = await backlog(plain, subject.topology);
    return left.unapplied_entries + left.unrecorded_changes === 0 ? true : undefined;
  }, DRAIN_MS);
  const drainSeconds = round((Date.now() - loaded) / 1000, 1);
  if (start === null) throw new Error('the load ran without its cost sample');
  const writes = m.status_2xx;
  const costs = costsBetween(subject.engine.pid, start, await costSample(subject.engine, redis), writes);
  return {
    engine: subject.name,
    load,
    writes_per_sec: round(writes / settings.seconds, 0),
    p99_ms: m.p99_ms,
    writes,
    failed: m.non_2xx + m.errors + m.timeouts,
    cpu_cores: costs.cpu_cores,
    cpu_us_per_write: {
      engine: costs.cpu_us_per_write.engine,
      engine_main: costs.cpu_us_per_write.engine_main,
      redis: costs.cpu_us_per_write.redis,
      total: costs.cpu_us_per_write.engine_and_redis,
      load_generator: costs.cpu_us_per_write.load_generator,
    },
    drain_seconds: drainSeconds,
    redis_commands: costs.redis_commands,
  };
}

async function startSubject(name: string, engineRoot: string, work: string, slot: number): Promise<Subject> {
  const prefix = `${run}e${slot}:`;
  const dir = join(work, `engine${slot}`);
  await mkdir(dir);
  const server = await startRedisServer(dir);
  teardown.add('stopping the redis-server', server.stop);
  const engine = await startEngine({ prefix, dataDir: dir, redisUrl: server.url, engineRoot });
  teardown.child(engine.child);
  const project = await engine.createProject(`bench-release-writes-${name}`);
  log(`bench: ${name} on ${engine.base} (${engineRoot}), Redis ${server.url}`);
  const own = loadConfig({ ...process.env, REDIS_URL: server.url, KEY_PREFIX: prefix });
  const connections = {
    redis: teardown.connection(createRedis(own, { commandTimeout: own.REDIS_TIMEOUT_MS })),
    plain: teardown.connection(new Redis(server.url, { maxRetriesPerRequest: 2 })),
  };
  return { name, engine, project, topology: new Topology(prefix, config.PARTITIONS), connections };
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const release: BuiltRelease = await buildRelease(await releaseNamed(flags.release));
  const work = await mkdtemp(join(tmpdir(), 'svc-bench-release-writes-'));
  teardown.folder(work);
  const current = 'this tree';
  const subjects = [await startSubject(current, root, work, 0), await startSubject(release.version, release.root, work, 1)];
  const figures: Figures[] = [];
  // Each load on both engines in turn, so what else the host does moves both alike.
  for (const load of ['identify', 'mix'] as const) {
    for (const subject of subjects) figures.push(await measureOne(subject, load));
  }
  const rows = summaryRows(figures, current, release.version);
  print(figures);
  const report = {
    benchmark: 'release-writes',
    started_at: startedAt.toISOString(),
    finished_at: new Date().toISOString(),
    machine: machine(),
    settings: { ...settings, users: USERS, pipelining: 1, partitions: config.PARTITIONS },
    release: { version: release.version, commit: release.commit },
    results: figures,
    summary: rows,
  };
  const file = await writeReport(report);
  log(`bench: report written to ${file}`);
}

await runBench(main, () => teardown.run());
