import type { RedisClient } from '../../engine/infra/redis/client.ts';
import { scripts } from '../../engine/infra/scripts/registry.ts';
import type { RecipientKeys, StoredRecipient } from '../../engine/infra/scripts/dispatch.ts';
import { SlotBatch } from '../../engine/infra/redis/tick-batch.ts';

/** Most users in one call: a script holds Redis while it runs, two reads a user. */
const MAX_USERS = 64;

/**
 * Loads the users of dispatch jobs (engine/infra/scripts/lua/loadRecipients-n.lua) with one call for
 * those whose loads start in the same turn of the event loop, whatever their notification (on a
 * Redis Cluster, one call for those of each partition). Only reads: a failed call fails each job,
 * which stays pending.
 */
export class RecipientBatch {
  private readonly batch: SlotBatch<RecipientKeys, StoredRecipient>;

  constructor(redis: RedisClient) {
    this.batch = new SlotBatch(redis, MAX_USERS, (users) => scripts.loadRecipients(redis, { keys: {}, args: {}, users }));
  }

  load(partition: number, keys: RecipientKeys): Promise<StoredRecipient> {
    return this.batch.add(String(partition), keys);
  }
}
