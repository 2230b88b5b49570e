/**
 * Dashboard query benchmark: how long the queries behind GET /api/deliveries and
 * /api/deliveries/stats take on a large message_deliveries table, next to a baseline measured in
 * the same run (`SELECT count()` of the project, no filter; since migration 0006 ClickHouse
 * answers it from the projection counts_by_hour, in about the time the primary-key count took).
 * Run with `node --import tsx bench/deliveries-query.ts`.
 *
 * It fills an embedded ClickHouse under a temporary directory with ROWS synthetic records
 * (bench/deliveries-fill.sql: one big project with 94% of them and five small ones, 30 days,
 * 1 000 000 users, 20 000 notifications), merges them (a settled table, as after background
 * merges), waits for the projections of migrations 0006 and 0009 to be materialized, checks that the stats
 * read through it equal a count of the table's rows, then times each query through the same
 * functions the routes call (engine/infra/clickhouse/deliveries.ts): WARMUP runs, then RUNS measured
 * runs, one at a time. The fill goes in slices of 2M rows and says how far it got after each.
 * Each query's p95 (with its p50) goes into the report's `summary` rows (bench/summary.ts).
 *
 * Environment: ROWS (default 20000000), RUNS (default 30), WARMUP (default 5), BENCH_DATA_DIR (a
 * directory to keep the filled table in and reuse when it holds ROWS rows; default a temporary
 * one, removed at the end). Writes bench/reports/deliveries-query.json.
 *
 * Does not measure: HTTP, auth and JSON answers (the gateway's share, small next to the query),
 * concurrent queries, the recorder inserting meanwhile, a ClickHouse server (CLICKHOUSE_URL).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openClickHouse, type ClickHouse } from '../engine/infra/clickhouse/client.ts';
import { deliveryStats, listDeliveries } from '../engine/infra/clickhouse/deliveries.ts';
import { migrate } from '../engine/infra/clickhouse/migrations.ts';
import type { DeliveryFilter, DeliveryPosition } from '../schemas/queries.ts';
import { count, DAY, fill, settle } from './deliveries-table.ts';
import { writeReport } from './report.ts';
import type { SummaryRow } from './summary.ts';
import { positive } from './settings.ts';

const GOAL_P95_MS = 50;
const BIG = 'bench-big';
const START = Date.UTC(2026, 9, 23);

const settings = { rows: positive('ROWS', 20_000_000), runs: positive('RUNS', 30), warmup: positive('WARMUP', 5) };

interface Result {
  query: string;
  description: string;
  rows_returned: number;
  p50_ms: number;
  p95_ms: number;
  max_ms: number;
  /** p95 over the baseline's p95. */
  vs_baseline: number | null;
  goal_met: boolean | null;
}

/**
 * Throws unless the stats per hour and per status of `filter` equal a count of the table's rows
 * (the query setting keeps ClickHouse off the projection for this count only).
 */
async function checkStats(ch: ClickHouse, filter: { since: number; until: number }): Promise<void> {
  for (const [groupBy, key] of [['hour', 'toUnixTimestamp(toStartOfHour(at))'], ['status', 'status']] as const) {
    const raw = await ch
      .query({
        query: `SELECT toString(${key}) AS key, count() AS n FROM message_deliveries WHERE project = {p:String} AND at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC') AND at < fromUnixTimestamp64Milli({until:Int64}, 'UTC') GROUP BY key ORDER BY key SETTINGS optimize_use_projections = 0`,
        query_params: { p: BIG, ...filter },
        format: 'JSONEachRow',
      })
      .then((r) => r.json<{ key: string; n: string }>());
    const want = raw.map((r) => `${groupBy === 'hour' ? new Date(Number(r.key) * 1000).toISOString() : r.key}=${r.n}`);
    const got = (await deliveryStats(ch, BIG, filter, groupBy)).map((g) => `${g.key}=${g.count}`).sort();
    if (JSON.stringify(got) !== JSON.stringify(want.sort())) throw new Error(`stats by ${groupBy} differ from the count of the rows`);
  }
}

/** Times `run` (given the run's number, warm-up included) after the warm-up runs. */
async function time(run: (i: number) => Promise<number>): Promise<{ p50: number; p95: number; max: number; rows: number }> {
  let rows = 0;
  for (let i = 0; i < settings.warmup; i++) rows = await run(i);
  const samples: number[] = [];
  for (let i = 0; i < settings.runs; i++) {
    const t0 = performance.now();
    rows = await run(settings.warmup + i);
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number): number => Math.round((samples[Math.min(samples.length - 1, Math.ceil(q * samples.length) - 1)] ?? 0) * 10) / 10;
  return { p50: at(0.5), p95: at(0.95), max: at(1), rows };
}

/** The cursor after `pages` pages of `filter`, as a client following next_cursor would hold it. */
async function positionAfter(ch: ClickHouse, filter: DeliveryFilter, pages: number): Promise<DeliveryPosition | null> {
  let after: DeliveryPosition | null = null;
  for (let i = 0; i < pages; i++) after = (await listDeliveries(ch, BIG, filter, 100, after)).next;
  return after;
}

/**
 * One summary row per dashboard query: its p95 (the goal is on it), with its p50 in the measure,
 * next to the p95 of the baseline count, the cheapest read of the project.
 */
function summaryRows(results: Result[], rows: number): SummaryRow[] {
  const base = results.find((r) => r.query === 'baseline');
  const table = rows >= 1_000_000 ? `${Math.round(rows / 100_000) / 10}M` : String(rows);
  return results
    .filter((r) => r !== base)
    .map(
      (r): SummaryRow => ({
        scenario: 'queries',
        measure: `${r.query}, p95 over ${table} rows (p50 ${r.p50_ms} ms)`,
        value: r.p95_ms,
        unit: 'ms',
        better: 'lower',
        ceiling: base ? { name: 'SELECT count() of the project', value: base.p95_ms } : null,
        baseline: null,
        goal: { text: `p95 under ${GOAL_P95_MS} ms`, met: r.p95_ms < GOAL_P95_MS },
      }),
    );
}

/** The filled, merged table: how long that took, and what it holds. */
interface Table {
  /** null when a kept table was reused. */
  fillMs: number | null;
  settleMs: number;
  parts: number;
  bigRows: number;
  /** Notifications of the big project's last 20 days, one for each run of the notification_id lookup. */
  notifications: string[];
}

async function fillTable(ch: ClickHouse, dataDir: string): Promise<Table> {
  await migrate(ch);
  console.log(`filling ${settings.rows} rows under ${dataDir} ...`);
  const fillMs = await fill(ch, { rows: settings.rows, big: BIG, start: START }, console.log);
  const settleMs = await settle(ch, console.log);
  const parts = await count(ch, "SELECT count() AS n FROM system.parts WHERE table = 'message_deliveries' AND active");
  const bigRows = await count(ch, 'SELECT count() AS n FROM message_deliveries WHERE project = {p:String}', { p: BIG });
  // A different user and notification on every run: the query condition cache (on by default)
  // would otherwise answer repeats of one lookup from memory, which a new lookup never gets.
  const notifications = await ch
    .query({
      query: 'SELECT DISTINCT notification_id FROM message_deliveries WHERE project = {p:String} AND at >= fromUnixTimestamp64Milli({at:Int64}) LIMIT {n:UInt32}',
      query_params: { p: BIG, at: START + 10 * DAY, n: settings.warmup + settings.runs },
      format: 'JSONEachRow',
    })
    .then((r) => r.json<{ notification_id: string }>())
    .then((rows) => rows.map((r) => r.notification_id));
  console.log(`${fillMs === null ? 'reused' : `filled in ${Math.round(fillMs / 1000)} s`}; waited ${Math.round(settleMs / 1000)} s for mutations; ${parts} parts; ${bigRows} rows in the big project`);
  return { fillMs, settleMs, parts, bigRows, notifications };
}

type Query = [name: string, description: string, run: (i: number) => Promise<number>];

/** The dashboard's queries, the baseline count first; the stats are checked against a count of the rows before any is timed. */
async function dashboardQueries(ch: ClickHouse, notifications: string[]): Promise<Query[]> {
  const user = (i: number): string => `user-${(123_457 + i * 7_919) % 1_000_000}`;
  const notification = (i: number): string => notifications[i % notifications.length] ?? '';
  const failedPush: DeliveryFilter = { status: 'failed', channel: 'PUSH' };
  const rare: DeliveryFilter = { error_code: 'apns_403_InvalidProviderToken' };
  const deep = await positionAfter(ch, failedPush, 20);
  const deepRare = await positionAfter(ch, rare, 10);
  const lastDay = { since: START + 29 * DAY, until: START + 30 * DAY };
  // Neither bound on an hour: the partial first and last hours are read from the table.
  const unaligned = { since: START + 1_234_567, until: START + 30 * DAY - 2_345_678 };
  await checkStats(ch, unaligned);
  const page = (filter: DeliveryFilter, after: DeliveryPosition | null = null) => async () => (await listDeliveries(ch, BIG, filter, 100, after)).deliveries.length;
  const lookup = (filter: (i: number) => DeliveryFilter) => async (i: number) => (await listDeliveries(ch, BIG, filter(i), 100, null)).deliveries.length;
  return [
    ['baseline', 'SELECT count() FROM message_deliveries WHERE project = big', () => count(ch, 'SELECT count() AS n FROM message_deliveries WHERE project = {p:String}', { p: BIG })],
    ['latest', 'first page, no filter', page({})],
    ['status+channel', 'first page, status=failed channel=PUSH', page(failedPush)],
    ['status+channel p21', 'page 21 of the same via cursor', page(failedPush, deep)],
    ['external_id', 'first page, one user (about 19 records in 30 days; another user each run)', lookup((i) => ({ external_id: user(i) }))],
    ['notification_id', 'first page, one notification (about 940 records; another one each run)', lookup((i) => ({ notification_id: notification(i) }))],
    ['error_code', 'first page, error_code=apns_403_InvalidProviderToken (0.4% of records)', page(rare)],
    ['error_code p11', 'page 11 of the same via cursor', page(rare, deepRare)],
    ['last day', 'first page, since/until the last 24 hours', page(lastDay)],
    ['stats hour 30d', 'stats group_by=hour over all 30 days', async () => (await deliveryStats(ch, BIG, {}, 'hour')).length],
    ['stats hour 1d', 'stats group_by=hour over the last 24 hours', async () => (await deliveryStats(ch, BIG, lastDay, 'hour')).length],
    ['stats status 30d', 'stats group_by=status over all 30 days', async () => (await deliveryStats(ch, BIG, {}, 'status')).length],
    ['stats hour 30d edges', 'stats group_by=hour, since/until inside an hour, 30 days', async () => (await deliveryStats(ch, BIG, unaligned, 'hour')).length],
    ['stats status 30d edges', 'stats group_by=status, channel=PUSH, since/until inside an hour, 30 days', async () => (await deliveryStats(ch, BIG, { ...unaligned, channel: 'PUSH' }, 'status')).length],
    ['stats error_code 1d', 'stats group_by=error_code, status=failed, last 24 hours', async () => (await deliveryStats(ch, BIG, { ...lastDay, status: 'failed' }, 'error_code')).length],
  ];
}

/** Times each query in turn, each against the baseline's p95 (timed first). */
async function timeQueries(queries: Query[]): Promise<Result[]> {
  const results: Result[] = [];
  let baselineP95: number | null = null;
  for (const [query, description, run] of queries) {
    const m = await time(run);
    if (query === 'baseline') baselineP95 = m.p95;
    const isBaseline = query === 'baseline';
    results.push({
      query,
      description,
      rows_returned: m.rows,
      p50_ms: m.p50,
      p95_ms: m.p95,
      max_ms: m.max,
      vs_baseline: isBaseline || baselineP95 === null || baselineP95 === 0 ? null : Math.round((m.p95 / baselineP95) * 10) / 10,
      goal_met: isBaseline ? null : m.p95 < GOAL_P95_MS,
    });
    console.log(`${query.padEnd(20)} p50 ${String(m.p50).padStart(7)} ms  p95 ${String(m.p95).padStart(7)} ms  max ${String(m.max).padStart(7)} ms  rows ${m.rows}`);
  }
  return results;
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const loadStart = loadavg()[0];
  const keep = process.env['BENCH_DATA_DIR'];
  const dataDir = keep ?? mkdtempSync(join(tmpdir(), 'bench-deliveries-'));
  const ch = await openClickHouse({ DATA_DIR: dataDir, CLICKHOUSE_SANDBOX: 'auto' });
  try {
    const table = await fillTable(ch, dataDir);
    const results = await timeQueries(await dashboardQueries(ch, table.notifications));
    const report = {
      benchmark: 'deliveries-query',
      started_at: startedAt.toISOString(),
      finished_at: new Date().toISOString(),
      machine: { cpus: cpus().length, cpu_model: cpus()[0]?.model ?? 'unknown', node: process.version, load_average_start: loadStart, load_average_end: loadavg()[0] },
      settings: { ...settings, goal_p95_ms: GOAL_P95_MS },
      summary: summaryRows(results, settings.rows),
      table: { rows: settings.rows, big_project_rows: table.bigRows, active_parts: table.parts, fill_ms: table.fillMs === null ? null : Math.round(table.fillMs), mutations_wait_ms: Math.round(table.settleMs) },
      results,
      notes: NOTES,
    };
    const failed = results.filter((r) => r.goal_met === false).map((r) => r.query);
    console.log(failed.length === 0 ? `every query met p95 < ${GOAL_P95_MS} ms` : `p95 >= ${GOAL_P95_MS} ms: ${failed.join(', ')}`);
    console.log(`report: ${await writeReport(report)}`);
  } finally {
    await ch.close();
    if (keep === undefined) rmSync(dataDir, { recursive: true, force: true });
  }
}

const NOTES = [
  'Measures: one query at a time through engine/infra/clickhouse/deliveries.ts (the functions the routes call) on the embedded engine in this process, including reading the JSON rows and the receipts lookup of each page (receipts is empty here).',
  'Baseline: SELECT count() of the big project in the same run: the cheapest read of the project, for comparing runs on other machines.',
  'Table: merged with OPTIMIZE FINAL after the fill, as a settled table is after background merges; a table still merging fresh parts reads more parts.',
  'Stats: whole hours are counted from the projection counts_by_hour (migration 0006), the partial first and last hours from the table (the `edges` queries); timing starts once no mutation (the projection being materialized) is running.',
  `Machine: ${cpus().length} cores shared with whatever else runs (load average in machine); compare ratios to the baseline across machines rather than absolute times.`,
  'Lookups of one user or one notification use another value on every run, so the query condition cache cannot answer them from an earlier run; the other queries repeat, as a dashboard refreshing does.',
  'Pages below a cursor or `until` are read from the day below it first (engine/infra/clickhouse/deliveries.ts); lookups of one user read the projection by_user (migration 0009), materialized before timing starts.',
];

await main();
