import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import type { RedisClient } from '../redis.ts';
import { ConsumerLoop, ensureGroup, reportDeleted } from './consumer-loop.ts';
import type { PartitionWork } from './partition-runner.ts';
import { toEntries, type PartitionHandler, type StreamEntry } from './types.ts';

export interface PartitionConsumerOptions {
  /** Shared client for non-blocking commands. */
  redis: RedisClient;
  /** The partition's ingest stream. */
  stream: string;
  partition: number;
  group: string;
  /** Consumer name in the group: the worker id. */
  consumer: string;
  /** Most entries read and applied at once (APPLY_BATCH). */
  batchSize: number;
  /** After a batch shorter than batchSize, the wait before the next read, ms (0: none). */
  lingerMs?: number;
  /** Longest a read blocks, ms; bounds how long a stop waits while idle. */
  blockMs: number;
  handler: PartitionHandler;
  log: Logger;
  metrics: Pick<Metrics, 'lostEntries'>;
  /** Called once when an apply is fenced: another worker owns the partition now. */
  onLost(): void;
}

const RETRY_MS = 500;

/**
 * Consumes one owned partition's ingest stream through consumer group `group`, one batch in
 * flight. It claims the group's pending entries on start and whenever a read may have left some
 * behind (docs/architecture.md, "Consumer groups and pending entries").
 */
export class PartitionConsumer implements PartitionWork {
  private readonly loop: ConsumerLoop;
  private done: Promise<void> = Promise.resolve();

  constructor(private readonly opts: PartitionConsumerOptions) {
    this.loop = new ConsumerLoop(opts.redis);
  }

  start(): void {
    this.done = this.loop.run(() => this.run());
  }

  /** Stops after the batch in flight (a blocked read is abandoned; its entries stay pending). */
  stop(): Promise<void> {
    this.loop.stop();
    return this.done;
  }

  private async run(): Promise<void> {
    const { redis, stream, group, log, partition } = this.opts;
    while (!this.loop.stopping) {
      try {
        await ensureGroup(redis, stream, group);
        await this.opts.handler.open(partition);
        await this.claimPending();
        while (!this.loop.stopping) await this.readAndApply();
      } catch (err) {
        if (this.loop.stopping) break;
        log.warn('partition consumer error', { partition, err });
        await this.loop.pause(RETRY_MS);
      }
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
    } while (cursor !== '0-0' && !this.loop.stopping);
  }

  private async readAndApply(): Promise<void> {
    const { stream, group, consumer, batchSize, blockMs } = this.opts;
    const reply = (await this.loop.read(blockMs, (blocking) =>
      blocking.xreadgroup('GROUP', group, consumer, 'COUNT', batchSize, 'BLOCK', blockMs, 'STREAMS', stream, '>'),
    )) as [string, unknown][] | null;
    const entries = toEntries(reply?.[0]?.[1]);
    if (entries.length === 0) return;
    const left = await this.applyInOrder(entries);
    if (left !== false && left > 0) await this.claimPending();
    // Each read and apply has a fixed cost; waiting a little when the stream ran dry lets the
    // next batch hold what arrives meanwhile, so batches grow with load.
    const linger = this.opts.lingerMs ?? 0;
    if (linger > 0 && entries.length < batchSize) await this.loop.pause(linger);
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
        this.loop.stop();
        this.opts.onLost();
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
