/**
 * Soak benchmark: the default deployment (one `engine start` process, every role, embedded
 * ClickHouse in a temp DATA_DIR, fresh KEY_PREFIX) with the provider simulators, under the SDK mix
 * (bench/sdk-mix.ts) at a fixed rate for `--minutes` (default 10), with a push broadcast to every
 * registered user (segment All, one IOS_PUSH subscription each) every minute, at 30 s past.
 *
 * `node --import tsx bench/soak.ts [--minutes 10] [--rate N] [--users 5003] [--max-seconds 5]`
 *
 * Rate: `--rate`, else half the maximum bench/max-rate.ts measures first. Every 10 s it samples the
 * engine's RSS and V8 heap (its /metrics), Redis used_memory (INFO memory), the summed lengths
 * of the ingest, changes, outcomes and dispatch streams over the partitions, and the size of the
 * spill journal directory (DATA_DIR/spill), and prints them on stderr. Growth of each series is
 * read off the least-squares line through its samples after the first minute (warm): its value
 * at the end over its value at the warm mark; the same over the second half of the run is reported
 * too. Writes bench/reports/soak.json.
 */
import { mkdtemp, readdir, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Topology } from '../engine/infra/redis/topology.ts';
import { call, metrics, sleep, startEngine, startSimulators, waitApplied, waitFor, waitMirrored, type Engine, type Project } from './deployment.ts';
import { measureMax, type MaxRate } from './max-rate.ts';
import { paced, type PacedResult } from './paced.ts';
import { REDIS_URL } from './redis.ts';
import { writeReport } from './report.ts';
import { log, runBench, Teardown } from './run.ts';
import { wholeFlag } from './settings.ts';
import { SdkMix } from './sdk-mix.ts';
import type { SummaryRow } from './summary.ts';
import { machine, printRows, round } from './table.ts';

const GOAL_GROWTH_PCT = 5;
const SAMPLE_MS = 10_000;
const BROADCAST_EVERY_MS = 60_000;
const BROADCAST_OFFSET_MS = 30_000;
const WARM_MS = 60_000;
const STREAMS = ['ingest', 'changes', 'outcomes', 'dispatch'] as const;
const BATCH_USERS = 500;

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    rate: { type: 'string' },
    users: { type: 'string', default: '5003' },
    'max-seconds': { type: 'string', default: '5' },
    connections: { type: 'string', default: '64' },
  },
});
const whole = (name: keyof typeof values): number => wholeFlag(name, values[name]);
const settings = {
  minutes: whole('minutes'),
  rate_given: values.rate === undefined ? null : whole('rate'),
  users: whole('users'),
  max_seconds: whole('max-seconds'),
  connections: whole('connections'),
  sample_seconds: SAMPLE_MS / 1000,
  broadcast_every_seconds: BROADCAST_EVERY_MS / 1000,
};
if (settings.minutes < 2) throw new Error('--minutes must be at least 2: the first minute is warm-up');

const prefix = `benchsoak${Date.now().toString(36)}:`;
const partitions = Number(process.env['PARTITIONS'] ?? 64);
const teardown = new Teardown();
teardown.keys(prefix);

interface Sample {
  /** Seconds since the load started. */
  t: number;
  rss_mb: number;
  heap_used_mb: number;
  redis_used_memory_mb: number;
  streams: Record<(typeof STREAMS)[number], number>;
  streams_total: number;
  journal_bytes: number;
  /** Ingest entries not yet applied (the engine's svc_ingest_lag_entries). */
  ingest_lag: number;
}

interface Broadcast {
  id: string;
  /** Seconds since the load started. */
  at: number;
  recipients: number;
  status: string;
  counts: Record<string, number>;
}

async function sample(engine: Engine, client: Redis, topology: Topology, t: number): Promise<Sample> {
  const [m, info, journal, ...lengths] = await Promise.all([
    metrics(engine.base),
    client.info('memory'),
    directoryBytes(join(engine.dataDir, 'spill')),
    ...STREAMS.map(async (kind) => {
      const keys = Array.from({ length: topology.partitions }, (_, p) => topology[kind](p));
      const counts = await Promise.all(keys.map((key) => client.xlen(key)));
      return counts.reduce((a, b) => a + b, 0);
    }),
  ]);
  const streams = Object.fromEntries(STREAMS.map((kind, i) => [kind, lengths[i] ?? 0])) as Sample['streams'];
  const mb = (bytes: number | undefined): number => round((bytes ?? 0) / 2 ** 20, 1);
  return {
    t: round(t / 1000, 1),
    rss_mb: mb(m.get('process_resident_memory_bytes')),
    heap_used_mb: mb(m.get('nodejs_heap_size_used_bytes')),
    redis_used_memory_mb: mb(Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0)),
    streams,
    streams_total: Object.values(streams).reduce((a, b) => a + b, 0),
    journal_bytes: journal,
    ingest_lag: m.get('svc_ingest_lag_entries') ?? 0,
  };
}

/** Bytes of the files in a directory (not below it); 0 when it does not exist. */
async function directoryBytes(dir: string): Promise<number> {
  const files = await readdir(dir).catch(() => [] as string[]);
  const sizes = await Promise.all(files.map((f) => stat(join(dir, f)).then((s) => (s.isFile() ? s.size : 0), () => 0)));
  return sizes.reduce((a, b) => a + b, 0);
}

async function broadcast(engine: Engine, project: Project, t: number): Promise<Broadcast> {
  const answer = await call(`${engine.base}/api/notifications`, 'POST', project.rest_key, {
    included_segments: ['All'],
    headings: { en: 'Soak' },
    contents: { en: `Broadcast at ${Math.round(t / 1000)} s` },
    ttl: 3600,
  });
  if (answer.status !== 201) throw new Error(`POST /api/notifications answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 300)}`);
  const body = answer.body as { id: string; recipients: number; status: string };
  return { id: body.id, at: round(t / 1000, 1), recipients: body.recipients, status: body.status, counts: {} };
}

async function refresh(engine: Engine, project: Project, b: Broadcast): Promise<void> {
  const view = (await call(`${engine.base}/api/notifications/${b.id}`, 'GET', project.rest_key)).body as { status: string; counts: Record<string, number> };
  b.status = view.status;
  b.counts = view.counts;
}

/**
 * The least-squares line through a series' samples after `from`, read at `from` and at `to`:
 * a leak shows as a slope, while the sawtooth of trimming and broadcasts averages out.
 */
function trendOver(samples: Sample[], pick: (s: Sample) => number, from: number, to: number): { start: number; end: number } {
  const points = samples.filter((s) => s.t > from).map((s) => [s.t, pick(s)] as const);
  const n = points.length;
  if (n === 0) return { start: 0, end: 0 };
  const meanT = points.reduce((a, [t]) => a + t, 0) / n;
  const meanV = points.reduce((a, [, v]) => a + v, 0) / n;
  const spread = points.reduce((a, [t]) => a + (t - meanT) ** 2, 0);
  const slope = spread === 0 ? 0 : points.reduce((a, [t, v]) => a + (t - meanT) * (v - meanV), 0) / spread;
  return { start: meanV + slope * (from - meanT), end: meanV + slope * (to - meanT) };
}

interface Growth {
  series: string;
  /** The summary row's measure when the series has one. */
  measure: string | null;
  unit: string;
  warm: number;
  end: number;
  /** (end - warm) / warm of the fitted line, in percent; 100 when it grew from zero, 0 when it stayed at zero. */
  growth_pct: number;
  /**
   * The same over the second half of the run alone: a leak grows there as it did before, while
   * caches and allocators that are still filling up at the warm mark have levelled off.
   */
  second_half_growth_pct: number;
}

function growthOf(samples: Sample[], totalSeconds: number): Growth[] {
  const warm = WARM_MS / 1000;
  const series: [string, string | null, string, (s: Sample) => number][] = [
    ['engine RSS', 'engine RSS growth, warm to end', 'MB', (s) => s.rss_mb],
    ['engine V8 heap used', null, 'MB', (s) => s.heap_used_mb],
    ['Redis used_memory', 'Redis memory growth, warm to end', 'MB', (s) => s.redis_used_memory_mb],
    ['stream lengths, all four', 'stream length growth, warm to end', 'entries', (s) => s.streams_total],
    ...STREAMS.map((kind): [string, null, string, (s: Sample) => number] => [`${kind} streams`, null, 'entries', (s) => s.streams[kind]]),
    ['spill journal', 'spill journal growth, warm to end', 'bytes', (s) => s.journal_bytes],
  ];
  const pct = ({ start, end }: { start: number; end: number }): number => (start > 0 ? ((end - start) / start) * 100 : end > 0 ? 100 : 0);
  return series.map(([name, measure, unit, pick]) => {
    const whole = trendOver(samples, pick, warm, totalSeconds);
    const late = trendOver(samples, pick, totalSeconds / 2, totalSeconds);
    return { series: name, measure, unit, warm: round(whole.start, 1), end: round(whole.end, 1), growth_pct: round(pct(whole), 1), second_half_growth_pct: round(pct(late), 1) };
  });
}

function summarize(growth: Growth[]): SummaryRow[] {
  return growth.flatMap((g) =>
    g.measure === null
      ? []
      : [
          {
            scenario: 'soak',
            measure: g.measure,
            value: g.growth_pct,
            unit: '%',
            better: 'lower' as const,
            ceiling: null,
            baseline: null,
            goal: { text: `under ${GOAL_GROWTH_PCT}%`, met: g.growth_pct < GOAL_GROWTH_PCT },
          },
        ],
  );
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const work = await mkdtemp(join(tmpdir(), 'svc-bench-soak-'));
  teardown.folder(work);
  const client = teardown.connection(new Redis(REDIS_URL, { maxRetriesPerRequest: 2 }));
  const topology = new Topology(prefix, partitions);
  const { engine, project } = await startDeployment(work);
  const mix = new SdkMix(settings.users, 'soak-');
  await registerUsers(engine, project, mix, { client, topology });

  const system = { name: 'engine', base: engine.base, sdkKey: project.sdk_key, restKey: project.rest_key, pids: [engine.pid], settle: () => waitApplied(client, topology, 5 * 60_000) };
  const max: MaxRate | null = settings.rate_given === null ? await measureMax(system, mix, settings.max_seconds, log) : null;
  const rate = settings.rate_given ?? Math.max(1, Math.round((max?.max_per_sec ?? 0) / 2));
  const totalMs = settings.minutes * 60_000;
  log(`bench: soak: ${rate} writes/s for ${settings.minutes} min, a broadcast to segment All every minute`);
  const { load, samples, broadcasts } = await soak(engine, project, mix, { rate, totalMs, client, topology });
  await waitFor(
    'every broadcast to complete',
    async () => {
      for (const b of broadcasts) await refresh(engine, project, b);
      return broadcasts.every((b) => b.status === 'completed') ? true : undefined;
    },
    5 * 60_000,
    1000,
  );
  const growth = growthOf(samples, totalMs / 1000);
  const report = {
    benchmark: 'soak',
    started_at: startedAt.toISOString(),
    finished_at: new Date().toISOString(),
    machine: machine(),
    settings: { ...settings, rate, partitions },
    max,
    load,
    broadcasts,
    growth,
    samples,
    summary: summarize(growth),
    notes: NOTES,
  };
  printGrowth(growth);
  console.log(
    `load: ${load.accepted_per_sec} writes/s accepted of ${rate} asked (${load.skipped} skipped, ${load.non_2xx + load.errors} not 2xx), p99 ${load.p99_ms} ms; broadcasts: ${broadcasts.map((b) => `${b.recipients} ${b.status}`).join(', ')}`,
  );
  const file = await writeReport(report);
  log(`bench: report written to ${file}`);
}

/** The simulators, and the engine with the simulator's APNs credentials. */
async function startDeployment(work: string): Promise<{ engine: Engine; project: Project }> {
  const sims = await startSimulators(join(work, 'sims'));
  teardown.child(sims.child);
  const engine = await startEngine({ prefix, dataDir: join(work, 'engine'), redisUrl: REDIS_URL, env: { PROVIDER_CA_FILE: sims.caFile } });
  teardown.child(engine.child);
  const project = await engine.createProject('bench-soak');
  await engine.cli('providers', 'set', project.project_id, 'apns', '--file', sims.credentials('apns'));
  log(`bench: engine pid ${engine.pid} on ${engine.base}, simulators pid ${sims.child.proc.pid ?? 0}, work dir ${work}`);
  return { engine, project };
}

/** Every user of the mix with its IOS_PUSH token, applied and in the users mirror (so each broadcast reaches them all). */
async function registerUsers(engine: Engine, project: Project, mix: SdkMix, { client, topology }: { client: Redis; topology: Topology }): Promise<void> {
  for (let from = 0; from < settings.users; from += BATCH_USERS) {
    const answer = await call(`${engine.base}/api/sdk/batch`, 'POST', project.sdk_key, mix.registration(from, Math.min(settings.users, from + BATCH_USERS)));
    if (answer.status !== 202) throw new Error(`batch answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 300)}`);
  }
  await waitApplied(client, topology, 5 * 60_000);
  await waitMirrored({ base: engine.base, restKey: project.rest_key }, settings.users, { ms: 5 * 60_000, every: 1000 });
  log(`bench: ${settings.users} users registered with one IOS_PUSH token each`);
}

/** The load at `rate` for `totalMs`, sampled every SAMPLE_MS, with a broadcast every BROADCAST_EVERY_MS. */
async function soak(
  engine: Engine,
  project: Project,
  mix: SdkMix,
  run: { rate: number; totalMs: number; client: Redis; topology: Topology },
): Promise<{ load: PacedResult; samples: Sample[]; broadcasts: Broadcast[] }> {
  const { totalMs } = run;
  const samples: Sample[] = [];
  const broadcasts: Broadcast[] = [];
  const t0 = Date.now();
  const load: Promise<PacedResult> = paced({
    url: engine.base,
    headers: { authorization: `Bearer ${project.sdk_key}` },
    rate: run.rate,
    seconds: totalMs / 1000,
    connections: settings.connections,
    maxInFlight: 4096,
    next: () => mix.next(),
  });
  let nextSample = t0 + SAMPLE_MS;
  let nextBroadcast = t0 + BROADCAST_OFFSET_MS;
  while (Date.now() - t0 < totalMs) {
    await sleep(Math.max(0, Math.min(nextSample, nextBroadcast, t0 + totalMs) - Date.now()));
    const now = Date.now();
    if (now >= nextBroadcast && now - t0 < totalMs) {
      nextBroadcast += BROADCAST_EVERY_MS;
      const previous = broadcasts.at(-1);
      if (previous !== undefined) await refresh(engine, project, previous);
      broadcasts.push(await broadcast(engine, project, now - t0));
    }
    if (now >= nextSample) {
      nextSample += SAMPLE_MS;
      const s = await sample(engine, run.client, run.topology, now - t0);
      samples.push(s);
      log(
        `bench: ${s.t} s: RSS ${s.rss_mb} MB, heap ${s.heap_used_mb} MB, Redis ${s.redis_used_memory_mb} MB, streams ${STREAMS.map((k) => `${k} ${s.streams[k]}`).join(', ')}, journal ${s.journal_bytes} B, unapplied ${s.ingest_lag}, broadcasts ${broadcasts.length}`,
      );
    }
  }
  return { load: await load, samples, broadcasts };
}

function printGrowth(growth: Growth[]): void {
  printRows([
    ['series', 'unit', 'warm', 'end', 'growth', `goal < ${GOAL_GROWTH_PCT}%`, 'second half'],
    ...growth.map((g) => [
      g.series,
      g.unit,
      String(g.warm),
      String(g.end),
      `${g.growth_pct}%`,
      g.measure === null ? '' : g.growth_pct < GOAL_GROWTH_PCT ? 'met' : 'NOT met',
      `${g.second_half_growth_pct}%`,
    ]),
  ]);
}

const NOTES = [
  'Measures: one `engine start` process with every role (gateway, apply, fan-out, dispatch, recorder with embedded ClickHouse in a temp DATA_DIR, scheduler) and the provider simulators (APNs in demo mode), under an open-loop SDK mix at a fixed rate (bench/sdk-mix.ts: events, tag updates, identifies, token re-registrations over a fixed set of users, so the user state does not grow by design) and a broadcast to segment All every minute.',
  'Growth: per series, the least-squares line through its samples after the first minute (warm), read at the end over its value at the warm mark, in percent: a leak is a slope, while the sawtooth of trimming and of each broadcast averages out. Stream lengths are summed over the partitions. second_half_growth_pct: the same read over the second half of the run alone (not a goal): what still grows once caches and allocators have filled up.',
  'Redis used_memory is the whole instance: other work on the same Redis counts too. RSS and heap come from the engine\'s /metrics (prom-client process metrics); RSS includes the embedded ClickHouse.',
  'Does not measure: a ClickHouse server, more than one process, providers other than APNs, the growth of ClickHouse tables on disk (expected: they hold every event and delivery).',
  `Machine: ${machine().cpus} cores shared by this process (the load), the engine, the simulators and Redis.`,
];

await runBench(main, () => teardown.run());
