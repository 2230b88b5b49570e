import autocannon, { type Request, type Result } from 'autocannon';
import type { CpuShare } from './cpu.ts';

export interface LoadSettings {
  connections: number;
  warmupSeconds: number;
  seconds: number;
}

/** One measured load: what a reader of the report needs, in requests/s and milliseconds. */
export interface Measurement {
  /** `ceiling` (bench/bare-server.ts) or `gateway`. */
  server: string;
  /** The request shape: `users` or `events`. */
  load: string;
  path: string;
  requests_per_sec: number;
  p50_ms: number;
  p99_ms: number;
  requests: number;
  status_2xx: number;
  non_2xx: number;
  errors: number;
  timeouts: number;
  status_codes: Record<string, number>;
  /** 2xx answers during the warm-up (not part of the figures; counted to check the ingest log). */
  warmup_2xx: number;
  /** Cores used during the measured seconds by the load generator, the server and Redis. */
  cpu_cores: CpuShare;
}

/** One request of a mixed load: its method, path and body. */
export interface RequestShape {
  method: 'POST' | 'PUT';
  path: string;
  body: string;
}

/**
 * A load: a POST to `path` whose body is built fresh for every request (distinct users, rotating
 * events), or, with `next`, requests whose method, path and body all change (a mix of routes;
 * `path` then only names the load in the report).
 */
export type Target = {
  server: string;
  load: string;
  url: string;
  path: string;
  headers: Record<string, string>;
} & ({ body: () => string } | { next: () => RequestShape });

/**
 * Warms the target up, then measures it: autocannon in this process, HTTP/1.1 keep-alive, one
 * request in flight per connection (no pipelining).
 */
export async function measure<C extends CpuShare>(
  target: Target,
  settings: LoadSettings,
  sampleCpu: () => Promise<{ stop(): Promise<C> }>,
): Promise<Measurement & { cpu_cores: C }> {
  const request: Request = {
    method: 'POST',
    path: target.path,
    headers: { 'content-type': 'application/json', ...target.headers },
    setupRequest: 'next' in target ? (req) => ({ ...req, ...target.next() }) : (req) => ({ ...req, body: target.body() }),
  };
  const run = (seconds: number): Promise<Result> =>
    Promise.resolve(
      autocannon({ url: target.url, connections: settings.connections, duration: seconds, pipelining: 1, timeout: 10, requests: [request] }),
    );
  const warmup = settings.warmupSeconds > 0 ? await run(settings.warmupSeconds) : null;
  const cpu = await sampleCpu();
  const result = await run(settings.seconds);
  const cores = await cpu.stop();
  return {
    server: target.server,
    load: target.load,
    path: target.path,
    requests_per_sec: Math.round(result.requests.average),
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    requests: result.requests.total,
    status_2xx: result['2xx'],
    non_2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    status_codes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count])),
    warmup_2xx: warmup?.['2xx'] ?? 0,
    cpu_cores: cores,
  };
}
