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

type Stats = { groups: DeliveryGroup[] };

async function hourly(filters: Filters, label: string): Promise<Series> {
  const { groups } = await api<Stats>('GET', '/api/deliveries/stats', { ...filters, group_by: 'hour' });
  return { label, hours: new Map(groups.filter((g) => g.key !== null).map((g) => [Date.parse(g.key as string), g.count])) };
}

/** Thrown to stop loading charts whose filters the page has left. */
class Stale extends Error {}

/**
 * One series per value of `dimension` (those the filters leave open), each counted per hour. The
 * calls go one after another: each may read the whole range (no projection serves a notification
 * or a user), and run together they made the table's next query wait behind them.
 */
async function seriesBy(filters: Filters, dimension: 'status' | 'channel' | 'error_code', live: () => boolean): Promise<Series[]> {
  if (filters[dimension] !== undefined) return [await hourly(filters, filters[dimension])];
  const { groups } = await api<Stats>('GET', '/api/deliveries/stats', { ...filters, group_by: dimension });
  const out: Series[] = [];
  for (const key of groups.flatMap((g) => (g.key === null ? [] : [g.key])).slice(0, TOP_CODES)) {
    if (!live()) throw new Stale();
    out.push(await hourly({ ...filters, [dimension]: key }, key));
  }
  return out;
}

function Chart({ title, series }: { title: string; series: Series[] }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (el === null || series.length === 0) return;
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
      {series.length === 0 ? <p class="empty">No records.</p> : <div ref={box} />}
    </figure>
  );
}

/**
 * Counts over time by status, channel and error code (GET /api/deliveries/stats), for the same
 * filters as the table, loaded once the table is (`ready`), so its query goes first.
 */
export function Charts({ filters, ready }: { filters: Filters; ready: boolean }) {
  const [charts, setCharts] = useState<Series[][] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const loaded = useRef<string | null>(null);
  const key = JSON.stringify(filters);
  useEffect(() => {
    if (!ready || loaded.current === key) return;
    let live = true;
    const isLive = (): boolean => live;
    setError(null);
    setCharts(null);
    (async () => {
      const all: Series[][] = [];
      for (const dimension of ['status', 'channel', 'error_code'] as const) all.push(await seriesBy(filters, dimension, isLive));
      return all;
    })()
      .then((c) => {
        if (!live) return;
        loaded.current = key;
        setCharts(c);
      })
      .catch((err: unknown) => live && !(err instanceof Stale) && setError(explain(err)));
    return () => void (live = false);
  }, [key, ready]);
  if (error !== null) return <p class="error">Charts: {error}</p>;
  if (charts === null) return <div class="charts loading">Loading charts…</div>;
  const [byStatus = [], byChannel = [], byCode = []] = charts;
  return (
    <div class="charts">
      <Chart title="By status, per hour" series={byStatus} />
      <Chart title="By channel, per hour" series={byChannel} />
      <Chart title={`By error code (top ${TOP_CODES}), per hour`} series={byCode} />
    </div>
  );
}
