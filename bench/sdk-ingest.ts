/**
 * SDK ingest benchmark: how many SDK writes the engine's default deployment (`bin/engine.js
 * start`: every role in one process, embedded ClickHouse) accepts per second under a realistic mix
 * (of every 10 writes: 2 identify, 3 tag updates, 4 events, 1 subscription; 100k distinct users),
 * over HTTP, over /api/sdk/batch and over the WebSocket channel. Each figure is set next to its
 * ceiling and to the usual alternative, both measured in the same run:
 *  - HTTP mix: ceiling bench/bare-server.ts (bare uWebSockets.js answering 202; goal: the engine
 *    reaches 75% of it), baseline bench/baselines/ (Fastify + BullMQ, server and worker; goal 2x);
 *  - batch and WebSocket: ceiling `redis-benchmark` XADD with 16 pipelined (the append every
 *    write costs); batch baseline: the baseline's batch route (one `addBulk`), WebSocket baseline:
 *    the baseline's HTTP mix (it has no socket channel).
 * Then the same HTTP mix and WebSocket load against the engine on node:http (HTTP_SERVER=node),
 * next to a bare node:http ceiling (bench/bare-server.ts with BARE_SERVER=node): what node:http
 * costs against uWebSockets.js (docs/performance.md#nodehttp-against-uwebsocketsjs).
 * Between loads the bench waits until the system just measured applied its backlog, so one
 * system's catching up does not run during the next one's measurement.
 *
 * Run: `node --import tsx bench/sdk-ingest.ts [--seconds N] [--warmup N] [--connections N]
 * [--batch-size N] [--ws-clients N]`; the environment gives the defaults: BENCH_SECONDS (10),
 * BENCH_WARMUP_SECONDS (3), BENCH_CONNECTIONS (100), REDIS_URL. Progress goes to stderr, the table
 * to stdout; writes bench/reports/sdk-ingest.json, and deletes
 * its Redis keys and temp directory at the end. The mix is bench/sdk-ingest-mix.ts, the summary
 * rows, notes and table bench/sdk-ingest-report.ts.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { Redis } from 'ioredis';
import { loadConfig } from '../engine/infra/process/config.ts';
import { createRedis, type RedisClient } from '../engine/infra/redis/client.ts';
import { Topology } from '../engine/infra/redis/topology.ts';
import { startBaseline, type Baseline } from './baseline.ts';
import { startChild, type Child } from './child.ts';
import { redisCpu, sampleCpu, sampleCpuOf, type CpuShare } from './cpu.ts';
import { sleep, startEngine, unapplied, type Engine, type Project } from './deployment.ts';
import { measure, measureSocket, type LoadSettings, type Measurement, type SocketTarget, type Target } from './load.ts';
import { root } from './paths.ts';
import { writeReport } from './report.ts';
import { log, runBench, Teardown } from './run.ts';
import { IngestMix, USERS } from './sdk-ingest-mix.ts';
import { nodeRows, notes, print, summaryRows, type Named, type RedisCeiling, type Result } from './sdk-ingest-report.ts';
import { positive } from './settings.ts';
import { machine, round } from './table.ts';

/** The most a system may take to apply its backlog after a load before the bench moves on. */
const DRAIN_MS = 180_000;

const { values: flags } = parseArgs({
  options: {
    seconds: { type: 'string' },
    warmup: { type: 'string' },
    connections: { type: 'string' },
    'batch-size': { type: 'string' },
    'ws-clients': { type: 'string' },
  },
});
const fromFlag = (flag: string | undefined, env: string): void => {
  if (flag !== undefined) process.env[env] = flag;
};
fromFlag(flags.seconds, 'BENCH_SECONDS');
fromFlag(flags.warmup, 'BENCH_WARMUP_SECONDS');
fromFlag(flags.connections, 'BENCH_CONNECTIONS');
fromFlag(flags['batch-size'], 'BENCH_BATCH_SIZE');
fromFlag(flags['ws-clients'], 'BENCH_WS_CLIENTS');
const settings: LoadSettings = {
  seconds: positive('BENCH_SECONDS', 10),
  warmupSeconds: positive('BENCH_WARMUP_SECONDS', 3, true),
  connections: positive('BENCH_CONNECTIONS', 100),
};
const batchSize = Math.min(positive('BENCH_BATCH_SIZE', 50), 1000);
const wsClients = positive('BENCH_WS_CLIENTS', settings.connections);

const prefix = `bench${Date.now().toString(36)}:`;
const baselinePrefix = `${prefix}baseline:`;
const config = loadConfig({ ...process.env, KEY_PREFIX: prefix });
const redisUrl = config.REDIS_URL.split(',')[0] ?? 'redis://127.0.0.1:6379';
const teardown = new Teardown();
teardown.keys(prefix, redisUrl);
const mix = new IngestMix();

function perWrite(cores: CpuShare, writesPerSec: number): { server: number; redis: number } {
  if (writesPerSec <= 0) return { server: 0, redis: 0 };
  return { server: round((cores.server * 1e6) / writesPerSec, 1), redis: round((cores.redis * 1e6) / writesPerSec, 1) };
}

/** A measured load (bench/load.ts) of `writesPerRequest` writes per request or frame, as a Result. */
async function loadOf(
  [system, server]: [Result['system'], Result['http_server']],
  load: Result['load'],
  writesPerRequest: number,
  measured: Promise<Measurement & { cpu_cores: Result['cpu_cores'] }>,
): Promise<Result> {
  const m = await measured;
  const writes = m.requests_per_sec * writesPerRequest;
  return {
    system,
    http_server: server,
    load,
    writes_per_request: writesPerRequest,
    requests_per_sec: m.requests_per_sec,
    writes_per_sec: writes,
    p50_ms: m.p50_ms,
    p99_ms: m.p99_ms,
    requests: m.requests,
    status_2xx: m.status_2xx,
    failed: m.non_2xx + m.errors + m.timeouts,
    status_codes: m.status_codes,
    cpu_cores: m.cpu_cores,
    cpu_us_per_write: perWrite(m.cpu_cores, writes),
    drain_seconds: null,
  };
}

/** `redis-benchmark` XADD of one small entry to a throwaway stream under the bench prefix. */
async function redisCeiling(redis: RedisClient, pipeline: number, requests: number): Promise<RedisCeiling> {
  const key = `${prefix}redis-benchmark`;
  const clients = 50;
  const args = ['-u', redisUrl, '-n', String(requests), '-c', String(clients), '-P', String(pipeline), '--csv', 'XADD', key, '*', 'f', 'v'];
  const cpu0 = await redisCpu(redis);
  const { stdout } = await promisify(execFile)('redis-benchmark', args);
  const cpu1 = await redisCpu(redis);
  await redis.del(key);
  // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
  const row = stdout.trim().split('\n').at(-1)?.split('","').map((cell) => cell.replace(/"/g, '')) ?? [];
  const rps = Number(row[1]);
  if (!Number.isFinite(rps) || rps <= 0) throw new Error(`redis-benchmark gave no rate: ${stdout.slice(-500)}`);
  return {
    name: pipeline > 1 ? `redis-benchmark XADD, ${pipeline} pipelined` : 'redis-benchmark XADD, no pipelining',
    clients,
    pipeline,
    requests,
    requests_per_sec: Math.round(rps),
    p50_ms: Number(row[4]),
    p99_ms: Number(row[6]),
    redis_cpu_us_per_xadd: round(((cpu1 - cpu0) * 1e6) / requests, 2),
  };
}

// ---- the run ---------------------------------------------------------------------------------

/** The systems under load, side by side: the bare ceiling, the engine and the baseline. */
interface Systems {
  bare: Child;
  engine: Engine;
  project: Project;
  baseline: Baseline;
}

/** What every load needs: where CPU is read, and how long the engine takes to apply its backlog. */
interface Context {
  redis: RedisClient;
  engineDrain: () => Promise<number>;
  loads: LoadRuns;
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const work = await mkdtemp(join(tmpdir(), 'svc-bench-sdk-ingest-'));
  teardown.folder(work);
  const redis = teardown.connection(createRedis(config, { commandTimeout: config.REDIS_TIMEOUT_MS }));
  const plain = teardown.connection(new Redis(redisUrl, { maxRetriesPerRequest: 2 }));
  const topology = new Topology(prefix, config.PARTITIONS);
  log(`bench: ${settings.connections} connections, ${settings.warmupSeconds} s warm-up + ${settings.seconds} s per load, batches of ${batchSize}, ${wsClients} sockets`);

  log('bench: Redis ceilings (redis-benchmark XADD)');
  const xadd = await redisCeiling(redis, 1, 20_000 * settings.seconds);
  const xaddPipelined = await redisCeiling(redis, 16, 100_000 * settings.seconds);

  const systems = await startSystems(work);
  const ctx: Context = { redis, engineDrain: () => drain('engine', () => unapplied(plain, topology)), loads: new LoadRuns() };
  const onUws = await loadsOnUws(ctx, systems);
  const appliedCheck = await checkApplied(systems, onUws.baselineUser);
  await systems.baseline.close();
  const onNode = await loadsOnNode(ctx, systems, work);

  const rows = [...summaryRows({ ...onUws, xaddPipelined }, batchSize), ...nodeRows({ ...onUws, ...onNode })];
  const report = {
    benchmark: 'sdk-ingest',
    started_at: startedAt.toISOString(),
    finished_at: new Date().toISOString(),
    machine: machine(),
    settings: {
      seconds: settings.seconds,
      warmup_seconds: settings.warmupSeconds,
      connections: settings.connections,
      pipelining: 1,
      users: USERS,
      batch_size: batchSize,
      ws_clients: wsClients,
      ws_in_flight_per_client: 1,
      baseline_worker_concurrency: 50,
      partitions: config.PARTITIONS,
    },
    engine_build: process.env['ENGINE_FROM_SOURCE'] !== '1' && existsSync(join(root, 'dist/bin/main.js')) ? 'dist/ build' : 'source (tsx)',
    redis_ceilings: [xadd, xaddPipelined],
    results: ctx.loads.results,
    /** GET /api/users/{id} of the last user each system was sent, once it drained: 200 when applied. */
    applied_check: { engine: { external_id: mix.lastUser, status: appliedCheck.engine }, baseline: { external_id: onUws.baselineUser, status: appliedCheck.baseline } },
    summary: rows,
    notes: notes(xadd),
  };
  print(report.results, rows, [xadd, xaddPipelined]);
  const file = await writeReport(report);
  log(`bench: report written to ${file}`);
}

async function startSystems(work: string): Promise<Systems> {
  log('bench: starting the bare server, the engine (every role, embedded ClickHouse) and the baseline');
  const bare = teardown.child(await startChild('bare', ['--import', 'tsx', join(root, 'bench/bare-server.ts')], {}, { timeoutMs: 30_000 }));
  const engine = await startEngine({ prefix, dataDir: join(work, 'data'), redisUrl });
  teardown.child(engine.child);
  const project = await engine.createProject('bench-sdk-ingest');
  const baseline = await startBaseline({ prefix: baselinePrefix, key: `baseline-${Date.now().toString(36)}`, redisUrl, timeoutMs: 30_000 }, teardown);
  return { bare, engine, project, baseline };
}

/** The loads measured, in the order they ran: the report's results. */
class LoadRuns {
  readonly results: Result[] = [];

  /** Measures one load, then (with `settle`) waits until the system applied what it accepted. */
  async run(
    what: string,
    [system, load, writesPerRequest]: [Result['system'], Result['load'], number],
    measured: () => Promise<Measurement & { cpu_cores: Result['cpu_cores'] }>,
    settle?: () => Promise<number>,
    server: Result['http_server'] = system === 'baseline' ? null : 'uws',
  ): Promise<Result> {
    log(`bench: ${what}`);
    const result = await loadOf([system, server], load, writesPerRequest, measured());
    if (settle) result.drain_seconds = await settle();
    this.results.push(result);
    return result;
  }
}

const auth = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });
const urlOf = (child: Child): string => `http://127.0.0.1:${child.port}`;

function mixTarget(server: string, base: string, headers: Record<string, string>, putAs: 'PUT' | 'POST'): Target {
  return { server, load: 'http-mix', url: base, path: 'mix of /api/sdk/users, /tags, /subscriptions, /api/sdk/events', headers, next: () => mix.nextRequest(putAs) };
}

function batchTarget(server: string, base: string, headers: Record<string, string>): Target {
  return { server, load: 'batch', url: base, path: '/api/sdk/batch', headers, body: () => mix.batchBody(batchSize) };
}

/** The engine's WebSocket channel at `base`, one operation of the mix per frame. */
function socketTarget(base: string, key: string): SocketTarget {
  return { server: 'engine', load: 'websocket', url: `${base.replace('http', 'ws')}/api/sdk/ws`, headers: auth(key), clients: wsClients, frame: (seq) => JSON.stringify({ ...mix.nextOp(), seq }) };
}

/** The HTTP mix, the batches and the WebSocket on uWebSockets.js, each engine load right after its ceiling so other work on the host moves both alike. */
async function loadsOnUws(ctx: Context, { bare, engine, project, baseline }: Systems): Promise<Omit<Named, 'xaddPipelined'> & { baselineUser: string }> {
  const { loads, redis, engineDrain } = ctx;
  const engineAuth = auth(project.sdk_key);
  const baselineAuth = auth(baseline.key);
  const engineCpu = (): ReturnType<typeof sampleCpu> => sampleCpu(engine.pid, redis);
  const baselineCpu = (): ReturnType<typeof sampleCpuOf> => sampleCpuOf({ server: baseline.server.proc.pid ?? 0, worker: baseline.worker.proc.pid ?? 0 }, redis);
  const baselineDrain = (): Promise<number> => drain('baseline', baseline.backlog);
  const bareMix = await loads.run('HTTP mix: bare uWebSockets.js (ceiling)', ['bare', 'http-mix', 1], () =>
    measure(mixTarget('bare', urlOf(bare), {}, 'POST'), settings, () => sampleCpu(bare.proc.pid ?? 0, redis)),
  );
  const engineMix = await loads.run('HTTP mix: engine', ['engine', 'http-mix', 1], () => measure(mixTarget('engine', engine.base, engineAuth, 'PUT'), settings, engineCpu), engineDrain);
  const baselineMix = await loads.run(
    'HTTP mix: baseline (Fastify + BullMQ)',
    ['baseline', 'http-mix', 1],
    () => measure(mixTarget('baseline', baseline.base, baselineAuth, 'PUT'), settings, baselineCpu),
    baselineDrain,
  );
  const engineBatch = await loads.run(`batch of ${batchSize}: engine`, ['engine', 'batch', batchSize], () => measure(batchTarget('engine', engine.base, engineAuth), settings, engineCpu), engineDrain);
  const baselineBatch = await loads.run(
    `batch of ${batchSize}: baseline (one addBulk)`,
    ['baseline', 'batch', batchSize],
    () => measure(batchTarget('baseline', baseline.base, baselineAuth), settings, baselineCpu),
    baselineDrain,
  );
  const baselineUser = mix.lastUser;
  const engineSocket = await loads.run(
    `WebSocket: engine, ${wsClients} sockets, one operation in flight each`,
    ['engine', 'websocket', 1],
    () => measureSocket(socketTarget(engine.base, project.sdk_key), settings, engineCpu),
    engineDrain,
  );
  return { bareMix, engineMix, baselineMix, engineBatch, baselineBatch, engineSocket, baselineUser };
}

/** GET /api/users/{id} of the last user each system was sent, now that both drained: its status. */
async function checkApplied({ engine, project, baseline }: Systems, baselineUser: string): Promise<{ engine: number; baseline: number }> {
  const [onEngine, onBaseline] = await Promise.all([
    fetch(`${engine.base}/api/users/${mix.lastUser}`, { headers: auth(project.rest_key) }),
    fetch(`${baseline.base}/api/users/${baselineUser}`, { headers: auth(baseline.key) }),
  ]);
  return { engine: onEngine.status, baseline: onBaseline.status };
}

/** The same loads on node:http: the engine restarted with HTTP_SERVER=node on the same data, next to a bare node:http. */
async function loadsOnNode(ctx: Context, { bare, engine, project }: Systems, work: string): Promise<{ bareNodeMix: Result; nodeMix: Result; nodeSocket: Result }> {
  const { loads, redis, engineDrain } = ctx;
  await engine.child.stop();
  await bare.stop();
  const bareNode = teardown.child(await startChild('bare-node', ['--import', 'tsx', join(root, 'bench/bare-server.ts')], { BARE_SERVER: 'node' }, { timeoutMs: 30_000 }));
  const onNode = await startEngine({ prefix, dataDir: join(work, 'data'), redisUrl, env: { HTTP_SERVER: 'node' } });
  teardown.child(onNode.child);
  const onNodeCpu = (): ReturnType<typeof sampleCpu> => sampleCpu(onNode.pid, redis);
  const bareNodeMix = await loads.run(
    'HTTP mix: bare node:http (ceiling)',
    ['bare', 'http-mix', 1],
    () => measure(mixTarget('bare', urlOf(bareNode), {}, 'POST'), settings, () => sampleCpu(bareNode.proc.pid ?? 0, redis)),
    undefined,
    'node',
  );
  const nodeMix = await loads.run('HTTP mix: engine on node:http', ['engine', 'http-mix', 1], () => measure(mixTarget('engine', onNode.base, auth(project.sdk_key), 'PUT'), settings, onNodeCpu), engineDrain, 'node');
  const nodeSocket = await loads.run(
    `WebSocket: engine on node:http, ${wsClients} sockets, one operation in flight each`,
    ['engine', 'websocket', 1],
    () => measureSocket(socketTarget(onNode.base, project.sdk_key), settings, onNodeCpu),
    engineDrain,
    'node',
  );
  return { bareNodeMix, nodeMix, nodeSocket };
}

/** Waits until `backlog` is 0 (the system applied what it accepted); the seconds it took, or -1 past DRAIN_MS. */
async function drain(name: string, backlog: () => Promise<number>): Promise<number> {
  const started = Date.now();
  let left = await backlog();
  if (left > 0) log(`bench: waiting for the ${name} to apply ${left} writes`);
  while (left > 0) {
    if (Date.now() - started > DRAIN_MS) {
      log(`bench: the ${name} still has ${left} writes to apply after ${DRAIN_MS / 1000} s; moving on`);
      return -1;
    }
    await sleep(250);
    left = await backlog();
  }
  return round((Date.now() - started) / 1000, 1);
}

await runBench(main, () => teardown.run());
