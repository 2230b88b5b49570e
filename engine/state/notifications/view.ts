import type { ClickHouse } from '../../infra/clickhouse/client.ts';
import { QueryFile } from '../../infra/clickhouse/query-file.ts';
import type { NotificationView, PlatformDeliveryStats } from '../../../schemas/notifications.ts';
import type { DeliveryStatus } from '../../../schemas/outcomes.ts';
import type { SubscriptionType } from '../../../schemas/sdk.ts';
import type { NotificationDeps } from './create.ts';
import { Notifications, statusOf, type DispatchCounts, type NotificationRecord } from './lifecycle.ts';

const receiptsQuery = QueryFile.load('notification-receipts').text([]);
const platformCountsQuery = QueryFile.load('notification-platform-counts').text([]);
const platformReceiptsQuery = QueryFile.load('notification-platform-receipts').text([]);

/** OneSignal's platform key of each subscription type. */
const platformOf: Record<SubscriptionType, keyof PlatformDeliveryStats> = { IOS_PUSH: 'ios', ANDROID_PUSH: 'android', WEB_PUSH: 'web_push', EMAIL: 'email', SMS: 'sms' };
/** Clocks of the gateway and of dispatch may differ: records are looked for from a minute before creation. */
const CLOCK_MARGIN_MS = 60_000;

/** What ClickHouse tells of a notification: receipts, and counts per platform. */
interface Recorded {
  receipts: { delivered: number; opened: number; clicked: number };
  platforms: PlatformDeliveryStats | null;
}

/** A notification with its dispatch counters, as one project sees it. */
interface Found {
  record: NotificationRecord;
  counts: DispatchCounts;
}

/**
 * The GET body of notification `id` (docs/api.md#reading-listing-and-cancelling), or null when
 * `project` has none of that id (another project's is not found either). Receipt counts and
 * platform_delivery_stats come from ClickHouse: when it cannot answer (deps.clickhouseUnavailable),
 * the view is what Redis knows (receipt counts 0, no platform_delivery_stats).
 */
export async function readView(deps: NotificationDeps, project: string, id: string): Promise<NotificationView | null> {
  const found = await find(new Notifications(deps.redis, deps.topology), project, id);
  return found === null ? null : view(deps, found);
}

/**
 * Cancels notification `id` and answers its GET body, or null when `project` has none of that id.
 * No new attempt starts after this (engine/state/notifications/lifecycle.ts, cancel). A completed
 * notification stays completed; cancelling again keeps the first time.
 */
export async function cancelNotification(deps: NotificationDeps, project: string, id: string, now = Date.now()): Promise<NotificationView | null> {
  const notifications = new Notifications(deps.redis, deps.topology);
  const found = await find(notifications, project, id);
  if (found === null) return null;
  if (statusOf(found.record, found.counts) === 'completed') return view(deps, found);
  const canceledAt = await notifications.cancel(found.record, now);
  return view(deps, { ...found, record: { ...found.record, canceledAt } });
}

async function find(notifications: Notifications, project: string, id: string): Promise<Found | null> {
  const [record, counts] = await Promise.all([notifications.read(id), notifications.counts(id)]);
  if (record === null || record.spec.project !== project) return null;
  return { record, counts };
}

async function view(deps: NotificationDeps, found: Found): Promise<NotificationView> {
  const { record, counts } = found;
  const { spec } = record;
  const { receipts, platforms } = await recorded(deps, spec.project, spec.id, spec.created_at);
  const s = statusOf(record, counts);
  // A notification whose audience was empty finishes without a job: it completed when it was due.
  const completedAt = s !== 'completed' ? null : counts.lastAt > 0 ? counts.lastAt : (spec.send_after ?? spec.created_at);
  const settled = counts.sent + counts.failed + counts.skipped;
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
    successful: counts.sent,
    // OneSignal's `failed` is "could not be delivered: unsubscribed", our skipped; its `errored` is our failed.
    failed: counts.skipped,
    errored: counts.failed,
    converted: receipts.clicked,
    received: receipts.delivered,
    remaining: s === 'completed' || s === 'canceled' ? 0 : Math.max(0, record.recipients - settled),
    queued_at: Math.floor(spec.created_at / 1000),
    ...(platforms === null ? {} : { platform_delivery_stats: platforms }),
    ...(spec.redrive === undefined ? {} : { redrive_of: spec.redrive.of }),
  };
}

async function recorded(deps: NotificationDeps, project: string, id: string, createdAt: number): Promise<Recorded> {
  try {
    const ch = await deps.clickhouse.get();
    const [receipts, counts] = await Promise.all([receiptCounts(ch, project, id), platformCounts(ch, project, id)]);
    // Without a receipt no user was received or converted: the records need not be read.
    const withReceipts = receipts.delivered === 0 ? new Map<SubscriptionType, ReceiptUsers>() : await platformReceipts(ch, project, id, createdAt);
    return { receipts, platforms: platformStats(counts, withReceipts) };
  } catch (err) {
    // The counts in Redis still answer (docs/api.md#reading-listing-and-cancelling); a bug does not hide here.
    if (deps.clickhouseUnavailable?.(err) !== true) throw err;
    return { receipts: { delivered: 0, opened: 0, clicked: 0 }, platforms: null };
  }
}

/** Attempts of one subscription type, status and retrying (notification-platform-counts.sql). */
interface AttemptCount {
  type: SubscriptionType;
  status: DeliveryStatus;
  retrying: boolean;
  n: string | number;
}

/** Users sent to on one subscription type with a receipt, and those of them who clicked. */
interface ReceiptUsers {
  received: number;
  converted: number;
}

async function platformCounts(ch: ClickHouse, project: string, id: string): Promise<AttemptCount[]> {
  const result = await ch.query({ query: platformCountsQuery, query_params: { project, notification_id: id }, format: 'JSONEachRow' });
  return result.json<AttemptCount>();
}

async function platformReceipts(ch: ClickHouse, project: string, id: string, createdAt: number): Promise<Map<SubscriptionType, ReceiptUsers>> {
  type Row = Record<'received' | 'converted', string | number> & { type: SubscriptionType };
  const result = await ch.query({ query: platformReceiptsQuery, query_params: { project, notification_id: id, since: createdAt - CLOCK_MARGIN_MS }, format: 'JSONEachRow' });
  return new Map((await result.json<Row>()).map((row) => [row.type, { received: Number(row.received), converted: Number(row.converted) }]));
}

/**
 * platform_delivery_stats: per platform with a record, its final attempts by status. OneSignal's
 * `failed` is our skipped (unsubscribed), its `errored` our failed, as in the view's totals.
 */
function platformStats(counts: AttemptCount[], receipts: Map<SubscriptionType, ReceiptUsers>): PlatformDeliveryStats {
  const stats: PlatformDeliveryStats = {};
  for (const { type, status, retrying, n } of counts) {
    const key = platformOf[type];
    if (key === undefined) continue;
    const users = receipts.get(type);
    const platform = (stats[key] ??= { successful: 0, failed: 0, errored: 0, converted: users?.converted ?? 0, received: users?.received ?? 0 });
    if (status === 'skipped') platform.failed += Number(n);
    else if (retrying) continue;
    else if (status === 'sent') platform.successful += Number(n);
    else platform.errored += Number(n);
  }
  return stats;
}

async function receiptCounts(ch: ClickHouse, project: string, id: string): Promise<{ delivered: number; opened: number; clicked: number }> {
  const result = await ch.query({ query: receiptsQuery, query_params: { project, svc_message_id: id }, format: 'JSONEachRow' });
  const [row] = await result.json<{ delivered: string | number; opened: string | number; clicked: string | number }>();
  return { delivered: Number(row?.delivered ?? 0), opened: Number(row?.opened ?? 0), clicked: Number(row?.clicked ?? 0) };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
