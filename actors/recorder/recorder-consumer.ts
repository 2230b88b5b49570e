import type { Logger } from '../../engine/log.ts';
import type { Metrics } from '../../engine/metrics.ts';
import type { RedisClient } from '../../engine/redis.ts';
import { scripts } from '../../engine/scripts.ts';
import type { LeaseView, PartitionWork } from '../../engine/runner/partition-runner.ts';
import { ConsumerLoop, ensureGroup, reportDeleted } from '../../engine/runner/consumer-loop.ts';
import { toRawEntries, type RawStreamEntry } from '../../engine/runner/types.ts';
import type { EntryBudget } from './entry-budget.ts';
import { RECORDER_GROUP, RecorderLimits } from './limits.ts';
import type { RecorderSink, StreamKind } from './sink.ts';

export interface RecorderConsumerOptions {
  /** Shared client for non-blocking commands. */
  redis: RedisClient;
  partition: number;
  /** The partition's changes and outcomes streams (same hash tag, so one read serves both). */
  streams: Record<StreamKind, string>;
  /** Consumer name in the group: the worker id. */
  consumer: string;
  sink: Pick<RecorderSink, 'record'>;
  /** Shared by the process's partitions: entries read and not yet inserted. */
  budget: EntryBudget;
  /** The partition's lease: nothing is read or inserted unless it surely outlasts the command. */
  lease: LeaseView;
  log: Logger;
  metrics: Pick<Metrics, 'lostEntries'>;
  limits?: Readonly<RecorderLimits>;
}

interface Batch {
  entries: RawStreamEntry[];
  /** When the first entry arrived (ms); the batch is due `lingerMs` later. */
  since: number;
  /** Set once an insert of it was tried: from then on its entries, and so its token, are fixed. */
  tried?: boolean;
}

const kinds: readonly StreamKind[] = ['changes', 'outcomes'];

/**
 * Records one owned partition's changes and outcomes streams into ClickHouse (consumer group
 * "recorder"), a batch per stream. Nothing is read while a batch is inserted, so after a crash the
 * pending entries are exactly that batch, inserted again under the same token; see
 * docs/architecture.md, "The recorder".
 */
export class RecorderConsumer implements PartitionWork {
  private readonly limits: Readonly<RecorderLimits>;
  private readonly batches = new Map<StreamKind, Batch>();
  /** Entries of the batches that hold budget (EntryBudget): read while the streams had more. */
  private held = 0;
  /** Set when the pending list may hold entries no batch holds: they are claimed before reading on. */
  private resync = true;
  private readonly loop: ConsumerLoop;
  private done: Promise<void> = Promise.resolve();

  constructor(private readonly opts: RecorderConsumerOptions) {
    this.limits = opts.limits ?? RecorderLimits;
    this.loop = new ConsumerLoop(opts.redis);
  }

  start(): void {
    this.done = this.loop.run(() => this.run());
  }

  /** Inserts what is batched (a blocked read is abandoned), then stops. */
  stop(): Promise<void> {
    this.loop.stop();
    return this.done;
  }

  private async run(): Promise<void> {
    const { log, partition } = this.opts;
    while (!this.loop.stopping) {
      try {
        // A tried batch is settled first, with its own token; it is due, so nothing is read meanwhile.
        if (this.resync && ![...this.batches.values()].some((b) => b.tried)) {
          this.batches.clear();
          this.releaseBudget();
          for (const kind of kinds) await this.claimPending(kind);
          this.resync = false;
        }
        await this.readOnce();
        await this.flushDue(Date.now());
      } catch (err) {
        if (this.loop.stopping) break;
        log.warn('recorder consumer error', { partition, err });
        await this.loop.pause(this.limits.retryMs);
      }
    }
    await this.flushAll();
  }

  /** Inserts every entry pending in the group for this stream, whoever read it, one batch at a time. */
  private async claimPending(kind: StreamKind): Promise<void> {
    const { redis, streams, consumer, log, metrics } = this.opts;
    await ensureGroup(redis, streams[kind], RECORDER_GROUP);
    let cursor = '0-0';
    do {
      const reply = (await redis.xautoclaimBuffer(streams[kind], RECORDER_GROUP, consumer, 0, cursor, 'COUNT', this.limits.maxBatch)) as unknown[];
      reportDeleted(reply, { stream: streams[kind], group: RECORDER_GROUP }, log, metrics);
      cursor = Buffer.isBuffer(reply[0]) ? reply[0].toString('latin1') : '0-0';
      const entries = toRawEntries(reply[1]);
      if (entries.length > 0) await this.flush(kind, entries);
    } while (cursor !== '0-0' && !this.loop.stopping);
  }

  /**
   * Reads what is there of both streams, at most up to a full batch and what the process's budget
   * allows; when nothing is there, waits for the next entry until the next batch is due. The wait
   * holds no budget, so idle partitions never keep busy ones from reading. Values stay bytes
   * (xreadgroupBuffer): outcomes go to ClickHouse without being decoded.
   */
  private async readOnce(): Promise<void> {
    const left = this.opts.lease.remainingMs();
    if (left <= 0) {
      // Renewed at the runner's next round, or dropped; what is read now could be the next owner's.
      await this.loop.pause(this.limits.retryMs);
      return;
    }
    const now = Date.now();
    let room = this.limits.maxBatch;
    let wait = this.limits.lingerMs;
    for (const batch of this.batches.values()) {
      room = Math.min(room, this.limits.maxBatch - batch.entries.length);
      wait = Math.min(wait, batch.since + this.limits.lingerMs - now);
    }
    if (room <= 0 || wait <= 0) return;
    const count = this.opts.budget.take(room);
    if (count === 0) {
      await this.loop.pause(this.limits.budgetWaitMs);
      return;
    }
    let received = 0;
    try {
      received = await this.read(count);
    } finally {
      this.opts.budget.give(count - received);
    }
    this.held += received;
    // The streams are drained for now: the batches wait for more entries until they are due, and
    // entries waiting so hold no budget, or a backlog in other partitions would wait on them.
    if (received < count) this.releaseBudget();
    if (received === 0) await this.read(1, Math.min(wait, left));
  }

  /** Gives back the budget of the entries this partition holds. */
  private releaseBudget(): void {
    this.opts.budget.give(this.held);
    this.held = 0;
  }

  /** One XREADGROUP of both streams (blocking up to `blockMs` when given); returns how many entries it added to the batches. */
  private async read(count: number, blockMs?: number): Promise<number> {
    const { streams, consumer } = this.opts;
    const block = blockMs === undefined ? [] : ['BLOCK', blockMs];
    let reply: [Buffer, unknown][] | null;
    try {
      reply = (await this.loop.read(blockMs ?? 0, (blocking) =>
        blocking.xreadgroupBuffer('GROUP', RECORDER_GROUP, consumer, 'COUNT', count, ...block, 'STREAMS', streams.changes, streams.outcomes, '>', '>'),
      )) as [Buffer, unknown][] | null;
    } catch (err) {
      this.resync = true;
      throw err;
    }
    const arrived = Date.now();
    let received = 0;
    for (const [stream, items] of reply ?? []) {
      const name = stream.toString('utf8');
      const kind = kinds.find((k) => streams[k] === name);
      const entries = toRawEntries(items);
      if (kind === undefined || entries.length === 0) continue;
      received += entries.length;
      const batch = this.batches.get(kind);
      if (batch) batch.entries.push(...entries);
      else this.batches.set(kind, { entries, since: arrived });
    }
    return received;
  }

  private async flushDue(now: number): Promise<void> {
    if (this.opts.lease.remainingMs() <= 0) return;
    for (const [kind, batch] of [...this.batches]) {
      if (batch.entries.length >= this.limits.maxBatch || now - batch.since >= this.limits.lingerMs) {
        batch.tried = true;
        const pending = await this.flush(kind, batch.entries);
        this.batches.delete(kind);
        this.releaseBudget();
        if (pending > 0) {
          this.opts.log.warn('recorder found entries pending that no batch holds; claiming them', { partition: this.opts.partition, stream: kind, pending });
          this.resync = true;
          return;
        }
      }
    }
  }

  /** On stop: inserts what is batched; a batch that fails stays pending for the next owner. */
  private async flushAll(): Promise<void> {
    for (const [kind, batch] of [...this.batches]) {
      try {
        await this.flush(kind, batch.entries);
      } catch (err) {
        this.opts.log.warn('recorder batch left pending at stop', { partition: this.opts.partition, stream: kind, err });
      }
      this.batches.delete(kind);
      this.releaseBudget();
    }
  }

  /**
   * Inserts a batch (retrying until it is taken, the consumer stops or the lease may have lapsed),
   * then acks and trims; returns how many entries the group still has pending in the stream.
   */
  private async flush(kind: StreamKind, entries: RawStreamEntry[]): Promise<number> {
    const { redis, streams, sink, log, partition } = this.opts;
    const first = entries[0]?.id;
    const last = entries.at(-1)?.id;
    if (first === undefined || last === undefined) return 0;
    const stream = streams[kind];
    const token = `${stream}|${first}|${last}`;
    for (;;) {
      if (this.opts.lease.remainingMs() <= 0) throw new Error('the lease may have lapsed: the batch stays pending for the next owner');
      try {
        await sink.record(kind, entries, token);
        break;
      } catch (err) {
        if (this.loop.stopping) throw err;
        log.warn('recorder insert failed; retrying', { partition, stream: kind, entries: entries.length, err });
        await this.loop.pause(this.limits.retryMs);
      }
    }
    const { pending } = await scripts.settleBatch(redis, {
      keys: { stream },
      args: { group: RECORDER_GROUP, lastId: last },
      ids: entries.map((e) => e.id),
    });
    return pending;
  }
}
