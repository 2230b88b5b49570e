/**
 * The report of bench/sdk-ingest.ts: what each load gave, the summary rows (bench/summary.ts)
 * with their goals, the notes, and the table it prints.
 */
import type { CpuShare } from './cpu.ts';
import { USERS } from './sdk-ingest-mix.ts';
import { advantage, type Reference, type SummaryRow } from './summary.ts';
import { machine, printRows, round } from './table.ts';

const GOAL_CEILING = 0.75;
const GOAL_BASELINE = 2;

/** One measured load of one system. */
export interface Result {
  system: 'engine' | 'bare' | 'baseline';
  /** The HTTP server of the engine or the bare ceiling; null for the baseline. */
  http_server: 'uws' | 'node' | null;
  load: 'http-mix' | 'batch' | 'websocket';
  writes_per_request: number;
  requests_per_sec: number;
  writes_per_sec: number;
  p50_ms: number;
  p99_ms: number;
  requests: number;
  status_2xx: number;
  /** Answers that were not 2xx (HTTP) or carried errors (WebSocket), plus connection errors and timeouts. */
  failed: number;
  status_codes: Record<string, number>;
  cpu_cores: CpuShare & { processes?: Record<string, number> };
  /** CPU µs per accepted write of the system's processes and of Redis. */
  cpu_us_per_write: { server: number; redis: number };
  /** Seconds the system took after the load to apply what it had accepted; null: not waited for. */
  drain_seconds: number | null;
}

/** `redis-benchmark` XADD on the same Redis: the append every accepted write costs. */
export interface RedisCeiling {
  name: string;
  clients: number;
  pipeline: number;
  requests: number;
  requests_per_sec: number;
  p50_ms: number;
  p99_ms: number;
  /** Redis CPU µs per XADD over the whole redis-benchmark run. */
  redis_cpu_us_per_xadd: number;
}

/** The loads on uWebSockets.js and the Redis ceiling the summary rows are read from. */
export interface Named {
  bareMix: Result;
  engineMix: Result;
  baselineMix: Result;
  engineBatch: Result;
  baselineBatch: Result;
  engineSocket: Result;
  xaddPipelined: RedisCeiling;
}

/** A result counts only when at least 99% of its answers were 2xx; else its rate means nothing. */
const valid = (r: Result): boolean => r.requests > 0 && r.status_2xx >= r.requests * 0.99;

const BARE = 'bare uWebSockets.js';
const BASELINE = 'Fastify + BullMQ';

export function summaryRows(n: Named, batchSize: number): SummaryRow[] {
  const ref = (name: string, value: number): Reference => ({ name, value });
  const redis = ref(n.xaddPipelined.name, n.xaddPipelined.requests_per_sec);
  /**
   * A row; with `goal`, the goal of a throughput row: at least GOAL_BASELINE times the baseline
   * and, when `ceiling` is set, GOAL_CEILING of the ceiling, from a valid result.
   */
  const row = (r: Omit<SummaryRow, 'scenario' | 'goal'>, goal?: { of: Result; ceiling: boolean }): SummaryRow => {
    if (goal === undefined) return { scenario: 'sdk-ingest', ...r, goal: null };
    const parts = [`at least ${GOAL_BASELINE}x ${r.baseline?.name ?? 'the baseline'}`];
    if (goal.ceiling) parts.unshift(`at least ${GOAL_CEILING * 100}% of ${r.ceiling?.name ?? 'the ceiling'}`);
    const met =
      valid(goal.of) && (!goal.ceiling || (advantage(r, r.ceiling) ?? 0) >= GOAL_CEILING) && (advantage(r, r.baseline) ?? 0) >= GOAL_BASELINE;
    return { scenario: 'sdk-ingest', ...r, goal: { text: parts.join(' and '), met } };
  };
  const { engineMix: mix, bareMix: bare, baselineMix: base } = n;
  return [
    row(
      { measure: 'HTTP mix, accepted', value: mix.requests_per_sec, unit: 'req/s', better: 'higher', ceiling: ref(BARE, bare.requests_per_sec), baseline: ref(BASELINE, base.requests_per_sec) },
      { of: mix, ceiling: true },
    ),
    row({ measure: 'HTTP mix, p99 latency', value: mix.p99_ms, unit: 'ms', better: 'lower', ceiling: ref(BARE, bare.p99_ms), baseline: ref(BASELINE, base.p99_ms) }),
    row({
      measure: 'HTTP mix, server CPU per write',
      value: mix.cpu_us_per_write.server,
      unit: 'µs/write',
      better: 'lower',
      ceiling: ref(BARE, bare.cpu_us_per_write.server),
      baseline: ref(`${BASELINE} (server + worker)`, base.cpu_us_per_write.server),
    }),
    row({
      measure: 'HTTP mix, Redis CPU per write',
      value: mix.cpu_us_per_write.redis,
      unit: 'µs/write',
      better: 'lower',
      ceiling: ref(n.xaddPipelined.name, n.xaddPipelined.redis_cpu_us_per_xadd),
      baseline: ref(BASELINE, base.cpu_us_per_write.redis),
    }),
    row(
      {
        measure: `batch of ${batchSize}, accepted writes`,
        value: n.engineBatch.writes_per_sec,
        unit: 'writes/s',
        better: 'higher',
        ceiling: redis,
        baseline: ref(BASELINE, n.baselineBatch.writes_per_sec),
      },
      { of: n.engineBatch, ceiling: false },
    ),
    row(
      {
        measure: 'WebSocket, accepted writes',
        value: n.engineSocket.writes_per_sec,
        unit: 'writes/s',
        better: 'higher',
        ceiling: redis,
        baseline: ref(`${BASELINE}, HTTP mix`, base.writes_per_sec),
      },
      { of: n.engineSocket, ceiling: false },
    ),
  ];
}

/**
 * What node:http costs: the engine on it next to a bare node:http (ceiling) and to the engine on
 * uWebSockets.js (baseline) measured in the same run; no goal.
 */
export function nodeRows(n: Pick<Named, 'bareMix' | 'engineMix' | 'engineSocket'> & { bareNodeMix: Result; nodeMix: Result; nodeSocket: Result }): SummaryRow[] {
  const row = (r: Omit<SummaryRow, 'scenario' | 'goal'>): SummaryRow => ({ scenario: 'sdk-ingest', ...r, goal: null });
  const bareNode = 'bare node:http';
  const onUws = 'the engine on uWebSockets.js';
  return [
    row({
      measure: 'HTTP mix on node:http, accepted',
      value: n.nodeMix.requests_per_sec,
      unit: 'req/s',
      better: 'higher',
      ceiling: { name: bareNode, value: n.bareNodeMix.requests_per_sec },
      baseline: { name: onUws, value: n.engineMix.requests_per_sec },
    }),
    row({
      measure: 'HTTP mix on node:http, server CPU per write',
      value: n.nodeMix.cpu_us_per_write.server,
      unit: 'µs/write',
      better: 'lower',
      ceiling: { name: bareNode, value: n.bareNodeMix.cpu_us_per_write.server },
      baseline: { name: onUws, value: n.engineMix.cpu_us_per_write.server },
    }),
    row({
      measure: 'WebSocket on node:http, accepted writes',
      value: n.nodeSocket.writes_per_sec,
      unit: 'writes/s',
      better: 'higher',
      ceiling: null,
      baseline: { name: onUws, value: n.engineSocket.writes_per_sec },
    }),
    row({
      measure: 'WebSocket on node:http, server CPU per write',
      value: n.nodeSocket.cpu_us_per_write.server,
      unit: 'µs/write',
      better: 'lower',
      ceiling: null,
      baseline: { name: onUws, value: n.engineSocket.cpu_us_per_write.server },
    }),
  ];
}

export function notes(xadd: RedisCeiling): string[] {
  return [
    'Measures: SDK writes accepted (202, or a WebSocket answer) per second by the default deployment: one engine process with every role (gateway, apply, fan-out, dispatch, recorder with embedded ClickHouse, scheduler), so the apply and the ClickHouse mirror of the accepted writes run during the load, as they would in production.',
    `Mix: of every 10 writes 2 identify (POST /api/sdk/users), 3 tag updates (PUT /api/sdk/users/{id}/tags), 4 events (POST /api/sdk/events), 1 subscription (POST /api/sdk/users/{id}/subscriptions), over ${USERS} users; HTTP/1.1 keep-alive, one request in flight per connection (autocannon, no pipelining).`,
    'HTTP ceiling: bench/bare-server.ts reads each body and answers 202 and nothing else, with the same load generator and bodies; it answers POST only, so its tag updates go out as POST (same path and body).',
    'Baseline: bench/baselines/ (Fastify with the engine\'s schemas, BullMQ Queue.add on the same Redis, a BullMQ Worker of concurrency 50 in a second process applying the jobs to per-user hashes). Its CPU is both processes\'; it gives no per-user order and no exactly-once apply, which the engine does.',
    `Batch and WebSocket ceiling: redis-benchmark XADD (50 clients, 16 pipelined) on the same Redis: the append every accepted write costs, with nothing else; without pipelining it gave ${xadd.requests_per_sec} XADD/s. The WebSocket figure has no socket baseline (the baseline has no such channel): it is set against the baseline's HTTP mix.`,
    'CPU: cores over the measured seconds from /proc/<pid>/stat (the system\'s processes) and INFO cpu (Redis); per write = cores / accepted writes per second, so the apply work done during the load is included and the backlog applied after it (drain_seconds) is not.',
    'node:http: after the loads above the engine is restarted with HTTP_SERVER=node on the same Redis prefix and data, and the HTTP mix and WebSocket loads run again next to bench/bare-server.ts with BARE_SERVER=node (node:http reading each body and answering 202). Its rows set the engine on node:http against that ceiling and against the engine on uWebSockets.js measured earlier in the run.',
    'Does not measure: the spill journal (Redis is up), identity verification, rate limits, more than one gateway process, Redis Cluster.',
    `Machine: ${machine().cpus} cores shared by the load generator, the system under test and Redis; other work on the host skews the figures.`,
  ];
}

export function print(results: Result[], rows: SummaryRow[], ceilings: RedisCeiling[]): void {
  printRows([
    ['system', 'server', 'load', 'writes/s', 'req/s', 'p50 ms', 'p99 ms', 'failed', 'cores gen/srv/redis', 'µs/write srv/redis', 'drain s'],
    ...results.map((r) => [
      r.system,
      r.http_server ?? '',
      r.load,
      String(r.writes_per_sec),
      String(r.requests_per_sec),
      String(r.p50_ms),
      String(r.p99_ms),
      String(r.failed),
      `${r.cpu_cores.load_generator.toFixed(2)}/${r.cpu_cores.server.toFixed(2)}/${r.cpu_cores.redis.toFixed(2)}`,
      `${r.cpu_us_per_write.server}/${r.cpu_us_per_write.redis}`,
      r.drain_seconds === null ? '' : String(r.drain_seconds),
    ]),
    ...ceilings.map((c) => [c.name, '', 'XADD', String(c.requests_per_sec), String(c.requests_per_sec), String(c.p50_ms), String(c.p99_ms), '', '', `-/${c.redis_cpu_us_per_xadd}`, '']),
  ]);
  // Throughput: the share of the ceiling reached and the multiple of the baseline; latency and cost: value over reference.
  const versus = (r: SummaryRow, ref: Reference | null, asShare: boolean): string => {
    if (ref === null) return '';
    const x = r.better === 'higher' ? advantage(r, ref) : ref.value > 0 ? r.value / ref.value : null;
    let text = x === null ? 'n/a' : `${round(x, 2)}x it`;
    if (x !== null && r.better === 'higher') text = asShare ? `${Math.round(x * 100)}% of it` : `${round(x, 2)}x`;
    return `; ${ref.name} ${ref.value} ${r.unit}: ${text}`;
  };
  for (const r of rows) {
    const verdict = r.goal === null ? '' : ` (goal ${r.goal.met ? 'met' : 'NOT met'}: ${r.goal.text})`;
    console.log(`${r.measure}: ${r.value} ${r.unit}${versus(r, r.ceiling, true)}${versus(r, r.baseline, false)}${verdict}`);
  }
}
