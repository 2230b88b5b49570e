import type { Channel, DeliveryStatus } from '../../../schemas/outcomes.ts';
import type {
  DeliveryFilter,
  DeliveryGroup,
  DeliveryPosition,
  GroupBy,
  MessageDelivery,
  ReceiptKind,
} from '../../../schemas/queries.ts';
import type { SubscriptionType } from '../../../schemas/sdk.ts';
import type { ClickHouse } from './client.ts';
import { QueryFile } from './query-file.ts';

const pageQuery = QueryFile.load('deliveries-page');
const receiptsQuery = QueryFile.load('deliveries-receipts');
const statsQuery = QueryFile.load('deliveries-stats');
const hourlyStatsQuery = QueryFile.load('deliveries-stats-hours');

/** The filters, each the name of its parameter and of the switch of its WHERE line in the SQL files. */
const filterNames = ['status', 'channel', 'subscription_type', 'external_id', 'notification_id', 'error_code', 'since', 'until'] as const;

/** The switches of the grouping column and of the sort order, per group_by. */
const grouping: Record<GroupBy, readonly [string, string]> = {
  status: ['by_status', 'by_count'],
  channel: ['by_channel', 'by_count'],
  error_code: ['by_error_code', 'by_count'],
  subscription_type: ['by_subscription_type', 'by_count'],
  notification_id: ['by_notification_id', 'by_count'],
  hour: ['by_hour', 'by_time'],
};

interface DeliveryRow {
  id: string;
  notification_id: string;
  external_id: string;
  channel: Channel;
  subscription_type: SubscriptionType | null;
  token_tail: string | null;
  attempt: number;
  status: DeliveryStatus;
  error_code: string | null;
  hint: string | null;
  provider_message_id: string | null;
  latency_ms: number | null;
  retrying: boolean;
  /** Int64, which ClickHouse writes in JSON as a string. */
  at_ms: string | number;
}

/** One page of deliveries and where the next one starts (null on the last page). */
export interface DeliveriesResult {
  deliveries: MessageDelivery[];
  next: DeliveryPosition | null;
}

/**
 * The day below a page's upper bound (its cursor, or `until`) is read first: the set indexes on
 * status and channel cost their analysis on every granule of the range (page 21 of
 * status=failed&channel=PUSH: 61 ms over 30 days, 23 ms within one; docs/performance.md).
 */
const PAGE_WINDOW_MS = 86_400_000;

/**
 * One project's delivery records matching `filter`, newest first by (at, id), at most `limit`,
 * starting after `after` (the previous page's last row; null for the first page), each with the
 * latest receipt of its notification and user. Keyset pages: see docs/architecture.md, "Queries".
 */
export async function listDeliveries(
  ch: ClickHouse,
  project: string,
  filter: DeliveryFilter,
  limit: number,
  after: DeliveryPosition | null,
): Promise<DeliveriesResult> {
  // One row more than the page: it tells whether a next page exists.
  const rows = await pageRows(ch, project, filter, limit + 1, after);
  const page = rows.length > limit ? rows.slice(0, limit) : rows;
  const receipts = await latestReceipts(ch, project, page);
  const deliveries = page.map((row) => delivery(row, receipts.get(pairKey(row.notification_id, row.external_id)) ?? null));
  const last = page.at(-1);
  return { deliveries, next: rows.length > limit && last !== undefined ? { at: Number(last.at_ms), id: last.id } : null };
}

/**
 * The first `count` records of a page: from the PAGE_WINDOW_MS below its upper bound when that
 * holds them all, else read again over the whole range, so a page always comes from one query.
 * See docs/architecture.md, "Queries".
 */
async function pageRows(ch: ClickHouse, project: string, filter: DeliveryFilter, count: number, after: DeliveryPosition | null): Promise<DeliveryRow[]> {
  const upper = after?.at ?? filter.until;
  const lookup = filter.external_id !== undefined || filter.notification_id !== undefined;
  if (upper !== undefined && !lookup) {
    const from = upper - PAGE_WINDOW_MS;
    if (filter.since === undefined || filter.since < from) {
      const rows = await pageQueryRows(ch, project, { ...filter, since: from }, count, after);
      if (rows.length === count) return rows;
    }
  }
  return pageQueryRows(ch, project, filter, count, after);
}

async function pageQueryRows(ch: ClickHouse, project: string, filter: DeliveryFilter, count: number, after: DeliveryPosition | null): Promise<DeliveryRow[]> {
  const { switches, params } = filterParams(filter);
  if (after !== null) {
    switches.push('after');
    params['after_at'] = after.at;
    params['after_id'] = after.id;
  }
  const result = await ch.query({
    query: pageQuery.text(switches),
    query_params: { ...params, project, limit: count },
    format: 'JSONEachRow',
  });
  return result.json<DeliveryRow>();
}

/**
 * How many of one project's delivery records match `filter`, per value of `groupBy`: largest
 * count first (ties by key), or by time for `hour` (keys are ISO 8601 hour starts). Rows without
 * a value (error_code of sent records) make the group with key null.
 */
export async function deliveryStats(ch: ClickHouse, project: string, filter: DeliveryFilter, groupBy: GroupBy): Promise<DeliveryGroup[]> {
  const { query, params } = statsQueryFor(filter, groupBy);
  const result = await ch.query({ query, query_params: { ...params, project }, format: 'JSONEachRow' });
  const rows = await result.json<{ key: string | number | null; count: string | number }>();
  return rows.map(({ key, count }) => ({
    key: key === null ? null : groupBy === 'hour' ? new Date(Number(key)).toISOString() : String(key),
    count: Number(count),
  }));
}

const HOUR_MS = 3_600_000;

/**
 * The stats query for `filter` and `groupBy` and its parameters but `project`: whole hours from
 * the projection counts_by_hour when it can answer (docs/architecture.md, "Queries"). Exported
 * for the test that checks, with EXPLAIN, that ClickHouse reads the projection.
 */
export function statsQueryFor(filter: DeliveryFilter, groupBy: GroupBy): { query: string; params: Record<string, string | number> } {
  const { since, until, ...rest } = filter;
  // The whole hours inside [since, until): since rounded up and until rounded down to an hour.
  const hoursFrom = since === undefined ? undefined : Math.ceil(since / HOUR_MS) * HOUR_MS;
  const hoursTo = until === undefined ? undefined : Math.floor(until / HOUR_MS) * HOUR_MS;
  const projectionLacks = rest.external_id !== undefined || rest.notification_id !== undefined || groupBy === 'notification_id';
  if (projectionLacks || (hoursFrom !== undefined && hoursTo !== undefined && hoursFrom >= hoursTo)) {
    const { switches, params } = filterParams(filter);
    return { query: statsQuery.text([...switches, ...grouping[groupBy]]), params };
  }
  const { switches, params } = filterParams(rest);
  switches.push(...grouping[groupBy]);
  if (hoursFrom !== undefined) {
    switches.push('hours_from');
    params['hours_from'] = hoursFrom;
  }
  if (hoursTo !== undefined) {
    switches.push('hours_to');
    params['hours_to'] = hoursTo;
  }
  // The partial hours at the edges; a missing bound has no edge: the empty range [0, 0).
  Object.assign(params, { head_from: since ?? 0, head_to: hoursFrom ?? 0, tail_from: hoursTo ?? 0, tail_to: until ?? 0 });
  return { query: hourlyStatsQuery.text(switches), params };
}

function filterParams(filter: DeliveryFilter): { switches: string[]; params: Record<string, string | number> } {
  const switches: string[] = [];
  const params: Record<string, string | number> = {};
  for (const name of filterNames) {
    const value = filter[name];
    if (value === undefined) continue;
    switches.push(name);
    params[name] = value;
  }
  return { switches, params };
}

async function latestReceipts(ch: ClickHouse, project: string, rows: readonly DeliveryRow[]): Promise<Map<string, ReceiptKind>> {
  const found = new Map<string, ReceiptKind>();
  if (rows.length === 0) return found;
  const result = await ch.query({
    query: receiptsQuery.text([]),
    query_params: {
      project,
      notification_ids: [...new Set(rows.map((r) => r.notification_id))],
      external_ids: [...new Set(rows.map((r) => r.external_id))],
    },
    format: 'JSONEachRow',
  });
  for (const r of await result.json<{ svc_message_id: string; external_id: string; receipt: ReceiptKind }>()) {
    found.set(pairKey(r.svc_message_id, r.external_id), r.receipt);
  }
  return found;
}

/** A map key for one (notification, user) pair; JSON keeps any characters in either apart. */
function pairKey(notificationId: string, externalId: string): string {
  return JSON.stringify([notificationId, externalId]);
}

function delivery(row: DeliveryRow, receipt: ReceiptKind | null): MessageDelivery {
  return {
    id: row.id,
    notification_id: row.notification_id,
    external_id: row.external_id,
    channel: row.channel,
    subscription_type: row.subscription_type,
    token_tail: row.token_tail,
    attempt: row.attempt,
    status: row.status,
    error_code: row.error_code,
    hint: row.hint,
    provider_message_id: row.provider_message_id,
    latency_ms: row.latency_ms,
    at: new Date(Number(row.at_ms)).toISOString(),
    receipt,
    retrying: row.retrying,
  };
}
