import { compileFilters, type CompiledFilters } from '../../infra/clickhouse/filters/compile.ts';
import type { ClickHouse } from '../../infra/clickhouse/client.ts';
import { countAudience } from '../../infra/clickhouse/filters/stream.ts';
import type { SegmentStore } from '../segments/store.ts';
import type { RedisClient } from '../../infra/redis/client.ts';
import type { Topology } from '../../infra/redis/topology.ts';
import { readHashes } from '../users/read-user.ts';
import { errorItem } from '../../infra/validation/ajv-errors.ts';
import type { ErrorItem } from '../../../schemas/errors.ts';
import type { FilterEntry } from '../../../schemas/filters.ts';
import { channelTypes, type Channel } from '../../../schemas/outcomes.ts';
import { ALL_SEGMENT } from '../../../schemas/segments.ts';
import type { StoredSubscription } from '../../../schemas/state.ts';

/** Targeted users split by whether they have a live subscription of the channel. */
export interface UsersReach {
  /** The ids, each once, in the order first given. */
  ids: string[];
  reachable: number;
  /** Ids without a live subscription of the channel. */
  invalid: string[];
}

/** Reads each user's subscriptions (one auto-pipelined round of GET) and splits the ids by reach. */
export async function reachOfUsers(redis: RedisClient, topology: Topology, project: string, channel: Channel, externalIds: readonly string[]): Promise<UsersReach> {
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
 * The filter lists of the named segments, in the order given, or an error item for each unknown
 * name (`path` the list in the body); `All` is allFiltersOf(channel).
 */
export async function segmentFilters(
  segments: Pick<SegmentStore, 'get'>,
  project: string,
  names: readonly string[],
  path: string,
  channel: Channel,
): Promise<{ lists: FilterEntry[][]; errors: ErrorItem[] }> {
  const found = await Promise.all(names.map((name) => (name === ALL_SEGMENT ? allFiltersOf(channel) : segments.get(project, name).then((s) => s?.filters ?? null))));
  const errors = names.flatMap((name, i) => (found[i] === null ? [errorItem(`${path}/${i}`, `no segment named ${JSON.stringify(name)}`)] : []));
  return { lists: found.filter((f): f is FilterEntry[] => f !== null), errors };
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
export async function countTargeted(
  ch: ClickHouse,
  project: string,
  channel: Channel,
  included: FilterEntry[],
  excluded: FilterEntry[] | null,
  nowMs: number,
): Promise<number> {
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
