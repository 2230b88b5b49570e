import { Cluster } from 'ioredis';

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

/**
 * A TickBatch of one client's calls: on one Redis the calls of a turn go in one whatever their
 * keys; on a Redis Cluster a call may name keys of one slot only, so the calls for each key go in
 * one of their own.
 */
export class SlotBatch<I, R> {
  private readonly batch: TickBatch<null, I, R>;
  private readonly cluster: boolean;

  constructor(client: object, max: number, send: (items: I[]) => Promise<readonly R[]>) {
    this.cluster = client instanceof Cluster;
    this.batch = new TickBatch(max, (_, items) => send(items));
  }

  /** `key`: the item's key (or a key of its slot), which picks its call on a Cluster. */
  add(key: string, item: I): Promise<R> {
    return this.batch.add(this.cluster ? key : '', null, item);
  }
}
