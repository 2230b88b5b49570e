import type { Logger } from '../../engine/infra/process/log.ts';
import type { Metrics } from '../../engine/infra/process/metrics.ts';
import type { RedisClient } from '../../engine/infra/redis/client.ts';
import type { Topology } from '../../engine/infra/redis/topology.ts';
import { ApplyCode } from '../../engine/infra/scripts/apply-batch.ts';
import { ApplyRounds } from '../../engine/state/users/apply.ts';
import { upgradeLayout, upgradeUsers } from '../../engine/state/users/layout.ts';
import { fieldOf, type BatchOutcome, type PartitionHandler, type StreamEntry } from '../../engine/infra/runner/types.ts';
import type { OutboxSettler } from './outbox-settler.ts';

export interface PartitionActorOptions {
  redis: RedisClient;
  topology: Topology;
  /** Must hold the partition's lease for an apply to write anything. */
  workerId: string;
  settler: OutboxSettler;
  log: Logger;
  metrics: Pick<Metrics, 'appliedEntries'>;
}

/** Entries applied in a partition between two reads of its stream's length (applyBatch trims past 512). */
const TRIM_EVERY = 256;

/**
 * The partition actor: applies a batch of a partition's ingest entries to the
 * user state through its owner (engine/state/users/apply.ts: one script call, fenced by the lease,
 * deduplicated, acknowledged and trimmed in the same call), then settles the subscription
 * registrations the batch left in the partition's outbox.
 */
export class PartitionActor implements PartitionHandler {
  /** The layout upgrade, run once per process before its first partition is applied; again after a failure. */
  private upgraded: Promise<void> | null = null;
  /** Partitions whose outbox may hold registrations not settled: a call or a settlement failed. */
  private readonly unsettled = new Set<number>();
  /** Entries applied per partition since its stream's length was last read, for trimming. */
  private readonly sinceTrim = new Map<number, number>();

  private readonly rounds: ApplyRounds;

  constructor(private readonly opts: PartitionActorOptions) {
    this.rounds = new ApplyRounds(opts.redis, opts.topology, opts.workerId);
  }

  async open(partition: number): Promise<void> {
    const { redis, topology } = this.opts;
    await (this.upgraded ??= upgradeLayout(redis, topology).catch((err: unknown) => {
      this.upgraded = null;
      throw err;
    }));
    await upgradeUsers(redis, topology, partition);
    await this.opts.settler.settle(partition);
  }

  async apply(partition: number, entries: StreamEntry[]): Promise<BatchOutcome> {
    const { log, metrics } = this.opts;
    const entriesIn = entries.map((entry) => ({ id: entry.id, json: fieldOf(entry, 'd') ?? '' }));
    const mayTrim = (this.sinceTrim.get(partition) ?? TRIM_EVERY) >= TRIM_EVERY;
    const readOutbox = this.unsettled.has(partition);
    this.unsettled.add(partition);
    const { code, applied, invalid, appliedId, outbox, pending, registrations } = await this.rounds.apply(partition, entriesIn, { readOutbox, mayTrim });
    switch (code) {
      case ApplyCode.NotOwner:
        return { kind: 'lost' };
      case ApplyCode.Gap:
        return { kind: 'gap', after: appliedId };
      case ApplyCode.Ok:
        break;
    }
    this.sinceTrim.set(partition, mayTrim ? 0 : (this.sinceTrim.get(partition) ?? 0) + entriesIn.length);
    metrics.appliedEntries.inc(applied);
    if (invalid > 0) log.warn('invalid ingest entries skipped', { partition, invalid, appliedId });
    // The outbox was empty before this call when its last settlement went through, so the reply's
    // registrations are all it holds. A call whose reply was lost and that ioredis sent again finds
    // nothing new to apply, yet the first run's registrations wait there: the script reads the
    // outbox's length then, and whenever a call or settlement of this partition failed.
    if (registrations.length > 0) await this.opts.settler.settleEntries(partition, registrations);
    else if (outbox > 0) await this.opts.settler.settle(partition);
    this.unsettled.delete(partition);
    return pending > 0 ? { kind: 'applied', pending } : { kind: 'applied' };
  }
}
