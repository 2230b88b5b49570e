import type {
  EventCondition,
  FilterCondition,
  FilterEntry,
  TagCompareCondition,
  TagInCondition,
} from '../../../../schemas/filters.ts';
import { QueryFile } from '../query-file.ts';

/**
 * One filter list compiled to ClickHouse SQL over the users mirror (migration 0005). Every value
 * travels in `params` as a `{name:Type}` placeholder; the SQL text holds only generated names.
 */
export interface CompiledFilters {
  /**
   * The matching external_ids greater than `{after:String}`, in external_id order, at most
   * `{limit:UInt32}`: one page of the audience (streamAudience supplies both).
   */
  query: string;
  /** `count` (UInt64, as text in JSON) of every matching user. */
  count: string;
  /** Values of the placeholders, except `after` and `limit`. */
  params: Record<string, unknown>;
  /** For an audience over the users mirror, how streamAudience reads it one range at a time. */
  ranges?: AudienceRanges;
}

/** An audience over the users mirror, read one range of its sort key at a time (filters/stream.ts). */
export interface AudienceRanges {
  /** As `query`, and only the ids up to `{through:String}` too. */
  query: string;
  /** Where a range of `{span:UInt32}` users after `{after:String}` ends (queries/users-range-end.sql). */
  end: string;
}

/** Where a range of the users mirror ends (AudienceRanges.end). */
export const usersRangeEnd = QueryFile.load('users-range-end').text([]);

/**
 * Compiles checked filters (engine/infra/clickhouse/filters/check.ts) for `project`; AND binds tighter
 * than OR. `nowMs` fixes "the last H hours", so the pages of one audience agree. FINAL keeps a
 * user's older versions out of WHERE (docs/architecture.md, "The users mirror and segments").
 * `types`, when given, keeps only users with a live subscription of one of them (a notification's
 * channel): one condition ANDed with every group.
 */
export function compileFilters(project: string, filters: readonly FilterEntry[], nowMs: number, types?: readonly string[]): CompiledFilters {
  const params = new Params({ project });
  const reach = types === undefined ? '' : ` AND hasAny(subscription_types, ${params.add('Array(String)', [...types])})`;
  const groups: string[][] = [[]];
  for (const entry of filters) {
    if ('operator' in entry) groups.push([]);
    else groups.at(-1)?.push(condition(entry, params, nowMs));
  }
  const where = groups
    .filter((g) => g.length > 0)
    .map((g) => `(${g.join(' AND ')})`)
    .join(' OR ');
  const from = `FROM users FINAL WHERE project = {project:String}${reach}`;
  const page = (bound: string): string => `SELECT external_id ${from} AND external_id > {after:String}${bound} AND (${where}) ORDER BY external_id LIMIT {limit:UInt32}`;
  return {
    query: page(''),
    count: `SELECT count() AS count ${from} AND (${where})`,
    params: params.values,
    ranges: { query: page(' AND external_id <= {through:String}'), end: usersRangeEnd },
  };
}

/** Placeholder names are generated (`v0`, `v1`, ...): nothing the caller sent reaches the SQL text. */
class Params {
  readonly values: Record<string, unknown>;
  private next = 0;

  constructor(initial: Record<string, unknown>) {
    this.values = { ...initial };
  }

  add(type: string, value: unknown): string {
    const name = `v${this.next++}`;
    this.values[name] = value;
    return `{${name}:${type}}`;
  }
}

function condition(c: FilterCondition, params: Params, nowMs: number): string {
  switch (c.field) {
    case 'subscription':
      return `has(subscription_types, ${params.add('String', c.type)})`;
    case 'event':
      return eventCondition(c, params, nowMs);
    case 'tag': {
      const key = params.add('String', c.key);
      switch (c.relation) {
        case 'exists':
          return `mapContains(tags, ${key})`;
        case 'not_exists':
          return `NOT mapContains(tags, ${key})`;
        case 'in':
          return tagIn(key, c, params);
        case '=':
          return tagEquals(key, c.value, params);
        case '!=':
          return `NOT ${tagEquals(key, c.value, params)}`;
        case '>':
        case '<':
          return tagOrder(key, c, params);
      }
    }
  }
}

/**
 * Equal as text (a number tag's text is its number), or, for a numeric value, equal as a number
 * to a number tag (10 = "10.0"). mapContains guards every read: a missing key reads as '' or 0.
 */
function tagEquals(key: string, value: string | number, params: Params): string {
  const text = `(mapContains(tags, ${key}) AND tags[${key}] = ${params.add('String', String(value))})`;
  const number = numeric(value);
  if (number === undefined) return text;
  return `(${text} OR (mapContains(tag_numbers, ${key}) AND tag_numbers[${key}] = ${params.add('Float64', float64(number))}))`;
}

function tagIn(key: string, c: TagInCondition, params: Params): string {
  const texts = params.add('Array(String)', c.value.map(String));
  const numbers = c.value.map(numeric).filter((n): n is number => n !== undefined);
  const text = `(mapContains(tags, ${key}) AND has(${texts}, tags[${key}]))`;
  if (numbers.length === 0) return text;
  return `(${text} OR (mapContains(tag_numbers, ${key}) AND has(${params.add('Array(Float64)', numbers.map(float64))}, tag_numbers[${key}])))`;
}

/** A number tag compares as a number to a numeric value; otherwise tags compare as text. */
function tagOrder(key: string, c: TagCompareCondition, params: Params): string {
  const op = c.relation === '>' ? '>' : '<';
  const text = params.add('String', String(c.value));
  const number = numeric(c.value);
  if (number === undefined) return `(mapContains(tags, ${key}) AND tags[${key}] ${op} ${text})`;
  return (
    `((mapContains(tag_numbers, ${key}) AND tag_numbers[${key}] ${op} ${params.add('Float64', float64(number))})` +
    ` OR (mapContains(tags, ${key}) AND NOT mapContains(tag_numbers, ${key}) AND tags[${key}] ${op} ${text}))`
  );
}

const numberText = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;

/**
 * A number as a Float64 parameter that ClickHouse reads back as exactly this double, as it reads
 * the tags the recorder writes. A double past ±2^53 is an integer: it goes as its exact digits
 * (a bigint), since the embedded client refuses such a number (1e20, 1.5e300) and the query failed.
 */
function float64(value: number): number | bigint {
  return Number.isSafeInteger(value) || !Number.isInteger(value) ? value : BigInt(value);
}

/** The value as a number when it is one or is written as one ("10", "-2.5"); else undefined. */
function numeric(value: string | number): number | undefined {
  if (typeof value === 'number') return value;
  if (!numberText.test(value)) return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : undefined;
}

/**
 * The users who tracked the event at least C times in the window, as a set: `performed` is IN,
 * `not_performed` NOT IN (so users without any event match it). The set is built inside
 * ClickHouse, never in this process.
 */
function eventCondition(c: EventCondition, params: Params, nowMs: number): string {
  const since =
    c.within_hours === undefined ? '' : ` AND at >= fromUnixTimestamp64Milli(${params.add('Int64', nowMs - c.within_hours * 3_600_000)}, 'UTC')`;
  const set =
    `SELECT external_id FROM events WHERE project = {project:String} AND name = ${params.add('String', c.name)}${since}` +
    ` GROUP BY external_id HAVING count() >= ${params.add('UInt32', c.min_count ?? 1)}`;
  return `external_id ${c.relation === 'performed' ? 'IN' : 'NOT IN'} (${set})`;
}
