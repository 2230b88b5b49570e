import { SlotBatch } from '../redis/tick-batch.ts';
import { scripts } from '../scripts/registry.ts';
import type { Command } from '../scripts/contract.ts';

/** The commands a lease holder sends (engine/infra/scripts/lua/setIfAbsent-1.lua, renewLeases-n.lua, releaseLease-1.lua). */
export type LeaseClient = Record<'setIfAbsent' | 'renewLeases' | 'releaseLease', Command>;

/** Most leases renewed in one call. */
const MOST_PER_CALL = 256;

/**
 * The leases one worker holds: each lease is a key whose value is the worker id and which expires
 * LEASE_MS after it was last taken or renewed, so a dead worker's leases move to another within
 * LEASE_MS (docs/architecture.md, "Leases: who owns a partition"). Every holder of a lease — the
 * partition runner, the webhook senders and the notification watcher — takes, renews and releases
 * it here. Each method is one script call (hold at most two); the renewals asked in one turn of
 * the event loop share one (on a Redis Cluster, one a lease: each is in its own slot). A failed
 * command rejects the call, and what to do then is the caller's (it knows when the lease was last
 * confirmed).
 */
export class Leases {
  private readonly renewals: SlotBatch<string, boolean>;

  constructor(
    private readonly redis: LeaseClient,
    /** The value of every lease taken here: the process's worker id. */
    readonly worker: string,
    /** How long a lease lasts after it is taken or renewed, ms (LEASE_MS). */
    readonly leaseMs: number,
  ) {
    this.renewals = new SlotBatch(redis, MOST_PER_CALL, (leases) => scripts.renewLeases(this.redis, { keys: {}, args: { worker: this.worker, leaseMs: this.leaseMs }, leases }));
  }

  /** Takes the lease if no one holds it (`SET NX PX leaseMs`): whether it was taken. */
  async take(key: string): Promise<boolean> {
    const { set } = await scripts.setIfAbsent(this.redis, { keys: { key }, args: { value: this.worker, ttlMs: this.leaseMs } });
    return set;
  }

  /** Extends the lease to leaseMs from now if it is still ours: false when it is gone or another's. */
  renew(key: string): Promise<boolean> {
    return this.renewals.add(key, key);
  }

  /**
   * Renews the lease if it is ours, else takes it if it is free: whether it is ours now. For a
   * holder that need not know whether it held the lease before (one lease, nothing fenced by it);
   * a holder whose work must stop when its lease was lost renews what it holds and takes only what
   * it does not.
   */
  async hold(key: string): Promise<boolean> {
    return (await this.renew(key)) || (await this.take(key));
  }

  /** Deletes the lease if it is still ours: whether it was (false when it was gone or another's). */
  async release(key: string): Promise<boolean> {
    const { released } = await scripts.releaseLease(this.redis, { keys: { lease: key }, args: { worker: this.worker } });
    return released;
  }
}
