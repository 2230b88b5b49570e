import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { DeliveryGroup } from '../../../schemas/queries.ts';
import { api, explain } from './api.ts';
import type { Filters } from './filters.tsx';

interface Series {
  label: string;
  /** Count per hour start (ms since the epoch). */
  hours: Map<number, number>;
}

const COLORS = ['#2f7d4f', '#c0392b', '#8a8f98', '#2d5fa8', '#b7791f', '#6b46c1', '#0f766e'];
const TOP_CODES = 5;
/**
 * Stats calls in flight at once. The browser opens six connections to the gateway, so the table's
 * next query always finds one free; and each call may read the whole range (no projection serves
 * a notification or a user), so more at once would only queue in ClickHouse ahead of it.
 */
const PARALLEL = 3;

const DIMENSIONS = [
  { dimension: 'status', title: 'By status, per hour' },
  { dimension: 'channel', title: 'By channel, per hour' },
  { dimension: 'error_code', title: `By error code (top ${TOP_CODES}), per hour` },
] as const;

type Stats = { groups: DeliveryGroup[] };

/** Runs a call when fewer than `n` run, else when one of them ends. */
type Limit = <T>(call: () => Promise<T>) => Promise<T>;

function limit(n: number): Limit {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (call) => {
    if (running < n) running++;
    // A call that ends hands its place over to the first waiting one.
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await call();
    } finally {
      const next = waiting.shift();
      if (next === undefined) running--;
      else next();
    }
  };
}

function stats(filters: Filters, groupBy: string, run: Limit, signal: AbortSignal): Promise<Stats> {
  return run(() => api<Stats>('GET', '/api/deliveries/stats', { ...filters, group_by: groupBy }, { signal }));
}

async function hourly(filters: Filters, label: string, run: Limit, signal: AbortSignal): Promise<Series> {
  const { groups } = await stats(filters, 'hour', run, signal);
  return { label, hours: new Map(groups.filter((g) => g.key !== null).map((g) => [Date.parse(g.key as string), g.count])) };
}

/** One series per value of `dimension` (those the filters leave open), each counted per hour. */
async function seriesBy(filters: Filters, dimension: (typeof DIMENSIONS)[number]['dimension'], run: Limit, signal: AbortSignal): Promise<Series[]> {
  const chosen = filters[dimension];
  if (chosen !== undefined) return [await hourly(filters, chosen, run, signal)];
  const { groups } = await stats(filters, dimension, run, signal);
  const values = groups.flatMap((g) => (g.key === null ? [] : [g.key])).slice(0, TOP_CODES);
  return Promise.all(values.map((value) => hourly({ ...filters, [dimension]: value }, value, run, signal)));
}

function Chart({ title, series }: { title: string; series: Series[] | null }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (el === null || series === null || series.length === 0) return;
    const xs = [...new Set(series.flatMap((s) => [...s.hours.keys()]))].sort((a, b) => a - b);
    const data: uPlot.AlignedData = [xs.map((x) => x / 1000), ...series.map((s) => xs.map((x) => s.hours.get(x) ?? 0))];
    const plot = new uPlot(
      {
        width: Math.max(280, el.clientWidth),
        height: 180,
        series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length] ?? '#333', width: 2, points: { show: xs.length < 50 } }))],
        // Fixed, with an hour of margin each side: uPlot widens one point alone to years.
        scales: { x: { time: true, auto: false, range: [(xs[0] ?? 0) / 1000 - 3600, (xs.at(-1) ?? 0) / 1000 + 3600] } },
        axes: [{}, { size: 56 }],
        legend: { live: false },
      },
      data,
      el,
    );
    return () => plot.destroy();
  }, [series]);
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      {series === null ? <p class="plot empty">Loading…</p> : series.length === 0 ? <p class="plot empty">No records.</p> : <div class="plot" ref={box} />}
    </figure>
  );
}

/**
 * Counts over time by status, channel and error code (GET /api/deliveries/stats), for the same
 * filters as the table, loaded once the table is (`ready`), so its query goes first. The calls of
 * all three run together, PARALLEL at a time, each chart drawn as soon as its own are answered;
 * those of filters the page has left are aborted.
 */
export function Charts({ filters, ready }: { filters: Filters; ready: boolean }) {
  const [charts, setCharts] = useState<(Series[] | null)[]>(DIMENSIONS.map(() => null));
  const [error, setError] = useState<string | null>(null);
  const loaded = useRef<string | null>(null);
  const key = JSON.stringify(filters);
  useEffect(() => {
    if (!ready || loaded.current === key) return;
    const abort = new AbortController();
    const run = limit(PARALLEL);
    setError(null);
    setCharts(DIMENSIONS.map(() => null));
    const drawn = DIMENSIONS.map(async ({ dimension }, i) => {
      const series = await seriesBy(filters, dimension, run, abort.signal);
      if (!abort.signal.aborted) setCharts((all) => all.map((s, j) => (j === i ? series : s)));
    });
    Promise.all(drawn).then(
      () => void (loaded.current = key),
      (err: unknown) => abort.signal.aborted || setError(explain(err)),
    );
    return () => abort.abort();
  }, [key, ready]);
  if (error !== null) return <p class="error">Charts: {error}</p>;
  return (
    <div class="charts">
      {DIMENSIONS.map(({ dimension, title }, i) => (
        <Chart key={dimension} title={title} series={charts[i] ?? null} />
      ))}
    </div>
  );
}
