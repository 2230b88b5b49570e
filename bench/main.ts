/**
 * `make bench` / `npm run bench -- [scenario ...]`: runs the scenarios of bench/scenarios.ts (all
 * of them when none is named) one after another, each script in its own process with its output
 * shown as it goes, each overwriting its report, bench/reports/<report>.json; then writes the
 * summary rows of those reports as a table into docs/performance.md and as a chart into
 * docs/performance-summary.svg, and prints the table and every goal with its figure, ratio and
 * status, those missed first. `--list` prints the scenarios; `--render` only redraws the table
 * and chart from the reports already there. Exit status 1 when a run failed.
 */
import { spawn } from 'node:child_process';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { reportsDir, root } from './paths.ts';
import { goalLines, markdownTable, svgChart, type Source } from './render.ts';
import { reportFile } from './report.ts';
import { scenarios, type Run } from './scenarios.ts';
import type { SummaryRow } from './summary.ts';

const docFile = join(root, 'docs/performance.md');
const chartFile = join(root, 'docs/performance-summary.svg');
const START = '<!-- bench summary: start (written by `make bench`) -->';
const END = '<!-- bench summary: end -->';

const clock = (): string => new Date().toISOString().slice(11, 19);

async function runOne(run: Run, index: number, total: number): Promise<boolean> {
  const started = new Date();
  process.stderr.write(`\n== [${index}/${total}] ${run.title} (bench/${run.script} ${run.args.join(' ')}), started ${clock()}\n`);
  // Where the run writes: its report's file, or the labelled one when BENCH_LABEL is set.
  const file = reportFile(reportsDir, run.report);
  const out = run.takesOut ? ['--out', file] : [];
  const code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench', run.script), ...run.args, ...out], { stdio: 'inherit' });
    child.once('exit', (status, signal) => resolve(status ?? (signal === null ? 1 : 128)));
  });
  const seconds = Math.round((Date.now() - started.getTime()) / 1000);
  const written = await stat(file).catch(() => null);
  const fresh = written !== null && written.mtimeMs >= started.getTime();
  if (code !== 0 || !fresh) {
    process.stderr.write(`== [${index}/${total}] ${run.title}: FAILED after ${seconds} s (exit ${code}${fresh ? '' : ', no new report'})\n`);
    return false;
  }
  process.stderr.write(`== [${index}/${total}] ${run.title}: done in ${seconds} s, report ${relative(root, file)}\n`);
  return true;
}

/** The report of every run that has one (never a labelled one), in scenario order. */
async function latestSources(): Promise<Source[]> {
  const sources: Source[] = [];
  for (const run of scenarios.flatMap((s) => s.runs)) {
    const file = `bench/reports/${run.report}.json`;
    const text = await readFile(join(root, file), 'utf8').catch(() => null);
    if (text === null) continue;
    const report = JSON.parse(text) as { started_at: string; summary?: SummaryRow[] };
    sources.push({ file, started_at: report.started_at, rows: report.summary ?? [] });
  }
  return sources;
}

async function render(): Promise<void> {
  const sources = await latestSources();
  const table = markdownTable(sources);
  const doc = await readFile(docFile, 'utf8');
  const begin = doc.indexOf(START);
  const end = doc.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${docFile} has no summary markers; add the lines ${START} and ${END}`);
  const block = [START, '', '![Each scenario against its ceiling and the usual alternative](performance-summary.svg)', '', table, '', END].join('\n');
  await writeFile(docFile, doc.slice(0, begin) + block + doc.slice(end + END.length));
  await writeFile(chartFile, svgChart(sources));
  process.stdout.write(`\n${table}\n\n${goalLines(sources).join('\n')}\n\nwritten: docs/performance.md (summary table), docs/performance-summary.svg\n`);
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { list: { type: 'boolean' }, render: { type: 'boolean' } } });
  if (values.list) {
    for (const s of scenarios) process.stdout.write(`${s.name.padEnd(11)} ${s.about}\n`);
    return 0;
  }
  const unknown = positionals.filter((name) => !scenarios.some((s) => s.name === name));
  if (unknown.length > 0) {
    process.stderr.write(`unknown scenario ${unknown.join(', ')}; the scenarios are: ${scenarios.map((s) => s.name).join(', ')}\n`);
    return 2;
  }
  let ok = true;
  if (!values.render) {
    const chosen = positionals.length === 0 ? scenarios : scenarios.filter((s) => positionals.includes(s.name));
    const runs = chosen.flatMap((s) => s.runs);
    for (const [i, run] of runs.entries()) ok = (await runOne(run, i + 1, runs.length)) && ok;
  }
  await render();
  return ok ? 0 : 1;
}

process.exitCode = await main();
