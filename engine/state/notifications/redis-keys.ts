import type { Topology } from '../../infra/redis/topology.ts';

/** The keys of notifications: records, lists, idempotency keys, the scheduled set and per-partition counters and marks. Only engine/state/notifications/ imports it. */
export class NotificationKeys {
  constructor(private readonly topology: Topology) {}

  /** A notification's record (hash): its own hash tag, so its keys share a slot. */
  notification(id: string): string {
    return `${this.topology.prefix}notif:{n:${id}}`;
  }

  /** A notification's throttle bucket (takeToken), next to its record. */
  notificationRate(id: string): string {
    return `${this.topology.prefix}nrate:{n:${id}}`;
  }

  /** A project's notifications (sorted set of ids scored by created_at): GET /api/notifications. */
  notificationList(project: string): string {
    return `${this.topology.prefix}nlist:${project}`;
  }

  /** An idempotency key of POST /api/notifications: the notification it created, for 30 days. */
  notificationIdempotency(project: string, key: string): string {
    return `${this.topology.prefix}nidem:${project}:${key}`;
  }

  /** Notifications waiting for their send_after (sorted set scored by it). */
  scheduled(): string {
    return `${this.topology.prefix}{notifications}:scheduled`;
  }

  /** A notification's counters in partition N: jobs, done, sent, failed, skipped, last_at. */
  notificationCounts(partition: number, id: string): string {
    return `${this.topology.prefix}ncount:${this.topology.tag(partition)}:${id}`;
  }

  /**
   * A notification's cancel mark in partition N (string, the cancel time): dispatch reads it with
   * the user's record in one call in the partition's slot (engine/infra/scripts/lua/loadRecipients-n.lua).
   */
  notificationCanceled(partition: number, id: string): string {
    return `${this.topology.prefix}ncancel:${this.topology.tag(partition)}:${id}`;
  }

  /** The users of partition N a notification's fan-out appended (set): a resumed fan-out skips them. */
  notificationFanned(partition: number, id: string): string {
    return `${this.topology.prefix}nfan:${this.topology.tag(partition)}:${id}`;
  }
}
