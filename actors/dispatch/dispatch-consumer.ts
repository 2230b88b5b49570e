import type { Logger } from '../../engine/log.ts';
import type { Metrics } from '../../engine/metrics.ts';
import type { RedisClient } from '../../engine/redis.ts';
import { ConsumerLoop, ensureGroup, reportDeleted } from '../../engine/runner/consumer-loop.ts';
import type { PartitionWork } from '../../engine/runner/partition-runner.ts';
import { toEntries, type StreamEntry } from '../../engine/runner/types.ts';

export interface DispatchConsumerOptions {
  redis: RedisClient;
  /** The partition's dispatch stream. */
  stream: string;
  group: string;
  /** Consumer name in the group: the worker id. */
  consumer: string;
  /** Most jobs running at once in this partition: the in-flight window a crash may repeat. */
  window: number;
  blockMs: number;
  /** Runs one job to its record; a rejection leaves the job pending, to be claimed again. */
  run(entry: StreamEntry): Promise<void>;
  log: Logger;
  metrics: Pick<Metrics, 'lostEntries'>;
}

const RETRY_MS = 500;

/**
 * Runs the jobs of one owned partition's dispatch stream with a sliding window: new jobs are read
 * as soon as a quarter of the window is free, so a slow send holds one slot, not a whole batch. Jobs left pending (a
 * crashed owner, a failed run, a lost read) are claimed on start and after every failure.
 */
export class DispatchConsumer implements PartitionWork {
  private readonly loop: ConsumerLoop;
  private readonly running = new Set<Promise<void>>();
  /** Stream IDs of the jobs running: a claim of pending jobs must not start them twice. */
  private readonly runningIds = new Set<string>();
  /** Set when a job failed: its entry is pending, and is claimed again before reading on. */
  private reclaim = false;
  private done: Promise<void> = Promise.resolve();
  private freed: (() => void) | undefined;

  constructor(private readonly opts: DispatchConsumerOptions) {
    this.loop = new ConsumerLoop(opts.redis);
  }

  start(): void {
    this.done = this.loop.run(() => this.runLoop());
  }

  /** Stops reading, then waits for the jobs in flight. */
  async stop(): Promise<void> {
    this.loop.stop();
    this.freed?.();
    await this.done;
    await Promise.all(this.running);
  }

  private async runLoop(): Promise<void> {
    const { redis, stream, group, log } = this.opts;
    while (!this.loop.stopping) {
      try {
        await ensureGroup(redis, stream, group);
        await this.claimPending();
        while (!this.loop.stopping) {
          if (this.reclaim) {
            this.reclaim = false;
            await this.claimPending();
          }
          await this.readMore();
        }
      } catch (err) {
        if (this.loop.stopping) break;
        log.warn('dispatch consumer error', { stream, err });
        await this.loop.pause(RETRY_MS);
      }
    }
  }

  /** Starts every job pending in the group (any consumer's), a window at a time. */
  private async claimPending(): Promise<void> {
    const { redis, stream, group, consumer } = this.opts;
    let cursor = '0-0';
    do {
      await this.slots();
      const reply = await redis.xautoclaim(stream, group, consumer, 0, cursor, 'COUNT', this.free());
      reportDeleted(reply, { stream, group }, this.opts.log, this.opts.metrics);
      cursor = typeof reply[0] === 'string' ? reply[0] : '0-0';
      for (const entry of toEntries(reply[1])) if (!this.runningIds.has(entry.id)) this.launch(entry);
    } while (cursor !== '0-0' && !this.loop.stopping);
  }

  private async readMore(): Promise<void> {
    const { stream, group, consumer, blockMs } = this.opts;
    await this.slots();
    if (this.loop.stopping) return;
    const reply = (await this.loop.read(blockMs, (blocking) =>
      blocking.xreadgroup('GROUP', group, consumer, 'COUNT', this.free(), 'BLOCK', blockMs, 'STREAMS', stream, '>'),
    )) as [string, unknown][] | null;
    for (const entry of toEntries(reply?.[0]?.[1])) this.launch(entry);
  }

  private launch(entry: StreamEntry): void {
    const job: Promise<void> = this.opts
      .run(entry)
      .catch((err: unknown) => {
        // Pending still: claimed again before the next read, or by the partition's next owner.
        this.opts.log.warn('dispatch job failed; it stays pending', { stream: this.opts.stream, entry: entry.id, err });
        this.reclaim = true;
      })
      .finally(() => {
        this.running.delete(job);
        this.runningIds.delete(entry.id);
        this.freed?.();
      });
    this.running.add(job);
    this.runningIds.add(entry.id);
  }

  private free(): number {
    return Math.max(1, this.opts.window - this.running.size);
  }

  /**
   * Resolves once a quarter of the window is free (or the loop stops): under load, jobs finish one
   * at a time, and a read per finished job cost more than the job's own Redis calls.
   */
  private async slots(): Promise<void> {
    const busy = this.opts.window - Math.max(1, Math.floor(this.opts.window / 4));
    while (this.running.size > busy && !this.loop.stopping) {
      await new Promise<void>((resolve) => (this.freed = resolve));
    }
  }
}
