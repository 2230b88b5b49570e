import type { Logger } from '../../engine/infra/process/log.ts';
import type { Metrics } from '../../engine/infra/process/metrics.ts';
import type { RedisClient } from '../../engine/infra/redis/client.ts';
import type { LeaseView, PartitionWork } from '../../engine/infra/runner/partition-runner.ts';
import { ConsumerLoop } from '../../engine/infra/runner/consumer-loop.ts';
import type { RawStreamEntry } from '../../engine/infra/runner/types.ts';
import type { EntryBudget } from './entry-budget.ts';
import { RECORDER_GROUP } from '../../engine/infra/redis/topology.ts';
import { RecorderLimits } from './limits.ts';
import type { QuietWatch, QuietHolder } from './quiet-watch.ts';
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
  /** Shared by the process's partitions: has held batches go early when their streams go quiet. Without it, batches wait for their time. */
  quiet?: Pick<QuietWatch, 'hold' | 'release'>;
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
export class RecorderConsumer implements PartitionWork, QuietHolder {
  private readonly limits: Readonly<RecorderLimits>;
  private readonly batches = new Map<StreamKind, Batch>();
  /** Entries of the batches that hold budget (EntryBudget): read while the streams had more. */
  private held = 0;
  /** The last read found fewer entries than it asked for: the next asks for probeBatch, not a whole batch. */
  private drained = true;
  /** The last wait for an entry ended with none: the streams are idle, so the next turn waits again without a look first. */
  private quiet = false;
  /** The streams of the batches held went quiet (QuietWatch): the batches are due now. */
  private hurried = false;
  private readonly loop: ConsumerLoop;
  private done: Promise<void> = Promise.resolve();

  constructor(private readonly opts: RecorderConsumerOptions) {
    this.limits = opts.limits ?? RecorderLimits;
    const { redis, consumer, log, metrics, partition } = opts;
    this.loop = new ConsumerLoop({ redis, group: RECORDER_GROUP, consumer, log, metrics, fields: { partition }, retryMs: this.limits.retryMs });
  }

  start(): void {
    this.done = this.loop
      .run({
        recover: () => this.recover(),
        turn: async () => {
          await this.readOnce();
          await this.flushDue(Date.now());
        },
      })
      .then(() => this.flushAll());
  }

  /** Inserts what is batched (a blocked read is abandoned), then stops. */
  stop(): Promise<void> {
    this.opts.quiet?.release(this);
    this.loop.stop();
    return this.done;
  }

  /** The streams went quiet: the batches held are read to the end and inserted now. */
  hurry(): void {
    this.hurried = true;
    this.loop.wake();
  }

  /**
   * Starts again from what Redis holds: the batches read are dropped, each stream's round in flight
   * (if a crash or a failure left one) is recovered, and every entry pending in the group, whoever
   * read it, is inserted, a batch at a time. A lapsed owner neither claims nor recovers: it waits for
   * the runner to renew its lease, or to drop the partition.
   */
  private async recover(): Promise<void> {
    const { partition, streams, rounds } = this.opts;
    while (this.opts.lease.remainingMs() <= 0 && !this.loop.stopping) await this.loop.pause(this.limits.retryMs);
    this.batches.clear();
    this.releaseBudget();
    for (const kind of kinds) {
      await rounds.recover(partition, kind, streams[kind]);
      await this.loop.ensureGroup(streams[kind]);
      await this.loop.claimRaw(streams[kind], { count: () => this.limits.maxBatch }, async (entries) => {
        if ((await this.flush(kind, entries)) === null) throw new Error('claimed entries were not recorded');
      });
    }
  }

  /**
   * Reads what is there of both streams, at most up to a full batch and what the process's budget
   * allows (probeBatch while the streams keep up); when nothing is there, waits for the next entry
   * until the next batch is due. While the streams keep up, a partition with a batch looks again
   * only when the batch falls due: a read an entry would cost more than the entry. The waits hold
   * no budget, so idle partitions never keep busy ones from reading. Once a wait ended with
   * nothing, an idle partition only waits (one read a linger period, not two) until an entry
   * comes. Values stay bytes (xreadgroupBuffer): outcomes go to ClickHouse without being decoded.
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
    if (this.quiet && this.batches.size === 0) {
      this.quiet = (await this.read(1, Math.min(wait, left))) === 0;
      return;
    }
    if (this.drained && this.batches.size > 0) {
      // The streams keep up: what comes before the batch falls due is read in one look then, or
      // sooner when the streams of the process's held batches all go quiet.
      if (!this.hurried) {
        this.opts.quiet?.hold(this, [...this.batches.keys()].map((kind) => this.opts.streams[kind]));
        await this.loop.pause(wait);
        this.opts.quiet?.release(this);
      }
      if (this.loop.stopping || this.opts.lease.remainingMs() <= 0) return;
      wait = 0;
    }
    const count = this.opts.budget.take(this.drained ? Math.min(room, this.limits.probeBatch) : room);
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
    this.drained = received < count;
    // The streams are drained for now: the batches wait for more entries until they are due, and
    // entries waiting so hold no budget, or a backlog in other partitions would wait on them.
    if (received < count) this.releaseBudget();
    if (received === 0 && wait > 0) this.quiet = (await this.read(1, Math.min(wait, left))) === 0;
  }

  /** Gives back the budget of the entries this partition holds. */
  private releaseBudget(): void {
    this.opts.budget.give(this.held);
    this.held = 0;
  }

  /** One group read of both streams (blocking up to `blockMs` when given); returns how many entries it added to the batches. */
  private async read(count: number, blockMs?: number): Promise<number> {
    const { streams } = this.opts;
    const read = await this.loop.readRaw([streams.changes, streams.outcomes], count, blockMs);
    const arrived = Date.now();
    let received = 0;
    for (const [name, entries] of read) {
      const kind = kinds.find((k) => streams[k] === name);
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
    const due = [...this.batches].filter(([, b]) => this.hurried || b.entries.length >= this.limits.maxBatch || now >= b.due);
    this.hurried = false;
    if (due.length === 0) return;
    const pending = await Promise.all(due.map(([kind, batch]) => this.flush(kind, batch.entries)));
    for (const [kind] of due) this.batches.delete(kind);
    this.releaseBudget();
    if (pending.some((p) => p === null)) {
      // Not inserted, or inserted but not settled: the batches go again through recovery.
      this.loop.recoverSoon();
    } else if (pending.some((p) => (p ?? 0) > 0)) {
      this.opts.log.warn('recorder found entries pending that no batch holds; claiming them', { partition: this.opts.partition, pending: Math.max(...pending.map((p) => p ?? 0)) });
      this.loop.recoverSoon();
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
