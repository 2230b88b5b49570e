import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
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

/**
 * The file of a run's report, `<dir>/<name>.json`: one per run, which the next run overwrites (its
 * time is inside, older reports are in the repository's history). With BENCH_LABEL=<word> set,
 * `<name>-<word>.json` instead: a run made by hand for a comparison, which `make bench` neither
 * reads nor overwrites.
 */
export function reportFile(dir: string, name: string, extension = 'json'): string {
  const label = process.env['BENCH_LABEL'] ?? '';
  if (label !== '' && !/^[a-z0-9]+(-[a-z0-9]+)*$/.test(label)) throw new Error(`BENCH_LABEL must be lower-case words joined by -, got "${label}"`);
  return join(dir, `${name}${label === '' ? '' : `-${label}`}.${extension}`);
}

/** Writes a report to its file (reportFile, named after its benchmark); returns the file's path. */
export async function writeReport(dir: string, report: { benchmark: string }): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = reportFile(dir, report.benchmark);
  await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
  return file;
}
