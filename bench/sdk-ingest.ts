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
 * its Redis keys and temp directory at the end.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { loadConfig } from '../engine/infra/process/config.ts';
import { createRedis, type RedisClient } from '../engine/infra/redis/client.ts';
import { Topology } from '../engine/infra/redis/topology.ts';
import type { ReceiptOp, SdkOp } from '../schemas/sdk.ts';
import { androidToken } from '../simulators/tokens.ts';
import { cleanupPrefix } from './redis.ts';
import { QUEUE } from './baselines/state.ts';
import { Children, startChild, type Child } from './child.ts';
import { redisCpu, sampleCpu, sampleCpuOf, type CpuShare } from './cpu.ts';
import { sleep, startEngine, unapplied } from './deployment.ts';
import { measure, measureSocket, type LoadSettings, type Measurement, type RequestShape, type Target } from './load.ts';
import { writeReport } from './report.ts';
import { log, runBench } from './run.ts';
import { positive } from './settings.ts';
import { advantage, type Reference, type SummaryRow } from './summary.ts';
import { machine, printRows } from './table.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const GOAL_CEILING = 0.75;
const GOAL_BASELINE = 2;
const USERS = 100_000;
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
const children = new Children();
let work: string | null = null;

// ---- the mix ---------------------------------------------------------------------------------

const KINDS = ['identify', 'tags', 'event', 'tags', 'event', 'identify', 'event', 'tags', 'event', 'subscribe'] as const;
const EVENTS = ['purchase', 'page_view', 'add_to_cart'] as const;
let written = 0;
/** The user of the latest write: one a system has surely been sent, to check it was applied. */
let lastUser = '';
/** The operations of the mix: every SDK write but receipts. */
type MixOp = Exclude<SdkOp, ReceiptOp>;

/**
 * The next write of the mix as a batch / WebSocket operation, for one of the 100k users picked by
 * Fibonacci hashing of the write's number: consecutive writes go to different users, and a user
 * gets every kind of write (a stride over the users would tie each user to one kind).
 */
function nextOp(): MixOp {
  const n = written++;
  const user = Math.floor(((Math.imul(n, 0x9e3779b1) >>> 0) / 2 ** 32) * USERS);
  const external_id = `sdk-user-${user}`;
  lastUser = external_id;
  switch (KINDS[n % KINDS.length]) {
    case 'identify':
      return { op: 'identify', external_id, tags: { plan: n % 3 === 0 ? 'pro' : 'free', language: 'en' } };
    case 'tags':
      return { op: 'tags', external_id, tags: { level: n % 10, last_screen: `screen-${n % 20}` } };
    case 'subscribe':
      // One token per user, re-registered: a user never passes the 20-subscription limit.
      return { op: 'subscribe', external_id, type: 'ANDROID_PUSH', token: androidToken(user), device_model: 'Pixel 8', app_version: '3.2.1' };
    default:
      return { op: 'event', external_id, name: EVENTS[n % EVENTS.length] ?? 'purchase', properties: { sku: `A-${n % 50}`, amount: 12.5 } };
  }
}

/**
 * The next write of the mix as its HTTP request. `putAs` is the method tag updates go out with:
 * PUT, or POST for the bare ceiling, which answers POST only (same path and body).
 */
function nextRequest(putAs: 'PUT' | 'POST'): RequestShape {
  const op = nextOp();
  const id = encodeURIComponent(op.external_id);
  switch (op.op) {
    case 'identify':
      return { method: 'POST', path: '/api/sdk/users', body: JSON.stringify({ external_id: op.external_id, tags: op.tags }) };
    case 'tags':
      return { method: putAs, path: `/api/sdk/users/${id}/tags`, body: JSON.stringify(op.tags) };
    case 'subscribe': {
      const body = { type: op.type, token: op.token, device_model: op.device_model, app_version: op.app_version };
      return { method: 'POST', path: `/api/sdk/users/${id}/subscriptions`, body: JSON.stringify(body) };
    }
    case 'event':
      return { method: 'POST', path: '/api/sdk/events', body: JSON.stringify({ external_id: op.external_id, name: op.name, properties: op.properties }) };
  }
}

const batchBody = (): string => JSON.stringify({ operations: Array.from({ length: batchSize }, nextOp) });

// ---- what one load gives ---------------------------------------------------------------------

/** One measured load of one system. */
interface Result {
  system: 'engine' | 'bare' | 'baseline';
  /** The HTTP server of the engine or the bare ceiling; null for the baseline. */
  http_server: 'uws' | 'node' | null;
  load: 'http-mix' | 'batch' | 'websocket';
  writes_per_request: number;
  requests_per_sec: number;
  writes_per_sec: number;
  p50_ms: number;
  p99_ms: number;
  requests: number;
  status_2xx: number;
  /** Answers that were not 2xx (HTTP) or carried errors (WebSocket), plus connection errors and timeouts. */
  failed: number;
  status_codes: Record<string, number>;
  cpu_cores: CpuShare & { processes?: Record<string, number> };
  /** CPU µs per accepted write of the system's processes and of Redis. */
  cpu_us_per_write: { server: number; redis: number };
  /** Seconds the system took after the load to apply what it had accepted; null: not waited for. */
  drain_seconds: number | null;
}

const round = (x: number, digits = 0): number => Math.round(x * 10 ** digits) / 10 ** digits;

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

// ---- the Redis ceiling -----------------------------------------------------------------------

interface RedisCeiling {
  name: string;
  clients: number;
  pipeline: number;
  requests: number;
  requests_per_sec: number;
  p50_ms: number;
  p99_ms: number;
  /** Redis CPU µs per XADD over the whole redis-benchmark run. */
  redis_cpu_us_per_xadd: number;
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

async function main(): Promise<void> {
  const startedAt = new Date();
  work = await mkdtemp(join(tmpdir(), 'svc-bench-sdk-ingest-'));
  const redis = createRedis(config, { commandTimeout: config.REDIS_TIMEOUT_MS });
  const plain = new Redis(redisUrl, { maxRetriesPerRequest: 2 });
  const topology = new Topology(prefix, config.PARTITIONS);
  log(`bench: ${settings.connections} connections, ${settings.warmupSeconds} s warm-up + ${settings.seconds} s per load, batches of ${batchSize}, ${wsClients} sockets`);

  log('bench: Redis ceilings (redis-benchmark XADD)');
  const xadd = await redisCeiling(redis, 1, 20_000 * settings.seconds);
  const xaddPipelined = await redisCeiling(redis, 16, 100_000 * settings.seconds);

  log('bench: starting the bare server, the engine (every role, embedded ClickHouse) and the baseline');
  const bare = await children.track(startChild('bare', ['--import', 'tsx', join(root, 'bench/bare-server.ts')], {}, { timeoutMs: 30_000 }));
  const engine = await startEngine({ prefix, dataDir: join(work, 'data'), redisUrl });
  children.add(engine.child);
  const project = await engine.createProject('bench-sdk-ingest');
  const baselineKey = `baseline-${Date.now().toString(36)}`;
  const baselineEnv = { REDIS_URL: redisUrl, KEY_PREFIX: baselinePrefix, BASELINE_KEY: baselineKey, PORT: '0' };
  const worker = await children.track(
    startChild('baseline-worker', ['--import', 'tsx', join(root, 'bench/baselines/worker.ts')], baselineEnv, {
      readyMsg: 'started',
      listens: false,
      timeoutMs: 30_000,
    }),
  );
  const baseline = await children.track(startChild('baseline', ['--import', 'tsx', join(root, 'bench/baselines/server.ts')], baselineEnv, { timeoutMs: 30_000 }));
  const queueRedis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection: queueRedis, prefix: `${baselinePrefix}bull` });

  const url = (child: Child): string => `http://127.0.0.1:${child.port}`;
  const engineAuth = { authorization: `Bearer ${project.sdk_key}` };
  const baselineAuth = { authorization: `Bearer ${baselineKey}` };
  const engineCpu = (): ReturnType<typeof sampleCpu> => sampleCpu(engine.pid, redis);
  const baselineCpu = (): ReturnType<typeof sampleCpuOf> => sampleCpuOf({ server: baseline.proc.pid ?? 0, worker: worker.proc.pid ?? 0 }, redis);
  const engineDrain = (): Promise<number> => drain('engine', () => unapplied(plain, topology));
  const baselineDrain = (): Promise<number> =>
    drain('baseline', async () => {
      const counts = await queue.getJobCounts('wait', 'active', 'delayed', 'prioritized');
      return Object.values(counts).reduce((a, b) => a + b, 0);
    });
  const results: Result[] = [];
  /** Measures one load, then (with `settle`) waits until the system applied what it accepted. */
  const run = async (
    what: string,
    [system, load, writesPerRequest]: [Result['system'], Result['load'], number],
    measured: () => Promise<Measurement & { cpu_cores: Result['cpu_cores'] }>,
    settle?: () => Promise<number>,
    server: Result['http_server'] = system === 'baseline' ? null : 'uws',
  ): Promise<Result> => {
    log(`bench: ${what}`);
    const result = await loadOf([system, server], load, writesPerRequest, measured());
    if (settle) result.drain_seconds = await settle();
    results.push(result);
    return result;
  };
  const mix = (server: string, base: string, headers: Record<string, string>, putAs: 'PUT' | 'POST'): Target => ({
    server,
    load: 'http-mix',
    url: base,
    path: 'mix of /api/sdk/users, /tags, /subscriptions, /api/sdk/events',
    headers,
    next: () => nextRequest(putAs),
  });
  const batch = (server: string, base: string, headers: Record<string, string>): Target => ({
    server,
    load: 'batch',
    url: base,
    path: '/api/sdk/batch',
    headers,
    body: batchBody,
  });

  // Each engine load is measured right after its ceiling, so other work on the host moves both alike.
  const bareMix = await run('HTTP mix: bare uWebSockets.js (ceiling)', ['bare', 'http-mix', 1], () =>
    measure(mix('bare', url(bare), {}, 'POST'), settings, () => sampleCpu(bare.proc.pid ?? 0, redis)),
  );
  const engineMix = await run(
    'HTTP mix: engine',
    ['engine', 'http-mix', 1],
    () => measure(mix('engine', engine.base, engineAuth, 'PUT'), settings, engineCpu),
    engineDrain,
  );
  const baselineMix = await run(
    'HTTP mix: baseline (Fastify + BullMQ)',
    ['baseline', 'http-mix', 1],
    () => measure(mix('baseline', url(baseline), baselineAuth, 'PUT'), settings, baselineCpu),
    baselineDrain,
  );
  const engineBatch = await run(
    `batch of ${batchSize}: engine`,
    ['engine', 'batch', batchSize],
    () => measure(batch('engine', engine.base, engineAuth), settings, engineCpu),
    engineDrain,
  );
  const baselineBatch = await run(
    `batch of ${batchSize}: baseline (one addBulk)`,
    ['baseline', 'batch', batchSize],
    () => measure(batch('baseline', url(baseline), baselineAuth), settings, baselineCpu),
    baselineDrain,
  );
  const baselineUser = lastUser;
  const socket = { server: 'engine', load: 'websocket', url: `${engine.base.replace('http', 'ws')}/api/sdk/ws`, headers: engineAuth, clients: wsClients };
  const engineSocket = await run(
    `WebSocket: engine, ${wsClients} sockets, one operation in flight each`,
    ['engine', 'websocket', 1],
    () => measureSocket({ ...socket, frame: (seq) => JSON.stringify({ ...nextOp(), seq }) }, settings, engineCpu),
    engineDrain,
  );

  const spot = await Promise.all([
    fetch(`${engine.base}/api/users/${lastUser}`, { headers: { authorization: `Bearer ${project.rest_key}` } }),
    fetch(`${url(baseline)}/api/users/${baselineUser}`, { headers: baselineAuth }),
  ]);
  await queue.close();
  queueRedis.disconnect();

  // The same loads on node:http: the engine restarted with HTTP_SERVER=node on the same data, next to a bare node:http.
  await engine.child.stop();
  await bare.stop();
  const bareNode = await children.track(startChild('bare-node', ['--import', 'tsx', join(root, 'bench/bare-server.ts')], { BARE_SERVER: 'node' }, { timeoutMs: 30_000 }));
  const onNode = await startEngine({ prefix, dataDir: join(work, 'data'), redisUrl, env: { HTTP_SERVER: 'node' } });
  children.add(onNode.child);
  const onNodeCpu = (): ReturnType<typeof sampleCpu> => sampleCpu(onNode.pid, redis);
  const bareNodeMix = await run(
    'HTTP mix: bare node:http (ceiling)',
    ['bare', 'http-mix', 1],
    () => measure(mix('bare', url(bareNode), {}, 'POST'), settings, () => sampleCpu(bareNode.proc.pid ?? 0, redis)),
    undefined,
    'node',
  );
  const nodeMix = await run('HTTP mix: engine on node:http', ['engine', 'http-mix', 1], () => measure(mix('engine', onNode.base, engineAuth, 'PUT'), settings, onNodeCpu), engineDrain, 'node');
  const nodeSocket = await run(
    `WebSocket: engine on node:http, ${wsClients} sockets, one operation in flight each`,
    ['engine', 'websocket', 1],
    () => measureSocket({ ...socket, url: `${onNode.base.replace('http', 'ws')}/api/sdk/ws`, frame: (seq) => JSON.stringify({ ...nextOp(), seq }) }, settings, onNodeCpu),
    engineDrain,
    'node',
  );
  await children.stopAll();
  plain.disconnect();
  redis.disconnect();

  const rows = [
    ...summaryRows({ bareMix, engineMix, baselineMix, engineBatch, baselineBatch, engineSocket, xaddPipelined }),
    ...nodeRows({ bareMix, engineMix, engineSocket, bareNodeMix, nodeMix, nodeSocket }),
  ];
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
    results,
    /** GET /api/users/{id} of the last user each system was sent, once it drained: 200 when applied. */
    applied_check: { engine: { external_id: lastUser, status: spot[0].status }, baseline: { external_id: baselineUser, status: spot[1].status } },
    summary: rows,
    notes: notes(xadd),
  };
  print(report.results, rows, [xadd, xaddPipelined]);
  const file = await writeReport(join(root, 'bench/reports'), report);
  log(`bench: report written to ${file}`);
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

interface Named {
  bareMix: Result;
  engineMix: Result;
  baselineMix: Result;
  engineBatch: Result;
  baselineBatch: Result;
  engineSocket: Result;
  xaddPipelined: RedisCeiling;
}

/** A result counts only when at least 99% of its answers were 2xx; else its rate means nothing. */
const valid = (r: Result): boolean => r.requests > 0 && r.status_2xx >= r.requests * 0.99;

const BARE = 'bare uWebSockets.js';
const BASELINE = 'Fastify + BullMQ';

function summaryRows(n: Named): SummaryRow[] {
  const ref = (name: string, value: number): Reference => ({ name, value });
  const redis = ref(n.xaddPipelined.name, n.xaddPipelined.requests_per_sec);
  /**
   * A row; with `goal`, the goal of a throughput row: at least GOAL_BASELINE times the baseline
   * and, when `ceiling` is set, GOAL_CEILING of the ceiling, from a valid result.
   */
  const row = (r: Omit<SummaryRow, 'scenario' | 'goal'>, goal?: { of: Result; ceiling: boolean }): SummaryRow => {
    if (goal === undefined) return { scenario: 'sdk-ingest', ...r, goal: null };
    const parts = [`at least ${GOAL_BASELINE}x ${r.baseline?.name ?? 'the baseline'}`];
    if (goal.ceiling) parts.unshift(`at least ${GOAL_CEILING * 100}% of ${r.ceiling?.name ?? 'the ceiling'}`);
    const met =
      valid(goal.of) && (!goal.ceiling || (advantage(r, r.ceiling) ?? 0) >= GOAL_CEILING) && (advantage(r, r.baseline) ?? 0) >= GOAL_BASELINE;
    return { scenario: 'sdk-ingest', ...r, goal: { text: parts.join(' and '), met } };
  };
  const { engineMix: mix, bareMix: bare, baselineMix: base } = n;
  return [
    row(
      { measure: 'HTTP mix, accepted', value: mix.requests_per_sec, unit: 'req/s', better: 'higher', ceiling: ref(BARE, bare.requests_per_sec), baseline: ref(BASELINE, base.requests_per_sec) },
      { of: mix, ceiling: true },
    ),
    row({ measure: 'HTTP mix, p99 latency', value: mix.p99_ms, unit: 'ms', better: 'lower', ceiling: ref(BARE, bare.p99_ms), baseline: ref(BASELINE, base.p99_ms) }),
    row({
      measure: 'HTTP mix, server CPU per write',
      value: mix.cpu_us_per_write.server,
      unit: 'µs/write',
      better: 'lower',
      ceiling: ref(BARE, bare.cpu_us_per_write.server),
      baseline: ref(`${BASELINE} (server + worker)`, base.cpu_us_per_write.server),
    }),
    row({
      measure: 'HTTP mix, Redis CPU per write',
      value: mix.cpu_us_per_write.redis,
      unit: 'µs/write',
      better: 'lower',
      ceiling: ref(n.xaddPipelined.name, n.xaddPipelined.redis_cpu_us_per_xadd),
      baseline: ref(BASELINE, base.cpu_us_per_write.redis),
    }),
    row(
      {
        measure: `batch of ${batchSize}, accepted writes`,
        value: n.engineBatch.writes_per_sec,
        unit: 'writes/s',
        better: 'higher',
        ceiling: redis,
        baseline: ref(BASELINE, n.baselineBatch.writes_per_sec),
      },
      { of: n.engineBatch, ceiling: false },
    ),
    row(
      {
        measure: 'WebSocket, accepted writes',
        value: n.engineSocket.writes_per_sec,
        unit: 'writes/s',
        better: 'higher',
        ceiling: redis,
        baseline: ref(`${BASELINE}, HTTP mix`, base.writes_per_sec),
      },
      { of: n.engineSocket, ceiling: false },
    ),
  ];
}

/**
 * What node:http costs: the engine on it next to a bare node:http (ceiling) and to the engine on
 * uWebSockets.js (baseline) measured in the same run; no goal.
 */
function nodeRows(n: Pick<Named, 'bareMix' | 'engineMix' | 'engineSocket'> & { bareNodeMix: Result; nodeMix: Result; nodeSocket: Result }): SummaryRow[] {
  const row = (r: Omit<SummaryRow, 'scenario' | 'goal'>): SummaryRow => ({ scenario: 'sdk-ingest', ...r, goal: null });
  const bareNode = 'bare node:http';
  const onUws = 'the engine on uWebSockets.js';
  return [
    row({
      measure: 'HTTP mix on node:http, accepted',
      value: n.nodeMix.requests_per_sec,
      unit: 'req/s',
      better: 'higher',
      ceiling: { name: bareNode, value: n.bareNodeMix.requests_per_sec },
      baseline: { name: onUws, value: n.engineMix.requests_per_sec },
    }),
    row({
      measure: 'HTTP mix on node:http, server CPU per write',
      value: n.nodeMix.cpu_us_per_write.server,
      unit: 'µs/write',
      better: 'lower',
      ceiling: { name: bareNode, value: n.bareNodeMix.cpu_us_per_write.server },
      baseline: { name: onUws, value: n.engineMix.cpu_us_per_write.server },
    }),
    row({
      measure: 'WebSocket on node:http, accepted writes',
      value: n.nodeSocket.writes_per_sec,
      unit: 'writes/s',
      better: 'higher',
      ceiling: null,
      baseline: { name: onUws, value: n.engineSocket.writes_per_sec },
    }),
    row({
      measure: 'WebSocket on node:http, server CPU per write',
      value: n.nodeSocket.cpu_us_per_write.server,
      unit: 'µs/write',
      better: 'lower',
      ceiling: null,
      baseline: { name: onUws, value: n.engineSocket.cpu_us_per_write.server },
    }),
  ];
}

function notes(xadd: RedisCeiling): string[] {
  return [
    'Measures: SDK writes accepted (202, or a WebSocket answer) per second by the default deployment: one engine process with every role (gateway, apply, fan-out, dispatch, recorder with embedded ClickHouse, scheduler), so the apply and the ClickHouse mirror of the accepted writes run during the load, as they would in production.',
    `Mix: of every 10 writes 2 identify (POST /api/sdk/users), 3 tag updates (PUT /api/sdk/users/{id}/tags), 4 events (POST /api/sdk/events), 1 subscription (POST /api/sdk/users/{id}/subscriptions), over ${USERS} users; HTTP/1.1 keep-alive, one request in flight per connection (autocannon, no pipelining).`,
    'HTTP ceiling: bench/bare-server.ts reads each body and answers 202 and nothing else, with the same load generator and bodies; it answers POST only, so its tag updates go out as POST (same path and body).',
    'Baseline: bench/baselines/ (Fastify with the engine\'s schemas, BullMQ Queue.add on the same Redis, a BullMQ Worker of concurrency 50 in a second process applying the jobs to per-user hashes). Its CPU is both processes\'; it gives no per-user order and no exactly-once apply, which the engine does.',
    `Batch and WebSocket ceiling: redis-benchmark XADD (50 clients, 16 pipelined) on the same Redis: the append every accepted write costs, with nothing else; without pipelining it gave ${xadd.requests_per_sec} XADD/s. The WebSocket figure has no socket baseline (the baseline has no such channel): it is set against the baseline's HTTP mix.`,
    'CPU: cores over the measured seconds from /proc/<pid>/stat (the system\'s processes) and INFO cpu (Redis); per write = cores / accepted writes per second, so the apply work done during the load is included and the backlog applied after it (drain_seconds) is not.',
    'node:http: after the loads above the engine is restarted with HTTP_SERVER=node on the same Redis prefix and data, and the HTTP mix and WebSocket loads run again next to bench/bare-server.ts with BARE_SERVER=node (node:http reading each body and answering 202). Its rows set the engine on node:http against that ceiling and against the engine on uWebSockets.js measured earlier in the run.',
    'Does not measure: the spill journal (Redis is up), identity verification, rate limits, more than one gateway process, Redis Cluster.',
    `Machine: ${machine().cpus} cores shared by the load generator, the system under test and Redis; other work on the host skews the figures.`,
  ];
}

function print(results: Result[], rows: SummaryRow[], ceilings: RedisCeiling[]): void {
  printRows([
    ['system', 'server', 'load', 'writes/s', 'req/s', 'p50 ms', 'p99 ms', 'failed', 'cores gen/srv/redis', 'µs/write srv/redis', 'drain s'],
    ...results.map((r) => [
      r.system,
      r.http_server ?? '',
      r.load,
      String(r.writes_per_sec),
      String(r.requests_per_sec),
      String(r.p50_ms),
      String(r.p99_ms),
      String(r.failed),
      `${r.cpu_cores.load_generator.toFixed(2)}/${r.cpu_cores.server.toFixed(2)}/${r.cpu_cores.redis.toFixed(2)}`,
      `${r.cpu_us_per_write.server}/${r.cpu_us_per_write.redis}`,
      r.drain_seconds === null ? '' : String(r.drain_seconds),
    ]),
    ...ceilings.map((c) => [c.name, '', 'XADD', String(c.requests_per_sec), String(c.requests_per_sec), String(c.p50_ms), String(c.p99_ms), '', '', `-/${c.redis_cpu_us_per_xadd}`, '']),
  ]);
  // Throughput: the share of the ceiling reached and the multiple of the baseline; latency and cost: value over reference.
  const versus = (r: SummaryRow, ref: Reference | null, asShare: boolean): string => {
    if (ref === null) return '';
    const x = r.better === 'higher' ? advantage(r, ref) : ref.value > 0 ? r.value / ref.value : null;
    let text = x === null ? 'n/a' : `${round(x, 2)}x it`;
    if (x !== null && r.better === 'higher') text = asShare ? `${Math.round(x * 100)}% of it` : `${round(x, 2)}x`;
    return `; ${ref.name} ${ref.value} ${r.unit}: ${text}`;
  };
  for (const r of rows) {
    const verdict = r.goal === null ? '' : ` (goal ${r.goal.met ? 'met' : 'NOT met'}: ${r.goal.text})`;
    console.log(`${r.measure}: ${r.value} ${r.unit}${versus(r, r.ceiling, true)}${versus(r, r.baseline, false)}${verdict}`);
  }
}

async function cleanup(): Promise<void> {
  await children.stopAll();
  await cleanupPrefix(prefix, redisUrl);
  if (work !== null) await rm(work, { recursive: true, force: true });
}



await runBench(main, cleanup, log);
