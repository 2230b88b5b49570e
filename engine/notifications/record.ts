import type { NotificationSpec } from '../../schemas/notifications.ts';
import type { RedisClient } from '../redis.ts';
import type { Topology } from '../topology.ts';

/**
 * The record of a notification in Redis (`notif:{n:<id>}`, a hash), written by the gateway at
 * accept and moved on by the scheduler, fan-out and cancel:
 *
 *   project, spec (NotificationSpec JSON), state (scheduled | queued | sending | canceled),
 *   recipients (users targeted: the gateway's count for ids, else the fan-out's so far),
 *   fanned ('1' once fan-out appended the whole audience), cursor (fan-out progress), canceled_at
 *
 * `completed` is not stored: a notification is complete once fanned and every partition's
 * counters (`ncount:{pN}:<id>`) have as many jobs done as appended.
 */
export type StoredState = 'scheduled' | 'queued' | 'sending' | 'canceled';

export interface NotificationRecord {
  spec: NotificationSpec;
  state: StoredState;
  recipients: number;
  fanned: boolean;
  /** Fan-out progress: the last external_id appended (audience order), '' at the start. */
  cursor: string;
  canceledAt: number | null;
}

/** Counters of one notification, summed over partitions. */
export interface DispatchCounts {
  jobs: number;
  done: number;
  sent: number;
  failed: number;
  skipped: number;
  /** Time of the last finished job (ms), 0 when none. */
  lastAt: number;
}

export const countFields = ['jobs', 'done', 'sent', 'failed', 'skipped', 'last_at'] as const;

/** The record of notification `id`, or null when there is none. */
export async function readNotification(redis: RedisClient, topology: Topology, id: string): Promise<NotificationRecord | null> {
  const h = await redis.hgetall(topology.notification(id));
  if (h['spec'] === undefined) return null;
  return {
    spec: JSON.parse(h['spec']) as NotificationSpec,
    state: (h['state'] ?? 'queued') as StoredState,
    recipients: Number(h['recipients'] ?? 0),
    fanned: h['fanned'] === '1',
    cursor: h['cursor'] ?? '',
    canceledAt: h['canceled_at'] === undefined ? null : Number(h['canceled_at']),
  };
}

/** The dispatch counters of notification `id`, summed over every partition (one pipeline). */
export async function readCounts(redis: RedisClient, topology: Topology, id: string): Promise<DispatchCounts> {
  const replies = await Promise.all(Array.from({ length: topology.partitions }, (_, p) => redis.hmget(topology.notificationCounts(p, id), ...countFields)));
  const total: DispatchCounts = { jobs: 0, done: 0, sent: 0, failed: 0, skipped: 0, lastAt: 0 };
  for (const [jobs, done, sent, failed, skipped, lastAt] of replies) {
    total.jobs += Number(jobs ?? 0);
    total.done += Number(done ?? 0);
    total.sent += Number(sent ?? 0);
    total.failed += Number(failed ?? 0);
    total.skipped += Number(skipped ?? 0);
    total.lastAt = Math.max(total.lastAt, Number(lastAt ?? 0));
  }
  return total;
}
