/** Consumer group of the ingest streams (the partition actors); applyBatch gets it as ARGV group. */
export const APPLY_GROUP = 'apply';
/** Consumer group of the notifications stream (fan-out workers). */
export const FANOUT_GROUP = 'fanout';
/** Consumer group of the dispatch streams (dispatch workers). */
export const DISPATCH_GROUP = 'dispatch';
/** Consumer group of the changes and outcomes streams (the recorder). */
export const RECORDER_GROUP = 'recorder';
/** Consumer group of the changes and outcomes streams that the webhooks role taps for events. */
export const WEBHOOKS_GROUP = 'webhooks';

/**
 * Partitioning and the keys of the infrastructure: the log's streams, the live tail's channel,
 * and the leases and worker sets of the roles that run partitions. Every key an apply touches
 * carries the partition's hash tag `{pN}` so one script call stays in one Redis Cluster slot. The
 * owners of state build their own keys from the primitives below, each in its `redis-keys.ts`
 * (docs/architecture.md, "Redis keys").
 */
export class Topology {
  private readonly owners = new Map<new (topology: Topology) => unknown, unknown>();

  constructor(
    readonly prefix: string,
    readonly partitions: number,
  ) {}

  /** An owner's key builder over this topology (its `redis-keys.ts`), made once. */
  own<K>(Keys: new (topology: Topology) => K): K {
    let keys = this.owners.get(Keys) as K | undefined;
    if (keys === undefined) this.owners.set(Keys, (keys = new Keys(this)));
    return keys;
  }

  /** Stable partition of a user: FNV-1a over UTF-8 of `project \0 external_id`, mod PARTITIONS. */
  partitionOf(project: string, externalId: string): number {
    return fnv1a(project, externalId) % this.partitions;
  }

  tag(partition: number): string {
    return `{p${partition}}`;
  }

  ingest(partition: number): string {
    return this.named(`ingest:${this.tag(partition)}`);
  }

  changes(partition: number): string {
    return this.named(`changes:${this.tag(partition)}`);
  }

  outcomes(partition: number): string {
    return this.named(`outcomes:${this.tag(partition)}`);
  }

  outbox(partition: number): string {
    return this.named(`outbox:${this.tag(partition)}`);
  }

  applied(partition: number): string {
    return this.named(`applied:${this.tag(partition)}`);
  }

  /** Notifications ready for fan-out (stream, group FANOUT_GROUP); one slot with the scheduled set. */
  notifications(): string {
    return this.named('{notifications}:log');
  }

  /** Dispatch jobs of the users of partition N (stream, group DISPATCH_GROUP). */
  dispatch(partition: number): string {
    return this.named(`dispatch:${this.tag(partition)}`);
  }

  /** Dispatch jobs of partition N waiting for a retry (sorted set scored by due time). */
  retries(partition: number): string {
    return this.named(`retry:${this.tag(partition)}`);
  }

  /** Pub/sub channel of delivery records as the recorder inserts them (GET /api/deliveries/live). */
  liveDeliveries(): string {
    return this.named('live:deliveries');
  }

  /** The lease of partition N of the apply role (engine/infra/runner/lease.ts); applyBatch fences on it. */
  lease(partition: number): string {
    return this.named(`lease:${this.tag(partition)}`);
  }

  recorderLease(partition: number): string {
    return this.named(`lease:recorder:${this.tag(partition)}`);
  }

  webhooksLease(partition: number): string {
    return this.named(`lease:webhooks:${this.tag(partition)}`);
  }

  dispatchLease(partition: number): string {
    return this.named(`lease:dispatch:${this.tag(partition)}`);
  }

  /** The apply role's live workers (engine/infra/runner/partition-runner.ts); each role has its own set. */
  workers(): string {
    return this.named('workers');
  }

  recorderWorkers(): string {
    return this.named('workers:recorder');
  }

  webhooksWorkers(): string {
    return this.named('workers:webhooks');
  }

  dispatchWorkers(): string {
    return this.named('workers:dispatch');
  }

  /** A key of no partition: the prefix, then `rest`. */
  named(rest: string): string {
    return `${this.prefix}${rest}`;
  }

  /** The start of partition N's keys of one kind: `<prefix><kind>:{pN}:`. */
  inPartition(partition: number, kind: string): string {
    return `${this.prefix}${kind}:${this.tag(partition)}:`;
  }

  /** A user's key of one kind, in the user's partition: `<kind>:{pN}:<project>:<external_id>`. */
  ofUser(kind: string, project: string, externalId: string): string {
    return `${this.inPartition(this.partitionOf(project, externalId), kind)}${project}:${externalId}`;
  }
}

/** Where the UTF-8 of the texts hashed is written: a key is hashed without allocating. */
const scratch = Buffer.allocUnsafe(2048);

/**
 * FNV-1a, 32 bits, over the UTF-8 of `parts` joined by NUL bytes: the hash that picks a
 * partition. The parts are written one after the other into a scratch buffer (a UTF-16 unit is at
 * most 3 bytes of UTF-8), so hashing a key makes no joined string and no array of its bytes: a
 * dispatch job and an SDK write each hash a user (docs/performance.md, "A push's allocations").
 */
export function fnv1a(...parts: string[]): number {
  let room = parts.length - 1;
  for (const part of parts) room += part.length * 3;
  if (room > scratch.length) {
    const bytes = Buffer.from(parts.join('\0'));
    return fnv1aBytes(bytes, bytes.length);
  }
  let length = 0;
  for (let i = 0; i < parts.length; i++) {
    if (i > 0) scratch[length++] = 0;
    length += scratch.write(parts[i] as string, length);
  }
  return fnv1aBytes(scratch, length);
}

function fnv1aBytes(bytes: Buffer, length: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < length; i++) {
    hash ^= bytes[i] as number;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** Text matched literally by a SCAN pattern. */
export function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
