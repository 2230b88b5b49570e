import type { Logger } from '../../engine/log.ts';
import type { Metrics } from '../../engine/metrics.ts';
import type { RedisClient } from '../../engine/redis.ts';
import type { LeaseView, PartitionWork } from '../../engine/runner/partition-runner.ts';
import { ConsumerLoop, ensureGroup, reportDeleted } from '../../engine/runner/consumer-loop.ts';
import { toRawEntries, type RawStreamEntry } from '../../engine/runner/types.ts';
import type { EntryBudget } from './entry-budget.ts';
import { RECORDER_GROUP, RecorderLimits } from './limits.ts';
import type { RecordRounds } from './rounds.ts';
import type { StreamKind } from './sink.ts';

export interface RecorderConsumerOptions {
  /** Shared client for non-blocking commands. */
  redis: RedisClient;
  partition: number;
  /** The partition's changes and outcomes streams (same hash tag, so one read serves both). */
  streams: Record<StreamKind, string>;
  /** Consumer name in the group: the worker id. */
  consumer: string;
  /** Shared by the process's partitions: inserts their due batches together. */
  rounds: Pick<RecordRounds, 'record' | 'recover'>;
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
  /** When it falls due (ms): see dueAfter. */
  due: number;
}

const kinds: readonly StreamKind[] = ['changes', 'outcomes'];

/**
 * Records one owned partition's changes and outcomes streams into ClickHouse (consumer group
 * "recorder"), a batch per stream, each inserted in a round with the process's other partitions
 * (RecordRounds). Nothing is read while a batch is in a round, so after a crash the pending
 * entries are exactly that batch, and its partition's mark names the round to insert again; see
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
        if (this.resync && this.opts.lease.remainingMs() <= 0) {
          // Renewed at the runner's next round, or dropped: a lapsed owner neither claims nor recovers.
          await this.loop.pause(this.limits.retryMs);
          continue;
        }
        if (this.resync) {
          this.batches.clear();
          this.releaseBudget();
          for (const kind of kinds) {
            await this.opts.rounds.recover(partition, kind, this.opts.streams[kind]);
            await this.claimPending(kind);
          }
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
      if (entries.length > 0 && (await this.flush(kind, entries)) === null) throw new Error('claimed entries were not recorded');
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
      wait = Math.min(wait, batch.due - now);
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
      else this.batches.set(kind, { entries, due: dueAfter(arrived, this.limits.lingerMs) });
    }
    return received;
  }

  /** Hands every due batch to its round at once (the kinds go to rounds of their own), then settles them. */
  private async flushDue(now: number): Promise<void> {
    if (this.opts.lease.remainingMs() <= 0) return;
    const due = [...this.batches].filter(([, b]) => b.entries.length >= this.limits.maxBatch || now >= b.due);
    if (due.length === 0) return;
    const pending = await Promise.all(due.map(([kind, batch]) => this.flush(kind, batch.entries)));
    for (const [kind] of due) this.batches.delete(kind);
    this.releaseBudget();
    if (pending.some((p) => p === null)) {
      // Not inserted, or inserted but not settled: the batches go again through recovery.
      this.resync = true;
    } else if (pending.some((p) => (p ?? 0) > 0)) {
      this.opts.log.warn('recorder found entries pending that no batch holds; claiming them', { partition: this.opts.partition, pending: Math.max(...pending.map((p) => p ?? 0)) });
      this.resync = true;
    }
  }

  /** On stop: inserts what is batched; a batch that fails stays pending for the next owner. */
  private async flushAll(): Promise<void> {
    await Promise.all([...this.batches].map(([kind, batch]) => this.flush(kind, batch.entries)));
    this.batches.clear();
    this.releaseBudget();
  }

  /**
   * Inserts a batch in a round and settles it; returns how many entries the group still has
   * pending in the stream, or null when the batch was not settled: it stays pending, either
   * untouched or under its round's mark, for recovery (this partition's or the next owner's).
   */
  private async flush(kind: StreamKind, entries: RawStreamEntry[]): Promise<number | null> {
    const { partition, streams, lease, log } = this.opts;
    try {
      return await this.opts.rounds.record({ partition, kind, stream: streams[kind], entries, lease, stopping: () => this.loop.stopping });
    } catch (err) {
      if (!this.loop.stopping) log.warn('recorder batch left pending', { partition, stream: kind, entries: entries.length, err });
      return null;
    }
  }
}

/**
 * When a batch whose first entry arrived at `arrived` falls due: the first multiple of half the
 * linger at least half a linger later. Every partition's batches fall due on the same instants, so
 * they meet in one round, and none waits more than `lingerMs`.
 */
function dueAfter(arrived: number, lingerMs: number): number {
  const half = Math.max(1, Math.floor(lingerMs / 2));
  return Math.ceil((arrived + half) / half) * half;
}
