/**
 * Apply-lag benchmark: the time from a 202 to the write being visible in GET /api/users/{id}, for
 * the default deployment (one `engine start` process, every role, embedded ClickHouse in a temp
 * DATA_DIR, fresh KEY_PREFIX) and for the usual alternative (bench/baselines: Fastify + BullMQ,
 * server and worker processes), both at the same offered rates: 50% and 90% of the baseline's
 * maximum sustained write rate (of the engine's own with `--no-baseline`). The baseline runs
 * first, so its maximum is known when the engine is loaded; the engine's maximum is measured too
 * and reported, each rate also as a share of it.
 *
 * `node --import tsx bench/apply-lag.ts [--max N] [--baseline-max N] [--max-seconds 10]
 *  [--seconds 30] [--warmup 5] [--probes-per-sec 50] [--poll-ms 5] [--users 10007] [--no-baseline]`
 *
 * Maximum: unless given (`--max`, `--baseline-max`), a closed-loop autocannon run of the SDK mix
 * (bench/sdk-mix.ts; 100 connections, after a 3 s warm-up) counts the 202s and waits until every
 * one is applied: the maximum is the 202s over the time from the start until the last was applied.
 * Lag: an open-loop load at a constant rate (bench/paced.ts) of which every `--sample-every`-th
 * write (one in rate / `--probes-per-sec`), after the warm-up, is a tag write with a unique value
 * to a user of its own, so both systems get the same poll load; from its
 * 202 on, GET /api/users/{id} is polled every `--poll-ms` until the value shows, and the lag is the
 * arrival of that answer minus the arrival of the 202. A probe not visible within 30 s is counted,
 * not timed. Writes bench/reports/apply-lag.json.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { loadConfig } from '../engine/infra/process/config.ts';
import { createRedis } from '../engine/infra/redis/client.ts';
import { Topology } from '../engine/infra/redis/topology.ts';
import { startBaseline } from './baseline.ts';
import { isClickHouseThread, processesCpu, redisCpu, threadCpu, threadCpuBetween, type ThreadCpu } from './cpu.ts';
import { startEngine, waitApplied, waitFor } from './deployment.ts';
import { measureMax, type MaxRate, type System } from './max-rate.ts';
import { paced, type PacedResult } from './paced.ts';
import { LagProbes, type LagFigures } from './probes.ts';
import { REDIS_URL } from './redis.ts';
import { writeReport } from './report.ts';
import { log, runBench, Teardown } from './run.ts';
import { wholeFlag } from './settings.ts';
import { SdkMix } from './sdk-mix.ts';
import type { Reference, SummaryRow } from './summary.ts';
import { machine, printRows, round } from './table.ts';

const GOAL_P99_MS = 250;
/** How many times lower than the baseline's the engine's p99 must be, by share of the maximum. */
const GOAL_FACTORS = new Map([
  [0.5, 1],
  [0.9, 10],
]);
const SHARES = [0.5, 0.9];
const PROBE_TIMEOUT_MS = 30_000;
const SETTLE_MS = 10 * 60_000;
const BASELINE = 'Fastify + BullMQ';

const { values } = parseArgs({
  options: {
    max: { type: 'string' },
    'baseline-max': { type: 'string' },
    'max-seconds': { type: 'string', default: '10' },
    seconds: { type: 'string', default: '30' },
    warmup: { type: 'string', default: '5' },
    'probes-per-sec': { type: 'string', default: '50' },
    'poll-ms': { type: 'string', default: '5' },
    users: { type: 'string', default: '10007' },
    connections: { type: 'string', default: '64' },
    'no-baseline': { type: 'boolean', default: false },
  },
});
const whole = (name: keyof typeof values): number => wholeFlag(name, values[name]);
const settings = {
  max_seconds: whole('max-seconds'),
  seconds: whole('seconds'),
  warmup_seconds: whole('warmup'),
  probes_per_sec: whole('probes-per-sec'),
  poll_ms: whole('poll-ms'),
  users: whole('users'),
  connections: whole('connections'),
  probe_timeout_ms: PROBE_TIMEOUT_MS,
  max_given: values.max === undefined ? null : whole('max'),
  baseline_max_given: values['baseline-max'] === undefined ? null : whole('baseline-max'),
  baseline: !values['no-baseline'],
};

const run = Date.now().toString(36);
const prefixes = { engine: `benchlag${run}:`, baseline: `benchlagb${run}:` };
const teardown = new Teardown();
for (const prefix of Object.values(prefixes)) teardown.keys(prefix);
const cpuRedis = teardown.connection(createRedis(loadConfig({ REDIS_URL })));

/** A system under test that the bench stops once it is measured, so it takes no CPU from the next one. */
type StoppableSystem = System & { stop(): Promise<void> };

interface LagStep extends LagFigures {
  /** The offered rate as a share of the reference maximum (the baseline's when it runs). */
  share: number;
  /** The offered rate as a share of this system's own maximum. */
  share_of_own_max: number;
  /** One write in this many was a probe. */
  sample_every: number;
  load: PacedResult;
  /**
   * Cores used over the load (warm-up included): the system's processes, of which their threads
   * not named `node` (the embedded ClickHouse's), Redis, this process (load and polls).
   */
  cpu_cores: { system: number; system_clickhouse: number; redis: number; bench: number };
}

interface SystemResult {
  name: string;
  max: MaxRate;
  steps: LagStep[];
}

async function lagAt(sys: System, mix: SdkMix, rate: number, share: number, ownMax: number): Promise<LagStep> {
  const sampleEvery = Math.max(1, Math.round(rate / settings.probes_per_sec));
  const probes = new LagProbes({
    base: sys.base,
    restKey: sys.restKey,
    from: Math.round(rate * settings.warmup_seconds),
    every: sampleEvery,
    prefix: `lag-${Math.round(share * 100)}-`,
    pollMs: settings.poll_ms,
    timeoutMs: PROBE_TIMEOUT_MS,
  });
  log(`bench: ${sys.name}: ${Math.round(share * 100)}% = ${rate} writes/s for ${settings.warmup_seconds} s warm-up + ${settings.seconds} s, 1 in ${sampleEvery} probed`);
  const threads = (): Promise<ThreadCpu[]> => Promise.all(sys.pids.map((pid) => threadCpu(pid)));
  const cpu0 = { at: performance.now(), system: await processesCpu(sys.pids), threads: await threads(), redis: await redisCpu(cpuRedis), bench: process.cpuUsage() };
  const load = await paced({
    url: sys.base,
    headers: { authorization: `Bearer ${sys.sdkKey}` },
    rate,
    seconds: settings.warmup_seconds + settings.seconds,
    connections: settings.connections,
    maxInFlight: 4096,
    ...probes.hooks(() => mix.next()),
  });
  const wall = (performance.now() - cpu0.at) / 1000;
  const benchCpu = process.cpuUsage(cpu0.bench);
  const cores = (seconds: number): number => round(seconds / wall, 2);
  const clickhouse = (await threads())
    .flatMap((after, i) => Object.entries(threadCpuBetween(cpu0.threads[i] ?? new Map(), after)))
    .reduce((sum, [name, seconds]) => sum + (isClickHouseThread(name) ? seconds : 0), 0);
  const cpuCores = { system: cores((await processesCpu(sys.pids)) - cpu0.system), system_clickhouse: cores(clickhouse), redis: cores((await redisCpu(cpuRedis)) - cpu0.redis), bench: cores((benchCpu.user + benchCpu.system) / 1e6) };
  const step: LagStep = { share, share_of_own_max: round(rate / ownMax, 2), sample_every: sampleEvery, load, ...(await probes.done()), cpu_cores: cpuCores };
  log(`bench: ${sys.name}: ${load.accepted_per_sec} writes/s accepted; lag p50 ${step.p50_ms} ms, p99 ${step.p99_ms} ms, max ${step.max_ms} ms over ${step.visible} probes, ${step.not_visible} never visible`);
  await sys.settle();
  return step;
}

/** Measures the system's maximum, then its lag at each share of `reference` (its own maximum when null). */
async function measureSystem(sys: System, given: number | null, reference: number | null): Promise<SystemResult> {
  const mix = new SdkMix(settings.users, `mix-`);
  const max: MaxRate = given === null ? await measureMax(sys, mix, settings.max_seconds, log) : { source: 'given', accepted_per_sec: null, applied_per_sec: null, max_per_sec: given };
  const steps: LagStep[] = [];
  for (const share of SHARES) steps.push(await lagAt(sys, mix, Math.max(1, Math.round((reference ?? max.max_per_sec) * share)), share, max.max_per_sec));
  return { name: sys.name, max, steps };
}

async function engineSystem(work: string): Promise<StoppableSystem> {
  const engine = await startEngine({ prefix: prefixes.engine, dataDir: join(work, 'engine'), redisUrl: REDIS_URL });
  teardown.child(engine.child);
  const project = await engine.createProject('bench-apply-lag');
  const redis = teardown.connection(new Redis(REDIS_URL, { maxRetriesPerRequest: 2 }));
  const topology = new Topology(prefixes.engine, Number(process.env['PARTITIONS'] ?? 64));
  log(`bench: engine pid ${engine.pid} on ${engine.base}`);
  return {
    name: 'engine',
    base: engine.base,
    sdkKey: project.sdk_key,
    restKey: project.rest_key,
    pids: [engine.pid],
    settle: () => waitApplied(redis, topology, SETTLE_MS),
    stop: () => engine.child.stop(),
  };
}

async function baselineSystem(): Promise<StoppableSystem> {
  const baseline = await startBaseline({ prefix: prefixes.baseline, key: `bench-${run}`, redisUrl: REDIS_URL, timeoutMs: 60_000 }, teardown);
  const { server, worker } = baseline;
  const settle = async (): Promise<void> => {
    await waitFor('the baseline queue to drain', async () => ((await baseline.backlog()) === 0 ? true : undefined), SETTLE_MS, 200);
  };
  log(`bench: baseline server pid ${server.proc.pid ?? 0} on port ${server.port}, worker pid ${worker.proc.pid ?? 0}`);
  return {
    name: BASELINE,
    base: baseline.base,
    sdkKey: baseline.key,
    restKey: baseline.key,
    pids: [server.proc.pid ?? 0, worker.proc.pid ?? 0],
    settle,
    stop: baseline.stop,
  };
}

function summarize(engine: SystemResult, baseline: SystemResult | null): SummaryRow[] {
  const rows: SummaryRow[] = [];
  for (const [index, share] of SHARES.entries()) {
    const step = engine.steps[index];
    if (step === undefined) continue;
    const other = baseline?.steps[index];
    const pct = Math.round(share * 100);
    const of = baseline === null ? 'its own maximum' : `${BASELINE}'s maximum, both`;
    const reference = (value: number | undefined): Reference | null => (value === undefined ? null : { name: BASELINE, value });
    const p99: SummaryRow = {
      scenario: 'apply-lag',
      measure: `apply lag p99 at ${pct}% of ${of}`,
      value: step.p99_ms,
      unit: 'ms',
      better: 'lower',
      ceiling: null,
      baseline: reference(other?.p99_ms),
      goal: null,
    };
    const wanted = GOAL_FACTORS.get(share);
    if (wanted !== undefined) {
      const factor = other === undefined || step.p99_ms <= 0 ? 0 : other.p99_ms / step.p99_ms;
      const than = wanted === 1 ? `at most ${BASELINE}'s` : `at least ${wanted}x better than ${BASELINE}`;
      p99.goal = {
        text: `under ${GOAL_P99_MS} ms, ${than}, every probe visible`,
        met: step.p99_ms < GOAL_P99_MS && factor >= wanted && step.not_visible === 0,
      };
    }
    rows.push(p99, { ...p99, measure: `apply lag p50 at ${pct}% of ${of}`, value: step.p50_ms, baseline: reference(other?.p50_ms), goal: null });
  }
  return rows;
}

function printReport(results: SystemResult[]): void {
  printRows([
    ['system', 'max writes/s', 'load (of own max)', 'target/s', 'accepted/s', 'skipped', 'non-2xx', 'probes', 'lag p50 ms', 'lag p99 ms', 'lag max ms', 'never visible', 'cores sys (CH)/redis/bench'],
    ...results.flatMap((r) =>
      r.steps.map((s) => [
        r.name,
        `${r.max.max_per_sec} (${r.max.source})`,
        `${Math.round(s.share * 100)}% (${Math.round(s.share_of_own_max * 100)}%)`,
        String(s.load.target_per_sec),
        String(s.load.accepted_per_sec),
        String(s.load.skipped),
        String(s.load.non_2xx + s.load.errors),
        String(s.visible),
        String(s.p50_ms),
        String(s.p99_ms),
        String(s.max_ms),
        String(s.not_visible),
        `${s.cpu_cores.system} (${s.cpu_cores.system_clickhouse})/${s.cpu_cores.redis}/${s.cpu_cores.bench}`,
      ]),
    ),
  ]);
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const work = await mkdtemp(join(tmpdir(), 'svc-bench-apply-lag-'));
  teardown.folder(work);
  let baselineResult: SystemResult | null = null;
  if (settings.baseline) {
    const baseline = await baselineSystem();
    baselineResult = await measureSystem(baseline, settings.baseline_max_given, null);
    await baseline.stop();
  }
  const engine = await engineSystem(work);
  const engineResult = await measureSystem(engine, settings.max_given, baselineResult?.max.max_per_sec ?? null);
  await engine.stop();
  const results = baselineResult === null ? [engineResult] : [engineResult, baselineResult];
  const summary = summarize(engineResult, baselineResult);
  const report = {
    benchmark: 'apply-lag',
    started_at: startedAt.toISOString(),
    finished_at: new Date().toISOString(),
    machine: machine(),
    settings,
    results,
    summary,
    notes: [
      'Measures: the time from the arrival of a 202 for a tag write to the arrival of the first GET /api/users/{id} answer that shows it (REST key, polled every poll_ms on its own keep-alive connections), at 50% and 90% of the baseline maximum rate for both systems (the same offered rate), under the SDK mix of bench/sdk-mix.ts (events, tag updates, identifies, token re-registrations over a fixed set of users).',
      'Engine: one `engine start` process with every role (gateway, apply, fan-out, dispatch, recorder with embedded ClickHouse in a temp DATA_DIR, scheduler), PARTITIONS as configured (default 64). Baseline: bench/baselines (Fastify server enqueueing with BullMQ, one BullMQ worker process applying with its default concurrency), measured first, at the same offered rates; `share_of_own_max` gives each rate as a share of the system own maximum.',
      'Maximum: a closed-loop autocannon run (100 connections, no pipelining) of the same mix; the 202s over the time from its start until every accepted write was applied, so a system that accepts faster than it applies is held to what it applies. `source: given` when passed with --max / --baseline-max.',
      'Load: open loop, requests started on schedule (every millisecond, the ones due) on keep-alive HTTP/1.1 connections; `skipped` counts requests not started because 4096 were already in flight. The lag includes the poll interval (up to poll_ms) and one GET round trip.',
      `Machine: ${machine().cpus} cores shared by this process (load and polls), the system under test and Redis; the figures move with other work on the host (load_average in machine).`,
    ],
  };
  printReport(results);
  for (const row of summary) log(`${row.measure}: ${row.value} ${row.unit}${row.baseline ? ` (${row.baseline.name}: ${row.baseline.value} ${row.unit})` : ''}${row.goal ? ` goal ${row.goal.text}: ${row.goal.met ? 'met' : 'NOT met'}` : ''}`);
  const file = await writeReport(report);
  log(`bench: report written to ${file}`);
}

await runBench(main, () => teardown.run());
