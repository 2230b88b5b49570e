import type { Logger } from '../../engine/log.ts';
import { readCounts, readNotification } from '../../engine/notifications/record.ts';
import type { RedisClient } from '../../engine/redis.ts';
import { ConsumerLoop, ensureGroup } from '../../engine/runner/consumer-loop.ts';
import { fieldOf, toEntries, type StreamEntry } from '../../engine/runner/types.ts';
import { scripts } from '../../engine/scripts.ts';
import { FANOUT_GROUP, type Topology } from '../../engine/topology.ts';
import { walkAudience, type AudienceSources } from './audience.ts';

export interface FanoutOptions {
  redis: RedisClient;
  topology: Topology;
  sources: AudienceSources;
  /** Consumer name in the group: the worker id. */
  consumer: string;
  /** LEASE_MS: a notification left pending this long by a silent worker is taken over. */
  leaseMs: number;
  log: Logger;
}

const BLOCK_MS = 2000;
const RETRY_MS = 500;
/** How long the users-appended set and counters of a notification outlive its ttl, s. */
const KEEP_MARGIN_S = 7 * 24 * 3600;

/**
 * Takes notifications off the notifications log (consumer group FANOUT_GROUP) one at a time and
 * appends a dispatch job per user of its audience to the user's partition. Progress is saved after
 * every chunk, and the users appended are remembered per partition, so a fan-out resumed by
 * another worker after a crash goes on where it stopped and appends nobody twice. While it works,
 * the worker keeps its entry fresh (XCLAIM), so only a dead worker's notification is taken over.
 */
export class FanoutWorker {
  private readonly loop: ConsumerLoop;
  private done: Promise<void> = Promise.resolve();

  constructor(private readonly opts: FanoutOptions) {
    this.loop = new ConsumerLoop(opts.redis);
  }

  start(): void {
    this.done = this.loop.run(() => this.run());
  }

  /** Stops after the chunk in flight; the notification stays pending and is resumed later. */
  stop(): Promise<void> {
    this.loop.stop();
    return this.done;
  }

  private async run(): Promise<void> {
    const { redis, topology, consumer, log } = this.opts;
    const stream = topology.notifications();
    while (!this.loop.stopping) {
      try {
        await ensureGroup(redis, stream, FANOUT_GROUP);
        const stale = await redis.xautoclaim(stream, FANOUT_GROUP, consumer, this.opts.leaseMs * 2, '0-0', 'COUNT', 1);
        const claimed = toEntries(stale[1]);
        const entries =
          claimed.length > 0
            ? claimed
            : toEntries(
                (
                  (await this.loop.read(BLOCK_MS, (blocking) =>
                    blocking.xreadgroup('GROUP', FANOUT_GROUP, consumer, 'COUNT', 1, 'BLOCK', BLOCK_MS, 'STREAMS', stream, '>'),
                  )) as [string, unknown][] | null
                )?.[0]?.[1],
              );
        for (const entry of entries) await this.fanOut(entry);
      } catch (err) {
        if (this.loop.stopping) break;
        log.warn('fan-out error', { err });
        await this.loop.pause(RETRY_MS);
      }
    }
  }

  private async fanOut(entry: StreamEntry): Promise<void> {
    const { redis, topology, consumer, log } = this.opts;
    const stream = topology.notifications();
    const id = fieldOf(entry, 'd') ?? '';
    const record = await readNotification(redis, topology, id);
    if (record === null || record.state === 'canceled' || record.fanned) return this.finish(entry.id);
    const key = topology.notification(id);
    await redis.hset(key, 'state', 'sending');
    const heartbeat = setInterval(() => {
      redis.xclaim(stream, FANOUT_GROUP, consumer, 0, entry.id, 'JUSTID').catch((err: unknown) => log.warn('fan-out heartbeat failed', { err }));
    }, this.opts.leaseMs / 3);
    const keep = record.spec.ttl + KEEP_MARGIN_S;
    let canceled = false;
    try {
      await walkAudience(record.spec, record.cursor, this.opts.sources, async (ids) => {
        if (this.loop.stopping) throw new Stopped();
        if ((await redis.hget(key, 'canceled_at')) !== null) {
          canceled = true;
          throw new Stopped();
        }
        await this.append(id, record.spec.project, ids, keep);
        const last = ids.at(-1);
        if (last !== undefined) await redis.hset(key, 'cursor', last);
      });
    } catch (err) {
      if (!(err instanceof Stopped)) throw err;
      if (!canceled) return;
    } finally {
      clearInterval(heartbeat);
    }
    if (!canceled) {
      // Users named by id were counted at accept; an audience is counted as it is sent, by the
      // jobs counters, which move in the same script call as the appends: a count kept apart
      // would miss the users a crashed predecessor appended before it saved its progress.
      if (record.spec.external_ids === null) await redis.hset(key, 'recipients', (await readCounts(redis, topology, id)).jobs);
      await redis.hset(key, 'fanned', '1');
      await this.forgetAppended(id);
    }
    log.info('fanned out', { notification: id, canceled });
    await this.finish(entry.id);
  }

  /** Appends one chunk's jobs, one script call per partition (a user appended before is skipped). */
  private async append(id: string, project: string, ids: readonly string[], keep: number): Promise<void> {
    const { redis, topology } = this.opts;
    const byPartition = new Map<number, string[]>();
    for (const externalId of ids) {
      const p = topology.partitionOf(project, externalId);
      const list = byPartition.get(p);
      if (list) list.push(externalId);
      else byPartition.set(p, [externalId]);
    }
    await Promise.all(
      [...byPartition].map(([p, users]) =>
        scripts.appendJobs(redis, {
          keys: { dispatch: topology.dispatch(p), fanned: topology.notificationFanned(p, id), counts: topology.notificationCounts(p, id) },
          args: { notification: id, project, keepSeconds: keep },
          users,
        }),
      ),
    );
  }

  /**
   * Once the record says `fanned`, a fan-out of it never runs again (a redelivered log entry
   * finishes at once), so the sets of users appended per partition have served: they go now
   * rather than with the notification's ttl, a set the size of the audience per broadcast. A crash
   * before this leaves them to that ttl.
   */
  private async forgetAppended(id: string): Promise<void> {
    const { redis, topology } = this.opts;
    await Promise.all(Array.from({ length: topology.partitions }, (_, p) => redis.unlink(topology.notificationFanned(p, id))));
  }

  private async finish(entryId: string): Promise<void> {
    const stream = this.opts.topology.notifications();
    await this.opts.redis.xack(stream, FANOUT_GROUP, entryId);
    await this.opts.redis.xdel(stream, entryId);
  }
}

/** Ends a walk early: the worker is stopping, or the notification was canceled. */
class Stopped extends Error {}
