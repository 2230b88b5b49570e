/**
 * What the default deployment spent over a window of load: CPU of the engine process (by kind of
 * thread), of Redis and of this process (the load generator); Redis commands; the engine's
 * counters (/metrics). Read with `costSample` at each end and `costsBetween` the two.
 */
import { performance } from 'node:perf_hooks';
import type { RedisClient } from '../engine/infra/redis/client.ts';
import { commandCosts, commandStats, type CommandCosts, type CommandStats } from './commandstats.ts';
import { engineThreadsBetween, hostBusyCpu, processesCpu, redisCpu, threadCpu, type ThreadCpu } from './cpu.ts';
import { metrics, type Engine } from './deployment.ts';
import { round } from './table.ts';

export interface CostSample {
  at: number;
  engine: number;
  threads: ThreadCpu;
  redis: number;
  bench: NodeJS.CpuUsage;
  commands: CommandStats;
  metrics: Map<string, number>;
}

export interface Costs {
  seconds: number;
  /** Per write: the engine (of which its main thread, ClickHouse's threads, node's others), Redis, both, this process. */
  cpu_us_per_write: { engine: number; engine_main: number; engine_clickhouse: number; engine_helpers: number; redis: number; engine_and_redis: number; load_generator: number };
  cpu_cores: { engine: number; redis: number; load_generator: number };
  redis_commands: CommandCosts;
  /** The growth of a counter of the engine's /metrics, by its name (with labels, if it has any). */
  counter(name: string): number;
}

/**
 * CPU and Redis's counters first, as close together as can be; then the engine's /metrics (whose
 * scrape sends Redis commands of its own, so it is read after them at the window's end).
 */
export async function costSample(engine: Engine, redis: RedisClient): Promise<CostSample> {
  const [commands, redisSeconds, engineSeconds, threads] = await Promise.all([commandStats(redis), redisCpu(redis), processesCpu([engine.pid]), threadCpu(engine.pid)]);
  const at = performance.now();
  const bench = process.cpuUsage();
  return { at, engine: engineSeconds, threads, redis: redisSeconds, bench, commands, metrics: await metrics(engine.base) };
}

/** The costs between two samples of an engine, `writes` being what it accepted in between. */
export function costsBetween(pid: number, a: CostSample, b: CostSample, writes: number): Costs {
  const seconds = (b.at - a.at) / 1000;
  const us = (cpu: number): number => (writes > 0 ? round((cpu * 1e6) / writes, 1) : 0);
  const cores = (cpu: number): number => round(cpu / seconds, 2);
  const threads = engineThreadsBetween(pid, a.threads, b.threads);
  const engine = b.engine - a.engine;
  const redis = b.redis - a.redis;
  const bench = (b.bench.user + b.bench.system - a.bench.user - a.bench.system) / 1e6;
  return {
    seconds: round(seconds, 3),
    cpu_us_per_write: {
      engine: us(engine),
      engine_main: us(threads.main),
      engine_clickhouse: us(threads.clickhouse),
      engine_helpers: us(threads.helpers),
      redis: us(redis),
      engine_and_redis: us(engine + redis),
      load_generator: us(bench),
    },
    cpu_cores: { engine: cores(engine), redis: cores(redis), load_generator: cores(bench) },
    redis_commands: commandCosts(a.commands, b.commands, writes),
    counter: (name) => (b.metrics.get(name) ?? 0) - (a.metrics.get(name) ?? 0),
  };
}

/** A sample of a deployment of several processes, by name: each one's CPU by thread, Redis's. */
export interface ProcessesSample {
  at: number;
  processes: Record<string, { seconds: number; threads: ThreadCpu }>;
  redis: number;
  commands: CommandStats;
  /** This process's CPU seconds, and the whole host's. */
  self: number;
  host: number;
}

/** What one process spent per write: in all, on its main thread, ClickHouse's threads and node's others. */
export interface ProcessCost {
  total: number;
  main: number;
  clickhouse: number;
  helpers: number;
}

export interface ProcessesCosts {
  seconds: number;
  /** Per write, by process; `deployment` is the processes and Redis together. */
  cpu_us_per_write: { processes: Record<string, ProcessCost>; redis: number; deployment: number };
  /** `host`: every core's busy time, whoever used it; `self`: this process (the benchmark). */
  cpu_cores: { processes: Record<string, number>; redis: number; self: number; host: number };
  redis_commands: CommandCosts;
}

export async function processesSample(pids: Record<string, number>, redis: RedisClient): Promise<ProcessesSample> {
  const names = Object.keys(pids);
  const pidOf = (name: string): number => pids[name] ?? 0;
  const [commands, redisSeconds, seconds, threads, host] = await Promise.all([
    commandStats(redis),
    redisCpu(redis),
    Promise.all(names.map((name) => processesCpu([pidOf(name)]))),
    Promise.all(names.map((name) => threadCpu(pidOf(name)))),
    hostBusyCpu(),
  ]);
  const processes = Object.fromEntries(names.map((name, i) => [name, { seconds: seconds[i] ?? 0, threads: threads[i] ?? new Map() }]));
  const self = process.cpuUsage();
  return { at: performance.now(), processes, redis: redisSeconds, commands, self: (self.user + self.system) / 1e6, host };
}

/** The costs between two samples of the same processes, `writes` being what was accepted. */
export function processesCostsBetween(pids: Record<string, number>, a: ProcessesSample, b: ProcessesSample, writes: number): ProcessesCosts {
  const seconds = (b.at - a.at) / 1000;
  const us = (cpu: number): number => (writes > 0 ? round((cpu * 1e6) / writes, 1) : 0);
  const cores = (cpu: number): number => round(cpu / seconds, 2);
  const perProcess: Record<string, ProcessCost> = {};
  const coresOf: Record<string, number> = {};
  let sum = 0;
  for (const [name, after] of Object.entries(b.processes)) {
    const before = a.processes[name] ?? { seconds: 0, threads: new Map() };
    const threads = engineThreadsBetween(pids[name] ?? 0, before.threads, after.threads);
    const total = after.seconds - before.seconds;
    sum += total;
    perProcess[name] = { total: us(total), main: us(threads.main), clickhouse: us(threads.clickhouse), helpers: us(threads.helpers) };
    coresOf[name] = cores(total);
  }
  const redis = b.redis - a.redis;
  return {
    seconds: round(seconds, 3),
    cpu_us_per_write: { processes: perProcess, redis: us(redis), deployment: us(sum + redis) },
    cpu_cores: { processes: coresOf, redis: cores(redis), self: cores(b.self - a.self), host: cores(b.host - a.host) },
    redis_commands: commandCosts(a.commands, b.commands, writes),
  };
}
