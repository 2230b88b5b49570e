/** The runs of bench/dashboard.ts, and what its report and summary rows make of them. */
import type { Page } from 'playwright-core';
import type { SummaryRow } from './summary.ts';

const GOAL_MS = 1000;

/** One filter change the bench makes from a loaded table. */
export interface Step {
  name: string;
  description: string;
  /** The URL fragment's query the page opens at before run `i`'s action ('' or `?status=failed`). */
  from: (i: number) => string;
  /** The event that is the user's action. */
  event: 'change' | 'keydown' | 'click';
  act: (page: Page, i: number) => Promise<unknown>;
  /** One page for every run, each acting where the previous one left it (paging). */
  chained?: boolean;
}

/** A request as the browser timed it, ms. */
export interface Timing {
  path: string;
  /** From the action (or navigation start) to the request's start. */
  after_action_ms: number;
  stalled_ms: number;
  /** Sent to first byte: the gateway and its query. */
  waiting_ms: number;
  total_ms: number;
}

export interface Run {
  run: number;
  warmup: boolean;
  /** Action (or navigation start) to the frame painting the new rows. */
  table_ms: number;
  /** Action to the last chart canvas drawn; null when no chart was redrawn. */
  charts_ms: number | null;
  canvases: number;
  rows: number;
  /** The same GET /api/deliveries from Node. */
  bare_ms: number;
  table_request: Timing;
  stats_requests: number;
  slowest_stats: Timing | null;
  stats_done_ms: number | null;
  load_average: number;
}

/** The q-quantile (nearest rank) of `values`, to 0.1; null when there are none. */
function quantile(values: number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round((sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0) * 10) / 10;
}

const stats = (values: number[]) => ({ p50: quantile(values, 0.5), p95: quantile(values, 0.95), max: quantile(values, 1) });

export function summarize(measured: { name: string; description: string; runs: Run[] }[], rows: number) {
  const size = rows >= 1_000_000 ? `${Math.round(rows / 100_000) / 10}M` : String(rows);
  const results = measured.map(({ name, description, runs }) => {
    const kept = runs.filter((r) => !r.warmup);
    const table = stats(kept.map((r) => r.table_ms));
    const bare = stats(kept.map((r) => r.bare_ms));
    const charts = kept.flatMap((r) => (r.charts_ms === null ? [] : [r.charts_ms]));
    return {
      measure: name,
      description,
      table_p50_ms: table.p50,
      table_p95_ms: table.p95,
      table_max_ms: table.max,
      bare_get_p50_ms: bare.p50,
      bare_get_p95_ms: bare.p95,
      /** The page's GET /api/deliveries, sent to first byte, while the charts' calls run too. */
      table_request_waiting_p50_ms: quantile(kept.map((r) => r.table_request.waiting_ms), 0.5),
      table_request_waiting_p95_ms: quantile(kept.map((r) => r.table_request.waiting_ms), 0.95),
      charts_p50_ms: quantile(charts, 0.5),
      charts_p95_ms: quantile(charts, 0.95),
      charts_redrawn_runs: charts.length,
      stats_requests_per_run: Math.max(0, ...kept.map((r) => r.stats_requests)),
      load_average_mean: Math.round((kept.reduce((sum, r) => sum + r.load_average, 0) / Math.max(1, kept.length)) * 100) / 100,
      goal_met: table.p95 !== null && table.p95 < GOAL_MS,
      runs,
    };
  });
  const summary: SummaryRow[] = results.map((r) => ({
    scenario: 'dashboard',
    measure: `${r.measure}, table painted, p95 over ${size} rows (p50 ${r.table_p50_ms} ms)`,
    value: r.table_p95_ms ?? 0,
    unit: 'ms',
    better: 'lower',
    ceiling: r.bare_get_p95_ms === null ? null : { name: 'the same GET /api/deliveries from Node', value: r.bare_get_p95_ms },
    baseline: null,
    goal: { text: `under ${GOAL_MS} ms`, met: r.goal_met },
  }));
  const first = results[0];
  if (first?.charts_p95_ms != null) {
    summary.push({
      scenario: 'dashboard',
      measure: `first paint, last chart drawn, p95 over ${size} rows (p50 ${first.charts_p50_ms} ms)`,
      value: first.charts_p95_ms,
      unit: 'ms',
      better: 'lower',
      ceiling: null,
      baseline: null,
      goal: null,
    });
  }
  const cell = (v: number | null): string => String(v ?? '-').padStart(8);
  const table = [
    `${'measure'.padEnd(16)} ${'p50'.padStart(8)} ${'p95'.padStart(8)} ${'GET p50'.padStart(8)} ${'GET p95'.padStart(8)} ${'charts50'.padStart(8)} ${'charts95'.padStart(8)}  goal ${GOAL_MS} ms`,
    ...results.map(
      (r) =>
        `${r.measure.padEnd(16)} ${cell(r.table_p50_ms)} ${cell(r.table_p95_ms)} ${cell(r.bare_get_p50_ms)} ${cell(r.bare_get_p95_ms)} ${cell(r.charts_p50_ms)} ${cell(r.charts_p95_ms)}  ${r.goal_met ? 'met' : 'NOT met'}`,
    ),
  ];
  return { results, summary, table };
}
