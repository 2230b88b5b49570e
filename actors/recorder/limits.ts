/**
 * How the recorder batches: at most about 1 s or 10k stream entries, whichever comes first. An
 * outcomes entry holds up to 8 outcomes (OUTCOMES_PER_ENTRY), so a batch may hold 8 times as many rows.
 */
export interface RecorderLimits {
  maxBatch: number;
  lingerMs: number;
  quietMs: number;
  retryMs: number;
  maxBuffered: number;
  probeBatch: number;
  budgetWaitMs: number;
  gatherMs: number;
  maxRoundEntries: number;
  roundTtlSeconds: number;
}

export const RecorderLimits: Readonly<RecorderLimits> = {
  /** Most entries of one stream in one insert; also the COUNT that re-reads a pending batch. */
  maxBatch: 10_000,
  /**
   * Longest an entry waits in a batch before the batch is inserted, ms. Batches fall due on the
   * clock's multiples of it, so the partitions of a process are due together and share a round.
   */
  lingerMs: 1000,
  /**
   * How long every stream of the process must go without a new entry for the batches held to be
   * inserted before they fall due (QuietWatch), ms: far longer than the gaps of a running load.
   */
  quietMs: 50,
  /** Pause before a failed insert is tried again, ms. */
  retryMs: 500,
  /** Most entries read but not yet inserted, over every partition of the process (EntryBudget). */
  maxBuffered: 20_000,
  /**
   * What a partition asks of the budget for a read while its streams keep up (its last read found
   * fewer entries than it asked for): a steady load's reads each hold this little of the budget
   * at once, so none waits for another's; a read that comes back full asks for a whole batch next.
   */
  probeBatch: 256,
  /** Pause of a partition that finds the budget spent before it looks again, ms. */
  budgetWaitMs: 5,
  /** How long a round waits, after its first batch, for the other partitions' batches due with it, ms. */
  gatherMs: 25,
  /** A round of this many entries goes without waiting for more batches: a backlog's full batch needs no company. */
  maxRoundEntries: 10_000,
  /** How long a round's manifest outlives a crash that kept it from being deleted, s. */
  roundTtlSeconds: 7 * 24 * 3600,
};

