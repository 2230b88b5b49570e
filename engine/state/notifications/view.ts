import type { ClickHouse } from '../../infra/clickhouse/client.ts';
import { QueryFile } from '../../infra/clickhouse/query-file.ts';
import type { NotificationSpec, NotificationView, PlatformCounts, PlatformDeliveryStats } from '../../../schemas/notifications.ts';
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

/** The receipt counts of a notification. */
interface Receipts {
  delivered: number;
  opened: number;
  clicked: number;
}

const NO_RECEIPTS: Receipts = { delivered: 0, opened: 0, clicked: 0 };

/** What ClickHouse tells of notifications, by id: receipts, and counts per platform; null when it cannot answer. */
type Recorded = Map<string, { receipts: Receipts; platforms: PlatformDeliveryStats }> | null;

/** A notification with its dispatch counters, as one project sees it. */
interface Found {
  record: NotificationRecord;
  counts: DispatchCounts;
}

/**
 * The GET body of notification `id` (docs/api.md#reading-listing-and-cancelling), or null when
 * `project` has none of that id (another project's is not found either).
 */
export async function readView(deps: NotificationDeps, project: string, id: string): Promise<NotificationView | null> {
  const [view] = await readViews(deps, project, [id]);
  return view ?? null;
}

/**
 * The GET bodies of notifications `ids` of `project`, in order, null for one it has not. Receipt
 * counts and platform_delivery_stats come from ClickHouse, in the same few queries for every id:
 * when it cannot answer (deps.clickhouseUnavailable), each view is what Redis knows (receipt
 * counts 0, no platform_delivery_stats).
 */
export async function readViews(deps: NotificationDeps, project: string, ids: readonly string[]): Promise<(NotificationView | null)[]> {
  const notifications = new Notifications(deps.redis, deps.topology);
  return viewsOf(deps, project, await Promise.all(ids.map((id) => find(notifications, project, id))));
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
  const completed = statusOf(found.record, found.counts) === 'completed';
  const current = completed ? found : { ...found, record: { ...found.record, canceledAt: await notifications.cancel(found.record, now) } };
  const [canceled = null] = await viewsOf(deps, project, [current]);
  return canceled;
}

async function find(notifications: Notifications, project: string, id: string): Promise<Found | null> {
  const [record, counts] = await Promise.all([notifications.read(id), notifications.counts(id)]);
  if (record === null || record.spec.project !== project) return null;
  return { record, counts };
}

async function viewsOf(deps: NotificationDeps, project: string, found: readonly (Found | null)[]): Promise<(NotificationView | null)[]> {
  const specs = found.flatMap((f) => (f === null ? [] : [f.record.spec]));
  const stored = await recorded(deps, project, specs);
  return found.map((f) => (f === null ? null : view(f, stored)));
}

function view(found: Found, stored: Recorded): NotificationView {
  const { record, counts } = found;
  const { spec } = record;
  const receipts = stored?.get(spec.id)?.receipts ?? NO_RECEIPTS;
  const platforms = stored === null ? null : (stored.get(spec.id)?.platforms ?? {});
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

/** Receipts and platform counts of `specs` (all of `project`), three queries at most whatever their number. */
async function recorded(deps: NotificationDeps, project: string, specs: readonly NotificationSpec[]): Promise<Recorded> {
  if (specs.length === 0) return new Map();
  const ids = specs.map((spec) => spec.id);
  try {
    const ch = await deps.clickhouse.get();
    const [receipts, counts] = await Promise.all([receiptCounts(ch, project, ids), platformCounts(ch, project, ids)]);
    // Without a receipt no user was received or converted: those notifications' records are not read.
    const withReceipts = specs.filter((spec) => receipts.has(spec.id));
    const users = withReceipts.length === 0 ? [] : await platformReceipts(ch, project, withReceipts);
    const out: NonNullable<Recorded> = new Map(ids.map((id) => [id, { receipts: receipts.get(id) ?? NO_RECEIPTS, platforms: {} }]));
    for (const row of counts) addAttempts(platformIn(out, row), row);
    for (const { received, converted, ...row } of users) Object.assign(platformIn(out, row), { received: Number(received), converted: Number(converted) });
    return out;
  } catch (err) {
    // The counts in Redis still answer (docs/api.md#reading-listing-and-cancelling); a bug does not hide here.
    if (deps.clickhouseUnavailable?.(err) !== true) throw err;
    return null;
  }
}

/** Attempts of one notification, subscription type, status and retrying (notification-platform-counts.sql). */
interface AttemptCount {
  id: string;
  type: SubscriptionType;
  status: DeliveryStatus;
  retrying: boolean;
  n: string | number;
}

/** Users of one notification sent to on one subscription type with a receipt, and those who clicked (notification-platform-receipts.sql). */
interface ReceiptUsers {
  id: string;
  type: SubscriptionType;
  received: string | number;
  converted: string | number;
}

async function receiptCounts(ch: ClickHouse, project: string, ids: readonly string[]): Promise<Map<string, Receipts>> {
  type Row = Record<keyof Receipts, string | number> & { id: string };
  const result = await ch.query({ query: receiptsQuery, query_params: { project, ids }, format: 'JSONEachRow' });
  return new Map((await result.json<Row>()).map((row) => [row.id, { delivered: Number(row.delivered), opened: Number(row.opened), clicked: Number(row.clicked) }]));
}

async function platformCounts(ch: ClickHouse, project: string, ids: readonly string[]): Promise<AttemptCount[]> {
  const result = await ch.query({ query: platformCountsQuery, query_params: { project, ids }, format: 'JSONEachRow' });
  return result.json<AttemptCount>();
}

async function platformReceipts(ch: ClickHouse, project: string, specs: readonly NotificationSpec[]): Promise<ReceiptUsers[]> {
  const since = Math.min(...specs.map((spec) => spec.created_at)) - CLOCK_MARGIN_MS;
  const result = await ch.query({ query: platformReceiptsQuery, query_params: { project, ids: specs.map((spec) => spec.id), since }, format: 'JSONEachRow' });
  return result.json<ReceiptUsers>();
}

/**
 * The counts of a row's notification and platform, zero until counted: a platform is there once it
 * has a record. Rows come only for the ids asked, so the notification is always there.
 */
function platformIn(stored: NonNullable<Recorded>, { id, type }: { id: string; type: SubscriptionType }): PlatformCounts {
  const stats = stored.get(id)?.platforms ?? {};
  return (stats[platformOf[type]] ??= { successful: 0, failed: 0, errored: 0, converted: 0, received: 0 });
}

/**
 * Counts the final attempts by status. OneSignal's `failed` is our skipped (unsubscribed), its
 * `errored` our failed, as in the view's totals.
 */
function addAttempts(platform: PlatformCounts, { status, retrying, n }: AttemptCount): void {
  if (status === 'skipped') platform.failed += Number(n);
  else if (retrying) return;
  else if (status === 'sent') platform.successful += Number(n);
  else platform.errored += Number(n);
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
