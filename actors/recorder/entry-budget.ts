/**
 * How many stream entries the recorder's partitions in one process may hold read but not yet
 * inserted, all together, so a backlog is not read by every partition at once while ClickHouse
 * waits (docs/architecture.md, "The recorder").
 */
export class EntryBudget {
  private available: number;

  constructor(readonly limit: number) {
    this.available = limit;
  }

  /**
   * Takes `want` entries of the budget, or none (0) when fewer are free: a partition granted less
   * than its batch's room would hold a part batch until it is due, and a backlog shared out so
   * among many partitions would be inserted a second late, a part at a time.
   */
  take(want: number): number {
    if (want > this.available) return 0;
    this.available -= want;
    return want;
  }

  /**
   * Gives back `count` entries (negative: takes that many more, since one read of two streams
   * may return up to its COUNT from each).
   */
  give(count: number): void {
    this.available = Math.min(this.limit, this.available + count);
  }
}
