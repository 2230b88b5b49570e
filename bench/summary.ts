/**
 * The figures a scenario puts in front of a reader: each report's `summary` array holds these
 * rows, and `make bench` turns them into the table and chart of docs/performance.md.
 */
export interface Reference {
  /** What was measured as the reference, e.g. `bare uWebSockets.js` or `Fastify + BullMQ`. */
  name: string;
  value: number;
}

export interface SummaryRow {
  /** The scenario name, as `npm run bench -- <scenario>` takes it. */
  scenario: string;
  /** What the value is, e.g. `HTTP mix, accepted` or `apply lag p99 at 50% load`. */
  measure: string;
  value: number;
  /** e.g. `req/s`, `ms`, `µs/row`, `rows/s`, `%`. */
  unit: string;
  /** Whether more of `value` is better (throughput) or less (latency, cost, growth). */
  better: 'higher' | 'lower';
  /** The bare ceiling measured in the same run, or null where none applies. */
  ceiling: Reference | null;
  /** The usual alternative measured in the same run, or null where none applies. */
  baseline: Reference | null;
  /** The release measured beside this tree in the same run (bench/release.ts); absent where none ran. */
  release?: Reference | null;
  /** The goal as a sentence, and whether this run met it; null where there is none. */
  goal: { text: string; met: boolean } | null;
}

/** value / reference for a higher-is-better row, reference / value for a lower-is-better one. */
export function advantage(row: Pick<SummaryRow, 'value' | 'better'>, reference: Reference | null): number | null {
  if (reference === null || reference.value <= 0 || row.value <= 0) return null;
  return row.better === 'higher' ? row.value / reference.value : reference.value / row.value;
}
