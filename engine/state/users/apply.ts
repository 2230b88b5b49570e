import type { RedisClient } from '../../infra/redis/client.ts';
import { APPLY_GROUP, type Topology } from '../../infra/redis/topology.ts';
import { scripts } from '../../infra/scripts/registry.ts';
import type { ApplyEntry } from '../../infra/scripts/apply-batch.ts';
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

/**
 * Applies a batch of partition N's ingest entries to its users' state with one call of
 * engine/infra/scripts/lua/applyBatch-5.lua, fenced by the partition's lease held by `worker`,
 * deduplicated by stream ID and by the idempotency window, acknowledged and trimmed in the same
 * call (docs/architecture.md, "The apply").
 */
export function applyEntries(
  redis: RedisClient,
  topology: Topology,
  partition: number,
  worker: string,
  entries: readonly ApplyEntry[],
  checks: ApplyChecks,
): ReturnType<typeof scripts.applyBatch> {
  return scripts.applyBatch(redis, {
    keys: {
      lease: topology.lease(partition),
      applied: topology.applied(partition),
      ingest: topology.ingest(partition),
      changes: topology.changes(partition),
      outbox: topology.outbox(partition),
    },
    args: {
      worker,
      keyPrefixes: JSON.stringify(topology.own(UserKeys).applyKeyPrefixes(partition)),
      subscriptionTypes: subscriptionTypesJson,
      receiptKinds: receiptKindsJson,
      group: APPLY_GROUP,
      idempotencyMs: ApplyLimits.idempotencyMs,
      maxTags: ApplyLimits.maxTags,
      maxSubscriptions: ApplyLimits.maxSubscriptions,
      windowMs: ApplyLimits.idempotencyWindowMs,
      readOutbox: checks.readOutbox ? '1' : '0',
      mayTrim: checks.mayTrim ? '1' : '0',
    },
    entries,
  });
}
