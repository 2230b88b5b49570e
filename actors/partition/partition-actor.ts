import type { Logger } from '../../engine/log.ts';
import type { Metrics } from '../../engine/metrics.ts';
import type { RedisClient } from '../../engine/redis.ts';
import type { Topology } from '../../engine/topology.ts';
import { fieldOf, type BatchOutcome, type PartitionHandler, type StreamEntry } from '../../engine/runner/types.ts';
import { ApplyCode } from './apply-code.ts';
import { APPLY_GROUP, ApplyLimits } from './limits.ts';
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

/**
 * The partition actor: applies a batch of a partition's ingest entries to the
 * user state with one call of engine/lua/applyBatch-5.lua (fenced by the lease, deduplicated by
 * stream ID, acknowledged and trimmed in the same call), then settles the subscription
 * registrations the batch left in the partition's outbox.
 */
export class PartitionActor implements PartitionHandler {
  constructor(private readonly opts: PartitionActorOptions) {}

  async open(partition: number): Promise<void> {
    await this.opts.settler.settle(partition);
  }

  async apply(partition: number, entries: StreamEntry[]): Promise<BatchOutcome> {
    const { redis, topology, workerId, log, metrics } = this.opts;
    const args: (string | number)[] = [
      topology.lease(partition),
      topology.applied(partition),
      topology.ingest(partition),
      topology.changes(partition),
      topology.outbox(partition),
      workerId,
      topology.prefix,
      topology.tag(partition),
      APPLY_GROUP,
      ApplyLimits.idempotencyMs,
      ApplyLimits.maxTags,
      ApplyLimits.maxSubscriptions,
    ];
    for (const entry of entries) args.push(entry.id, fieldOf(entry, 'd') ?? '');
    const [code, applied, invalid, appliedId, outbox, pending] = await redis.applyBatch(...args);
    switch (code as ApplyCode) {
      case ApplyCode.NotOwner:
        return { kind: 'lost' };
      case ApplyCode.Gap:
        return { kind: 'gap', after: appliedId };
      case ApplyCode.Ok:
        break;
      default:
        throw new Error(`applyBatch returned unknown code ${code}`);
    }
    metrics.appliedEntries.inc(applied);
    if (invalid > 0) log.warn('invalid ingest entries skipped', { partition, invalid, appliedId });
    // The outbox's length, not this call's registrations: a call whose reply was lost and that
    // ioredis sent again finds nothing new to apply, yet the first run's registrations wait there.
    if (outbox > 0) await this.opts.settler.settle(partition);
    return pending > 0 ? { kind: 'applied', pending } : { kind: 'applied' };
  }
}
