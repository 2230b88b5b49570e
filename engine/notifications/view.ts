import type { ClickHouse } from '../clickhouse/client.ts';
import { QueryFile } from '../clickhouse/query-file.ts';
import type { NotificationSpec, NotificationStatus, NotificationView } from '../../schemas/notifications.ts';
import type { RedisClient } from '../redis.ts';
import type { Topology } from '../topology.ts';
import type { NotificationDeps } from './create.ts';
import { readCounts, readNotification, type DispatchCounts, type NotificationRecord } from './record.ts';

const receiptsQuery = QueryFile.load('notification-receipts').text([]);
/** How long a cancel mark outlives the notification's ttl, s: as long as its counters (actors/fanout). */
const CANCEL_MARK_MARGIN_S = 7 * 24 * 3600;

/** A notification with its dispatch counters, as one project sees it. */
interface Found {
  record: NotificationRecord;
  counts: DispatchCounts;
}

/**
 * The GET body of notification `id` (docs/api.md#reading-listing-and-cancelling), or null when `project` has none of that id
 * (another project's is not found either). Receipt counts come from ClickHouse: when it cannot
 * answer, the error propagates (503 at the gateway).
 */
export async function readView(deps: NotificationDeps, project: string, id: string): Promise<NotificationView | null> {
  const found = await find(deps, project, id);
  return found === null ? null : view(deps, found);
}

/**
 * Cancels notification `id` and answers its GET body, or null when `project` has none of that id.
 * No new attempt starts after this: dispatch checks the cancel mark of the user's partition before
 * each send, and the scheduled entry is removed (the record first, so a scheduler racing the
 * removal releases a notification that is already canceled). The marks are written before
 * `canceled_at`, so a record with `canceled_at` has all of them; a repeated DELETE writes any
 * missing again (after a crash between the two, or a record canceled before marks existed). A
 * completed notification stays completed; cancelling again keeps the first time.
 */
export async function cancelNotification(deps: NotificationDeps, project: string, id: string, now = Date.now()): Promise<NotificationView | null> {
  const found = await find(deps, project, id);
  if (found === null) return null;
  if (status(found) === 'completed') return view(deps, found);
  await markCanceled(deps.redis, deps.topology, found.record.spec, found.record.canceledAt ?? now);
  if (found.record.canceledAt === null) {
    const key = deps.topology.notification(id);
    await deps.redis.hsetnx(key, 'canceled_at', String(now));
    await deps.redis.hset(key, 'state', 'canceled');
    await deps.redis.zrem(deps.topology.scheduled(), id);
    const canceledAt = Number((await deps.redis.hget(key, 'canceled_at')) ?? now);
    found.record = { ...found.record, state: 'canceled', canceledAt };
  }
  return view(deps, found);
}

/**
 * Writes the cancel mark of notification `spec`, canceled `at`, into every partition (see
 * cancelNotification). Idempotent: a mark already there keeps its time. A mark lives for the
 * notification's ttl and 7 days, as its counters do: no job of it waits longer.
 */
export async function markCanceled(redis: RedisClient, topology: Topology, spec: Pick<NotificationSpec, 'id' | 'ttl'>, at: number): Promise<void> {
  const keepMs = (spec.ttl + CANCEL_MARK_MARGIN_S) * 1000;
  await Promise.all(Array.from({ length: topology.partitions }, (_, p) => redis.set(topology.notificationCanceled(p, spec.id), String(at), 'PX', keepMs, 'NX')));
}

async function find(deps: NotificationDeps, project: string, id: string): Promise<Found | null> {
  const [record, counts] = await Promise.all([readNotification(deps.redis, deps.topology, id), readCounts(deps.redis, deps.topology, id)]);
  if (record === null || record.spec.project !== project) return null;
  return { record, counts };
}

function status({ record, counts }: Found): NotificationStatus {
  if (record.canceledAt !== null || record.state === 'canceled') return 'canceled';
  if (record.fanned && counts.done >= counts.jobs) return 'completed';
  return record.state;
}

async function view(deps: NotificationDeps, found: Found): Promise<NotificationView> {
  const { record, counts } = found;
  const { spec } = record;
  const ch = await deps.clickhouse.get();
  const receipts = await receiptCounts(ch, spec.project, spec.id);
  const s = status(found);
  // A notification whose audience was empty finishes without a job: it completed when it was due.
  const completedAt = s !== 'completed' ? null : counts.lastAt > 0 ? counts.lastAt : (spec.send_after ?? spec.created_at);
  return {
    id: spec.id,
    channel: spec.channel,
    status: s,
    recipients: record.recipients,
    created_at: iso(spec.created_at),
    send_after: spec.send_after === null ? null : iso(spec.send_after),
    completed_at: completedAt === null ? null : iso(completedAt),
    canceled: record.canceledAt !== null,
    counts: { sent: counts.sent, failed: counts.failed, skipped: counts.skipped, ...receipts },
  };
}

async function receiptCounts(ch: ClickHouse, project: string, id: string): Promise<{ delivered: number; opened: number; clicked: number }> {
  const result = await ch.query({ query: receiptsQuery, query_params: { project, svc_message_id: id }, format: 'JSONEachRow' });
  const [row] = await result.json<{ delivered: string | number; opened: string | number; clicked: string | number }>();
  return { delivered: Number(row?.delivered ?? 0), opened: Number(row?.opened ?? 0), clicked: Number(row?.clicked ?? 0) };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
