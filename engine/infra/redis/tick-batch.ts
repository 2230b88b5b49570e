interface Pending<C, I, R> {
  context: C;
  items: I[];
  settle: { resolve(result: R): void; reject(err: unknown): void }[];
}

/**
 * Gathers the calls made for one key (a partition and notification) during one turn of the event
 * loop and makes them as one: under load, a Redis call per job cost more in building commands and
 * in Redis than the work itself (docs/performance.md, "Against a minimal HTTP/2 peer"). A batch
 * goes once the turn ends (setImmediate) or once it holds `max` items; a failed call rejects every
 * item in it.
 */
export class TickBatch<C, I, R> {
  private readonly pending = new Map<string, Pending<C, I, R>>();
  private scheduled = false;

  /** `send` answers one result per item, in order; `context` is the first call's for its key. */
  constructor(
    private readonly max: number,
    private readonly send: (context: C, items: I[]) => Promise<readonly R[]>,
  ) {}

  add(key: string, context: C, item: I): Promise<R> {
    return new Promise((resolve, reject) => {
      let batch = this.pending.get(key);
      if (batch === undefined) {
        batch = { context, items: [], settle: [] };
        this.pending.set(key, batch);
      }
      batch.items.push(item);
      batch.settle.push({ resolve, reject });
      if (batch.items.length >= this.max) {
        this.pending.delete(key);
        this.run(batch);
      } else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batches = [...this.pending.values()];
    this.pending.clear();
    for (const batch of batches) this.run(batch);
  }

  private run({ context, items, settle }: Pending<C, I, R>): void {
    this.send(context, items).then(
      (results) => settle.forEach((s, i) => s.resolve(results[i] as R)),
      (err: unknown) => settle.forEach((s) => s.reject(err)),
    );
  }
}
