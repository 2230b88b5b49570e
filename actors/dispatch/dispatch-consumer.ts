import type { Logger } from '../../engine/infra/process/log.ts';
import type { Metrics } from '../../engine/infra/process/metrics.ts';
import type { RedisClient } from '../../engine/infra/redis/client.ts';
import { ConsumerLoop } from '../../engine/infra/runner/consumer-loop.ts';
import type { PartitionWork } from '../../engine/infra/runner/partition-runner.ts';
import type { StreamEntry } from '../../engine/infra/runner/types.ts';

export interface DispatchConsumerOptions {
  redis: RedisClient;
  /** The partition's dispatch stream. */
  stream: string;
  group: string;
  /** Consumer name in the group: the worker id. */
  consumer: string;
  /** Most users whose jobs run at once in this partition: the in-flight window a crash may repeat. */
  window: number;
  /** Most users in one job: a read asks for as many jobs as fit the window's free room. */
  usersPerJob: number;
  blockMs: number;
  /** Reads one job: the users it holds, and how to run it. */
  open(entry: StreamEntry): OpenedJob;
  log: Logger;
  metrics: Pick<Metrics, 'lostEntries'>;
}

/** A job read from a dispatch stream. */
export interface OpenedJob {
  /** Its users: its share of the window. */
  users: number;
  /**
   * Runs the job to its record (which acknowledges it); false when the job cannot run at all and
   * is only to be acknowledged. A rejection leaves the job pending, to be claimed again. `stop`
   * aborts when the consumer stops: nothing may wait on Redis past it.
   */
  run(stop: AbortSignal): Promise<boolean>;
}

/**
 * Runs the jobs of one owned partition's dispatch stream with a sliding window of users: new jobs
 * are read as soon as a quarter of the window is free, so a slow send holds one slot, not a whole batch.
 * Jobs left pending (a crashed owner, a failed run, a lost read) are claimed when the consumer
 * recovers: on start, and after every failure (engine/infra/runner/consumer-loop.ts).
 */
export class DispatchConsumer implements PartitionWork {
  private readonly loop: ConsumerLoop;
  private readonly running = new Set<Promise<void>>();
  /** The users of the jobs running. */
  private users = 0;
  /** Stream IDs of the jobs running: a claim of pending jobs must not start them twice. */
  private readonly runningIds = new Set<string>();
  private done: Promise<void> = Promise.resolve();
  private freed: (() => void) | undefined;

  constructor(private readonly opts: DispatchConsumerOptions) {
    const { redis, group, consumer, log, metrics, stream } = opts;
    this.loop = new ConsumerLoop({ redis, group, consumer, log, metrics, fields: { stream } });
  }

  start(): void {
    const { stream, blockMs } = this.opts;
    this.done = this.loop.run({
      recover: async () => {
        await this.loop.ensureGroup(stream);
        await this.slots();
        await this.loop.claim(stream, { count: () => this.readCount() }, async (entries) => {
          for (const entry of entries) if (!this.runningIds.has(entry.id)) this.launch(entry);
          await this.slots();
        });
      },
      turn: async () => {
        await this.slots();
        if (this.loop.stopping) return;
        for (const entry of (await this.loop.read([stream], this.readCount(), blockMs)).get(stream) ?? []) this.launch(entry);
      },
    });
  }

  /** Stops reading, then waits for the jobs in flight. */
  async stop(): Promise<void> {
    this.loop.stop();
    this.freed?.();
    await this.done;
    await Promise.all(this.running);
  }

  private launch(entry: StreamEntry): void {
    const { stream, log } = this.opts;
    const opened = this.opts.open(entry);
    const job: Promise<void> = opened
      .run(this.loop.stopSignal)
      .then(async (ran) => {
        if (!ran) await this.loop.settle(stream, [entry.id]);
      })
      .catch((err: unknown) => {
        // Pending still: claimed again before the next read, or by the partition's next owner.
        log.warn('dispatch job failed; it stays pending', { stream, entry: entry.id, err });
        this.loop.recoverSoon();
      })
      .finally(() => {
        this.running.delete(job);
        this.users -= opened.users;
        this.runningIds.delete(entry.id);
        this.freed?.();
      });
    this.running.add(job);
    this.users += opened.users;
    this.runningIds.add(entry.id);
  }

  /** Jobs to read: as many as fit the window's free room when each holds the most users a job may. */
  private readCount(): number {
    return Math.max(1, Math.floor((this.opts.window - this.users) / this.opts.usersPerJob));
  }

  /**
   * Resolves once a quarter of the window is free (or the loop stops): under load, jobs finish one
   * at a time, and a read per finished job cost more than the job's own Redis calls.
   */
  private async slots(): Promise<void> {
    const busy = this.opts.window - Math.max(1, Math.floor(this.opts.window / 4));
    while (this.users > busy && !this.loop.stopping) {
      await new Promise<void>((resolve) => (this.freed = resolve));
    }
  }
}
