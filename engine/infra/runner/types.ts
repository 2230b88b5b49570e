/** One stream entry as Redis returns it: its ID and its flat field/value list. */
export interface StreamEntry {
  id: string;
  fields: string[];
}

/** What applying one batch came to. */
export type BatchOutcome =
  /**
   * Applied (entries at or below the last applied ID were skipped and acknowledged). `pending`:
   * entries the group still has pending after it, which no batch holds (a read whose reply was lost).
   */
  | { kind: 'applied'; pending?: number }
  /** This worker no longer holds the partition's lease: nothing was applied; stop the partition. */
  | { kind: 'lost' }
  /** The batch does not continue the stream right after `after` (the last applied ID). */
  | { kind: 'gap'; after: string };

/**
 * What the runner drives for each partition it owns (the partition actor implements it). Narrow so
 * the runner can be exercised with a plain object.
 */
export interface PartitionHandler {
  /** Called when this worker acquires the partition, before any batch (finish leftover work). */
  open(partition: number): Promise<void>;
  /** Applies a batch in ascending ID order, atomically, fenced by the partition's lease. */
  apply(partition: number, entries: StreamEntry[]): Promise<BatchOutcome>;
}

/** The [id, fields] items of a stream reply that `make` accepts, leaving out deleted ones (null fields). */
function entriesOf<T>(reply: unknown, make: (id: unknown, fields: unknown[]) => T | undefined): T[] {
  if (!Array.isArray(reply)) return [];
  const entries: T[] = [];
  for (const item of reply as unknown[]) {
    if (!Array.isArray(item)) continue;
    const [id, fields] = item as unknown[];
    const entry = Array.isArray(fields) ? make(id, fields) : undefined;
    if (entry !== undefined) entries.push(entry);
  }
  return entries;
}

/** Turns a stream reply ([id, fields][]) into entries, leaving out deleted ones (null fields). */
export function toEntries(reply: unknown): StreamEntry[] {
  return entriesOf(reply, (id, fields) => (typeof id === 'string' ? { id, fields: fields.map(String) } : undefined));
}

/**
 * One stream entry as Redis returns it to a `…Buffer` read (engine/infra/redis/client.ts): its ID and its
 * field names and values as bytes. The recorder reads its streams so and hands outcome values to
 * ClickHouse undecoded.
 */
export interface RawStreamEntry {
  id: string;
  fields: Buffer[];
}

const allBuffers = (fields: unknown[]): fields is Buffer[] => fields.every((f) => Buffer.isBuffer(f));

/** As toEntries, for a reply of a `…Buffer` read. */
export function toRawEntries(reply: unknown): RawStreamEntry[] {
  return entriesOf(reply, (id, fields) => (Buffer.isBuffer(id) && allBuffers(fields) ? { id: id.toString('latin1'), fields } : undefined));
}

/** The value of one field of a stream entry (fields alternate name, value). */
export function fieldOf(entry: StreamEntry, name: string): string | undefined {
  for (let i = 0; i + 1 < entry.fields.length; i += 2) if (entry.fields[i] === name) return entry.fields[i + 1];
  return undefined;
}
