import { readdir, readFile } from 'node:fs/promises';
import type { RedisClient } from '../engine/infra/redis/client.ts';

/** Where the 2 cores went during a measured run, in cores (CPU seconds over wall seconds). */
export interface CpuShare {
  load_generator: number;
  server: number;
  redis: number;
}

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces). */
async function statFields(path: string): Promise<string[] | null> {
  const stat = await readFile(path, 'utf8').catch(() => null);
  return stat === null ? null : stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * The live processes under `pid` (/proc, by parent): the engine's ClickHouse process and its
 * sandbox (engine/infra/clickhouse/host/), whose CPU is the engine's as much as its own threads' are.
 */
async function descendants(pid: number): Promise<number[]> {
  const entries = (await readdir('/proc').catch(() => [] as string[])).filter((e) => /^\d+$/.test(e));
  const parents = new Map<number, number>();
  for (const entry of entries) {
    const fields = await statFields(`/proc/${entry}/stat`);
    if (fields) parents.set(Number(entry), Number(fields[1]));
  }
  const found: number[] = [];
  for (let frontier = [pid]; frontier.length > 0; ) {
    frontier = [...parents].filter(([, parent]) => frontier.includes(parent)).map(([child]) => child);
    found.push(...frontier);
  }
  return found;
}

/** CPU seconds of one process so far, its threads' (utime and stime, 12th and 13th fields); null when gone. */
async function ownCpu(pid: number): Promise<number | null> {
  const fields = await statFields(`/proc/${pid}/stat`);
  return fields === null ? null : (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU seconds of a process and its live descendants so far, from /proc (Linux); null elsewhere. */
export async function processCpu(pid: number): Promise<number | null> {
  const own = await ownCpu(pid);
  if (own === null) return null;
  const others = await Promise.all((await descendants(pid)).map(ownCpu));
  return others.reduce<number>((sum, s) => sum + (s ?? 0), own);
}

/**
 * CPU seconds of this process's children that exited and were waited for (/proc/self/stat cutime
 * and cstime), which node does as each exits: how a child that is gone is measured (wrk).
 */
export async function exitedChildrenCpu(): Promise<number> {
  const stat = await readFile('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

/**
 * CPU seconds the host has been busy so far, over all its cores (/proc/stat: user, nice, system,
 * irq, softirq and steal), whatever process spent them; 0 where there is no /proc.
 */
export async function hostBusyCpu(): Promise<number> {
  const line = (await readFile('/proc/stat', 'utf8').catch(() => '')).split('\n')[0] ?? '';
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line.split(/\s+/).slice(1).map(Number);
  return (user + nice + system + irq + softirq + steal) / 100;
}

/** CPU seconds Redis has used so far (INFO cpu, user + system); a connection to one node gives that node's. */
export async function redisCpu(redis: { info(section: 'cpu'): Promise<string> }): Promise<number> {
  const info = await redis.info('cpu');
  const value = (name: string): number => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)?.[1] ?? 0);
  return value('used_cpu_user') + value('used_cpu_sys');
}

/** Starts a CPU sample of this process, the server process and Redis; `stop` gives the shares. */
export async function sampleCpu(serverPid: number, redis: RedisClient): Promise<{ stop(): Promise<CpuShare> }> {
  const started = Date.now();
  const self = process.cpuUsage();
  const [server0, redis0] = await Promise.all([processCpu(serverPid), redisCpu(redis)]);
  return {
    stop: async () => {
      const wall = (Date.now() - started) / 1000;
      const used = process.cpuUsage(self);
      const [server1, redis1] = await Promise.all([processCpu(serverPid), redisCpu(redis)]);
      const share = (seconds: number): number => Math.round((seconds / wall) * 100) / 100;
      return {
        load_generator: share((used.user + used.system) / 1e6),
        server: server0 === null || server1 === null ? 0 : share(server1 - server0),
        redis: share(redis1 - redis0),
      };
    },
  };
}

/** CPU seconds so far of each thread of a process, by thread id, with the thread's name now. */
export type ThreadCpu = Map<string, { name: string; seconds: number }>;

/**
 * Each thread's CPU seconds so far (/proc/<pid>/task; a trailing number of the name is dropped,
 * so `QueryPipelineEx12` reads as `QueryPipelineEx`); empty where there is no /proc. Node's main
 * thread and its V8 and libuv helpers are named `node`. The threads of the process's descendants
 * (the engine's ClickHouse process) count too, named `clickhouse-host/<name>`: ClickHouse's.
 */
export async function threadCpu(pid: number | 'self'): Promise<ThreadCpu> {
  const out: ThreadCpu = new Map();
  const root = pid === 'self' ? process.pid : pid;
  for (const each of [root, ...(await descendants(root))]) {
    const tasks = await readdir(`/proc/${each}/task`).catch(() => [] as string[]);
    for (const task of tasks) {
      const stat = await readFile(`/proc/${each}/task/${task}/stat`, 'utf8').catch(() => null);
      if (stat === null) continue;
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/[0-9]+$/, '');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(task, { name: each === root ? name : `clickhouse-host/${name}`, seconds: (Number(fields[11]) + Number(fields[12])) / 100 });
    }
  }
  return out;
}

/**
 * CPU seconds spent between two samples, summed by thread name, largest first. A thread counts
 * under its name in `after`: chDB renames a libuv worker (to `Unknown`) when it first runs a
 * query there, so summing by name in each sample would move that thread's whole past.
 */
export function threadCpuBetween(before: ThreadCpu, after: ThreadCpu): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [tid, { name, seconds }] of after) out[name] = (out[name] ?? 0) + seconds - (before.get(tid)?.seconds ?? 0);
  return Object.fromEntries(Object.entries(out).sort((a, b) => b[1] - a[1]));
}

/**
 * Whether a thread is ClickHouse's: every thread of the engine's ClickHouse process
 * (`clickhouse-host/…`, threadCpu), and of a process embedding chDB every thread but node's (node
 * names its main thread, V8's workers and the libuv pool `node`, V8's profiler `v8:ProfEvntProc`;
 * ClickHouse names its own, e.g. QueryPipelineEx, MergeMutate, BgSchPool, and renames a libuv
 * worker it runs a query on).
 */
export const isClickHouseThread = (name: string): boolean => name !== 'node' && !name.startsWith('v8:');

/**
 * CPU seconds of a node process embedding chDB between two samples of its threads, by kind: its
 * main thread (the event loop, whose thread id is the pid), ClickHouse's threads, and node's
 * others (V8's workers and garbage collector, the libuv pool, the profiler).
 */
export function engineThreadsBetween(pid: number, before: ThreadCpu, after: ThreadCpu): { main: number; clickhouse: number; helpers: number } {
  const out = { main: 0, clickhouse: 0, helpers: 0 };
  for (const [tid, { name, seconds }] of after) {
    const used = seconds - (before.get(tid)?.seconds ?? 0);
    if (tid === String(pid)) out.main += used;
    else if (isClickHouseThread(name)) out.clickhouse += used;
    else out.helpers += used;
  }
  return out;
}

/** A CpuShare whose `server` is the sum over several processes, with each one's cores by name. */
export interface CpuShareOf extends CpuShare {
  processes: Record<string, number>;
}

/**
 * Like sampleCpu, for a server made of several processes (for example a web process and a queue
 * worker): `server` is their sum, `processes` each one's cores.
 */
export async function sampleCpuOf(pids: Record<string, number>, redis: RedisClient): Promise<{ stop(): Promise<CpuShareOf> }> {
  const names = Object.keys(pids);
  const read = (): Promise<(number | null)[]> => Promise.all(names.map((name) => processCpu(pids[name] ?? 0)));
  const started = Date.now();
  const self = process.cpuUsage();
  const [before, redis0] = await Promise.all([read(), redisCpu(redis)]);
  return {
    stop: async () => {
      const wall = (Date.now() - started) / 1000;
      const used = process.cpuUsage(self);
      const [after, redis1] = await Promise.all([read(), redisCpu(redis)]);
      const share = (seconds: number): number => Math.round((seconds / wall) * 100) / 100;
      const processes = Object.fromEntries(
        names.map((name, i) => {
          const [b, a] = [before[i], after[i]];
          return [name, b === null || b === undefined || a === null || a === undefined ? 0 : share(a - b)];
        }),
      );
      return {
        load_generator: share((used.user + used.system) / 1e6),
        server: Math.round(Object.values(processes).reduce((sum, c) => sum + c, 0) * 100) / 100,
        redis: share(redis1 - redis0),
        processes,
      };
    },
  };
}

/** CPU seconds of some processes together so far (/proc); one gone or unreadable counts 0. */
export async function processesCpu(pids: number[]): Promise<number> {
  const seconds = await Promise.all(pids.map(processCpu));
  return seconds.reduce<number>((sum, s) => sum + (s ?? 0), 0);
}
