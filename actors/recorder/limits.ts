/** How the recorder batches (at most about 1 s or 10k rows, whichever comes first). */
export interface RecorderLimits {
  maxBatch: number;
  lingerMs: number;
  retryMs: number;
  maxBuffered: number;
  budgetWaitMs: number;
}

export const RecorderLimits: Readonly<RecorderLimits> = {
  /** Most entries of one stream in one insert; also the COUNT that re-reads a pending batch. */
  maxBatch: 10_000,
  /** Longest an entry waits in a batch before the batch is inserted, ms. */
  lingerMs: 1000,
  /** Pause before a failed insert is tried again, ms. */
  retryMs: 500,
  /** Most entries read but not yet inserted, over every partition of the process (EntryBudget). */
  maxBuffered: 20_000,
  /** Pause of a partition that finds the budget spent before it looks again, ms. */
  budgetWaitMs: 5,
};

/** Consumer group of the changes and outcomes streams. */
export const RECORDER_GROUP = 'recorder';
