import { withFields, type Logger } from '../process/log.ts';
import type { RedisClient } from '../redis/client.ts';
import type { RoleContext, RunningRole } from './roles.ts';
import { scripts } from '../scripts/registry.ts';
import { Leases } from './lease.ts';
import { Rendezvous } from './rendezvous.ts';

/** The work a runner does on one owned partition (a stream consumer). */
export interface PartitionWork {
  start(): void;
  /** Stops after the work in flight; resolves once stopped. */
  stop(): Promise<void>;
}

/** What the work of an owned partition knows of its lease. */
export interface LeaseView {
  /**
   * How long work started now surely ends before another worker can take the partition, ms: the
   * time left on the lease as last confirmed, less a margin for the commands in flight (a sixth of
   * LEASE_MS). 0 or less once the lease may have lapsed, and for good once it is lost.
   */
  remainingMs(): number;
}

export interface PartitionRunnerOptions {
  redis: RedisClient;
  /** How many partitions there are (PARTITIONS). */
  partitions: number;
  /** The lease key of a partition, one per role (engine/infra/redis/topology.ts). */
  leaseKey(partition: number): string;
  /** Sorted set of the live workers of this role, among which partitions are shared. */
  workersKey: string;
  /** Unique per process; the lease value and the consumer name. */
  workerId: string;
  /** Lease and heartbeat lifetime, ms (LEASE_MS); they are renewed every third of it. */
  leaseMs: number;
  /**
   * Builds the work of a newly owned partition; it calls `onLost` when it finds itself fenced, and
   * asks `lease` before work that must not outlive the lease.
   */
  work(partition: number, onLost: () => void, lease: LeaseView): PartitionWork;
  log: Logger;
}

interface LeaseState {
  /** Last time the lease was confirmed ours (ms); past LEASE_MS without renewal it is gone. */
  confirmedAt: number;
  /** Set once the partition is dropped: the lease is another's or has lapsed. */
  lost: boolean;
}

interface Held {
  consumer: PartitionWork;
  lease: LeaseState;
  /** Set once the partition is being given up: the consumer is finishing its batch. */
  leaving?: Promise<void>;
}

/**
 * Owns partitions through leases and runs the role's work (a stream consumer) on each; every
 * LEASE_MS/3 it heartbeats, reassigns by rendezvous hashing and renews or takes leases
 * (docs/architecture.md, "Leases: who owns a partition").
 */
export class PartitionRunner {
  private readonly held = new Map<number, Held>();
  /** Consumers of partitions lost to another worker, until they have stopped. */
  private readonly retiring = new Map<number, Promise<void>>();
  private readonly rendezvous: Rendezvous;
  private readonly leases: Leases;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private closing: Promise<void> | undefined;
  private reported = '';

  constructor(private readonly opts: PartitionRunnerOptions) {
    this.rendezvous = new Rendezvous(opts.partitions);
    this.leases = new Leases(opts.redis, opts.workerId, opts.leaseMs);
  }

  /** Starts the lease loop; the first round runs at once. */
  start(): void {
    this.schedule(0);
  }

  /** Gives up every partition after its batch in flight, releases the leases, leaves the worker set. */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const { redis, workersKey, workerId, log } = this.opts;
    // Leave the worker set first (after a round in flight, which may still heartbeat), so the
    // others take each partition as soon as its lease is released.
    await this.ticking;
    await redis.zrem(workersKey, workerId).catch((err: unknown) => log.warn('heartbeat removal failed', { err }));
    while (this.held.size > 0) {
      await Promise.all([...this.held.entries()].map(([p, held]) => this.leave(p, held)));
    }
    await Promise.all(this.retiring.values());
    clearTimeout(this.timer);
    await this.ticking;
    this.report();
  }

  private schedule(delay: number): void {
    this.timer = setTimeout(() => {
      this.ticking = this.tick()
        .catch((err: unknown) => this.opts.log.warn('lease round failed', { err }))
        .finally(() => {
          if (!this.closing || this.held.size > 0) this.schedule(Math.max(1, Math.floor(this.opts.leaseMs / 3)));
        });
    }, delay);
  }

  private async tick(): Promise<void> {
    const { redis, workersKey, workerId, leaseMs } = this.opts;
    const now = Date.now();
    let wanted = new Set<number>();
    if (!this.closing) {
      const { live } = await scripts.heartbeat(redis, { keys: { workers: workersKey }, args: { worker: workerId, now, expiresAt: now + leaseMs } });
      wanted = this.rendezvous.assigned(live, workerId);
    }
    await Promise.all([...this.held.entries()].map(([p, held]) => this.keep(p, held, wanted.has(p), now)));
    if (!this.closing) {
      const missing = [...wanted].filter((p) => !this.held.has(p) && !this.retiring.has(p));
      await Promise.all(missing.map((p) => this.acquire(p, now)));
      this.report();
    }
  }

  /** Renews a held lease, and starts giving the partition up when it is no longer wanted. */
  private async keep(partition: number, held: Held, wanted: boolean, now: number): Promise<void> {
    const { leaseKey, leaseMs, log } = this.opts;
    try {
      const renewed = await this.leases.renew(leaseKey(partition));
      if (renewed) held.lease.confirmedAt = now;
      else return this.drop(partition, held);
    } catch (err) {
      log.warn('lease renewal failed', { partition, err });
      if (now - held.lease.confirmedAt >= leaseMs) return this.drop(partition, held);
    }
    if (!wanted) void this.leave(partition, held);
  }

  /** Gives a partition up: its consumer finishes the batch in flight, then the lease is released. */
  private leave(partition: number, held: Held): Promise<void> {
    const { leaseKey, log } = this.opts;
    held.leaving ??= held.consumer.stop().then(async () => {
      if (this.held.get(partition) !== held) return;
      await this.leases.release(leaseKey(partition)).catch((err: unknown) => log.warn('lease release failed', { partition, err }));
      this.held.delete(partition);
      if (!this.closing) this.report();
    });
    return held.leaving;
  }

  /**
   * Forgets a partition whose lease is no longer ours. Its consumer stops (its applies are fenced
   * anyway); the partition is not taken again before that consumer has finished.
   */
  private drop(partition: number, held: Held): void {
    if (this.held.get(partition) !== held) return;
    held.lease.lost = true;
    this.held.delete(partition);
    this.retiring.set(
      partition,
      held.consumer.stop().finally(() => this.retiring.delete(partition)),
    );
    this.report();
  }

  private async acquire(partition: number, now: number): Promise<void> {
    const { leaseKey, leaseMs } = this.opts;
    const taken = await this.leases.take(leaseKey(partition));
    if (!taken || this.closing) {
      if (taken) await this.leases.release(leaseKey(partition));
      return;
    }
    // `now` was taken before the lease was set, so the lease expires no sooner than LEASE_MS after it.
    const lease: LeaseState = { confirmedAt: now, lost: false };
    const margin = Math.floor(leaseMs / 6);
    const view: LeaseView = { remainingMs: () => (lease.lost ? 0 : lease.confirmedAt + leaseMs - margin - Date.now()) };
    const consumer = this.opts.work(
      partition,
      () => {
        const held = this.held.get(partition);
        if (held?.consumer === consumer) this.drop(partition, held);
      },
      view,
    );
    this.held.set(partition, { consumer, lease });
    consumer.start();
  }

  /** Logs the owned partitions whenever they change. */
  private report(): void {
    const owned = [...this.held.keys()].sort((a, b) => a - b);
    const text = owned.join(',');
    if (text === this.reported) return;
    this.reported = text;
    this.opts.log.info('partitions', { owned });
  }
}

/**
 * Runs a partitioned role: a PartitionRunner with the process's worker id, LEASE_MS and
 * PARTITIONS, started at once. close() gives up every partition after its work in flight, then
 * quits `redis` (the role's own client); it is idempotent.
 */
export function runPartitionRole(
  name: string,
  ctx: RoleContext,
  redis: RedisClient,
  role: Pick<PartitionRunnerOptions, 'leaseKey' | 'workersKey' | 'work'>,
): RunningRole {
  const { config, workerId } = ctx;
  // Several partitioned roles may run in one process: their lines (partitions owned) name theirs.
  const log = withFields(ctx.log, { role: name });
  const runner = new PartitionRunner({ redis, partitions: config.PARTITIONS, workerId, leaseMs: config.LEASE_MS, log, ...role });
  runner.start();
  let closing: Promise<void> | undefined;
  return {
    name,
    close: () =>
      (closing ??= runner.close().then(async () => {
        await redis.quit();
      })),
  };
}
