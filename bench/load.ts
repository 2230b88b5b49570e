import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon, { type Request, type Result } from 'autocannon';
import WebSocket from 'ws';
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

/** A WebSocket load on a channel that answers each frame with `{seq, accepted: true}` or `{seq, errors}` (docs/api.md#the-websocket-channel). */
export interface SocketTarget {
  server: string;
  load: string;
  url: string;
  headers: Record<string, string>;
  /** Sockets, each with one frame in flight: it sends the next once the last one's answer came. */
  clients: number;
  /** The text of the frame numbered `seq` (per socket, from 1). */
  frame: (seq: number) => string;
}

/** What the sockets counted so far, and in which phase of the load they are. */
interface SocketState {
  phase: 'warmup' | 'measured' | 'done';
  /** Frames accepted during the warm-up. */
  warmup: number;
  accepted: number;
  refused: number;
  errors: number;
  /** Refused frames by their first error code. */
  codes: Record<string, number>;
  /** Of each accepted frame of the measured phase, ms. */
  latencies: number[];
}

/**
 * Like measure, over WebSocket: warms up, then counts answers over the measured seconds. In the
 * Measurement, `status_2xx` counts accepted frames, `non_2xx` frames answered with errors (by first
 * error code in `status_codes`), `errors` socket errors; latencies are per frame.
 */
export async function measureSocket<C extends CpuShare>(
  target: SocketTarget,
  settings: LoadSettings,
  sampleCpu: () => Promise<{ stop(): Promise<C> }>,
): Promise<Measurement & { cpu_cores: C }> {
  const sockets = await Promise.all(
    Array.from(
      { length: target.clients },
      () =>
        new Promise<WebSocket>((resolve, reject) => {
          const ws = new WebSocket(target.url, { headers: target.headers });
          ws.once('open', () => resolve(ws));
          ws.once('error', reject);
        }),
    ),
  );
  const state: SocketState = { phase: 'warmup', warmup: 0, accepted: 0, refused: 0, errors: 0, codes: {}, latencies: [] };
  const loops = sockets.map((ws) => socketLoop(ws, target, state));
  await sleep(settings.warmupSeconds * 1000);
  const cpu = await sampleCpu();
  state.phase = 'measured';
  const started = performance.now();
  await sleep(settings.seconds * 1000);
  const wall = (performance.now() - started) / 1000;
  state.phase = 'done';
  const cores = await cpu.stop();
  // Each socket stops once its frame in flight is answered; a stuck one is closed after 10 s.
  await Promise.race([Promise.all(loops), sleep(10_000)]);
  for (const ws of sockets) ws.close();
  state.latencies.sort((a, b) => a - b);
  const quantile = (q: number): number => Math.round((state.latencies[Math.min(state.latencies.length - 1, Math.floor(q * state.latencies.length))] ?? 0) * 100) / 100;
  return {
    server: target.server,
    load: target.load,
    path: new URL(target.url).pathname,
    requests_per_sec: Math.round(state.accepted / wall),
    p50_ms: quantile(0.5),
    p99_ms: quantile(0.99),
    requests: state.accepted + state.refused,
    status_2xx: state.accepted,
    non_2xx: state.refused,
    errors: state.errors,
    timeouts: 0,
    status_codes: { accepted: state.accepted, ...state.codes },
    warmup_2xx: state.warmup,
    cpu_cores: cores,
  };
}

/** One socket's frames, one in flight: the next goes once the last one's answer came; resolves once the load is done or the socket closed. */
function socketLoop(ws: WebSocket, target: SocketTarget, state: SocketState): Promise<void> {
  return new Promise<void>((resolve) => {
    let seq = 0;
    let sentAt = 0;
    const send = (): void => {
      if (state.phase === 'done' || ws.readyState !== WebSocket.OPEN) return resolve();
      seq += 1;
      sentAt = performance.now();
      ws.send(target.frame(seq));
    };
    ws.on('message', (data: WebSocket.RawData) => {
      const answer = JSON.parse(data.toString()) as { accepted?: boolean; errors?: { code: string }[] };
      if (state.phase === 'warmup' && answer.accepted === true) state.warmup += 1;
      if (state.phase === 'measured' && answer.accepted === true) {
        state.accepted += 1;
        state.latencies.push(performance.now() - sentAt);
      } else if (state.phase === 'measured') {
        state.refused += 1;
        const code = answer.errors?.[0]?.code ?? 'unknown';
        state.codes[code] = (state.codes[code] ?? 0) + 1;
      }
      send();
    });
    ws.once('close', () => resolve());
    ws.on('error', () => {
      if (state.phase === 'measured') state.errors += 1;
    });
    send();
  });
}
