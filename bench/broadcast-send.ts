/**
 * The measured broadcast of bench/broadcast.ts: sent (POST /api/notifications, to segment All or
 * in notifications of at most 20 000 ids) and followed until every notification is `completed`
 * and every delivery record is visible in ClickHouse (GET /api/deliveries/stats), with the CPU of
 * every process and Redis read at both ends and the RSS of the process the memory goal is about
 * sampled every 500 ms.
 */
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { loadConfig } from '../engine/infra/process/config.ts';
import { Notifications } from '../engine/state/notifications/lifecycle.ts';
import { createRedis } from '../engine/infra/redis/client.ts';
import { Topology } from '../engine/infra/redis/topology.ts';
import type { BroadcastDeployment, CpuMark, PeerCount } from './broadcast-deployment.ts';
import type { BroadcastOptions } from './broadcast-options.ts';
import { threadCpu, threadCpuBetween, type ThreadCpu } from './cpu.ts';
import { call, sleep } from './deployment.ts';
import { log } from './run.ts';
import { round } from './table.ts';

/** include_external_user_ids holds at most this many ids (schemas/notifications.ts). */
export const IDS_PER_NOTIFICATION = 20_000;
/** No progress for this long fails the run, ms. */
const STALL_MS = 180_000;
const CONTENT = {
  headings: { en: 'Hello' },
  contents: { en: 'Your order shipped' },
  data: { order: 'A1' },
  priority: 'normal',
  collapse_id: 'orders',
  ttl: 3600,
};

/** The `engine` figures of the report: the broadcast from its POST to its last record. */
export interface BroadcastResult {
  notifications: string[];
  recipients: number;
  accept_ms: number;
  /** From the POST until fan-out had appended every job (seen within about a second). */
  fanned_seconds: number | null;
  /** From the POST until every notification was `completed` (Redis counters). */
  dispatched_seconds: number;
  /** From the POST until every delivery record was visible in ClickHouse. */
  recorded_seconds: number;
  deliveries_per_sec: number;
  sends_per_sec: number;
  /** Over the faster of the two ceilings, set once both ran. */
  ratio_to_ceiling: number;
  counts: Counts;
  recorded_by_status: Record<string, number>;
  /** engine: every engine process together (with --dispatch-processes, `dispatch` is their share). */
  cpu_us_per_delivery: Record<string, number> & { engine: number; redis: number };
  /** Every engine process and Redis: the engine's whole cost per push, accept to recorded. */
  cpu_us_per_delivery_engine_and_redis: number;
  cores: Record<string, number>;
  /** With --peer minimal: what the peer got (pushes, distinct tokens, repeats, connections opened). */
  peer: PeerCount | null;
  /** The engine's CPU seconds over the measured interval by thread name (node's main thread is `node`). */
  engine_threads_cpu_seconds: Record<string, number>;
  /** Each dispatch process's CPU per push and cores, with --dispatch-processes. */
  dispatch_processes: { cpu_us_per_delivery: number; cores: number }[];
  /** Redis: the nodes it ran on (one, or a cluster's). */
  redis_nodes: number;
  /** Of the first dispatch process with --dispatch-processes, else of the one engine process. */
  rss_process: 'dispatch' | 'engine';
  rss_mb: { baseline: number; peak: number; growth: number; samples: number };
  rss_growth_bytes_per_user: number;
  load_average: number;
}

interface Counts {
  sent: number;
  failed: number;
  skipped: number;
}

/** The broadcast as sent: what was read just before it, and its notifications once accepted. */
interface Sent {
  t0: number;
  start: CpuMark;
  threads: ThreadCpu;
  /** The notifications' ids and recipients. */
  notifications: { id: string; recipients: number }[];
  acceptMs: number;
  expected: number;
}

/** What was read once every delivery was recorded. */
interface End {
  mark: CpuMark;
  threads: ThreadCpu;
  peer: PeerCount | null;
}

/** The broadcast as sent and followed, with the RSS sampled meanwhile. */
interface Broadcast {
  sent: Sent;
  progress: Progress;
  end: End;
  rss: RssSampler;
}

/** The broadcast's figures, and its deliveries per second unrounded (the ratio to the ceiling is over it). */
export async function measureBroadcast(dep: BroadcastDeployment, options: BroadcastOptions): Promise<{ result: BroadcastResult; deliveriesPerSec: number }> {
  const rss = new RssSampler(dep.memoryPid);
  await rss.start();
  let broadcast: Broadcast;
  try {
    const sent = await send(dep, options);
    broadcast = { sent, ...(await follow(dep, options, sent, rss)), rss };
  } finally {
    rss.stop();
  }
  return figures(dep, options, broadcast);
}

/** Reads the CPU of every process and of the engine's threads, then posts the notifications. */
async function send(dep: BroadcastDeployment, options: BroadcastOptions): Promise<Sent> {
  if (options.peer) await dep.forget();
  const threads = await threadCpu(dep.enginePid);
  const start = await dep.cpuMark();
  const t0 = start.at;
  const notifications: Sent['notifications'] = [];
  for (const body of notificationBodies(options)) {
    const answer = await call(`${dep.base}/api/notifications`, 'POST', dep.project.rest_key, body);
    if (answer.status !== 201) throw new Error(`POST /api/notifications answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 300)}`);
    notifications.push(answer.body as { id: string; recipients: number });
  }
  const acceptMs = Date.now() - t0;
  const expected = notifications.reduce((n, x) => n + x.recipients, 0);
  log(`bench: ${notifications.length} notification(s) accepted in ${acceptMs} ms, ${expected} recipients`);
  return { t0, start, threads, notifications, acceptMs, expected };
}

function notificationBodies(options: BroadcastOptions): object[] {
  if (options.audience === 'all') return [{ ...CONTENT, included_segments: ['All'] }];
  const { users } = options;
  return Array.from({ length: Math.ceil(users / IDS_PER_NOTIFICATION) }, (_, n) => ({
    ...CONTENT,
    include_external_user_ids: Array.from({ length: Math.min(IDS_PER_NOTIFICATION, users - n * IDS_PER_NOTIFICATION) }, (_, i) => `u${n * IDS_PER_NOTIFICATION + i}`),
  }));
}

/** How often the bench looks at the broadcast: the last record is seen at most this late. */
const POLL_MS = 250;
/** How often it counts the records in ClickHouse while pushes still go out (the progress line's figure). */
const RECORDED_EVERY_MS = 2000;

/**
 * Polls every POLL_MS until every delivery is recorded (then reads the CPU at the end) and every
 * notification is `completed`; fails after STALL_MS without progress.
 */
async function follow(dep: BroadcastDeployment, options: BroadcastOptions, sent: Sent, rss: RssSampler): Promise<{ progress: Progress; end: End }> {
  const config = loadConfig({ REDIS_URL: dep.redisUrl, KEY_PREFIX: dep.prefix, PARTITIONS: process.env['PARTITIONS'] ?? '64' });
  const scripted = createRedis(config);
  const since = new Date(sent.t0 - 1000).toISOString();
  const progress = new Progress(dep, sent.notifications, new Notifications(scripted, new Topology(dep.prefix, config.PARTITIONS)), since);
  let lastChange = Date.now();
  let lastPrint = 0;
  let end: End | null = null;
  try {
    for (;;) {
      const before = progress.total();
      await progress.read(sent.expected);
      const now = Date.now();
      if (progress.total() !== before) lastChange = now;
      if (progress.recorded >= sent.expected && end === null) end = { mark: await dep.cpuMark(), threads: await threadCpu(dep.enginePid), peer: await dep.peerCount() };
      if (end !== null && progress.dispatchedAt !== null) return { progress, end };
      const { sent: ok, failed, skipped, recorded } = progress;
      if (now - lastChange > STALL_MS) throw new Error(`no progress for ${STALL_MS / 1000} s: sent ${ok}, failed ${failed}, skipped ${skipped}, recorded ${recorded}/${sent.expected}`);
      if (now - lastPrint >= 2000) {
        lastPrint = now;
        const seconds = (now - sent.t0) / 1000;
        log(
          `bench: ${seconds.toFixed(0)} s: fanned out ${progress.fannedAt === null ? progress.appended : 'all'}, sent ${ok} failed ${failed} skipped ${skipped} (${Math.round((ok + failed + skipped) / seconds)}/s), recorded ${recorded}/${sent.expected}, ${options.split ? 'dispatch' : 'engine'} RSS ${Math.round(rss.latest())} MB (peak ${Math.round(rss.peak())})`,
        );
      }
      await sleep(POLL_MS);
    }
  } finally {
    scripted.disconnect();
  }
}

/** What the bench has seen of the broadcast so far: in the notifications' counters, in Redis and in ClickHouse. */
class Progress {
  sent = 0;
  failed = 0;
  skipped = 0;
  recorded = 0;
  recordedByStatus: Record<string, number> = {};
  /** When every notification was `completed`. */
  dispatchedAt: number | null = null;
  /** When fan-out had appended every job (the record's `fanned`), read from Redis. */
  fannedAt: number | null = null;
  /** Jobs fan-out appended so far, while it is not done. */
  appended = 0;
  /** When ClickHouse was last asked: the count of records, and the notifications' views. */
  private recordedReadAt = 0;
  private readonly open: Set<string>;

  constructor(
    private readonly dep: BroadcastDeployment,
    private readonly notifications: { id: string }[],
    private readonly lifecycle: Notifications,
    /** The stats' `since`: a second before the broadcast started. */
    private readonly since: string,
  ) {
    this.open = new Set(notifications.map((n) => n.id));
  }

  total(): number {
    return this.sent + this.failed + this.skipped + this.recorded;
  }

  /**
   * Reads the counters in Redis each time, and asks ClickHouse (the records' count, the views'
   * status) each time once they show every push made, but only every RECORDED_EVERY_MS before:
   * each count or view is a query in the engine's ClickHouse, which the engine's CPU a push
   * counts (docs/performance.md, "What the bench's own reads cost", "A notification's view
   * without its records"). Both engines keep these counters under the same keys.
   */
  async read(expected: number): Promise<void> {
    await this.readCounters();
    const now = Date.now();
    if (this.sent + this.failed + this.skipped < expected && now - this.recordedReadAt < RECORDED_EVERY_MS) return;
    this.recordedReadAt = now;
    await this.readViews();
    await this.readRecorded();
  }

  private async readCounters(): Promise<void> {
    const read = await Promise.all(this.notifications.map(async (n) => ({ counts: await this.lifecycle.counts(n.id), record: this.fannedAt === null ? await this.lifecycle.read(n.id) : null })));
    this.sent = read.reduce((sum, r) => sum + r.counts.sent, 0);
    this.failed = read.reduce((sum, r) => sum + r.counts.failed, 0);
    this.skipped = read.reduce((sum, r) => sum + r.counts.skipped, 0);
    if (this.fannedAt !== null) return;
    this.appended = read.reduce((sum, r) => sum + r.counts.jobs, 0);
    if (read.every((r) => r.record?.fanned === true)) this.fannedAt = Date.now();
  }

  /** The notifications' status through GET /api/notifications/{id}, as a client sees it. */
  private async readViews(): Promise<void> {
    for (const id of [...this.open]) {
      const view = (await call(`${this.dep.base}/api/notifications/${id}`, 'GET', this.dep.project.rest_key)).body as { status: string };
      if (view.status === 'completed') this.open.delete(id);
    }
    if (this.open.size === 0 && this.dispatchedAt === null) this.dispatchedAt = Date.now();
  }

  private async readRecorded(): Promise<void> {
    const stats = await call(`${this.dep.base}/api/deliveries/stats?group_by=status&since=${encodeURIComponent(this.since)}`, 'GET', this.dep.project.rest_key);
    if (stats.status !== 200) return;
    this.recordedByStatus = Object.fromEntries((stats.body as { groups: { key: string | null; count: number }[] }).groups.map((g) => [g.key ?? 'null', g.count]));
    this.recorded = Object.values(this.recordedByStatus).reduce((a, b) => a + b, 0);
  }
}

function figures(dep: BroadcastDeployment, options: BroadcastOptions, { sent, progress, end, rss }: Broadcast): { result: BroadcastResult; deliveriesPerSec: number } {
  const { t0, start: m0, expected } = sent;
  const m1 = end.mark;
  const wall = (m1.at - t0) / 1000;
  const peakRss = rss.peak(m1.at + 1000);
  const perDelivery = (seconds: number): number => round((seconds / expected) * 1e6, 1);
  const deliveriesPerSec = expected / wall;
  const dispatchedAt = progress.dispatchedAt ?? m1.at;
  const result: BroadcastResult = {
    notifications: sent.notifications.map((n) => n.id),
    recipients: expected,
    accept_ms: sent.acceptMs,
    fanned_seconds: progress.fannedAt === null ? null : round((progress.fannedAt - t0) / 1000, 2),
    dispatched_seconds: round((dispatchedAt - t0) / 1000, 2),
    recorded_seconds: round(wall, 2),
    deliveries_per_sec: Math.round(deliveriesPerSec),
    sends_per_sec: Math.round(expected / ((dispatchedAt - t0) / 1000)),
    ratio_to_ceiling: 0,
    counts: { sent: progress.sent, failed: progress.failed, skipped: progress.skipped },
    recorded_by_status: progress.recordedByStatus,
    cpu_us_per_delivery: {
      engine: perDelivery(m1.engine - m0.engine + m1.dispatch - m0.dispatch),
      ...(options.split ? { engine_main: perDelivery(m1.engine - m0.engine), dispatch: perDelivery(m1.dispatch - m0.dispatch) } : {}),
      [options.providerName]: perDelivery(m1.simulator - m0.simulator),
      redis: perDelivery(m1.redis - m0.redis),
    },
    cpu_us_per_delivery_engine_and_redis: perDelivery(m1.engine - m0.engine + m1.dispatch - m0.dispatch + m1.redis - m0.redis),
    cores: {
      engine: round((m1.engine - m0.engine + m1.dispatch - m0.dispatch) / wall, 2),
      [options.providerName]: round((m1.simulator - m0.simulator) / wall, 2),
      redis: round((m1.redis - m0.redis) / wall, 2),
    },
    peer: end.peer,
    engine_threads_cpu_seconds: Object.fromEntries(
      Object.entries(threadCpuBetween(sent.threads, end.threads))
        .map(([name, v]) => [name, round(v, 2)] as const)
        .filter(([, v]) => v >= 0.05),
    ),
    dispatch_processes: m1.dispatches.map((cpu, i) => ({
      cpu_us_per_delivery: perDelivery(cpu - (m0.dispatches[i] ?? 0)),
      cores: round((cpu - (m0.dispatches[i] ?? 0)) / wall, 2),
    })),
    redis_nodes: dep.redisNodes.length,
    rss_process: options.split ? 'dispatch' : 'engine',
    rss_mb: { baseline: round(rss.baseline, 1), peak: round(peakRss, 1), growth: round(peakRss - rss.baseline, 1), samples: rss.samples.length },
    rss_growth_bytes_per_user: Math.round(((peakRss - rss.baseline) * 1024 * 1024) / expected),
    load_average: round(loadavg()[0] ?? 0, 1),
  };
  return { result, deliveriesPerSec };
}

/** The RSS of one process: its baseline, the highest of four readings 500 ms apart, then a reading every 500 ms. */
class RssSampler {
  readonly samples: { at: number; mb: number }[] = [];
  baseline = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly pid: number) {}

  async start(): Promise<void> {
    const readings: number[] = [];
    for (let i = 0; i < 4; i++) {
      readings.push(await rssMb(this.pid));
      await sleep(POLL_MS);
    }
    this.baseline = Math.max(...readings);
    this.timer = setInterval(() => {
      rssMb(this.pid).then((mb) => this.samples.push({ at: Date.now(), mb }), () => undefined);
    }, 500);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  latest(): number {
    return this.samples.at(-1)?.mb ?? 0;
  }

  /** The highest reading, the baseline's included, up to `until` (ms since the epoch). */
  peak(until = Infinity): number {
    return Math.max(this.baseline, ...this.samples.filter((s) => s.at <= until).map((s) => s.mb));
  }
}

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}
