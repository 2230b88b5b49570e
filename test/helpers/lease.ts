import type { LeaseView } from '../../engine/infra/runner/partition-runner.ts';

/** A lease that stays held for as long as a test runs. */
export const heldLease: LeaseView = { remainingMs: () => 60_000 };

/**
 * A lease renewed every 50 ms until the test lets it lapse. Like PartitionRunner's, what it
 * reports is the time left less a margin, so work it allows ends before the lease expires; another
 * owner may take the partition only once it has expired.
 */
export class RenewedLease implements LeaseView {
  private confirmedAt = Date.now();
  private readonly renewal = setInterval(() => (this.confirmedAt = Date.now()), 50);
  private readonly ms = 600;
  private readonly margin = 100;

  remainingMs(): number {
    return this.confirmedAt + this.ms - this.margin - Date.now();
  }

  expired(): boolean {
    return Date.now() >= this.confirmedAt + this.ms;
  }

  /** Stops renewing. */
  lapse(): void {
    clearInterval(this.renewal);
  }
}
