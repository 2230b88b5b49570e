import type { RedisClient } from '../../engine/infra/redis/client.ts';
import { scripts } from '../../engine/infra/scripts/registry.ts';
import type { Recipient, RecipientKeys } from '../../engine/infra/scripts/dispatch.ts';
import { TickBatch } from '../../engine/infra/redis/tick-batch.ts';

/** Most users in one call: a script holds Redis while it runs, about seven reads a user. */
const MAX_USERS = 64;

/** What a notification asks of each of its users' loads. */
export interface RecipientQuery {
  /** The channel's subscription types, space-separated. */
  types: string;
  /** 1 for a notification with personal texts: every tag is loaded too. */
  allTags: 0 | 1;
}

/**
 * Loads the users of dispatch jobs (engine/infra/scripts/lua/loadRecipients-n.lua) with one call for those of
 * the same partition and notification whose loads start in the same turn of the event loop: the
 * jobs read together. Only reads: a failed call fails each job, which stays pending.
 */
export class RecipientBatch {
  private readonly batch: TickBatch<RecipientQuery, RecipientKeys, Recipient>;

  constructor(redis: RedisClient) {
    this.batch = new TickBatch(MAX_USERS, (query, users) => scripts.loadRecipients(redis, { keys: {}, args: query, users }));
  }

  load(partition: number, notification: string, query: RecipientQuery, keys: RecipientKeys): Promise<Recipient> {
    return this.batch.add(`${partition}\0${notification}`, query, keys);
  }
}
