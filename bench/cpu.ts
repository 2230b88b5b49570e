import { readFile } from 'node:fs/promises';
import type { RedisClient } from '../engine/redis.ts';

/** Where the 2 cores went during a measured run, in cores (CPU seconds over wall seconds). */
export interface CpuShare {
  load_generator: number;
  server: number;
  redis: number;
}

/** CPU seconds of a process so far, from /proc (Linux); null elsewhere. */
async function processCpu(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

async function redisCpu(redis: RedisClient): Promise<number> {
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
