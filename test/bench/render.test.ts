import t from 'tap';
import { figure, goalLines, markdownTable, svgChart } from '../../bench/render.ts';
import type { SummaryRow } from '../../bench/summary.ts';

const row = (over: Partial<SummaryRow>): SummaryRow => ({
  scenario: 'sdk-ingest',
  measure: 'HTTP mix',
  value: 15000,
  unit: 'req/s',
  better: 'higher',
  ceiling: null,
  baseline: null,
  goal: null,
  ...over,
});

t.test('figures are grouped by thousands and small ones keep two decimals', async (t) => {
  t.equal(figure(1234567.4), '1 234 567');
  t.equal(figure(12.345), '12.35');
  t.equal(figure(0), '0');
});

t.test('a row is shown against its ceiling as a share and against the baseline as a multiple', async (t) => {
  const table = markdownTable([
    {
      file: 'bench/reports/sdk-ingest.json',
      started_at: '2026-11-23T00:00:00Z',
      rows: [
        row({ ceiling: { name: 'bare uWS', value: 20000 }, baseline: { name: 'Fastify + BullMQ', value: 5000 }, goal: { text: '≥ 75% of the ceiling', met: true } }),
        row({ measure: 'lag p99', value: 20, unit: 'ms', better: 'lower', baseline: { name: 'Fastify + BullMQ', value: 200 }, goal: { text: '< 250 ms', met: false } }),
      ],
    },
  ]);
  const lines = table.split('\n');
  t.equal(lines.length, 4, 'a header, a rule and one line per row');
  t.match(lines[2], /\| 15 000 req\/s \| bare uWS: 20 000 \| 75% \| Fastify \+ BullMQ: 5 000 \| 3\.0× \|.*\*\*met\*\*/);
  t.match(lines[3], /\| 20 ms \| {2}\| {2}\| Fastify \+ BullMQ: 200 \| 10\.0× \|.*\*\*not met\*\*/, 'lower is better: the baseline over the value');
});

t.test('the chart draws one bar per compared row and escapes its labels', async (t) => {
  const svg = svgChart([
    { file: 'f', started_at: '', rows: [row({ measure: 'a < b', ceiling: { name: 'c', value: 30000 }, baseline: { name: 'b', value: 3000 } }), row({ measure: 'alone' })] },
  ]);
  t.equal((svg.match(/<rect /g) ?? []).length, 3, 'the background and one bar in each panel');
  t.match(svg, /a &lt; b/);
  t.notMatch(svg, /alone/, 'a row with neither reference has no bar');
});

t.test('the goals are listed with their figure, ratio and status, the missed ones first', async (t) => {
  const lines = goalLines([
    {
      file: 'bench/reports/broadcast.json',
      started_at: '',
      rows: [
        row({ scenario: 'broadcast', measure: 'pushes', value: 5000, unit: 'pushes/s', ceiling: { name: 'bare loop', value: 20000 }, goal: { text: 'at least 0.8 of the bare loop', met: false } }),
        row({ measure: 'no goal' }),
        row({ measure: 'lag', value: 20, unit: 'ms', better: 'lower', baseline: { name: 'Fastify', value: 200 }, goal: { text: 'at least 10x better', met: true } }),
      ],
    },
  ]);
  t.same(lines, [
    'goals: 1 met, 1 not met',
    'NOT MET broadcast: pushes: 5 000 pushes/s, 25% of bare loop (20 000); goal at least 0.8 of the bare loop (bench/reports/broadcast.json)',
    'met     sdk-ingest: lag: 20 ms, 10.0× against Fastify (200); goal at least 10x better (bench/reports/broadcast.json)',
  ]);
});

t.test('a row measured beside the last release shows its figure and the multiple, in the table and the goals', async (t) => {
  const rows = [row({ scenario: 'release-writes', measure: 'CPU per write', value: 50, unit: 'µs/write', better: 'lower', release: { name: '0.11.1', value: 125 }, goal: { text: 'at most 0.4x', met: true } })];
  const [, , line] = markdownTable([{ file: 'bench/reports/release-writes.json', started_at: '', rows }]).split('\n');
  t.match(line, /\| 50 µs\/write \| {2}\| {2}\| {2}\| {2}\| 0\.11\.1: 125 \| 2\.5× \|.*\*\*met\*\*/);
  t.match(goalLines([{ file: 'f', started_at: '', rows }])[1] ?? '', /2\.5× against 0\.11\.1 \(125\)/);
});
