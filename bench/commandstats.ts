import type { RedisClient } from '../engine/infra/redis/client.ts';

/** Redis's counters per command so far (INFO commandstats): calls and µs spent in it. */
export type CommandStats = Map<string, { calls: number; usec: number }>;

/**
 * What one write cost Redis in one command over a measured window. Redis counts a command a
 * script calls both under its own name and inside the script's (evalsha's calls include its
 * commands' time), so the µs of several commands do not add up.
 */
export interface CommandCost {
  command: string;
  calls_per_write: number;
  usec_per_write: number;
}

export interface CommandCosts {
  /** Every command, those scripts called included. */
  calls_per_write: number;
  /** Every command called in the window, most calls first. */
  commands: CommandCost[];
}

export async function commandStats(redis: RedisClient): Promise<CommandStats> {
  const out: CommandStats = new Map();
  for (const line of (await redis.info('commandstats')).split('\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (match?.[1] !== undefined) out.set(match[1], { calls: Number(match[2]), usec: Number(match[3]) });
  }
  return out;
}

/**
 * The commands called between two samples per write. Redis counts every client's commands, so
 * other work on the same server in the window shows here too.
 */
export function commandCosts(before: CommandStats, after: CommandStats, writes: number): CommandCosts {
  const per = (n: number): number => (writes > 0 ? Math.round((n / writes) * 1000) / 1000 : 0);
  const commands: CommandCost[] = [];
  let calls = 0;
  for (const [command, now] of after) {
    const was = before.get(command) ?? { calls: 0, usec: 0 };
    if (now.calls === was.calls) continue;
    calls += now.calls - was.calls;
    commands.push({ command, calls_per_write: per(now.calls - was.calls), usec_per_write: per(now.usec - was.usec) });
  }
  commands.sort((a, b) => b.calls_per_write - a.calls_per_write);
  return { calls_per_write: per(calls), commands };
}
