import type { Logger } from '../../engine/infra/process/log.ts';
import { Notifications } from '../../engine/state/notifications/lifecycle.ts';
import type { RedisClient } from '../../engine/infra/redis/client.ts';
import type { Metrics } from '../../engine/infra/process/metrics.ts';
import { BLOCK_MS, ConsumerLoop } from '../../engine/infra/runner/consumer-loop.ts';
import { fieldOf, type StreamEntry } from '../../engine/infra/runner/types.ts';
import { FANOUT_GROUP, type Topology } from '../../engine/infra/redis/topology.ts';
import type { NotificationSpec } from '../../schemas/notifications.ts';
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
  metrics: Pick<Metrics, 'lostEntries'>;
}

/**
 * Takes notifications off the notifications log (consumer group FANOUT_GROUP) one at a time and
 * appends a dispatch job per user of its audience to the user's partition. Progress is saved after
 * every chunk, and the users appended are remembered per partition, so a fan-out resumed by
 * another worker after a crash goes on where it stopped and appends nobody twice. While it works,
 * the worker keeps its entry fresh (XCLAIM), so only a dead worker's notification is taken over.
 */
export class FanoutWorker {
  private readonly loop: ConsumerLoop;
  private readonly notifications: Notifications;
  private done: Promise<void> = Promise.resolve();

  constructor(private readonly opts: FanoutOptions) {
    const { redis, consumer, log, metrics } = opts;
    this.loop = new ConsumerLoop({ redis, group: FANOUT_GROUP, consumer, log, metrics });
    this.notifications = new Notifications(redis, opts.topology);
  }

  start(): void {
    const stream = this.opts.topology.notifications();
    this.done = this.loop.run({
      recover: () => this.loop.ensureGroup(stream),
      turn: async () => {
        // The log is shared by every fan-out worker, without leases: a notification a dead worker
        // left pending is taken over once it has been idle for two leases.
        let claimed = false;
        await this.loop.claim(stream, { minIdleMs: this.opts.leaseMs * 2, count: () => 1 }, async (entries) => {
          claimed = true;
          for (const entry of entries) await this.fanOut(entry);
        });
        if (claimed) return;
        for (const entry of (await this.loop.read([stream], 1, BLOCK_MS)).get(stream) ?? []) await this.fanOut(entry);
      },
    });
  }

  /** Stops after the chunk in flight; the notification stays pending and is resumed later. */
  stop(): Promise<void> {
    this.loop.stop();
    return this.done;
  }

  private async fanOut(entry: StreamEntry): Promise<void> {
    const { topology, log } = this.opts;
    const { notifications } = this;
    const stream = topology.notifications();
    const id = fieldOf(entry, 'd') ?? '';
    const record = await notifications.read(id);
    if (record === null || record.canceledAt !== null || record.fanned) return this.loop.settle(stream, [entry.id]);
    await notifications.start(id);
    const heartbeat = setInterval(() => {
      this.loop.keepFresh(stream, entry.id).catch((err: unknown) => log.warn('fan-out heartbeat failed', { err }));
    }, this.opts.leaseMs / 3);
    let canceled = false;
    try {
      await walkAudience(record.spec, record.cursor, this.opts.sources, async (ids) => {
        if (this.loop.stopping) throw new Stopped();
        if (await notifications.isCanceled(id)) {
          canceled = true;
          throw new Stopped();
        }
        await this.append(record.spec, ids);
        const last = ids.at(-1);
        if (last !== undefined) await notifications.saveProgress(id, last);
      });
    } catch (err) {
      if (!(err instanceof Stopped)) throw err;
      if (!canceled) return;
    } finally {
      clearInterval(heartbeat);
    }
    if (!canceled) await notifications.finishFanout(record.spec);
    log.info('fanned out', { notification: id, canceled });
    await this.loop.settle(stream, [entry.id]);
  }

  /** Appends one chunk's jobs, one script call per partition (a user appended before is skipped). */
  private async append(spec: NotificationSpec, ids: readonly string[]): Promise<void> {
    const { topology } = this.opts;
    const byPartition = new Map<number, string[]>();
    for (const externalId of ids) {
      const p = topology.partitionOf(spec.project, externalId);
      const list = byPartition.get(p);
      if (list) list.push(externalId);
      else byPartition.set(p, [externalId]);
    }
    await Promise.all([...byPartition].map(([p, users]) => this.notifications.appendJobs(spec, p, users)));
  }
}

/** Ends a walk early: the worker is stopping, or the notification was canceled. */
class Stopped extends Error {}
