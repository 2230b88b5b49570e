import type { RedisClient } from '../../infra/redis/client.ts';
import { SlotBatch } from '../../infra/redis/tick-batch.ts';
import { APPLY_GROUP, type Topology } from '../../infra/redis/topology.ts';
import { scripts } from '../../infra/scripts/registry.ts';
import type { ApplyEntry, ApplyReply } from '../../infra/scripts/apply-batch.ts';
import { ReceiptKinds, SubscriptionTypes } from '../../../schemas/sdk.ts';
import { ApplyLimits } from './limits.ts';
import { UserKeys } from './redis-keys.ts';

/** What an ingest entry may name, as applyBatch checks it: the schemas' lists, given to the script. */
const subscriptionTypesJson = JSON.stringify(SubscriptionTypes);
const receiptKindsJson = JSON.stringify(ReceiptKinds);

/** What the caller asks the call to read besides the batch: each costs a command per call. */
export interface ApplyChecks {
  /** Read the outbox's length although the batch registers nothing: the last settlement is not known to have gone through. */
  readOutbox: boolean;
  /** Trim the stream if it is long: asked every few hundred entries. */
  mayTrim: boolean;
}

/** One partition's batch of an apply round. */
export interface PartitionEntries {
  partition: number;
  entries: readonly ApplyEntry[];
  checks: ApplyChecks;
}

/**
 * Applies batches of ingest entries of several partitions to their users' state with one call of
 * engine/infra/scripts/lua/applyBatch-n.lua, each fenced by its partition's lease held by
 * `worker`, deduplicated by stream ID and by the idempotency window, acknowledged and trimmed in
 * the same call (docs/architecture.md, "The apply"). On a Redis Cluster the partitions must share
 * a slot: the caller sends one partition a call. The replies are in the order of `batches`.
 */
export function applyEntries(redis: RedisClient, topology: Topology, worker: string, batches: readonly PartitionEntries[]): Promise<ApplyReply[]> {
  return scripts.applyBatch(redis, {
    keys: {},
    args: {
      worker,
      subscriptionTypes: subscriptionTypesJson,
      receiptKinds: receiptKindsJson,
      group: APPLY_GROUP,
      idempotencyMs: ApplyLimits.idempotencyMs,
      maxTags: ApplyLimits.maxTags,
      maxSubscriptions: ApplyLimits.maxSubscriptions,
      windowMs: ApplyLimits.idempotencyWindowMs,
      batches: JSON.stringify(
        batches.map(({ partition, entries, checks }) => ({
          prefixes: topology.own(UserKeys).applyKeyPrefixes(partition),
          readOutbox: checks.readOutbox,
          mayTrim: checks.mayTrim,
          count: entries.length,
        })),
      ),
    },
    batches: batches.map(({ partition, entries }) => ({
      keys: {
        lease: topology.lease(partition),
        applied: topology.applied(partition),
        ingest: topology.ingest(partition),
        changes: topology.changes(partition),
        outbox: topology.outbox(partition),
      },
      entries,
    })),
  });
}

/** Most partitions in one call: a round of a worker holding many still goes in a few. */
const MOST_PARTITIONS_PER_CALL = 64;

/**
 * The applies of one worker, gathered per turn of the event loop: the batches its apply round
 * hands over together go in one call on one Redis, so what a call costs apart from its entries
 * is paid once a round rather than once a partition (docs/performance.md, "Batches end to end").
 * On a Redis Cluster each partition goes in a call of its own (its keys are in its own slot).
 */
export class ApplyRounds {
  private readonly batch: SlotBatch<PartitionEntries, ApplyReply>;

  constructor(redis: RedisClient, topology: Topology, worker: string) {
    this.batch = new SlotBatch(redis, MOST_PARTITIONS_PER_CALL, (items) => applyEntries(redis, topology, worker, items));
  }

  apply(partition: number, entries: readonly ApplyEntry[], checks: ApplyChecks): Promise<ApplyReply> {
    return this.batch.add(String(partition), { partition, entries, checks });
  }
}
