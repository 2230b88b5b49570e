/**
 * The report of bench/broadcast.ts: the engine's broadcast against the faster of its two ceilings,
 * its summary rows (bench/summary.ts) with their goals, its notes, and the table it prints.
 */
import { cpus, totalmem } from 'node:os';
import type { Ceiling } from './broadcast-ceiling.ts';
import { TYPE_NAMES, type BroadcastOptions } from './broadcast-options.ts';
import { engineNodeFlags } from './engine-build.ts';
import { IDS_PER_NOTIFICATION, type BroadcastResult } from './broadcast-send.ts';
import type { Registration } from './broadcast-users.ts';
import type { SummaryRow } from './summary.ts';
import { printRows, round } from './table.ts';

const GOAL_RATIO = 0.6;
const GOAL_RSS_GROWTH_MB = 250;
/** The goals of --peer minimal: throughput at least this share of the bare loop's, CPU per push at most this multiple. */
const PEER_GOAL_RATIO = 0.8;
const PEER_GOAL_CPU = 2;
/** At 1M users of the three types: at least this multiple of the release's pushes/s (--against-release). */
const RELEASE_GOAL_FACTOR = 2.5;

export interface BroadcastReport {
  benchmark: 'broadcast';
  started_at: string;
  finished_at: string;
  machine: { cpus: number; cpu_model: string; memory_gb: number; node: string };
  settings: Record<string, string | number | null>;
  goals: Record<string, number>;
  cpu_ratio_to_ceiling?: number;
  summary: SummaryRow[];
  registration: Registration;
  /** The faster of the two ceiling runs: what the ratio is over. */
  ceiling: Ceiling;
  ceilings: Ceiling[];
  engine: BroadcastResult;
  /** With --against-release: the release's broadcast, same options, same run. */
  release: ReleaseBroadcast | null;
  notes: string[];
}

/** The same broadcast on a release (bench/release.ts), run after this tree's. */
export interface ReleaseBroadcast {
  version: string;
  commit: string;
  result: BroadcastResult;
}

export interface Measured {
  startedAt: Date;
  registration: Registration;
  before: Ceiling;
  after: Ceiling;
  result: BroadcastResult;
  /** Unrounded: the ratio to the ceiling is over it. */
  deliveriesPerSec: number;
  release: ReleaseBroadcast | null;
}

/** What the rows and notes say of the run, worked out once. */
interface Run {
  options: BroadcastOptions;
  result: BroadcastResult;
  ceiling: Ceiling;
  /** The push types, as the rows name them. */
  mix: string;
  inflight: string;
  /** With --peer minimal: the bare loop's own CPU per push, in the run whose CPU per push was lower. */
  bareCpu: number;
  /** With --peer minimal: the engine's CPU per push (its processes and Redis) over the bare loop's. */
  cpuRatio: number;
  /** How the run is spread, for the measures: empty for one engine process on one Redis. */
  deployment: string;
  release: ReleaseBroadcast | null;
}

/** Sets the result's ratio to the faster ceiling, and builds the report around it. */
export function broadcastReport(options: BroadcastOptions, measured: Measured): BroadcastReport {
  const { before, after, result } = measured;
  const ceiling = after.pushes_per_sec > before.pushes_per_sec ? after : before;
  result.ratio_to_ceiling = round(measured.deliveriesPerSec / ceiling.pushes_per_sec, 3);
  const bareCpu = Math.min(...[before, after].map((c) => c.cpu_us_per_push.client));
  const deployment = [
    ...(options.split ? [`dispatch over ${options.dispatchProcesses} process${options.dispatchProcesses === 1 ? '' : 'es'}`] : []),
    ...(result.redis_nodes > 1 ? [`${result.redis_nodes}-node Redis Cluster`] : []),
  ].join(', ');
  const run: Run = {
    options,
    result,
    ceiling,
    mix: options.types.map((t) => TYPE_NAMES[t]).join(', '),
    inflight: options.ceilingInflight ?? '1000',
    bareCpu,
    cpuRatio: round(result.cpu_us_per_delivery_engine_and_redis / bareCpu, 2),
    deployment,
    release: measured.release,
  };
  return {
    benchmark: 'broadcast',
    started_at: measured.startedAt.toISOString(),
    finished_at: new Date().toISOString(),
    machine: { cpus: cpus().length, cpu_model: cpus()[0]?.model ?? 'unknown', memory_gb: round(totalmem() / 2 ** 30, 1), node: process.version },
    settings: settings(run),
    goals: options.peer ? { ratio_to_ceiling: PEER_GOAL_RATIO, cpu_ratio_to_ceiling: PEER_GOAL_CPU, rss_growth_mb: GOAL_RSS_GROWTH_MB } : { ratio_to_ceiling: GOAL_RATIO, rss_growth_mb: GOAL_RSS_GROWTH_MB },
    ...(options.peer ? { cpu_ratio_to_ceiling: run.cpuRatio } : {}),
    summary: summaryRows(run),
    registration: measured.registration,
    ceiling,
    ceilings: [before, after],
    engine: result,
    release: measured.release,
    notes: notes(run),
  };
}

function settings({ options, result, mix }: Run): BroadcastReport['settings'] {
  return {
    users: options.users,
    types: mix,
    audience: options.audience,
    engine: options.fromSource ? 'source (ENGINE_FROM_SOURCE=1)' : 'dist/ build',
    engine_root: options.engineRoot,
    ceiling_count: options.ceilingCount,
    cpu_prof: options.cpuProf ?? null,
    node_flags: [...engineNodeFlags(options.engineRoot), options.nodeFlags].join(' ').trim(),
    dispatch_processes: options.dispatchProcesses,
    redis_nodes: result.redis_nodes,
    peer: options.peerFlag ?? null,
  };
}

function summaryRows(run: Run): SummaryRow[] {
  const { options, result } = run;
  return [
    throughputRow(run),
    ...(options.peer ? [peerCpuRow(run)] : []),
    ...processRows(run),
    {
      scenario: 'broadcast',
      measure: `${result.rss_process} process RSS growth, broadcast to ${options.users} users (${run.mix})`,
      value: result.rss_mb.growth,
      unit: 'MB',
      better: 'lower',
      ceiling: null,
      baseline: null,
      release: run.release === null ? null : { name: run.release.version, value: run.release.result.rss_mb.growth },
      goal: options.users >= 1_000_000 ? { text: `under ${GOAL_RSS_GROWTH_MB} MB at 1M users`, met: result.rss_mb.growth < GOAL_RSS_GROWTH_MB } : null,
    },
  ];
}

const spreadOf = (run: Run): string => (run.deployment === '' ? '' : `, ${run.deployment}`);

function throughputRow(run: Run): SummaryRow {
  const { options, result } = run;
  const ceiling = { name: options.peer ? `bare node:http2 loop, ${run.inflight} streams in flight` : `bare client per provider, ${run.mix} at their own pace`, value: run.ceiling.pushes_per_sec };
  const measure = options.peer
    ? `broadcast to ${options.users} iOS users against a minimal HTTP/2 peer, accept to last record in ClickHouse${spreadOf(run)}`
    : `broadcast to ${options.users} users (${run.mix}), accept to last record in ClickHouse${spreadOf(run)}`;
  const goal = options.peer
    ? { text: `at least ${PEER_GOAL_RATIO} of a bare node:http2 loop`, met: result.ratio_to_ceiling >= PEER_GOAL_RATIO }
    : { text: `at least ${GOAL_RATIO * 100}% of the ceiling`, met: result.ratio_to_ceiling >= GOAL_RATIO };
  const row: SummaryRow = { scenario: 'broadcast', measure, value: result.deliveries_per_sec, unit: 'pushes/s', better: 'higher', ceiling, baseline: null, goal };
  if (run.release === null) return row;
  const theirs = run.release.result.deliveries_per_sec;
  row.release = { name: run.release.version, value: theirs };
  // The goal against the release is set at 1M users of the three types (docs/performance.md).
  if (options.users >= 1_000_000 && !options.peer) {
    row.goal = { text: `${goal.text}, and at least ${RELEASE_GOAL_FACTOR}x ${run.release.version}'s pushes/s`, met: goal.met && result.deliveries_per_sec >= RELEASE_GOAL_FACTOR * theirs };
  }
  return row;
}

function peerCpuRow(run: Run): SummaryRow {
  return {
    scenario: 'broadcast',
    measure: `CPU per push, engine processes and Redis, accept to recorded, ${run.options.users} iOS users against a minimal HTTP/2 peer${spreadOf(run)}`,
    value: run.result.cpu_us_per_delivery_engine_and_redis,
    unit: 'µs/push',
    better: 'lower',
    ceiling: { name: 'bare node:http2 loop', value: run.bareCpu },
    baseline: null,
    release: run.release === null ? null : { name: run.release.version, value: run.release.result.cpu_us_per_delivery_engine_and_redis },
    goal: { text: `CPU per push at most ${PEER_GOAL_CPU}x the bare loop's`, met: run.cpuRatio <= PEER_GOAL_CPU },
  };
}

/** Spread over processes or nodes, each one's CPU per push is a row of its own: where the added cost lands. */
function processRows(run: Run): SummaryRow[] {
  if (run.deployment === '') return [];
  const { options, result } = run;
  const audience = options.peer ? `${options.users} iOS users against a minimal HTTP/2 peer` : `${options.users} users (${run.mix})`;
  const row = (who: string, value: number): SummaryRow => ({
    scenario: 'broadcast',
    measure: `CPU per push, ${who}, accept to recorded, ${audience}${spreadOf(run)}`,
    value,
    unit: 'µs/push',
    better: 'lower',
    ceiling: null,
    baseline: null,
    goal: null,
  });
  const cpu = result.cpu_us_per_delivery;
  return [
    options.split ? row('main engine process (every role but dispatch)', cpu['engine_main'] ?? 0) : row('engine process', cpu.engine),
    ...result.dispatch_processes.map((d, i) => row(`dispatch process ${i + 1} of ${options.dispatchProcesses}`, d.cpu_us_per_delivery)),
    row(result.redis_nodes > 1 ? `Redis, ${result.redis_nodes} nodes summed` : 'Redis', cpu.redis),
  ];
}

function notes({ options, result, mix, inflight }: Run): string[] {
  const processes = options.split
    ? `${options.dispatchProcesses + 1} engine processes, dispatch alone in ${options.dispatchProcesses} and every other role (gateway, apply, fanout, recorder with embedded ClickHouse, scheduler) in the other`
    : 'one engine process with every role (gateway, apply, fanout, dispatch, recorder with embedded ClickHouse, scheduler)';
  const audience =
    options.audience === 'all'
      ? 'segment All (one notification; fan-out reads the users mirror in ClickHouse, which the bench waits to be filled)'
      : `include_external_user_ids, ${result.notifications.length} notifications of at most ${IDS_PER_NOTIFICATION} ids`;
  return [
    ...(options.peer
      ? [
          `Peer: bench/h2-peer.ts in its own process, cleartext HTTP/2 (prior knowledge, SETTINGS_MAX_CONCURRENT_STREAMS 1000), each POST /3/device/<token> checked once against the set of tokens seen and answered 200 with an apns-id; no JWT check. The engine reaches it through the APNs credentials' base_url (the simulator's key and topic). The ceiling is bench/apns-ceiling.ts against the same peer: one ES256 token signed once, the engine's headers, ${inflight} streams in flight, reset before each run.`,
          'CPU ratio: the engine processes (each with its embedded ClickHouse\'s process) and Redis over the measured interval per push, over the bare loop process\'s own CPU per push (the lower of its two runs); the peer is left out of both and shown on its own.',
        ]
      : []),
    `Measures: ${processes}, from the POST /api/notifications until every delivery record is visible through GET /api/deliveries/stats.`,
    'Ceiling: bench/apns-ceiling.ts in its own process, once per push type, sending that type\'s share of the pushes to the same simulator with the engine\'s request shape: APNs and FCM over node:http2 (same TLS, ES256 token or one OAuth access token, as many streams in flight as the engine pool can use: 4 connections x the peer limit), Web Push over 32 pooled HTTP/1.1 connections, each push encrypted by web-push and the VAPID header signed once, as the engine does (all to one subscription). The types run one after the other; the ceiling is the pushes over the sum of their times (the simulators share one process, so running them at once would not be faster).',
    `Push types: ${mix} in rotation, one subscription per user (a Web Push one made by the simulator, which decrypts every push).`,
    `Audience: ${audience}.`,
    'CPU per delivery: CPU seconds of each process over the measured interval divided by the deliveries; the simulator and Redis figures include everything they did meanwhile (the recorder and the progress polls included).',
    `Machine: ${cpus().length} cores shared by the simulators, the engine, Redis, the ceiling client, this process and whatever else runs on the host (load_average, 1 minute, at the end of each run).`,
  ];
}

/** The ceilings and the engine side by side on stdout, then the CPU ratio (--peer minimal), the RSS and each process's CPU per push. */
export function printTable(report: BroadcastReport, options: BroadcastOptions): void {
  const { ceiling, ceilings, engine: e } = report;
  const goalRatio = options.peer ? PEER_GOAL_RATIO : GOAL_RATIO;
  const provider = options.providerName;
  printRows([
    ['run', 'pushes', 'seconds', 'per second', 'vs ceiling', 'CPU µs/push: sender', provider, 'redis', 'load avg'],
    ...ceilings.map((c) => [
      `ceiling ${c.when} (bare clients)${c === ceiling ? ' *' : ''}`,
      String(c.pushes),
      String(c.seconds),
      String(c.pushes_per_sec),
      '',
      String(c.cpu_us_per_push.client),
      String(c.cpu_us_per_push[provider] ?? ''),
      String(c.cpu_us_per_push.redis),
      String(c.load_average),
    ]),
    [
      'engine (to ClickHouse)',
      String(e.recipients),
      String(e.recorded_seconds),
      String(e.deliveries_per_sec),
      `${Math.round(e.ratio_to_ceiling * 100)}% (goal ${goalRatio * 100}%: ${e.ratio_to_ceiling >= goalRatio ? 'met' : 'not met'})`,
      String(e.cpu_us_per_delivery.engine),
      String(e.cpu_us_per_delivery[provider] ?? ''),
      String(e.cpu_us_per_delivery.redis),
      String(e.load_average),
    ],
    ...(report.release === null
      ? []
      : [[`${report.release.version} (to ClickHouse)`, String(report.release.result.recipients), String(report.release.result.recorded_seconds), String(report.release.result.deliveries_per_sec), '', String(report.release.result.cpu_us_per_delivery.engine), String(report.release.result.cpu_us_per_delivery[provider] ?? ''), String(report.release.result.cpu_us_per_delivery.redis), String(report.release.result.load_average)]]),
  ]);
  console.log('* the faster ceiling, which the ratio is over; load avg: the host\'s 1-minute load average at the end of the run');
  const cpuRatio = report.cpu_ratio_to_ceiling;
  if (cpuRatio !== undefined) {
    console.log(
      `CPU per push, engine processes and Redis: ${e.cpu_us_per_delivery_engine_and_redis} µs, ${cpuRatio}x the bare loop's (goal at most ${PEER_GOAL_CPU}x: ${cpuRatio <= PEER_GOAL_CPU ? 'met' : 'not met'})`,
    );
  }
  console.log(
    `${e.rss_process} process RSS: ${e.rss_mb.baseline} MB before, peak ${e.rss_mb.peak} MB, growth ${e.rss_mb.growth} MB (${e.rss_growth_bytes_per_user} bytes/user; goal < ${GOAL_RSS_GROWTH_MB} MB at 1M users)`,
  );
  if (options.split) console.log(`main engine process: ${e.cpu_us_per_delivery['engine_main'] ?? ''} µs CPU per push`);
  e.dispatch_processes.forEach((d, i) => console.log(`dispatch process ${i + 1}: ${d.cpu_us_per_delivery} µs CPU per push, ${d.cores} cores`));
  if (e.redis_nodes > 1) console.log(`Redis, ${e.redis_nodes} nodes summed: ${e.cpu_us_per_delivery.redis} µs CPU per push`);
}
