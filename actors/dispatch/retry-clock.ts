import type { Logger } from '../../engine/infra/process/log.ts';
import type { RedisClient } from '../../engine/infra/redis/client.ts';
import type { Topology } from '../../engine/infra/redis/topology.ts';
import { scripts } from '../../engine/infra/scripts/registry.ts';

/** How often the clock looks for a partition whose retries are due, ms. */
const TICK_MS = 250;
/**
 * Longest a partition's retries go unread. A retry is queued by the process that ran its job; one
 * that lost the partition's lease meanwhile queues it unseen by the new owner, which finds it
 * within this.
 */
const RECHECK_MS = 10_000;

/**
 * Moves a partition's dispatch retries whose backoff ended back onto its dispatch stream
 * (engine/infra/scripts/lua/releaseDue-2.lua), for the partitions this process owns. It calls only
 * when one is due: each call answers when the earliest retry left is due, and a retry this process
 * queues moves that time forward, so idle partitions cost no command but a look every
 * RECHECK_MS.
 */
export class RetryClock {
  /** Owned partitions and when their retries are next looked at, ms. */
  private readonly due = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly topology: Topology,
    private readonly log: Logger,
    /** Most retries moved in a call: a partition's window (a retry is one user's job). */
    private readonly max: number,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => this.tick(Date.now()), TICK_MS);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The partition is this process's now: its retries are looked at on the next tick. */
  own(partition: number): void {
    this.due.set(partition, 0);
  }

  disown(partition: number): void {
    this.due.delete(partition);
  }

  /** A job of the partition queued a retry due at `at` (ms). */
  queued(partition: number, at: number): void {
    const due = this.due.get(partition);
    if (due !== undefined && at < due) this.due.set(partition, at);
  }

  private tick(now: number): void {
    for (const [partition, due] of this.due) {
      if (due <= now) void this.release(partition, now);
    }
  }

  private async release(partition: number, now: number): Promise<void> {
    // Not looked at again while this call runs, unless a retry is queued meanwhile.
    this.due.set(partition, now + RECHECK_MS);
    let next: number;
    try {
      const reply = await scripts.releaseDue(this.redis, {
        keys: { waiting: this.topology.retries(partition), stream: this.topology.dispatch(partition) },
        args: { now, max: this.max },
      });
      next = reply.next ?? Infinity;
    } catch (err) {
      this.log.warn('dispatch retries not released', { partition, err });
      next = now + TICK_MS;
    }
    const due = this.due.get(partition);
    if (due !== undefined) this.due.set(partition, Math.min(due, next));
  }
}
