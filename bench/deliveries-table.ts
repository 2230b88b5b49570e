/**
 * A large synthetic message_deliveries table for the benchmarks that read it
 * (bench/deliveries-query.ts, bench/dashboard.ts): filled inside ClickHouse by
 * bench/deliveries-fill.sql, merged, then settled (the projections materialized).
 */
import { readFileSync } from 'node:fs';
import type { ClickHouse } from '../engine/infra/clickhouse/client.ts';

export const DAY = 86_400_000;
/** How far the records' `at` spreads after the fill's `start`. */
export const FILL_SPAN = 30 * DAY;
/** Rows per INSERT of the fill, so it can say how far it got. */
const FILL_SLICE = 2_000_000;
const fillSql = readFileSync(new URL('./deliveries-fill.sql', import.meta.url), 'utf8');

/** The first row's `n` of a query answering one row. */
export async function count(ch: ClickHouse, query: string, params: Record<string, unknown> = {}): Promise<number> {
  const result = await ch.query({ query, query_params: params, format: 'JSONEachRow' });
  const [row] = await result.json<{ n: string | number }>();
  return Number(row?.n ?? 0);
}

/** The project with the most records, when the table holds exactly `rows` records; else null. */
export async function bigProject(ch: ClickHouse, rows: number): Promise<string | null> {
  if ((await count(ch, 'SELECT count() AS n FROM message_deliveries')) !== rows) return null;
  const [top] = await ch
    .query({ query: 'SELECT project, count() AS n FROM message_deliveries GROUP BY project ORDER BY n DESC LIMIT 1', format: 'JSONEachRow' })
    .then((r) => r.json<{ project: string }>());
  return top?.project ?? null;
}

/** What to fill: `rows` records from `start` (ms since the epoch) on, 94% of them in project `big`. */
export interface FillShape {
  rows: number;
  big: string;
  start: number;
}

/**
 * Fills the table as `shape` says (deliveries-fill.sql) unless it already holds that many records
 * with `big` the largest project; returns the fill time in ms (null when the table was reused).
 * `log` hears the progress after each slice.
 */
export async function fill(ch: ClickHouse, shape: FillShape, log: (line: string) => void): Promise<number | null> {
  const { rows, big, start } = shape;
  if ((await bigProject(ch, rows)) === big) return null;
  await ch.command({ query: 'TRUNCATE TABLE message_deliveries' });
  // The table drops an inserted block it takes for a repeat (migration 0002). Blocks of later
  // slices were taken for repeats of earlier ones and dropped, even with insert_deduplicate = 0,
  // which left 3.1M rows of 20M: the window is off while filling.
  const window = await dedupWindow(ch);
  await ch.command({ query: 'ALTER TABLE message_deliveries MODIFY SETTING non_replicated_deduplication_window = 0' });
  const t0 = performance.now();
  const params = { rows, big, small: 'bench-small', start_ms: start, span_ms: FILL_SPAN, users: 1_000_000, notifications: 20_000 };
  for (let from = 0; from < rows; from += FILL_SLICE) {
    await ch.command({ query: fillSql, query_params: { ...params, from, count: Math.min(FILL_SLICE, rows - from) } });
    const done = Math.min(rows, from + FILL_SLICE);
    log(`  filled ${done}/${rows} rows (${Math.round(done / ((performance.now() - t0) / 1000))} rows/s)`);
  }
  await ch.command({ query: `ALTER TABLE message_deliveries MODIFY SETTING non_replicated_deduplication_window = ${window}` });
  log('  merging (OPTIMIZE TABLE message_deliveries FINAL) ...');
  await ch.command({ query: 'OPTIMIZE TABLE message_deliveries FINAL' });
  const filled = await count(ch, 'SELECT count() AS n FROM message_deliveries');
  if (filled !== rows) throw new Error(`the fill left ${filled} rows in message_deliveries, not ${rows}`);
  return performance.now() - t0;
}

/** The table's non_replicated_deduplication_window, as its migrations set it. */
async function dedupWindow(ch: ClickHouse): Promise<number> {
  const [table] = await ch
    .query({ query: "SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = 'message_deliveries'", format: 'JSONEachRow' })
    .then((r) => r.json<{ engine_full: string }>());
  return Number(/non_replicated_deduplication_window = (\d+)/.exec(table?.engine_full ?? '')?.[1] ?? 0);
}

/**
 * Waits, at most 30 minutes, until no mutation of message_deliveries is running (migrations 0006
 * and 0009 materialize their projections in the background on a table filled before them), so
 * reads are timed on the settled table; returns how long it waited in ms.
 */
export async function settle(ch: ClickHouse, log: (line: string) => void): Promise<number> {
  const t0 = performance.now();
  const pending = "SELECT count() AS n FROM system.mutations WHERE database = currentDatabase() AND table = 'message_deliveries' AND NOT is_done";
  let said = t0;
  for (let running = await count(ch, pending); running > 0; running = await count(ch, pending)) {
    if (performance.now() - t0 > 30 * 60_000) throw new Error('message_deliveries mutations still running after 30 minutes');
    if (performance.now() - said >= 10_000) {
      said = performance.now();
      log(`  waiting for ${running} mutation(s) of message_deliveries (projections), ${Math.round((said - t0) / 1000)} s so far`);
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  return performance.now() - t0;
}
