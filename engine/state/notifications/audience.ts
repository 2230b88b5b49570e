import { compileFilters, type CompiledFilters } from '../../infra/clickhouse/filters/compile.ts';
import type { ClickHouse } from '../../infra/clickhouse/client.ts';
import { countAudience } from '../../infra/clickhouse/filters/stream.ts';
import { redriveAudience } from '../../infra/clickhouse/redrive.ts';
import { SegmentStore } from '../segments/store.ts';
import type { RedisClient } from '../../infra/redis/client.ts';
import type { Topology } from '../../infra/redis/topology.ts';
import { readHashes } from '../users/read-user.ts';
import { errorItem } from '../../infra/validation/ajv-errors.ts';
import { CallerError, type ErrorItem } from '../../../schemas/errors.ts';
import type { FilterEntry } from '../../../schemas/filters.ts';
import type { NotificationBody, NotificationSpec } from '../../../schemas/notifications.ts';
import { channelTypes, type Channel } from '../../../schemas/outcomes.ts';
import type { Redrive } from '../../../schemas/redrive.ts';
import { ALL_SEGMENT, type Segment } from '../../../schemas/segments.ts';
import type { StoredSubscription } from '../../../schemas/state.ts';
import type { TokenTarget } from './onesignal.ts';
import { reachOfIds, reachOfRefs, type SubscriptionsReach } from './subscriptions.ts';

/** What resolving an audience reads: Redis (users, subscriptions, segments) and ClickHouse (counts). */
export interface AudienceDeps {
  redis: RedisClient;
  topology: Topology;
  clickhouse: { get(): Promise<ClickHouse> };
}

/** The body's targeting (docs/api.md#targeting): exactly one mode, as checkNotificationBody left it. */
export type TargetingBody = Pick<
  NotificationBody,
  'channel' | 'include_subscription_ids' | 'include_external_user_ids' | 'included_segments' | 'excluded_segments' | 'filters'
>;

/** Who is targeted, on which channel, and how many of them will get a delivery attempt. */
export interface Audience {
  channel: Channel;
  external_ids: string[] | null;
  /** By subscription id: each owner's subscriptions to send to. */
  subscriptions?: Record<string, string[]>;
  included_segments: string[] | null;
  excluded_segments: string[];
  filters: NotificationSpec['filters'];
  recipients: number;
  invalid: string[];
  /** By subscription id: the ids that name no live subscription of the channel. */
  invalidSubscriptions?: string[];
}

/**
 * A notification's audience, resolved once when it is created: the one step that reads who is
 * targeted. The mode decides what is read, each thing once: a re-drive's delivery records
 * (its audience replaces the body's targeting); subscription ids or OneSignal's token lists
 * through the token index (./subscriptions.ts); user ids' subscriptions; the segments named,
 * included and excluded, in one read (an unknown name is a 400 naming each, before ClickHouse is
 * asked); or the filters. Segment and filter audiences are counted in ClickHouse at `now`.
 */
export async function resolveAudience(
  deps: AudienceDeps,
  project: string,
  body: TargetingBody,
  tokens: TokenTarget | null,
  redrive: Redrive | undefined,
  now: number,
): Promise<Audience> {
  const channel = body.channel ?? 'PUSH';
  const none = { channel, external_ids: null, included_segments: null, excluded_segments: [], filters: null, invalid: [] };
  if (redrive !== undefined) {
    // Counted now from the delivery records (docs/api.md#re-drive); fan-out streams them again.
    const recipients = await countAudience(await deps.clickhouse.get(), redriveAudience(project, redrive));
    return { ...none, recipients };
  }
  if (body.include_subscription_ids !== undefined) {
    return bySubscription(none, await reachOfIds(deps.redis, deps.topology, project, body.channel, body.include_subscription_ids, '/include_subscription_ids'));
  }
  if (tokens !== null) {
    // Each (type, token) once, however often listed.
    const named = [
      ...new Map(tokens.refs.map((ref) => [`${ref.type}:${ref.token}`, { name: ref.token, ref }])).values(),
      ...tokens.unreachable.map((name) => ({ name, ref: null })),
    ];
    return bySubscription(none, await reachOfRefs(deps.redis, deps.topology, project, body.channel, named, `/${tokens.fields[0] ?? ''}`));
  }
  if (body.include_external_user_ids !== undefined) {
    const reach = await reachOfUsers(deps.redis, deps.topology, project, channel, body.include_external_user_ids);
    return { ...none, external_ids: reach.ids, recipients: reach.reachable, invalid: reach.invalid };
  }
  if (body.included_segments !== undefined) {
    const includedNames = body.included_segments;
    const excludedNames = body.excluded_segments ?? [];
    const segments = await new SegmentStore(deps.redis, deps.topology).getMany(project, [...includedNames, ...excludedNames].filter((name) => name !== ALL_SEGMENT));
    const included = segmentFilters(segments, includedNames, '/included_segments', channel);
    const excluded = segmentFilters(segments, excludedNames, '/excluded_segments', channel);
    const errors = [...included.errors, ...excluded.errors];
    if (errors.length > 0) throw new CallerError('validation_failed', errors);
    const ch = await deps.clickhouse.get();
    const recipients = await countTargeted(ch, project, channel, union(included.lists), excluded.lists.length > 0 ? union(excluded.lists) : null, now);
    return { ...none, included_segments: [...new Set(includedNames)], excluded_segments: [...new Set(excludedNames)], recipients };
  }
  if (body.filters !== undefined) {
    const ch = await deps.clickhouse.get();
    const recipients = await countTargeted(ch, project, channel, body.filters, null, now);
    return { ...none, filters: body.filters, recipients };
  }
  // checkNotificationBody refuses a body without a targeting mode; kept for callers that did not check.
  throw new CallerError('validation_failed', [errorItem('', 'exactly one targeting mode is required')]);
}

/** By subscription id or token: the owners are the user ids, the channel the one their subscriptions give. */
function bySubscription(none: Omit<Audience, 'recipients'>, reach: SubscriptionsReach): Audience {
  const { owners, subscriptions, invalid } = reach;
  return { ...none, channel: reach.channel, external_ids: owners, subscriptions, recipients: owners.length, invalidSubscriptions: invalid };
}

/** Targeted users split by whether they have a live subscription of the channel. */
interface UsersReach {
  /** The ids, each once, in the order first given. */
  ids: string[];
  reachable: number;
  /** Ids without a live subscription of the channel. */
  invalid: string[];
}

/** Reads each user's subscriptions (one auto-pipelined round of GET) and splits the ids by reach. */
async function reachOfUsers(redis: RedisClient, topology: Topology, project: string, channel: Channel, externalIds: readonly string[]): Promise<UsersReach> {
  const ids = [...new Set(externalIds)];
  const types = new Set<string>(channelTypes[channel]);
  const subs = await Promise.all(ids.map(async (id) => (await readHashes(redis, topology, project, id)).subs));
  const invalid: string[] = [];
  ids.forEach((id, i) => {
    const live = Object.values(subs[i] ?? {}).some((json) => {
      const s = JSON.parse(json) as StoredSubscription;
      return s.state === 'live' && types.has(s.type);
    });
    if (!live) invalid.push(id);
  });
  return { ids, reachable: ids.length - invalid.length, invalid };
}

/**
 * `All` in a notification as a filter list: every user with a live subscription of the
 * notification's channel (docs/api.md#targeting), one OR group per subscription type. The users mirror
 * lists live types only, so this is exactly who will get a delivery attempt.
 */
export function allFiltersOf(channel: Channel): FilterEntry[] {
  return channelTypes[channel].flatMap((type, i): FilterEntry[] => [...(i === 0 ? [] : [{ operator: 'OR' as const }]), { field: 'subscription', type }]);
}

/**
 * The filter lists of the named segments, in the order given, from the segments read (`found`),
 * or an error item for each unknown name (`path` the list in the body); `All` is allFiltersOf(channel).
 */
function segmentFilters(found: ReadonlyMap<string, Segment>, names: readonly string[], path: string, channel: Channel): { lists: FilterEntry[][]; errors: ErrorItem[] } {
  const lists: FilterEntry[][] = [];
  const errors: ErrorItem[] = [];
  names.forEach((name, i) => {
    const filters = name === ALL_SEGMENT ? allFiltersOf(channel) : found.get(name)?.filters;
    if (filters === undefined) errors.push(errorItem(`${path}/${i}`, `no segment named ${JSON.stringify(name)}`));
    else lists.push(filters);
  });
  return { lists, errors };
}

/**
 * The union of several filter lists as one: OR between them is exact because AND binds tighter
 * than OR (docs/api.md#filters-and-segments), so each list's groups stay groups of the union.
 */
export function union(lists: readonly FilterEntry[][]): FilterEntry[] {
  return lists.flatMap((list, i) => (i === 0 ? list : [{ operator: 'OR' as const }, ...list]));
}

/**
 * The users of a filter list who will get a delivery attempt on `channel`: those with a live
 * subscription of one of its types (docs/api.md#targeting, as reachOfUsers counts user ids). A segment
 * or filter may match users the channel cannot reach; they get no job and are no recipient.
 */
export function compileAudience(project: string, filters: readonly FilterEntry[], channel: Channel, nowMs: number): CompiledFilters {
  return compileFilters(project, filters, nowMs, channelTypes[channel]);
}

/**
 * How many users are in `included`, reachable on `channel`, and not in `excluded`, exactly: the
 * excluded audience cannot be written as a filter list (no NOT of a group), so it is a subquery
 * over the audience pages of compileFilters, read whole (after '' and the largest limit). Its
 * placeholders are renamed so the two lists' generated names (v0, v1, ...) do not collide.
 */
async function countTargeted(ch: ClickHouse, project: string, channel: Channel, included: FilterEntry[], excluded: FilterEntry[] | null, nowMs: number): Promise<number> {
  const inc = compileAudience(project, included, channel, nowMs);
  if (excluded === null || excluded.length === 0) return countAudience(ch, inc);
  const exc = renamed(compileFilters(project, excluded, nowMs), 'x_');
  const count = `SELECT count() AS count FROM (${inc.query}) WHERE external_id NOT IN (${exc.query})`;
  return countAudience(ch, { query: '', count, params: { ...inc.params, ...exc.params, after: '', limit: 4_294_967_295 } });
}

/** The shared parameters keep their names; the SQL text holds only generated placeholder names. */
const shared = new Set(['project', 'after', 'limit']);

function renamed(c: CompiledFilters, prefix: string): CompiledFilters {
  let query = c.query;
  const params: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(c.params)) {
    if (shared.has(name)) {
      params[name] = value;
      continue;
    }
    query = query.split(`{${name}:`).join(`{${prefix}${name}:`);
    params[`${prefix}${name}`] = value;
  }
  return { query, count: '', params };
}
