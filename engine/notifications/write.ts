import { Cluster } from 'ioredis';
import type { NotificationSpec } from '../../schemas/notifications.ts';
import type { RedisClient } from '../redis.ts';
import type { Topology } from '../topology.ts';

/** A notification as accepted: queued now, or scheduled for its send_after. */
export type AcceptedState = 'queued' | 'scheduled';

/**
 * Writes the record of an accepted notification (engine/notifications/record.ts), its place in
 * the project's list (by creation time; idempotent, so a repaired write lists it once) and its log
 * entry: the notifications stream when queued, the scheduled set (scored by send_after) when
 * scheduled. On one Redis all go in one MULTI, so no queued record is ever left without its
 * stream entry. On a Redis Cluster they are in different slots: the record goes first, so the
 * fan-out and the list never read an id without a record; a crash between them leaves a record
 * nobody was told of (the caller got no answer), which is never sent.
 */
export async function writeAccepted(redis: RedisClient, topology: Topology, spec: NotificationSpec, state: AcceptedState, recipients: number): Promise<void> {
  const key = topology.notification(spec.id);
  const fields = { project: spec.project, spec: JSON.stringify(spec), state, recipients: String(recipients) };
  if (redis instanceof Cluster) {
    await redis.hset(key, fields);
    await redis.zadd(topology.notificationList(spec.project), spec.created_at, spec.id);
    if (state === 'scheduled') await redis.zadd(topology.scheduled(), spec.send_after ?? 0, spec.id);
    else await redis.xadd(topology.notifications(), '*', 'd', spec.id);
    return;
  }
  const tx = redis.multi().hset(key, fields).zadd(topology.notificationList(spec.project), spec.created_at, spec.id);
  if (state === 'scheduled') tx.zadd(topology.scheduled(), spec.send_after ?? 0, spec.id);
  else tx.xadd(topology.notifications(), '*', 'd', spec.id);
  const replies = await tx.exec();
  if (replies === null) throw new Error('notification write: transaction aborted');
  for (const [err] of replies) if (err) throw err;
}
