import type { Logger } from '../process/log.ts';
import type { RedisClient } from '../redis/client.ts';
import type { Claims, GroupReader, ReaderMember } from './group-reader.ts';
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
  /** Most entries claimed and applied at once (APPLY_BATCH). */
  batchSize: number;
  handler: PartitionHandler;
  log: Logger;
  /** Called once when an apply is fenced: another worker owns the partition now. */
  onLost(): void;
}

/**
 * Consumes one owned partition's ingest stream through the reader's consumer group, one batch in
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

  async prepare(claims: Claims): Promise<boolean> {
    return this.guard(async () => {
      await claims.ensureGroup(this.opts.stream);
      await this.opts.handler.open(this.opts.partition);
      await this.claimPending(claims);
    });
  }

  take(entries: StreamEntry[], claims: Claims): Promise<boolean> {
    return this.guard(async () => {
      const left = await this.applyInOrder(entries);
      if (left !== false && left > 0) await this.claimPending(claims);
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
  private claimPending(claims: Claims): Promise<void> {
    return claims.claim(this.opts.stream, { count: () => this.opts.batchSize }, async (entries) => (await this.applyInOrder(entries)) !== false && !this.stopped);
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
