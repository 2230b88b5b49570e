import type { Logger } from '../../engine/infra/process/log.ts';
import type { RedisClient } from '../../engine/infra/redis/client.ts';
import { Leases } from '../../engine/infra/runner/lease.ts';
import { EndpointSender, type SenderOptions } from './sender.ts';

/**
 * The senders of this process: every LEASE_MS/3 it takes the lease of each endpoint no process
 * holds and renews its own, so each endpoint has one sender (its order holds) and a dead process's
 * endpoints move to another within LEASE_MS.
 */
export class SenderPool {
  private readonly senders = new Map<string, EndpointSender>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly leases: Leases;

  constructor(
    redis: RedisClient,
    worker: string,
    private readonly leaseMs: number,
    private readonly options: SenderOptions,
    private readonly log: Logger,
  ) {
    this.leases = new Leases(redis, worker, leaseMs);
  }

  start(): void {
    const tick = (): void => {
      this.ticking = this.tick()
        .catch((err: unknown) => this.log.warn('webhook lease round failed', { err }))
        .finally(() => {
          if (!this.closed) this.timer = setTimeout(tick, Math.floor(this.leaseMs / 3));
        });
    };
    tick();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.ticking;
    await Promise.all([...this.senders.keys()].map((id) => this.drop(id, true)));
  }

  private async tick(): Promise<void> {
    const { leases } = this;
    const ids = await this.options.registry.ids();
    for (const id of ids) {
      if (this.closed) return;
      const lease = this.options.registry.senderLease(id);
      const held = this.senders.get(id);
      if (held !== undefined) {
        const renewed = await leases.renew(lease);
        if (!renewed || !held.running) await this.drop(id, renewed);
        continue;
      }
      if (!(await leases.take(lease))) continue;
      const sender = new EndpointSender(id, this.options);
      this.senders.set(id, sender);
      sender.start();
    }
    for (const id of this.senders.keys()) if (!ids.includes(id)) await this.drop(id, true);
  }

  /** Stops an endpoint's sender after its batch in flight; releases the lease when still ours. */
  private async drop(id: string, release: boolean): Promise<void> {
    const sender = this.senders.get(id);
    this.senders.delete(id);
    await sender?.stop();
    if (release) await this.leases.release(this.options.registry.senderLease(id));
  }
}
