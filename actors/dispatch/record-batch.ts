import type { RedisClient } from '../../engine/redis.ts';
import { scripts } from '../../engine/scripts.ts';
import type { JobRecord } from '../../engine/scripts/dispatch.ts';
import { DISPATCH_GROUP } from '../../engine/topology.ts';

/** Most jobs in one call: a script holds Redis while it runs, about six commands a job. */
const MAX_JOBS = 128;

/** The keys of one partition's record of one notification, all in the partition's slot. */
export interface RecordKeys {
  dispatch: string;
  counts: string;
  outcomes: string;
  retries: string;
  ingest: string;
}

interface Pending {
  keys: RecordKeys;
  jobs: JobRecord[];
  settle: { resolve(): void; reject(err: unknown): void }[];
}

/**
 * Records finished dispatch jobs (engine/lua/recordAttempts-5.lua) with one call for those of the
 * same partition and notification that finish in the same turn of the event loop: under load a
 * call per job cost more in building commands and in Redis than the records themselves
 * (docs/performance.md, "Against a minimal HTTP/2 peer"). Each job is still acknowledged in the
 * same atomic call that records it, so batching changes no promise: a failed call rejects every
 * job in it, and each stays pending until it is claimed again.
 */
export class RecordBatch {
  private readonly pending = new Map<string, Pending>();
  private scheduled = false;

  constructor(private readonly redis: RedisClient) {}

  /** Resolves once the job is recorded (or found recorded before); rejects when Redis fails. */
  record(keys: RecordKeys, job: JobRecord): Promise<void> {
    return new Promise((resolve, reject) => {
      const id = `${keys.dispatch}\0${keys.counts}`;
      let batch = this.pending.get(id);
      if (batch === undefined) {
        batch = { keys, jobs: [], settle: [] };
        this.pending.set(id, batch);
      }
      batch.jobs.push(job);
      batch.settle.push({ resolve, reject });
      if (batch.jobs.length >= MAX_JOBS) {
        this.pending.delete(id);
        this.send(batch);
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
    for (const batch of batches) this.send(batch);
  }

  private send({ keys, jobs, settle }: Pending): void {
    scripts.recordAttempts(this.redis, { keys, args: { group: DISPATCH_GROUP, now: Date.now() }, jobs }).then(
      () => {
        for (const s of settle) s.resolve();
      },
      (err: unknown) => {
        for (const s of settle) s.reject(err);
      },
    );
  }
}
