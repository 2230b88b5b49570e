import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { reportsDir } from './paths.ts';

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

/**
 * Writes a report to `file`, by default its own in bench/reports (reportFile, named after its
 * benchmark); returns the file's path.
 */
export async function writeReport(report: { benchmark: string }, file = reportFile(reportsDir, report.benchmark)): Promise<string> {
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
  return file;
}
