import { cpus, loadavg, totalmem } from 'node:os';

/** Prints rows as a table on stdout, each column as wide as its widest cell; the first row is the header. */
export function printRows(rows: string[][]): void {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length))) ?? [];
  console.log('');
  for (const row of rows) console.log(row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd());
  console.log('');
}

/** A figure as a report gives it: rounded to `digits` decimals. */
export function round(value: number, digits: number): number {
  return Math.round(value * 10 ** digits) / 10 ** digits;
}

/** The machine a report's figures come from. */
export function machine(): { cpus: number; cpu_model: string; memory_gb: number; node: string; load_average: number } {
  return {
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model ?? 'unknown',
    memory_gb: round(totalmem() / 2 ** 30, 1),
    node: process.version,
    load_average: round(loadavg()[0] ?? 0, 1),
  };
}
