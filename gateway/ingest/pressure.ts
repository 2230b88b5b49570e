import { Cluster } from 'ioredis';
import type { Config } from '../../schemas/config.ts';
import type { Logger } from '../../engine/log.ts';
import type { Metrics } from '../../engine/metrics.ts';
import type { RedisClient } from '../../engine/redis.ts';
import { scripts } from '../../engine/scripts.ts';
import { APPLY_GROUP, RECORDER_GROUP, type Topology } from '../../engine/topology.ts';

/** How often a gateway reads Redis's memory and the workers' backlog: one reading serves every request. */
const READ_EVERY_MS = 1000;

/** What the writer asks before it appends to Redis (gateway/ingest/writer.ts). */
export interface Admission {
  /** False once Redis is past the high watermark, until it is back under the low one. */
  readonly admits: boolean;
  /** Bytes the writer appended since the last reading: a surge counts before the next one. */
  appended(bytes: number): void;
  /** Bytes that may still be appended before the high watermark (Infinity before any reading). */
  room(): number;
  /** Why it does not admit, in words for an answer or a log line. */
  describe(): string;
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

/**
 * How full Redis is and how far behind the workers are, read at most once a second per gateway
 * (docs/architecture.md#admission-before-the-limit). Past ADMISSION_HIGH_PERCENT of the memory
 * limit it stops admitting buffered writes to Redis (they go to the spill journal), and admits them
 * again below ADMISSION_LOW_PERCENT, so it does not flap. The limit is maxmemory, else
 * REDIS_MEMORY_BUDGET, else the machine's memory; on a Cluster, that of the fullest master.
 */
export class RedisPressure implements Admission {
  private reading: Reading | null = null;
  private since = 0;
  private shedding = false;
  /** At the last reading the workers had nothing left to apply or record: waiting frees no more memory. */
  private drained = false;
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

  describe(): string {
    const r = this.reading;
    if (r === null) return 'Redis memory is not known yet';
    const pct = (n: number): string => `${Math.round((100 * n) / r.limit)}%`;
    return `Redis holds ${mb(this.used(r))} of its ${mb(r.limit)} limit (${pct(this.used(r))}); writes go to Redis again below ${this.config.ADMISSION_LOW_PERCENT}%, past ${this.config.ADMISSION_HIGH_PERCENT}% they are held back`;
  }

  /** One reading: memory of every master, then the oldest unapplied and unrecorded entries. */
  private async read(): Promise<void> {
    try {
      const masters = this.redis instanceof Cluster ? this.redis.nodes('master') : [this.redis];
      const [infos, drained] = await Promise.all([Promise.all(masters.map(async (node) => parseMemoryInfo(await node.info('memory')))), this.readBacklog()]);
      const readings = infos.map((i) => ({ used: i.used, limit: i.maxmemory || this.config.REDIS_MEMORY_BUDGET || i.system }));
      const fullest = readings.reduce<Reading | null>((a, b) => (a === null || b.used / b.limit > a.used / a.limit ? b : a), null);
      if (fullest === null || fullest.limit <= 0) return;
      this.reading = fullest;
      this.drained = drained;
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

  /** Reads the age of the oldest unapplied and unrecorded entries; whether there are none. */
  private async readBacklog(): Promise<boolean> {
    const now = Date.now();
    const { topology, redis } = this;
    /** Seconds since the oldest entry of `streams` the group has not acknowledged; null when there is none. */
    const oldest = async (streams: string[], group: string): Promise<number | null> => {
      const ids = await Promise.all(streams.map(async (stream) => (await scripts.oldestUnread(redis, { keys: { stream }, args: { group } })).id));
      const times = ids.filter((id) => id !== '').map((id) => Number(id.split('-')[0]));
      return times.length === 0 ? null : Math.max(0, now - Math.min(...times)) / 1000;
    };
    const partitions = Array.from({ length: topology.partitions }, (_, p) => p);
    const [unapplied, unrecorded] = await Promise.all([
      oldest(
        partitions.map((p) => topology.ingest(p)),
        APPLY_GROUP,
      ),
      oldest(
        partitions.flatMap((p) => [topology.changes(p), topology.outcomes(p)]),
        RECORDER_GROUP,
      ),
    ]);
    this.metrics.oldestUnapplied.set(unapplied ?? 0);
    this.metrics.oldestUnrecorded.set(unrecorded ?? 0);
    return unapplied === null && unrecorded === null;
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
    else if (used <= (r.limit * this.config.ADMISSION_LOW_PERCENT) / 100 || this.drained) this.shedding = false;
    if (was !== this.shedding) {
      this.metrics.admissionShedding.set(this.shedding ? 1 : 0);
      if (this.shedding) this.log.warn('redis past its high watermark; buffered writes go to the spill journal', { detail: this.describe() });
      else this.log.info('redis under its low watermark; buffered writes go to redis again', { detail: this.describe() });
    }
  }

  private used(r: Reading): number {
    return r.used + this.since;
  }

  private highBytes(r: Reading): number {
    return (r.limit * this.config.ADMISSION_HIGH_PERCENT) / 100;
  }
}

function mb(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
