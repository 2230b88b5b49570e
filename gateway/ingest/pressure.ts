import { Cluster } from 'ioredis';
import type { Config } from '../../schemas/config.ts';
import type { Logger } from '../../engine/infra/process/log.ts';
import type { Metrics } from '../../engine/infra/process/metrics.ts';
import type { RedisClient } from '../../engine/infra/redis/client.ts';
import { scripts } from '../../engine/infra/scripts/registry.ts';
import { APPLY_GROUP, RECORDER_GROUP, type Topology } from '../../engine/infra/redis/topology.ts';

/** How often a gateway reads Redis's memory and the workers' backlog: one reading serves every request. */
const READ_EVERY_MS = 1000;
/** Entries read from each stream with a backlog to learn its bytes per entry. */
const SAMPLED_ENTRIES = 4;
/**
 * The share of the backlog's bytes that draining is counted on to free: the apply leaves live
 * state behind (users, tags, idempotency markers), and a sample only approximates the rest.
 */
const FREED_SHARE = 0.5;

/** What the writer asks before it appends to Redis (gateway/ingest/writer.ts). */
export interface Admission {
  /** False once Redis is past the high watermark, until it is back under the low one. */
  readonly admits: boolean;
  /** Bytes the writer appended since the last reading: a surge counts before the next one. */
  appended(bytes: number): void;
  /** Bytes that may still be appended before the high watermark (Infinity before any reading). */
  room(): number;
  /**
   * Bytes the spill journal may hold while writes are held back: what is expected to fit under the
   * high watermark once the workers have drained their backlog (Infinity before any reading).
   */
  spillRoom(): number;
  /** Why it does not admit, in words for an answer or a log line. */
  describe(): string;
  /** Why waiting makes no room for more than the `journaled` bytes the journal holds, in words for a 503. */
  describeNoRoom(journaled: number): string;
}

/** One shard's memory as INFO memory reports it. */
export interface MemoryInfo {
  used: number;
  maxmemory: number;
  system: number;
}

/** The fields of an INFO memory reply that admission reads. */
export function parseMemoryInfo(text: string): MemoryInfo {
  const field = (name: string): number => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { used: field('used_memory'), maxmemory: field('maxmemory'), system: field('total_system_memory') };
}

interface Reading {
  used: number;
  limit: number;
}

/** What the workers have not settled yet, as one reading sees it. */
interface Backlog {
  /** Nothing left to apply or record: waiting frees no more memory. */
  drained: boolean;
  /** Estimated bytes of the streams that still hold unapplied or unrecorded entries. */
  bytes: number;
}

/**
 * How full Redis is and how far behind the workers are, read at most once a second per gateway
 * (docs/architecture.md#admission-before-the-limit). Past ADMISSION_HIGH_PERCENT of the memory
 * limit it stops admitting buffered writes to Redis, and admits them again below
 * ADMISSION_LOW_PERCENT, so it does not flap. Meanwhile the spill journal may take what draining
 * the workers' backlog will make room for, and no more: nothing else (no TTL) is waited on. The
 * limit is maxmemory, else REDIS_MEMORY_BUDGET, else the machine's memory; on a Cluster, that of
 * the fullest master.
 */
export class RedisPressure implements Admission {
  private reading: Reading | null = null;
  private since = 0;
  private shedding = false;
  private backlog: Backlog = { drained: false, bytes: 0 };
  private timer: NodeJS.Timeout | null = null;
  private reads: Promise<void> = Promise.resolve();

  constructor(
    private readonly redis: RedisClient,
    private readonly topology: Topology,
    private readonly config: Pick<Config, 'ADMISSION_HIGH_PERCENT' | 'ADMISSION_LOW_PERCENT' | 'REDIS_MEMORY_BUDGET'>,
    private readonly metrics: Pick<Metrics, 'redisMemoryUsed' | 'redisMemoryLimit' | 'admissionWatermark' | 'admissionShedding' | 'oldestUnapplied' | 'oldestUnrecorded'>,
    private readonly log: Logger,
  ) {}

  /** Reads once now, then every second. */
  async start(): Promise<void> {
    let busy = false;
    this.timer = setInterval(() => {
      // A reading still waiting (Redis slow or unreachable) is not doubled.
      if (busy) return;
      busy = true;
      this.reads = this.read().finally(() => (busy = false));
    }, READ_EVERY_MS);
    this.timer.unref();
    this.reads = this.read();
    await this.reads;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.reads;
  }

  get admits(): boolean {
    return !this.shedding;
  }

  appended(bytes: number): void {
    this.since += bytes;
    this.judge();
  }

  room(): number {
    if (this.reading === null) return Infinity;
    return Math.max(0, Math.floor(this.highBytes(this.reading) - this.used(this.reading)));
  }

  /** The room under the high watermark now, plus the share of the backlog that draining frees. */
  spillRoom(): number {
    const r = this.reading;
    if (r === null) return Infinity;
    return Math.max(0, Math.floor(this.highBytes(r) - this.used(r) + FREED_SHARE * this.backlogBytes()));
  }

  describe(): string {
    const r = this.reading;
    if (r === null) return 'Redis memory is not known yet';
    return `${this.holds(r)}; writes go to Redis again below ${this.config.ADMISSION_LOW_PERCENT}%, past ${this.config.ADMISSION_HIGH_PERCENT}% they are held back`;
  }

  describeNoRoom(journaled: number): string {
    const r = this.reading;
    if (r === null) return 'Redis memory is not known yet';
    const high = this.config.ADMISSION_HIGH_PERCENT;
    if (this.drained()) {
      return `${this.holds(r)} in live state that waiting does not free: the workers have applied and recorded everything. Writes are taken again once Redis is under ${high}% (free memory in Redis or raise its limit)`;
    }
    return `${this.holds(r)}, past its ${high}% watermark; draining the workers' backlog (about ${mb(this.backlogBytes())}) is expected to make room for about ${mb(this.spillRoom())}, and this gateway's spill journal already holds ${mb(journaled)} waiting for it. The rest is live state that waiting does not free`;
  }

  /** One reading: memory of every master, then the oldest unapplied and unrecorded entries. */
  private async read(): Promise<void> {
    try {
      const masters = this.redis instanceof Cluster ? this.redis.nodes('master') : [this.redis];
      const [infos, backlog] = await Promise.all([Promise.all(masters.map(async (node) => parseMemoryInfo(await node.info('memory')))), this.readBacklog()]);
      const readings = infos.map((i) => ({ used: i.used, limit: i.maxmemory || this.config.REDIS_MEMORY_BUDGET || i.system }));
      const fullest = readings.reduce<Reading | null>((a, b) => (a === null || b.used / b.limit > a.used / a.limit ? b : a), null);
      if (fullest === null || fullest.limit <= 0) return;
      this.reading = fullest;
      this.backlog = backlog;
      this.since = 0;
      this.judge();
      this.metrics.redisMemoryUsed.set(fullest.used);
      this.metrics.redisMemoryLimit.set(fullest.limit);
      this.metrics.admissionWatermark.labels('high').set(this.highBytes(fullest));
      this.metrics.admissionWatermark.labels('low').set((fullest.limit * this.config.ADMISSION_LOW_PERCENT) / 100);
    } catch (err) {
      // Redis unreachable: the writer spills by itself; the last reading stands.
      this.log.debug('redis pressure not read', { err });
    }
  }

  /**
   * Reads the age of the oldest unapplied and unrecorded entries, and estimates the bytes of the
   * streams that hold them: that is what draining frees. Streams without a backlog cost nothing more.
   */
  private async readBacklog(): Promise<Backlog> {
    const now = Date.now();
    const { topology, redis } = this;
    const partitions = Array.from({ length: topology.partitions }, (_, p) => p);
    const [unapplied, unrecorded] = await Promise.all([
      oldestUnsettled(
        redis,
        partitions.map((p) => topology.ingest(p)),
        APPLY_GROUP,
      ),
      oldestUnsettled(
        redis,
        partitions.flatMap((p) => [topology.changes(p), topology.outcomes(p)]),
        RECORDER_GROUP,
      ),
    ]);
    const age = (ms: number | null): number => (ms === null ? 0 : Math.max(0, now - ms) / 1000);
    this.metrics.oldestUnapplied.set(age(unapplied.oldestMs));
    this.metrics.oldestUnrecorded.set(age(unrecorded.oldestMs));
    return { drained: unapplied.oldestMs === null && unrecorded.oldestMs === null, bytes: unapplied.bytes + unrecorded.bytes };
  }

  /**
   * Hysteresis: held back at the high watermark, admitted again under the low one, or under the
   * high one once the workers have drained everything (what is left is live state, which waiting
   * does not free; the journal then replays up to the high watermark).
   */
  private judge(): void {
    const r = this.reading;
    if (r === null) return;
    const used = this.used(r);
    const was = this.shedding;
    if (used >= this.highBytes(r)) this.shedding = true;
    else if (used <= (r.limit * this.config.ADMISSION_LOW_PERCENT) / 100 || this.drained()) this.shedding = false;
    if (was !== this.shedding) {
      this.metrics.admissionShedding.set(this.shedding ? 1 : 0);
      if (this.shedding) this.log.warn('redis past its high watermark; buffered writes are held back from it', { detail: this.describe() });
      else this.log.info('redis under its low watermark; buffered writes go to redis again', { detail: this.describe() });
    }
  }

  /**
   * The backlog of the last reading, and what this gateway appended since: unapplied too, as far
   * as it knows. A surge that crosses the watermark between two readings is not live state.
   */
  private backlogBytes(): number {
    return this.backlog.bytes + this.since;
  }

  private drained(): boolean {
    return this.backlog.drained && this.since === 0;
  }

  private holds(r: Reading): string {
    return `Redis holds ${mb(this.used(r))} of its ${mb(r.limit)} limit (${Math.round((100 * this.used(r)) / r.limit)}%)`;
  }

  private used(r: Reading): number {
    return r.used + this.since;
  }

  private highBytes(r: Reading): number {
    return (r.limit * this.config.ADMISSION_HIGH_PERCENT) / 100;
  }
}

/** Of `streams`, the oldest entry `group` has not acknowledged (its ms, null when none) and the bytes of the streams that hold one. */
async function oldestUnsettled(redis: RedisClient, streams: string[], group: string): Promise<{ oldestMs: number | null; bytes: number }> {
  // One call for every stream on one Redis; on a Cluster one a stream, each in its own slot.
  const oldest = async (some: string[]): Promise<string[]> => (await scripts.oldestUnread(redis, { keys: {}, args: { group }, streams: some })).ids;
  const ids = redis instanceof Cluster ? (await Promise.all(streams.map((stream) => oldest([stream])))).flat() : await oldest(streams);
  const found = await Promise.all(
    streams.map(async (stream, i) => {
      const id = ids[i] ?? '';
      return id === '' ? null : { ms: Number(id.split('-')[0]), bytes: await streamBytes(redis, stream, id) };
    }),
  );
  const behind = found.filter((f) => f !== null);
  return { oldestMs: behind.length === 0 ? null : Math.min(...behind.map((f) => f.ms)), bytes: behind.reduce((n, f) => n + f.bytes, 0) };
}

/**
 * A stream's bytes, cheaply: its length times the mean size of a few entries from `from` on (the
 * oldest unsettled one): two small commands a second for each stream with a backlog. Both name the
 * key, so on a Cluster they reach its node; MEMORY USAGE would not (ioredis cannot route it).
 * Entry overhead is left out: the estimate stays low.
 */
async function streamBytes(redis: RedisClient, stream: string, from: string): Promise<number> {
  const [length, sample] = await Promise.all([redis.xlen(stream), redis.xrange(stream, from, '+', 'COUNT', SAMPLED_ENTRIES)]);
  if (sample.length === 0) return 0;
  const sampled = sample.reduce((n, [, fields]) => n + fields.reduce((m, f) => m + Buffer.byteLength(f), 0), 0);
  return Math.round((length * sampled) / sample.length);
}

function mb(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
