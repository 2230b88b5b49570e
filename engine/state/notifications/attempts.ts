import { setTimeout as sleep } from 'node:timers/promises';
import { isUnavailable } from '../../infra/process/failure.ts';
import type { RedisClient } from '../../infra/redis/client.ts';
import { scripts } from '../../infra/scripts/registry.ts';
import type { JobRecord } from '../../infra/scripts/dispatch.ts';
import { DISPATCH_GROUP, type Topology } from '../../infra/redis/topology.ts';
import { TickBatch } from '../../infra/redis/tick-batch.ts';
import { NotificationKeys } from './redis-keys.ts';

/** Most jobs in one call: a script holds Redis while it runs, about six commands a job. */
const MAX_JOBS = 128;
/**
 * Most outcomes in one entry of `outcomes:{pN}`: one append serves many attempts, and the
 * recorder, whose entry budget counts entries (actors/recorder/limits.ts), holds at most this
 * many rows an entry.
 */
export const OUTCOMES_PER_ENTRY = 8;
/** First and longest pause between tries of a record Redis could not take, ms. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 2000;

/** The keys of one partition's record of one notification, all in the partition's slot. */
interface RecordKeys {
  dispatch: string;
  counts: string;
  outcomes: string;
  retries: string;
  ingest: string;
}

/**
 * Records finished dispatch jobs, and with them the notification's counters this module's owner
 * keeps (engine/infra/scripts/lua/recordAttempts-5.lua) with one call for those of the
 * same partition and notification that finish in the same turn of the event loop. Each job is
 * still acknowledged in the same atomic call that records it, so batching changes no promise: a
 * failed call leaves every job in it pending, to be claimed again.
 */
export class RecordBatch {
  private readonly batch: TickBatch<RecordKeys, JobRecord, undefined>;

  constructor(
    redis: RedisClient,
    private readonly topology: Topology,
  ) {
    this.batch = new TickBatch(MAX_JOBS, async (keys, jobs) => {
      await scripts.recordAttempts(redis, { keys, args: { group: DISPATCH_GROUP, now: Date.now(), perEntry: OUTCOMES_PER_ENTRY }, jobs });
      return jobs.map(() => undefined);
    });
  }

  /**
   * Resolves once the job is recorded (or found recorded before). While Redis is unavailable the
   * record is tried again, with backoff, until `stop` aborts: a job whose send went out and whose
   * record failed would otherwise be claimed and sent again (docs/reliability.md#redis-cluster).
   * Rejects on any other failure, or once stopped; the job then stays pending.
   */
  async record(partition: number, notification: string, job: JobRecord, stop: AbortSignal): Promise<void> {
    const keys = this.keys(partition, notification);
    for (let pause = RETRY_FIRST_MS; ; pause = Math.min(2 * pause, RETRY_MAX_MS)) {
      try {
        await this.batch.add(`${partition}\0${notification}`, keys, job);
        return;
      } catch (err) {
        if (stop.aborted || !isUnavailable(err)) throw err;
        await sleep(pause, undefined, { signal: stop }).catch(() => undefined);
        if (stop.aborted) throw err;
      }
    }
  }

  private keys(partition: number, notification: string): RecordKeys {
    const { topology } = this;
    return {
      dispatch: topology.dispatch(partition),
      counts: topology.own(NotificationKeys).notificationCounts(partition, notification),
      outcomes: topology.outcomes(partition),
      retries: topology.retries(partition),
      ingest: topology.ingest(partition),
    };
  }
}
