import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import type { Write } from './sdk-mix.ts';
import { round } from './table.ts';

/**
 * An open-loop load at a constant rate: what was asked, and what the server answered, the
 * warm-up's requests left out.
 */
export interface PacedResult {
  target_per_sec: number;
  seconds: number;
  /** Requests started; those the generator could not start (too many in flight) are `skipped`. */
  sent: number;
  skipped: number;
  accepted: number;
  non_2xx: number;
  errors: number;
  /** 2xx answers per second over the measured seconds. */
  accepted_per_sec: number;
  p50_ms: number;
  p99_ms: number;
}

export interface PacedOptions {
  url: string;
  headers: Record<string, string>;
  /** Requests per second, started on schedule whatever the answers do (open loop). */
  rate: number;
  seconds: number;
  /**
   * Seconds sent before `seconds` and not counted in the result: the first round(rate × warmup)
   * requests (default 0).
   */
  warmup?: number;
  /** Called once, as the first counted request is due. */
  onWarm?(): void;
  /** Keep-alive HTTP/1.1 connections, one request in flight each; more requests queue. */
  connections: number;
  /** Requests in flight (queued included) past which a due request is skipped, not queued. */
  maxInFlight: number;
  /** The i-th request. */
  next(i: number): Write;
  /** Called on each 2xx answer (the warm-up's too) with the performance.now() it arrived at. */
  onAccepted?(i: number, write: Write, at: number): void;
}

/**
 * Starts request i at start + i / rate (checked every millisecond, so requests go out in
 * groups of rate / 1000), on a pool of keep-alive connections, and waits for every answer.
 */
export async function paced(opts: PacedOptions): Promise<PacedResult> {
  const pool = new Pool(opts.url, { connections: opts.connections, pipelining: 1, keepAliveTimeout: 30_000 });
  const headers = { 'content-type': 'application/json', ...opts.headers };
  const latencies: number[] = [];
  let sent = 0;
  let skipped = 0;
  let accepted = 0;
  let non2xx = 0;
  let errors = 0;
  let inFlight = 0;
  let drained: (() => void) | null = null;
  const counted = Math.round(opts.rate * (opts.warmup ?? 0));
  const fire = (i: number): void => {
    const write = opts.next(i);
    const measured = i >= counted;
    const started = performance.now();
    inFlight += 1;
    if (measured) sent += 1;
    pool
      .request({ origin: opts.url, method: write.method, path: write.path, headers, body: write.body })
      .then(async (res) => {
        await res.body.dump();
        const at = performance.now();
        const ok = res.statusCode >= 200 && res.statusCode < 300;
        if (ok) opts.onAccepted?.(i, write, at);
        if (!measured) return;
        latencies.push(at - started);
        if (ok) accepted += 1;
        else non2xx += 1;
      })
      .catch(() => {
        if (measured) errors += 1;
      })
      .finally(() => {
        inFlight -= 1;
        if (inFlight === 0) drained?.();
      });
  };
  const t0 = performance.now();
  const total = counted + Math.round(opts.rate * opts.seconds);
  let i = 0;
  while (i < total) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) * opts.rate) / 1000));
    for (; i < due; i++) {
      if (i === counted) opts.onWarm?.();
      if (inFlight < opts.maxInFlight) fire(i);
      else if (i >= counted) skipped += 1;
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  if (inFlight > 0) await new Promise<void>((r) => (drained = r));
  await pool.close();
  latencies.sort((a, b) => a - b);
  return {
    target_per_sec: opts.rate,
    seconds: opts.seconds,
    sent,
    skipped,
    accepted,
    non_2xx: non2xx,
    errors,
    accepted_per_sec: Math.round(accepted / opts.seconds),
    p50_ms: round(percentile(latencies, 0.5), 1),
    p99_ms: round(percentile(latencies, 0.99), 1),
  };
}

/** The q-quantile of sorted values (nearest rank); 0 when there are none. */
export function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
}
