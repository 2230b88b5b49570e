/**
 * The closed-loop maximum of the write-cost benchmark: a load generator (bench/mix-load.ts: wrk or
 * autocannon) sends the SDK mix as fast as a deployment answers, first for a warm-up whose backlog
 * is let drain, then for the measured window; after it, how long the deployment takes to apply and
 * record what it accepted. Carried per second is the accepted writes over the window and that drain
 * together: what reached ClickHouse per second of wall time.
 */
import { execFile } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import type { Redis } from 'ioredis';
import type { RedisClient } from '../engine/infra/redis/client.ts';
import type { Topology } from '../engine/infra/redis/topology.ts';
import { processesCostsBetween, processesSample, type ProcessCost, type ProcessesCosts } from './cost-window.ts';
import { exitedChildrenCpu, processesCpu } from './cpu.ts';
import { backlog, drainSeconds, metrics, startEngine, type Engine } from './deployment.ts';
import type { MixLoad, MixLoadResult, MixLoadRun } from './mix-load.ts';
import type { SdkMix } from './sdk-mix.ts';
import type { SummaryRow } from './summary.ts';
import { printRows } from './table.ts';

const ACCEPTED = 'svc_accepted_writes_total';

/** One process of a deployment under test. */
export interface DeploymentProcess {
  name: string;
  pid: number;
  /** `engine start --roles`, or `every role`. */
  roles: string;
  /** The CPUs it is pinned to (taskset), or null. */
  cpus: string | null;
}

export interface MaxDeployment {
  name: string;
  /** The gateway's URL: the load's target, and its /metrics counts the writes accepted. */
  base: string;
  processes: DeploymentProcess[];
}

export interface MaxContext {
  redis: Redis;
  infoRedis: RedisClient;
  topology: Topology;
  sdkKey: string;
  /** Where the load goes on in the mix; moved past what each run sent. */
  mix: SdkMix;
  /** The file writeMixRequests wrote. */
  requests: string;
  warmupSeconds: number;
  seconds: number;
  drainMs: number;
  log(line: string): void;
}

export interface MaxResult {
  deployment: string;
  processes: DeploymentProcess[];
  /** The generator's own count over its measured run; its answers are 2xx but for `non_2xx`. */
  load: MixLoadResult & { name: string; label: string; connections: number };
  /** Seconds the warm-up's backlog took to drain before the window; null: not within drain_ms. */
  warmup_drained_s: number | null;
  window_seconds: number;
  /** Writes the gateway accepted in the window (svc_accepted_writes_total). */
  accepted: number;
  accepted_per_sec: number;
  backlog_at_end: { unapplied_entries: number; unrecorded_changes: number };
  /** Seconds from the load's end until everything accepted was applied, and recorded; null: not within drain_ms. */
  done_after_load_s: { applied: number | null; recorded: number | null };
  /** accepted / (window + seconds until recorded); null when it was not recorded within drain_ms. */
  carried_per_sec: number | null;
  /** From the window's start until everything was recorded, per accepted write; the load generator over its run. */
  cpu_us_per_write: { processes: Record<string, ProcessCost>; redis: number; deployment: number; load_generator: number };
  /**
   * Over the window; `bench` is this process, `host` every core's busy time and `other` what of it
   * none of the others named spent (other work on the host, the kernel's share of the loopback).
   */
  cpu_cores: { processes: Record<string, number>; redis: number; load_generator: number; bench: number; host: number; other: number };
  redis_calls_per_write: number;
}

/** Runs the load for `seconds` from line `mix.position`; once it is done, the mix is moved past what it sent. */
function runLoad(dep: MaxDeployment, load: MixLoad, ctx: MaxContext, seconds: number): MixLoadRun {
  const run = load.start({ url: dep.base, sdkKey: ctx.sdkKey, requests: ctx.requests, first: ctx.mix.position % ctx.mix.period, seconds });
  const finished = run.finished.then((result) => {
    // Requests in flight at the stop were sent but not answered: one a connection at most.
    ctx.mix.skip(result.requests + load.connections);
    return result;
  });
  return { ...run, finished };
}

export async function measureMax(dep: MaxDeployment, load: MixLoad, ctx: MaxContext): Promise<MaxResult> {
  const pids = Object.fromEntries(dep.processes.map((p) => [p.name, p.pid]));
  const name = `${dep.name}, ${load.name}`;
  ctx.log(`bench: ${name}: closed loop, ${load.label}: ${ctx.warmupSeconds} s warm-up, its backlog drained, then ${ctx.seconds} s measured`);
  await runLoad(dep, load, ctx, ctx.warmupSeconds).finished;
  const warmupDrained = allDone(await drainSeconds(ctx.redis, ctx.topology, performance.now(), ctx.drainMs));
  if (warmupDrained === null) ctx.log(`bench: ${name}: WARNING: the warm-up's backlog did not drain within ${ctx.drainMs} ms; the window starts with it`);

  const childrenBefore = await exitedChildrenCpu();
  const run = runLoad(dep, load, ctx, ctx.seconds);
  await run.ready;
  // The generator started and built its requests before this (a second or so of CPU): counted out of its share.
  const [begin, beginAccepted, loadBefore] = await Promise.all([processesSample(pids, ctx.infoRedis), counter(dep.base), processesCpu([run.pid])]);
  const loadResult = await run.finished;
  const stopped = performance.now();
  const draining = drainSeconds(ctx.redis, ctx.topology, stopped, ctx.drainMs);
  const end = await processesSample(pids, ctx.infoRedis);
  const [endAccepted, left, loadCpu] = await Promise.all([counter(dep.base), backlog(ctx.redis, ctx.topology), exitedChildrenCpu()]);
  const done = await draining;
  const drained = await processesSample(pids, ctx.infoRedis);

  const accepted = endAccepted - beginAccepted;
  const window = processesCostsBetween(pids, begin, end, accepted);
  const whole = processesCostsBetween(pids, begin, drained, accepted);
  const loadSeconds = loadCpu - childrenBefore - loadBefore;
  const per = (cpu: number): number => (accepted > 0 ? Math.round((cpu * 1e7) / accepted) / 10 : 0);
  const drainedAfter = allDone(done);
  const carried = drainedAfter === null ? null : Math.round(accepted / (window.seconds + drainedAfter));
  const result: MaxResult = {
    deployment: dep.name,
    processes: dep.processes,
    load: { ...loadResult, name: load.name, label: load.label, connections: load.connections },
    warmup_drained_s: warmupDrained,
    window_seconds: window.seconds,
    accepted,
    accepted_per_sec: Math.round(accepted / window.seconds),
    backlog_at_end: left,
    done_after_load_s: done,
    carried_per_sec: carried,
    cpu_us_per_write: { ...whole.cpu_us_per_write, load_generator: per(loadSeconds) },
    cpu_cores: coresOf(window.cpu_cores, Math.round((loadSeconds / window.seconds) * 100) / 100),
    redis_calls_per_write: whole.redis_commands.calls_per_write,
  };
  ctx.log(
    `bench: ${name}: ${result.accepted_per_sec}/s accepted, ${carried ?? 'NOT'}/s carried to ClickHouse; left ${left.unapplied_entries} entries/${left.unrecorded_changes} changes, ` +
      `recorded ${done.recorded ?? 'NOT'} s after; ${result.cpu_us_per_write.deployment} µs/write deployment, ${load.name} ${result.cpu_us_per_write.load_generator} µs/write`,
  );
  return result;
}

function coresOf(c: ProcessesCosts['cpu_cores'], load: number): MaxResult['cpu_cores'] {
  const named = Object.values(c.processes).reduce((sum, n) => sum + n, 0) + c.redis + load + c.self;
  return { processes: c.processes, redis: c.redis, load_generator: load, bench: c.self, host: c.host, other: Math.round(Math.max(0, c.host - named) * 100) / 100 };
}

/** Seconds until everything was both applied and recorded; null if either was not. */
const allDone = (d: { applied: number | null; recorded: number | null }): number | null => (d.applied === null || d.recorded === null ? null : Math.max(d.applied, d.recorded));

async function counter(base: string): Promise<number> {
  return (await metrics(base)).get(ACCEPTED) ?? 0;
}

export interface SplitOptions {
  prefix: string;
  dataDir: string;
  redisUrl: string;
  /** Cores given to the engine processes (taskset, every thread), or null for none pinned: see pinTo. */
  cores: number | null;
}

/**
 * The SDK write path over two processes under the same KEY_PREFIX and DATA_DIR: `--roles
 * apply,recorder` (which opens the embedded ClickHouse, so it starts first) and `--roles gateway`
 * (which opens ClickHouse only for a query, and none is sent).
 */
export async function startSplit(opts: SplitOptions): Promise<{ engines: Engine[]; deployment: MaxDeployment }> {
  const common = { prefix: opts.prefix, dataDir: opts.dataDir, redisUrl: opts.redisUrl };
  const worker = await startEngine({ ...common, roles: ['apply', 'recorder'] });
  const gateway = await startEngine({ ...common, roles: ['gateway'] }).catch(async (err: unknown) => {
    await worker.child.stop();
    throw err;
  });
  try {
    const processes = [
      { name: 'gateway', pid: gateway.pid, roles: 'gateway', cpus: await pinTo(gateway, opts.cores === null ? null : '0') },
      { name: 'apply+recorder', pid: worker.pid, roles: 'apply,recorder', cpus: await pinTo(worker, opts.cores === null ? null : String(opts.cores - 1)) },
    ];
    return { engines: [gateway, worker], deployment: { name: deploymentName('split', opts.cores), base: gateway.base, processes } };
  } catch (err) {
    await Promise.all([gateway.child.stop(), worker.child.stop()]);
    throw err;
  }
}

/** A deployment's name with the cores it was given, when pinned. */
export function deploymentName(name: string, cores: number | null): string {
  return cores === null ? name : `${name}, ${cores} core${cores === 1 ? '' : 's'}`;
}

/**
 * Pins every thread of an engine to `cpus` (a taskset list) and returns it; null leaves it free.
 * With N cores given, one process takes CPUs 0..N-1; of a split, the gateway takes CPU 0 and
 * apply + recorder CPU N-1, so one core holds both and two cores hold one each.
 */
export async function pinTo(engine: Engine, cpus: string | null): Promise<string | null> {
  if (cpus === null) return null;
  await promisify(execFile)('taskset', ['-a', '-p', '-c', cpus, String(engine.pid)]);
  return cpus;
}

/** The goals the closed loop is read against. */
export interface MaxGoal {
  rate: number;
  /** The share of `rate` a wrk run must carry to count as carrying it. */
  share: number;
  /** Engine + Redis CPU per write the autocannon run of one process must stay under. */
  usPerWrite: number;
}

/**
 * The summary rows: carried and accepted writes/s and CPU per write of each run; a split against
 * one process under the same generator. wrk's rows keep the names they had before autocannon's;
 * autocannon's one process carries the goal "writes end to end": `rate` carried at no more than
 * `usPerWrite`.
 */
export function summarizeMax(results: MaxResult[], goal: MaxGoal): SummaryRow[] {
  const atLeast = Math.round(goal.rate * goal.share);
  return results.flatMap((r) => {
    const one = results.find((o) => o.load.name === r.load.name && o.deployment.startsWith('one process'));
    const endToEnd = r.load.name === 'autocannon' && r === one;
    const loop = r.load.name === 'wrk' ? 'closed loop' : `${r.load.name} closed loop`;
    const baseline = (value: number | null | undefined): SummaryRow['baseline'] =>
      r === one || one === undefined || value === null || value === undefined ? null : { name: one.deployment, value };
    const row = (measure: string, value: number, unit: string, better: SummaryRow['better'], ref: SummaryRow['baseline'], goalRow: SummaryRow['goal']): SummaryRow => ({
      scenario: 'write-cost',
      measure: `${measure}, ${loop}, ${r.deployment}`,
      value,
      unit,
      better,
      ceiling: null,
      baseline: ref,
      goal: goalRow,
    });
    const carried = r.carried_per_sec ?? 0;
    const cpu = r.cpu_us_per_write.deployment;
    const carriedGoal: SummaryRow['goal'] =
      r.load.name === 'wrk'
        ? { text: `${goal.rate}/s (at least ${atLeast})`, met: carried >= atLeast }
        : endToEnd
          ? { text: `at least ${goal.rate}/s with autocannon, every role in one process`, met: carried >= goal.rate }
          : null;
    return [
      row('writes/s carried accept→recorded', carried, 'writes/s', 'higher', baseline(one?.carried_per_sec), carriedGoal),
      row('writes/s accepted', r.accepted_per_sec, 'writes/s', 'higher', baseline(one?.accepted_per_sec), null),
      row('deployment CPU per write', cpu, 'µs/write', 'lower', baseline(one?.cpu_us_per_write.deployment), endToEnd ? { text: `at most ${goal.usPerWrite} µs`, met: cpu <= goal.usPerWrite } : null),
    ];
  });
}

export function printMax(results: MaxResult[]): void {
  if (results.length === 0) return;
  const s = (v: number | null): string => (v === null ? 'not reached' : String(v));
  const names = [...new Set(results.flatMap((r) => r.processes.map((p) => p.name)))];
  printRows([
    [
      'closed loop',
      'load',
      'accepted/s',
      'carried/s',
      'left: entries/changes',
      'done after s: applied/recorded',
      ...names.map((n) => `µs/write ${n} (main/CH/other)`),
      'Redis',
      'deployment',
      'load gen',
      'cores: processes/Redis/load gen/bench, host busy (other)',
      'Redis cmds/write',
      'load: non-2xx/errors, p50/p99 ms',
    ],
    ...results.map((r) => [
      r.deployment,
      r.load.label,
      String(r.accepted_per_sec),
      s(r.carried_per_sec),
      `${r.backlog_at_end.unapplied_entries}/${r.backlog_at_end.unrecorded_changes}`,
      `${s(r.done_after_load_s.applied)}/${s(r.done_after_load_s.recorded)}`,
      ...names.map((n) => {
        const c = r.cpu_us_per_write.processes[n];
        return c === undefined ? '' : `${c.total} (${c.main}/${c.clickhouse}/${c.helpers})`;
      }),
      String(r.cpu_us_per_write.redis),
      String(r.cpu_us_per_write.deployment),
      String(r.cpu_us_per_write.load_generator),
      `${Object.values(r.cpu_cores.processes).join('+')}/${r.cpu_cores.redis}/${r.cpu_cores.load_generator}/${r.cpu_cores.bench}, ${r.cpu_cores.host} (${r.cpu_cores.other})`,
      String(r.redis_calls_per_write),
      `${r.load.non_2xx}/${r.load.errors + r.load.timeouts}, ${r.load.p50_ms}/${r.load.p99_ms}`,
    ]),
  ]);
}
