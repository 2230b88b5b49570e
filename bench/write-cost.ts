/**
 * Write-cost benchmark: what an SDK write costs the default deployment (one `engine start`
 * process, every role, embedded ClickHouse in a temp DATA_DIR, PARTITIONS as configured, fresh
 * KEY_PREFIX) from its accept to its record in ClickHouse, at constant rates.
 *
 * `node --import tsx bench/write-cost.ts [--rates 5000,10000] [--seconds 20] [--warmup 3]
 *  [--probes-per-sec 50] [--profile] [--max one,split,one-autocannon] [--cores 1|2]
 *  [--wrk-threads 1] [--wrk-connections 256] [--autocannon-connections 100]`
 *
 * Per rate: the SDK mix of bench/sdk-mix.ts over 100 000 users, open loop (bench/paced.ts), a
 * warm-up, then a window of `--seconds` in which it reads the writes sent, accepted, applied and
 * recorded (engine /metrics, XINFO GROUPS), the CPU of the engine (by thread), of Redis and of this
 * process, Redis INFO commandstats, and the apply lag of about `--probes-per-sec` probes a second
 * (bench/probes.ts); then how long after the load everything accepted took to be applied and
 * recorded (at most 120 s). `--profile` runs the engine with --cpu-prof, keeps its profile as
 * bench/reports/write-cost.cpuprofile and puts its top functions in the report.
 *
 * Then the closed-loop maximum (bench/write-cost-max.ts), `--max` naming the runs: a deployment,
 * `one`, the same process, or `split`, after it stopped, `--roles gateway` and `--roles
 * apply,recorder` in two processes on the same KEY_PREFIX and DATA_DIR; loaded by wrk, or with
 * `-autocannon` by autocannon without pipelining. `one-autocannon` is the run the goal "writes end
 * to end" is read on: at least 10 000 writes/s carried at no more than 100 µs of engine + Redis
 * CPU per write, on 100 connections. `--cores N` gives the engine processes N cores with taskset:
 * CPUs 0..N-1 to the one process; of the split, CPU 0 to the gateway and CPU N-1 to apply +
 * recorder (one core for both, or one each). An empty `--rates` or `--max` skips that part;
 * without wrk on PATH its runs are skipped. Writes bench/reports/write-cost.json.
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
import type { CommandCosts } from './commandstats.ts';
import { costSample, costsBetween, type CostSample, type Costs } from './cost-window.ts';
import { profileAtExit, summarizeProfile, type ProfileSummary } from './cpuprofile.ts';
import { backlog, drainSeconds, engineBuild, recorderProgress, sleep, startEngine, type Engine } from './deployment.ts';
import { paced, type PacedResult } from './paced.ts';
import { root, reportsDir } from './paths.ts';
import { LagProbes, type LagFigures } from './probes.ts';
import { REDIS_URL } from './redis.ts';
import { reportFile, writeReport } from './report.ts';
import { log, runBench, Teardown } from './run.ts';
import { wholeFlag } from './settings.ts';
import { SdkMix } from './sdk-mix.ts';
import type { SummaryRow } from './summary.ts';
import { machine, printRows } from './table.ts';
import { autocannonLoad, writeMixRequests, wrkInstalled, wrkLoad, type MixLoad } from './mix-load.ts';
import { deploymentName, measureMax, pinTo, printMax, startSplit, summarizeMax, type MaxContext, type MaxDeployment, type MaxResult } from './write-cost-max.ts';

const GOAL_RATE = 10_000;
/** The share of GOAL_RATE that counts as sustaining it: the load generator's own jitter. */
const GOAL_RATE_SHARE = 0.98;
const GOAL_US_PER_WRITE = 100;
const GOAL_LAG_P99_MS = 250;
const USERS = 100_000;
const DRAIN_MS = 120_000;
const PROBE_TIMEOUT_MS = 30_000;

const { values } = parseArgs({
  options: {
    rates: { type: 'string', default: '5000,10000' },
    seconds: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '3' },
    'probes-per-sec': { type: 'string', default: '50' },
    profile: { type: 'boolean', default: false },
    max: { type: 'string', default: 'one,split,one-autocannon' },
    cores: { type: 'string', default: '' },
    'wrk-threads': { type: 'string', default: '1' },
    'wrk-connections': { type: 'string', default: '256' },
    'autocannon-connections': { type: 'string', default: '100' },
  },
});
const listFlag = (raw: string): string[] => raw.split(',').filter((item) => item !== '');
const max = listFlag(values.max);
for (const name of max) if (!/^(one|split)(-autocannon)?$/.test(name)) throw new Error(`--max takes one, split, one-autocannon and split-autocannon, got ${name}`);
const cores = values.cores === '' ? null : wholeFlag('cores', values.cores);
if (cores !== null && cores !== 1 && cores !== 2) throw new Error(`--cores takes 1 or 2, got ${cores}`);
const settings = {
  rates: listFlag(values.rates).map((rate) => wholeFlag('rates', rate)),
  seconds: wholeFlag('seconds', values.seconds),
  warmup_seconds: wholeFlag('warmup', values.warmup),
  probes_per_sec: wholeFlag('probes-per-sec', values['probes-per-sec']),
  poll_ms: 5,
  connections: 64,
  users: USERS,
  profile: values.profile,
  max,
  cores,
  wrk_threads: wholeFlag('wrk-threads', values['wrk-threads']),
  wrk_connections: wholeFlag('wrk-connections', values['wrk-connections']),
  autocannon_connections: wholeFlag('autocannon-connections', values['autocannon-connections']),
};

const prefix = `benchcost${Date.now().toString(36)}:`;
const topology = new Topology(prefix, Number(process.env['PARTITIONS'] ?? 64));
const teardown = new Teardown();
teardown.keys(prefix);
const infoRedis = teardown.connection(createRedis(loadConfig({ REDIS_URL })));
const redis = teardown.connection(new Redis(REDIS_URL, { maxRetriesPerRequest: 2 }));
/** Set once the engines are meant to stop, so their exit is not reported as a crash. */
let stopping = false;
/** Engines stopped on purpose before the end. */
const stoppedOnPurpose = new WeakSet<Engine>();

function watch(engine: Engine, name: string): void {
  teardown.child(engine.child);
  engine.child.proc.once('exit', (code, signal) => {
    if (!stopping && !stoppedOnPurpose.has(engine)) log(`bench: the ${name} process exited (${signal ?? code ?? ''}); its last output:\n${engine.child.output()}`);
  });
}

interface RateResult {
  rate: number;
  /** One write in this many was an apply-lag probe. */
  sample_every: number;
  /** The requests sent after the warm-up, as the load generator saw them (answers after the window included). */
  load: PacedResult;
  window_seconds: number;
  /**
   * Over the window: requests started, 2xx answers, ingest entries applied, rows inserted by
   * table; changes entries appended and recorded, between the means of its first and last second.
   */
  per_sec: { sent: number; accepted: number; applied: number; recorded_rows: Record<string, number>; changes_appended: number; changes_recorded: number };
  /** accepted/s × the share of it applied × the share of the changes recorded (each at most 1): the writes carried all the way. */
  carried_per_sec: number;
  backlog_at_end: { unapplied_entries: number; unrecorded_changes: number };
  /** Seconds from the last answer until everything accepted was applied, and recorded; null: not within DRAIN_MS. */
  done_after_load_s: { applied: number | null; recorded: number | null };
  cpu_us_per_write: Costs['cpu_us_per_write'];
  cpu_cores: Costs['cpu_cores'];
  redis_commands: CommandCosts;
  lag: LagFigures;
  /**
   * The engine's event-loop delay over the window (its /metrics, prom-client's monitor at 10 ms
   * resolution, reset by the scrape that opened the window): how long work of one role kept the
   * others waiting. Null when the engine did not report it.
   */
  event_loop_delay_ms: { p99: number; max: number } | null;
}

/** What the measured window saw: a cost sample at each end and the recorder's progress in between. */
interface Window {
  begin: CostSample;
  end: CostSample;
  backlog: RateResult['backlog_at_end'];
  changes: { seconds: number; appended: number; recorded: number };
}

/** Samples the window from now: `seconds` long, the recorder's progress over its first and last second. */
async function measureWindow(engine: Engine, seconds: number, close: () => void): Promise<Window> {
  const ending = sleep(seconds * 1000);
  const [begin, first] = await Promise.all([costSample(engine, infoRedis), recorderProgress(redis, topology)]);
  await sleep(Math.max(0, (seconds - 1) * 1000 - (performance.now() - begin.at)));
  const last = await recorderProgress(redis, topology);
  await ending;
  close();
  const end = await costSample(engine, infoRedis);
  const left = await backlog(redis, topology);
  const changes = { seconds: (last.at - first.at) / 1000, appended: last.appended - first.appended, recorded: last.recorded - first.recorded };
  return { begin, end, backlog: left, changes };
}

async function measureRate(engine: Engine, keys: { rest: string; sdk: string }, mix: SdkMix, rate: number): Promise<RateResult> {
  const sampleEvery = Math.max(1, Math.round(rate / settings.probes_per_sec));
  const probeOptions = { base: engine.base, restKey: keys.rest, every: sampleEvery, prefix: `probe-${rate}-`, pollMs: settings.poll_ms, timeoutMs: PROBE_TIMEOUT_MS };
  const probes = new LagProbes({ ...probeOptions, from: Math.round(rate * settings.warmup_seconds) });
  const hooks = probes.hooks(() => mix.next());
  const counts = { open: false, sent: 0, accepted: 0 };
  // The window opens as the warm-up ends, inside the load (paced's onWarm), and is awaited after it.
  let warm = (): void => undefined;
  const measured = new Promise<void>((resolve) => (warm = resolve)).then(() => measureWindow(engine, settings.seconds, () => (counts.open = false)));
  measured.catch(() => undefined);
  log(`bench: ${rate} writes/s: ${settings.warmup_seconds} s warm-up + ${settings.seconds} s measured, 1 in ${sampleEvery} probed`);
  const load = await paced({
    url: engine.base,
    headers: { authorization: `Bearer ${keys.sdk}` },
    rate,
    warmup: settings.warmup_seconds,
    seconds: settings.seconds,
    connections: settings.connections,
    maxInFlight: 4096,
    onWarm: () => {
      counts.open = true;
      warm();
    },
    next: (i) => {
      if (counts.open) counts.sent += 1;
      return hooks.next(i);
    },
    onAccepted: (i, write, at) => {
      if (counts.open) counts.accepted += 1;
      hooks.onAccepted?.(i, write, at);
    },
  });
  const stopped = performance.now();
  const window = await measured;
  const [lag, { applied, recorded }] = await Promise.all([probes.done(), drainSeconds(redis, topology, stopped, DRAIN_MS)]);

  const costs = costsBetween(engine.pid, window.begin, window.end, counts.accepted);
  const perSec = (n: number, seconds = costs.seconds): number => Math.round(n / seconds);
  const rows = [...window.end.metrics.keys()].flatMap((key) => {
    const table = /^svc_recorded_rows_total\{table="([^"]+)"\}$/.exec(key)?.[1];
    return table === undefined ? [] : [[table, perSec(costs.counter(key))] as const];
  });
  const appliedCount = costs.counter('svc_applied_entries_total');
  const share = (n: number, of: number): number => (of > 0 ? Math.min(1, n / of) : 1);
  const { changes } = window;
  const result: RateResult = {
    rate,
    sample_every: sampleEvery,
    load,
    window_seconds: costs.seconds,
    per_sec: {
      sent: perSec(counts.sent),
      accepted: perSec(counts.accepted),
      applied: perSec(appliedCount),
      recorded_rows: Object.fromEntries(rows),
      changes_appended: perSec(changes.appended, changes.seconds),
      changes_recorded: perSec(changes.recorded, changes.seconds),
    },
    carried_per_sec: Math.round(perSec(counts.accepted) * share(appliedCount, counts.accepted) * share(changes.recorded, changes.appended)),
    backlog_at_end: window.backlog,
    done_after_load_s: { applied, recorded },
    cpu_us_per_write: costs.cpu_us_per_write,
    cpu_cores: costs.cpu_cores,
    redis_commands: costs.redis_commands,
    lag,
    event_loop_delay_ms: loopDelay(window.end.metrics),
  };
  log(
    `bench: ${rate}/s: ${result.per_sec.accepted}/s accepted, ${result.per_sec.applied}/s applied, ${result.carried_per_sec}/s carried; ` +
      `${result.cpu_us_per_write.engine_and_redis} µs/write engine + Redis; ${result.redis_commands.calls_per_write} Redis commands/write; ` +
      `lag p99 ${lag.p99_ms} ms; event-loop delay max ${result.event_loop_delay_ms?.max ?? 'n/a'} ms; applied ${applied ?? 'NOT'} s and recorded ${recorded ?? 'NOT'} s after the load`,
  );
  return result;
}

function loopDelay(metrics: Map<string, number>): RateResult['event_loop_delay_ms'] {
  const p99 = metrics.get('nodejs_eventloop_lag_p99_seconds');
  const max = metrics.get('nodejs_eventloop_lag_max_seconds');
  if (p99 === undefined || max === undefined) return null;
  return { p99: Math.round(p99 * 10_000) / 10, max: Math.round(max * 10_000) / 10 };
}

/** The summary rows of one rate; the goals sit on the rows of GOAL_RATE and of half of it. */
function summarize(r: RateResult): SummaryRow[] {
  const row = (measure: string, value: number, unit: string, better: SummaryRow['better'], goal: SummaryRow['goal']): SummaryRow => ({
    scenario: 'write-cost',
    measure: `${measure} at ${r.rate}/s`,
    value,
    unit,
    better,
    ceiling: null,
    baseline: null,
    goal,
  });
  const atGoal = r.rate === GOAL_RATE;
  const carriedGoal = Math.round(GOAL_RATE * GOAL_RATE_SHARE);
  return [
    row('engine + Redis CPU per write', r.cpu_us_per_write.engine_and_redis, 'µs/write', 'lower', atGoal ? { text: `at most ${GOAL_US_PER_WRITE} µs`, met: r.cpu_us_per_write.engine_and_redis <= GOAL_US_PER_WRITE } : null),
    row('writes accepted, applied and recorded', r.carried_per_sec, 'writes/s', 'higher', atGoal ? { text: `${GOAL_RATE}/s (at least ${carriedGoal})`, met: r.carried_per_sec >= carriedGoal } : null),
    row('apply lag p99', r.lag.p99_ms, 'ms', 'lower', r.rate === GOAL_RATE / 2 ? { text: `under ${GOAL_LAG_P99_MS} ms, every probe visible`, met: r.lag.p99_ms < GOAL_LAG_P99_MS && r.lag.not_visible === 0 } : null),
    row('Redis commands per write', r.redis_commands.calls_per_write, 'commands/write', 'lower', null),
  ];
}

function print(results: RateResult[], profile: ProfileSummary | null): void {
  const s = (v: number | null): string => (v === null ? 'not reached' : String(v));
  printRows([
    ['rate/s', 'sent/s', 'accepted/s', 'applied/s', 'recorded rows/s', 'carried/s', '202 p99 ms', 'left: entries/changes', 'done after s: applied/recorded', 'µs/write engine (main/CH/other)', 'Redis', 'engine+Redis', 'load gen', 'Redis cmds/write', 'lag p50/p99 ms', 'loop delay p99/max ms'],
    ...results.map((r) => [
      String(r.rate),
      String(r.per_sec.sent),
      String(r.per_sec.accepted),
      String(r.per_sec.applied),
      Object.entries(r.per_sec.recorded_rows).map(([table, n]) => `${table} ${n}`).join(', '),
      String(r.carried_per_sec),
      String(r.load.p99_ms),
      `${r.backlog_at_end.unapplied_entries}/${r.backlog_at_end.unrecorded_changes}`,
      `${s(r.done_after_load_s.applied)}/${s(r.done_after_load_s.recorded)}`,
      `${r.cpu_us_per_write.engine} (${r.cpu_us_per_write.engine_main}/${r.cpu_us_per_write.engine_clickhouse}/${r.cpu_us_per_write.engine_helpers})`,
      String(r.cpu_us_per_write.redis),
      String(r.cpu_us_per_write.engine_and_redis),
      String(r.cpu_us_per_write.load_generator),
      String(r.redis_commands.calls_per_write),
      `${r.lag.p50_ms}/${r.lag.p99_ms}${r.lag.not_visible > 0 ? ` (${r.lag.not_visible} not visible)` : ''}`,
      r.event_loop_delay_ms === null ? 'n/a' : `${r.event_loop_delay_ms.p99}/${r.event_loop_delay_ms.max}`,
    ]),
  ]);
  const last = results.at(-1);
  const top = last?.redis_commands.commands.slice(0, 12) ?? [];
  printRows([
    ['Redis command', ...results.flatMap((r) => [`calls/write @${r.rate}`, `µs/write @${r.rate}`])],
    ...top.map(({ command }) => [
      command,
      ...results.flatMap((r) => {
        const c = r.redis_commands.commands.find((x) => x.command === command);
        return [String(c?.calls_per_write ?? 0), String(c?.usec_per_write ?? 0)];
      }),
    ]),
    ['all (µs: Redis CPU)', ...results.flatMap((r) => [String(r.redis_commands.calls_per_write), String(r.cpu_us_per_write.redis)])],
  ]);
  if (profile === null) return;
  console.log(`engine main thread profile: ${profile.duration_ms} ms, idle ${profile.idle_pct}%, garbage collection ${profile.gc_pct}% of the busy time`);
  printRows([['self % of busy', 'function', 'at'], ...profile.top.map((f) => [String(f.self_pct), f.name, f.at])]);
}

/** The closed-loop measurements' context, with one period of the mix written for the load generators. */
async function maxContext(work: string, sdkKey: string, mix: SdkMix): Promise<MaxContext> {
  const requests = join(work, 'mix-requests.txt');
  await writeMixRequests(requests, mix);
  return {
    redis,
    infoRedis,
    topology,
    sdkKey,
    mix,
    requests,
    warmupSeconds: settings.warmup_seconds,
    seconds: settings.seconds,
    drainMs: DRAIN_MS,
    log,
  };
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const build = await engineBuild();
  if (build.newer_than_build.length > 0) log(`bench: WARNING: dist/ is older than ${build.newer_than_build.length} source files (npm run build): ${build.newer_than_build.slice(0, 5).join(', ')}`);
  const work = await mkdtemp(join(tmpdir(), 'svc-bench-write-cost-'));
  teardown.folder(work);
  const profileDir = join(work, 'profile');
  const engine = await startEngine({ prefix, dataDir: join(work, 'engine'), redisUrl: REDIS_URL, nodeFlags: settings.profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [] });
  watch(engine, 'engine');
  const project = await engine.createProject('bench-write-cost');
  log(`bench: engine pid ${engine.pid} on ${engine.base} (${build.from}, ${build.commit}${build.uncommitted.length > 0 ? ', uncommitted changes' : ''}), ${topology.partitions} partitions`);
  const mix = new SdkMix(USERS, 'cost-');
  const results: RateResult[] = [];
  for (const rate of settings.rates) results.push(await measureRate(engine, { rest: project.rest_key, sdk: project.sdk_key }, mix, rate));
  const { closedLoop, skipped, profile } = await closedLoopMaximum(engine, work, project.sdk_key, mix);
  stopping = true;

  const summary = [...results.flatMap(summarize), ...summarizeMax(closedLoop, { rate: GOAL_RATE, share: GOAL_RATE_SHARE, usPerWrite: GOAL_US_PER_WRITE })];
  if (results.length > 0) print(results, profile);
  printMax(closedLoop);
  for (const row of summary) log(`${row.measure}: ${row.value} ${row.unit}${row.goal ? `; goal ${row.goal.text}: ${row.goal.met ? 'met' : 'NOT met'}` : ''}`);
  const report = {
    benchmark: 'write-cost',
    started_at: startedAt.toISOString(),
    finished_at: new Date().toISOString(),
    machine: machine(),
    settings: { ...settings, partitions: topology.partitions, drain_ms: DRAIN_MS, probe_timeout_ms: PROBE_TIMEOUT_MS },
    engine: build,
    results,
    closed_loop: closedLoop,
    closed_loop_skipped: skipped,
    profile,
    summary,
    notes: NOTES,
  };
  const file = await writeReport(report);
  log(`bench: report written to ${file}`);
}

/**
 * The closed-loop runs --max names: those of the one process first, then that process is stopped
 * (its profile kept, with --profile) and the split's started for theirs. wrk's runs are skipped
 * when it is not on PATH.
 */
async function closedLoopMaximum(engine: Engine, work: string, sdkKey: string, mix: SdkMix): Promise<{ closedLoop: MaxResult[]; skipped: string | null; profile: ProfileSummary | null }> {
  const closedLoop: MaxResult[] = [];
  const loads = { wrk: wrkLoad(settings.wrk_threads, settings.wrk_connections), autocannon: autocannonLoad(settings.autocannon_connections) };
  const noWrk = !wrkInstalled() && settings.max.some((name) => !name.endsWith('-autocannon'));
  const skipped = settings.max.length === 0 ? '--max is empty' : noWrk ? 'wrk is not on PATH (scripts/bench.sh installs it with apt-get): its runs are skipped' : null;
  if (skipped !== null) log(`bench: closed-loop maximum: ${skipped}`);
  const runs = settings.max
    .map((name) => ({ deployment: name.replace(/-autocannon$/, ''), load: name.endsWith('-autocannon') ? loads.autocannon : loads.wrk }))
    .filter((run) => !noWrk || run.load !== loads.wrk);
  const loadsOn = (deployment: 'one' | 'split'): MixLoad[] => runs.filter((run) => run.deployment === deployment).map((run) => run.load);
  const ctx = runs.length > 0 ? await maxContext(work, sdkKey, mix) : null;
  if (ctx !== null && loadsOn('one').length > 0) {
    const cpus = await pinTo(engine, settings.cores === null ? null : `0-${settings.cores - 1}`);
    const one: MaxDeployment = { name: deploymentName('one process', settings.cores), base: engine.base, processes: [{ name: 'engine', pid: engine.pid, roles: 'every role', cpus }] };
    for (const load of loadsOn('one')) closedLoop.push(await measureMax(one, load, ctx));
  }
  const profile = await stopEngine(engine, join(work, 'profile'));
  if (ctx !== null && loadsOn('split').length > 0) {
    const split = await startSplit({ prefix, dataDir: engine.dataDir, redisUrl: REDIS_URL, cores: settings.cores });
    split.engines.forEach((e, i) => watch(e, split.deployment.processes[i]?.name ?? 'split'));
    log(`bench: split: ${split.deployment.processes.map((p) => `${p.name} pid ${p.pid}${p.cpus === null ? '' : ` on CPU ${p.cpus}`}`).join(', ')}`);
    for (const load of loadsOn('split')) closedLoop.push(await measureMax(split.deployment, load, ctx));
  }
  return { closedLoop, skipped, profile };
}

/** Stops the one-process engine; with --profile, keeps its profile as bench/reports/write-cost.cpuprofile and sums it up. */
async function stopEngine(engine: Engine, profileDir: string): Promise<ProfileSummary | null> {
  stoppedOnPurpose.add(engine);
  let profile: ProfileSummary | null = null;
  if (settings.profile) {
    const kept = reportFile(reportsDir, 'write-cost', 'cpuprofile');
    const missing = await profileAtExit(engine.child.proc, profileDir, kept, 60_000);
    if (missing === null) profile = await summarizeProfile(kept, root);
    log(missing === null ? `bench: profile written to ${kept}` : `bench: no profile: ${missing}`);
  }
  await engine.child.stop();
  return profile;
}

const NOTES = [
  'Measures: one `engine start` process with every role (gateway, apply, fan-out, dispatch, recorder with embedded ClickHouse in a temp DATA_DIR, scheduler) under the SDK mix of bench/sdk-mix.ts (of every 10 writes 4 events, 3 tag updates, 2 identifies, 1 token re-registration) over 100 000 users, sent open loop at each rate (bench/paced.ts, 64 keep-alive connections) after a warm-up; the window is `seconds` long and everything per second or per write is over it.',
  'Per write means per 2xx answer received in the window. CPU from /proc (the engine; by thread: the main thread, ClickHouse\'s threads, node\'s other threads) and INFO cpu (Redis); the goal figure is engine + Redis, the load generator (this process: load, probes and their polls) apart. Work left over at the window\'s end (backlog_at_end, done_after_load_s) is not in the per-write figures.',
  'applied: svc_applied_entries_total; recorded rows: svc_recorded_rows_total by table (a user\'s changes in one recorder batch are one row); changes appended and recorded: XINFO GROUPS of the changes streams, group recorder (entries-read + lag, entries-read - pending), each the average of five samples over the first and over the last second of the window, as the recorder inserts in rounds every half linger. carried/s = accepted/s x min(1, applied / accepted) x min(1, changes recorded / appended): the writes taken all the way while the load lasted.',
  'Redis commands: INFO commandstats of the whole Redis server over the window, per write. Redis counts the commands a script calls too, under their own names, and their time also inside evalsha\'s; so calls_per_write is every command executed, not round trips. The probes\' GET /api/users polls (lag.polls) and this benchmark\'s XINFO GROUPS samples are counted in, and so would other clients of the same Redis server be.',
  'Apply lag: about probes_per_sec writes a second are tag writes with a unique value to a user of their own; from the 202, GET /api/users/{id} is polled every poll_ms until it shows (bench/probes.ts). The lag includes up to poll_ms and one GET.',
  'Closed loop (closed_loop): a load generator in a process of its own sends the same mix, one period of SdkMix precomputed, as fast as answers come, for warmup_seconds (then its backlog is let drain) and for `seconds` measured: wrk (C, LuaJIT; bench/wrk-mix.lua, wrk_threads threads) over wrk_connections connections, or autocannon (bench/autocannon-mix.ts) over autocannon_connections connections, one request in flight on each. accepted: svc_accepted_writes_total of the gateway over the window; carried/s: those writes over the window plus the seconds until every one was applied and recorded, i.e. what reached ClickHouse per second of wall time; null when that took over drain_ms. CPU per write runs from the window\'s start until all was recorded (idle drain time and the XINFO GROUPS polls that time it included); the load generator\'s is over its run, the second or so it spends starting and building its requests left out; cores are over the window. wrk counts non_2xx as statuses above 399, autocannon as any but 2xx. The goal "writes end to end" is read on autocannon against the one process: at least 10 000 writes/s carried at no more than 100 µs of engine + Redis CPU per write.',
  'split: the one-process engine stopped, `engine start --roles apply,recorder` (its embedded ClickHouse in the same DATA_DIR) and `engine start --roles gateway` on the same KEY_PREFIX, the state the runs before left (users, ClickHouse tables) kept; fan-out, dispatch and scheduler do not run (no SDK write needs them). With --cores N, taskset pins every thread of the one process to CPUs 0..N-1 and, of the split, the gateway to CPU 0 and apply + recorder to CPU N-1 (one core for both, or one each); Redis, the load generator and this process are not pinned.',
  'With --profile the engine runs under --cpu-prof (its main thread only, start-up, drains and the one-process closed loop included), which costs it some CPU: compare CPU figures between runs of the same kind.',
  `Machine: ${machine().cpus} cores shared by the engine, Redis and the load generator; other work on the host moves the figures (load_average in machine).`,
];

await runBench(main, async () => {
  stopping = true;
  await teardown.run();
});
