import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import type { RedisClient } from '../redis.ts';
import { ensureGroup, reportDeleted } from './consumer-loop.ts';
import type { GroupReader, ReaderMember } from './group-reader.ts';
import type { PartitionWork } from './partition-runner.ts';
import { toEntries, type PartitionHandler, type StreamEntry } from './types.ts';

export interface PartitionConsumerOptions {
  /** Shared client for non-blocking commands. */
  redis: RedisClient;
  /** Reads this partition's stream along with the worker's other partitions (group and consumer). */
  reader: GroupReader;
  /** The partition's ingest stream. */
  stream: string;
  partition: number;
  group: string;
  /** Consumer name in the group: the worker id. */
  consumer: string;
  /** Most entries claimed and applied at once (APPLY_BATCH). */
  batchSize: number;
  handler: PartitionHandler;
  log: Logger;
  metrics: Pick<Metrics, 'lostEntries'>;
  /** Called once when an apply is fenced: another worker owns the partition now. */
  onLost(): void;
}

/**
 * Consumes one owned partition's ingest stream through consumer group `group`, one batch in
 * flight; the process's GroupReader reads it with the worker's other partitions. It claims the
 * group's pending entries on start and whenever a read may have left some behind
 * (docs/architecture.md, "Consumer groups and pending entries").
 */
export class PartitionConsumer implements PartitionWork, ReaderMember {
  private stopped = false;
  private leaving: Promise<void> | undefined;

  constructor(private readonly opts: PartitionConsumerOptions) {}

  get partition(): number {
    return this.opts.partition;
  }

  get stream(): string {
    return this.opts.stream;
  }

  start(): void {
    this.opts.reader.join(this);
  }

  /** Stops after the batch in flight (entries of a read in flight stay pending). */
  stop(): Promise<void> {
    this.stopped = true;
    this.leaving ??= this.opts.reader.leave(this);
    return this.leaving;
  }

  async prepare(): Promise<boolean> {
    const { redis, stream, group, partition } = this.opts;
    return this.guard(async () => {
      await ensureGroup(redis, stream, group);
      await this.opts.handler.open(partition);
      await this.claimPending();
    });
  }

  take(entries: StreamEntry[]): Promise<boolean> {
    return this.guard(async () => {
      const left = await this.applyInOrder(entries);
      if (left !== false && left > 0) await this.claimPending();
    });
  }

  private async guard(work: () => Promise<void>): Promise<boolean> {
    try {
      await work();
      return true;
    } catch (err) {
      if (!this.stopped) this.opts.log.warn('partition consumer error', { partition: this.opts.partition, err });
      return false;
    }
  }

  /** Applies every entry pending in the group (any consumer's), in ID order, before reading on. */
  private async claimPending(): Promise<void> {
    const { redis, stream, group, consumer, batchSize } = this.opts;
    let cursor = '0-0';
    do {
      const reply = await redis.xautoclaim(stream, group, consumer, 0, cursor, 'COUNT', batchSize);
      reportDeleted(reply, { stream, group }, this.opts.log, this.opts.metrics);
      cursor = typeof reply[0] === 'string' ? reply[0] : '0-0';
      const entries = toEntries(reply[1]);
      if (entries.length > 0 && (await this.applyInOrder(entries)) === false) return;
    } while (cursor !== '0-0' && !this.stopped);
  }

  /**
   * Applies a batch. On a gap (entries this batch skips over were read by a former owner), applies
   * the stream's own entries after the last applied ID first, then the batch again.
   * Returns how many entries the group still has pending after the batch, or false when the lease
   * is lost.
   */
  private async applyInOrder(batch: StreamEntry[]): Promise<number | false> {
    const { redis, stream, batchSize, handler, partition } = this.opts;
    let entries = batch;
    for (;;) {
      const outcome = await handler.apply(partition, entries);
      if (outcome.kind === 'lost') {
        if (!this.stopped) this.opts.onLost();
        this.stopped = true;
        return false;
      }
      if (outcome.kind === 'applied') {
        if (entries === batch) return outcome.pending ?? 0;
        entries = batch;
        continue;
      }
      const lastId = batch[batch.length - 1]?.id ?? '+';
      const missing = toEntries(await redis.xrange(stream, `(${outcome.after}`, lastId, 'COUNT', batchSize));
      if (missing.length === 0) throw new Error(`apply reported a gap after ${outcome.after} but the stream has nothing there`);
      entries = missing;
    }
  }
}
