import { mkdir, writeFile } from 'node:fs/promises';
import type { Measurement } from './load.ts';
import type { SummaryRow } from './summary.ts';

export interface Report {
  benchmark: string;
  started_at: string;
  finished_at: string;
  machine: { cpus: number; cpu_model: string; node: string };
  settings: Record<string, number>;
  /** The gateway should reach at least this share of the ceiling's requests/s. */
  goal_ratio: number;
  results: (Measurement & { ratio_to_ceiling: number | null })[];
  /** Entries found in the ingest streams after the gateway runs (warm-up included); null if not measured. */
  ingest_entries_appended: number | null;
  /** Why the gateway was not measured, or null. */
  gateway_error: string | null;
  summary: SummaryRow[];
  notes: string[];
}

/** Prints the results as a table on stdout, then what the figures mean. */
export function printTable(report: Report): void {
  const rows = [
    ['server', 'load', 'path', 'req/s', 'p50 ms', 'p99 ms', '2xx', 'non-2xx', 'errors', 'cores gen/srv/redis', 'vs ceiling'],
    ...report.results.map((r) => [
      r.server,
      r.load,
      r.path,
      String(r.requests_per_sec),
      String(r.p50_ms),
      String(r.p99_ms),
      String(r.status_2xx),
      String(r.non_2xx),
      String(r.errors + r.timeouts),
      `${r.cpu_cores.load_generator.toFixed(2)}/${r.cpu_cores.server.toFixed(2)}/${r.cpu_cores.redis.toFixed(2)}`,
      r.server === 'ceiling' ? '' : ratioText(r.ratio_to_ceiling, report.goal_ratio),
    ]),
  ];
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length))) ?? [];
  console.log('');
  for (const row of rows) console.log(row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd());
  console.log('');
  if (report.gateway_error) console.log(`gateway not measured: ${report.gateway_error}`);
  if (report.ingest_entries_appended !== null) {
    const accepted = report.results.filter((r) => r.server === 'gateway').reduce((sum, r) => sum + r.status_2xx + r.warmup_2xx, 0);
    const verdict = report.ingest_entries_appended >= accepted ? 'every 202 is in the log' : 'FEWER entries than 202 answers';
    console.log(`ingest log: ${report.ingest_entries_appended} entries for ${accepted} gateway 2xx answers, warm-up included (${verdict})`);
  }
  for (const note of report.notes) console.log(`- ${note}`);
}

function ratioText(ratio: number | null, goal: number): string {
  if (ratio === null) return 'n/a (answers not 2xx)';
  return `${Math.round(ratio * 100)}% (goal ${Math.round(goal * 100)}%: ${ratio >= goal ? 'met' : 'not met'})`;
}

/** The `<date>` of a report's file name, from its `started_at`: 2026-11-23T182348Z. */
export const reportStamp = (startedAt: string): string => startedAt.replace(/:/g, '').replace(/\.\d+Z$/, 'Z');

/** Writes bench/reports/<benchmark>-<date>.json; returns its path. */
export async function writeReport(dir: string, report: { benchmark: string; started_at: string }): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = `${dir}/${report.benchmark}-${reportStamp(report.started_at)}.json`;
  const text = `${JSON.stringify(report, null, 2)}\n`;
  await writeFile(file, text);
  return file;
}
