import type { NotificationBody, NotificationCreated } from '../../../schemas/notifications.ts';
import type { RedriveBody } from '../../../schemas/redrive.ts';
import type { FrequencyCaps } from '../keys/keystore.ts';
import { createNotification, type NotificationDeps } from './create.ts';
import { Notifications } from './lifecycle.ts';

/**
 * Re-drive (docs/api.md#re-drive): a new notification with the content of `id`, for the users
 * whose last delivery record for `id` matches the filters, streamed from ClickHouse at fan-out.
 * Null when `project` has no notification `id`.
 */
export async function redriveNotification(
  deps: NotificationDeps,
  project: string,
  id: string,
  filters: RedriveBody,
  frequencyCaps: FrequencyCaps,
  now = Date.now(),
): Promise<NotificationCreated | null> {
  const record = await new Notifications(deps.redis, deps.topology).read(id);
  if (record === null || record.spec.project !== project) return null;
  const { spec } = record;
  // The new notification's own id replaces the first one's in svc_message_id.
  const data = Object.fromEntries(Object.entries(spec.data).filter(([k]) => k !== 'svc_message_id'));
  const body: NotificationBody = {
    // The first notification's body was checked with `en` in contents when it was created.
    contents: spec.contents as NotificationBody['contents'],
    data,
    channel: spec.channel,
    ttl: spec.ttl,
    priority: spec.priority,
    throttle_rate_per_minute: spec.throttle_rate_per_minute,
    ...(spec.headings === null ? {} : { headings: spec.headings }),
    ...(spec.collapse_id === null ? {} : { collapse_id: spec.collapse_id }),
    ...(filters.idempotency_key === undefined ? {} : { idempotency_key: filters.idempotency_key }),
  };
  const redrive = {
    of: id,
    ...(filters.status === undefined ? {} : { status: filters.status }),
    ...(filters.error_code === undefined ? {} : { error_code: filters.error_code }),
    ...(filters.channel === undefined ? {} : { channel: filters.channel }),
    ...(filters.since === undefined ? {} : { since: Date.parse(filters.since) }),
    ...(filters.until === undefined ? {} : { until: Date.parse(filters.until) }),
  };
  return createNotification(deps, project, body, { options: spec.options ?? {}, warnings: [], frequencyCaps, redrive }, now);
}
