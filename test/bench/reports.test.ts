import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { reportFile } from '../../bench/report.ts';
import { scenarios } from '../../bench/scenarios.ts';

const dir = new URL('../../bench/reports/', import.meta.url);
const runs = scenarios.flatMap((s) => s.runs.map((r) => r.report));

t.test('bench/reports holds one report per run, or a labelled one, never a dated one', async (t) => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  const label = /^[a-z0-9]+(-[a-z0-9]+)*$/;
  const stray = files.filter((f) => {
    const name = f.slice(0, -'.json'.length);
    return !runs.some((run) => name === run || (name.startsWith(`${run}-`) && label.test(name.slice(run.length + 1))));
  });
  t.same(stray, [], 'every file is <run>.json or <run>-<word>.json');
  for (const run of runs) {
    const report = JSON.parse(readFileSync(new URL(`${run}.json`, dir), 'utf8')) as { started_at?: unknown; summary?: unknown };
    t.ok(typeof report.started_at === 'string' && !Number.isNaN(Date.parse(report.started_at)), `${run}.json says when it started`);
    t.ok(Array.isArray(report.summary), `${run}.json has its summary rows`);
  }
});

t.test('a run writes <name>.json, or <name>-<word>.json with BENCH_LABEL', async (t) => {
  const saved = process.env['BENCH_LABEL'];
  t.teardown(() => {
    if (saved === undefined) delete process.env['BENCH_LABEL'];
    else process.env['BENCH_LABEL'] = saved;
  });
  delete process.env['BENCH_LABEL'];
  t.equal(reportFile('/r', 'write-cost'), '/r/write-cost.json');
  t.equal(reportFile('/r', 'write-cost', 'cpuprofile'), '/r/write-cost.cpuprofile');
  process.env['BENCH_LABEL'] = 'before-slices';
  t.equal(reportFile('/r', 'write-cost'), '/r/write-cost-before-slices.json');
  process.env['BENCH_LABEL'] = '2026-11-25T000328Z';
  t.throws(() => reportFile('/r', 'write-cost'), /BENCH_LABEL must be/, 'a label is lower-case words');
});
