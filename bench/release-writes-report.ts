/**
 * The figures of bench/release-writes.ts per load and engine, its summary rows with their goals
 * (this tree against the release of releases.json, same run), and the table it prints.
 */
import type { CommandCosts } from './commandstats.ts';
import type { SummaryRow } from './summary.ts';
import { printRows } from './table.ts';

export type LoadName = 'identify' | 'mix';
export const LOADS: Record<LoadName, string> = { identify: 'identify with tags', mix: 'SDK mix' };

export interface Figures {
  engine: string;
  load: LoadName;
  writes_per_sec: number;
  p99_ms: number;
  writes: number;
  failed: number;
  /**
   * Cores used over the window (bench/cost-window.ts): the engine's processes, Redis, and this
   * process, autocannon's load, which shares the host's cores with them.
   */
  cpu_cores: { engine: number; redis: number; load_generator: number };
  /** Per write accepted: the engine (of which its main thread), Redis, both, and the load generator. */
  cpu_us_per_write: { engine: number; engine_main: number; redis: number; total: number; load_generator: number };
  /** Seconds from the end of the load until everything accepted was applied and recorded. */
  drain_seconds: number;
  redis_commands: CommandCosts;
}

/** The summary rows: this tree's figures, each with the release's as its reference, and the goals. */
export function summaryRows(figures: Figures[], current: string, release: string): SummaryRow[] {
  const of = (engine: string, load: LoadName): Figures => {
    const found = figures.find((f) => f.engine === engine && f.load === load);
    if (found === undefined) throw new Error(`no figures of ${engine} under ${load}`);
    return found;
  };
  const rows: SummaryRow[] = [];
  for (const load of ['identify', 'mix'] as const) {
    const mine = of(current, load);
    const theirs = of(release, load);
    const row = (measure: string, value: number, unit: string, better: SummaryRow['better'], theirValue: number, goal: SummaryRow['goal']): SummaryRow => ({
      scenario: 'release-writes',
      measure: `${LOADS[load]}, ${measure}`,
      value,
      unit,
      better,
      ceiling: null,
      baseline: null,
      release: { name: release, value: theirValue },
      goal,
    });
    const speed = load === 'identify' ? 2.5 : 2;
    rows.push(
      row('accepted, applied and recorded', mine.writes_per_sec, 'writes/s', 'higher', theirs.writes_per_sec, {
        text: `at least ${speed}x ${release}'s`,
        met: mine.writes_per_sec >= speed * theirs.writes_per_sec,
      }),
      row('engine + Redis CPU per write', mine.cpu_us_per_write.total, 'µs/write', 'lower', theirs.cpu_us_per_write.total, load === 'identify'
        ? { text: `at most 0.4x ${release}'s`, met: mine.cpu_us_per_write.total <= 0.4 * theirs.cpu_us_per_write.total }
        : null),
      row('Redis commands per write', mine.redis_commands.calls_per_write, 'commands/write', 'lower', theirs.redis_commands.calls_per_write, load === 'mix'
        ? { text: 'at most 6', met: mine.redis_commands.calls_per_write <= 6 }
        : null),
    );
  }
  return rows;
}

export function print(figures: Figures[]): void {
  printRows([
    ['load', 'engine', 'writes/s', 'p99 ms', 'failed', 'µs/write engine', 'Redis', 'total', 'load generator', 'Redis cmds/write', 'drained after s'],
    ...figures.map((f) => [
      LOADS[f.load],
      f.engine,
      String(f.writes_per_sec),
      String(f.p99_ms),
      String(f.failed),
      String(f.cpu_us_per_write.engine),
      String(f.cpu_us_per_write.redis),
      String(f.cpu_us_per_write.total),
      String(f.cpu_us_per_write.load_generator),
      String(f.redis_commands.calls_per_write),
      String(f.drain_seconds),
    ]),
  ]);
}

