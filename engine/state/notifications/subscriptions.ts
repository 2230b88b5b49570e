import { errorItem } from '../../infra/validation/ajv-errors.ts';
import type { RedisClient } from '../../infra/redis/client.ts';
import { parseSubscription, readHashes } from '../users/read-user.ts';
import { fieldOf, type SubscriptionRef } from '../users/subscription-ids.ts';
import { TokenIndex } from '../users/token-index.ts';
import type { Topology } from '../../infra/redis/topology.ts';
import { CallerError } from '../../../schemas/errors.ts';
import { channelOf, type Channel } from '../../../schemas/outcomes.ts';

/** Subscriptions targeted by id (docs/api.md#targeting), resolved to their owners at create time. */
export interface SubscriptionsReach {
  channel: Channel;
  /** The owners of the ids that are live subscriptions of the channel, each once. */
  owners: string[];
  /** Each owner's targeted subscriptions (`TYPE:token`); no prototype, as owners are any text. */
  subscriptions: Record<string, string[]>;
  /** Ids of no live subscription (of the channel, when one was given), each once. */
  invalid: string[];
}

/**
 * Resolves subscription ids to their subscriptions through the token index, then as reachOfRefs.
 */
export async function reachOfIds(redis: RedisClient, topology: Topology, project: string, channel: Channel | undefined, ids: readonly string[], path: string): Promise<SubscriptionsReach> {
  const unique = [...new Set(ids)];
  const refs = await new TokenIndex(redis, topology).resolve(project, unique);
  return reachOfRefs(redis, topology, project, channel, unique.map((name, i) => ({ name, ref: refs[i] ?? null })), path);
}

/**
 * The current owners of subscriptions named by type and token (`name` is what the answer lists
 * when one is not found): the token index, then the owner's record (each one
 * auto-pipelined round). A subscription counts when its owner holds it live now. Without
 * `channel`, the subscriptions' types give it; several channels are a CallerError naming `path`.
 */
export async function reachOfRefs(
  redis: RedisClient,
  topology: Topology,
  project: string,
  channel: Channel | undefined,
  named: readonly { name: string; ref: SubscriptionRef | null }[],
  path: string,
): Promise<SubscriptionsReach> {
  const tokens = new TokenIndex(redis, topology);
  const owners = await Promise.all(named.map(({ ref }) => (ref === null ? null : tokens.owner(project, ref))));
  const held = await liveOf(redis, topology, project, owners);
  const live = named.map(({ ref }, i) => {
    const owner = owners[i] ?? null;
    return ref !== null && owner !== null && held.get(owner)?.has(fieldOf(ref)) === true ? { ref, owner } : null;
  });
  const chosen = channel ?? onlyChannel(live, path);
  const reach: SubscriptionsReach = { channel: chosen, owners: [], subscriptions: Object.create(null) as Record<string, string[]>, invalid: [] };
  const seen = new Set<string>();
  live.forEach((found, i) => {
    if (found === null || channelOf[found.ref.type] !== chosen) return reach.invalid.push(named[i]?.name ?? '');
    const field = fieldOf(found.ref);
    // Two names of one subscription (an id listed twice, a token listed under two fields) send once.
    if (seen.has(`${found.owner}\0${field}`)) return;
    seen.add(`${found.owner}\0${field}`);
    const fields = reach.subscriptions[found.owner];
    if (fields === undefined) {
      reach.owners.push(found.owner);
      reach.subscriptions[found.owner] = [field];
    } else fields.push(field);
  });
  return reach;
}

/** The fields of each owner's live subscriptions, read once per owner. */
async function liveOf(redis: RedisClient, topology: Topology, project: string, owners: readonly (string | null)[]): Promise<Map<string, Set<string>>> {
  const distinct = [...new Set(owners.filter((o): o is string => o !== null))];
  const hashes = await Promise.all(distinct.map(async (owner) => (await readHashes(redis, topology, project, owner)).subs));
  return new Map(
    distinct.map((owner, i) => {
      const live = Object.entries(hashes[i] ?? {}).filter(([, json]) => parseSubscription(json)?.state === 'live');
      return [owner, new Set(live.map(([field]) => field))];
    }),
  );
}

/** The one channel of the live ids (PUSH when none is); ids of several channels are refused. */
function onlyChannel(live: readonly ({ ref: SubscriptionRef } | null)[], path: string): Channel {
  const channels = [...new Set(live.flatMap((found) => (found === null ? [] : [channelOf[found.ref.type]])))];
  if (channels.length > 1) {
    throw new CallerError('validation_failed', [errorItem(path, `names subscriptions of several channels (${channels.join(', ')}): send one notification per channel, or give target_channel`)]);
  }
  return channels[0] ?? 'PUSH';
}
