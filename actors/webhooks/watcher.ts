import type { WebhookEventType } from '../../schemas/webhooks.ts';
import type { Logger } from '../../engine/infra/process/log.ts';
import type { Notifications, NotificationRecord } from '../../engine/state/notifications/lifecycle.ts';
import type { RedisClient } from '../../engine/infra/redis/client.ts';
import { Leases } from '../../engine/infra/runner/lease.ts';
import { WEBHOOKS_GROUP, type Topology } from '../../engine/infra/redis/topology.ts';
import type { EndpointCopy } from './endpoints.ts';
import { endEvent } from './events.ts';
import type { WebhookRegistry } from '../../engine/state/webhooks/registry.ts';

const END_TYPES: readonly WebhookEventType[] = ['notification.completed', 'notification.canceled'];
/** How often notifications are looked at, ms. */
const WATCH_MS = 1000;
/** Most notifications looked at per round. */
const WATCH_MAX = 500;
/** Longest a completed notification waits for the tap to queue its last deliveries, ms. */
const CATCH_UP_MAX_MS = 10_000;
/** How long a notification is watched at most, ms: its end comes well before. */
const WATCH_LIMIT_MS = 8 * 24 * 3600 * 1000;

const member = (project: string, id: string): string => `${project}\t${id}`;

/**
 * Tells receivers when a notification ends (`notification.completed`, `notification.canceled`):
 * one process at a time (a lease) watches the notifications of projects whose endpoints take
 * those events, from the project's list, and queues the event once the notification has ended.
 * A completed notification's event waits until the tap has queued every delivery recorded before
 * it ended (or CATCH_UP_MAX_MS), so it comes after them.
 */
export class NotificationWatcher {
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private closed = false;
  /** When each notification was first seen completed (Redis time, ms). */
  private readonly completedSeen = new Map<string, number>();
  private readonly leases: Leases;

  constructor(
    private readonly opts: {
      redis: RedisClient;
      topology: Topology;
      notifications: Notifications;
      endpoints: EndpointCopy;
      registry: WebhookRegistry;
      worker: string;
      leaseMs: number;
      log: Logger;
    },
  ) {
    this.leases = new Leases(opts.redis, opts.worker, opts.leaseMs);
  }

  start(): void {
    const tick = (): void => {
      this.ticking = this.tick()
        .catch((err: unknown) => this.opts.log.warn('webhook notification watch failed; it goes on', { err }))
        .finally(() => {
          if (!this.closed) this.timer = setTimeout(tick, WATCH_MS);
        });
    };
    tick();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.ticking;
    await this.leases.release(this.keys.lease);
  }

  private async tick(): Promise<void> {
    if (!(await this.holdLease())) return;
    const { endpoints } = this.opts;
    await endpoints.refresh();
    const projects = endpoints.projectsTaking(END_TYPES);
    for (const project of projects) await this.follow(project);
    await this.look(new Set(projects));
  }

  private holdLease(): Promise<boolean> {
    return this.leases.hold(this.keys.lease);
  }

  /**
   * Puts the project's notifications created since it was last read on the watch list. The list
   * is read from the last time seen on, that time included (a notification created in the same
   * millisecond may come after the read), less those already followed at that time: one whose
   * end was told is off the watch list and must not come back to be told again.
   */
  private async follow(project: string): Promise<void> {
    const { redis, notifications, endpoints } = this.opts;
    const cursorKey = this.keys.cursor(project);
    const cursor = readCursor(await redis.get(cursorKey));
    const from = cursor?.at ?? endpoints.firstTaking(project, END_TYPES);
    const seen = new Set(cursor?.ids);
    const page = await notifications.createdSince(project, from, WATCH_MAX + seen.size);
    const created = page.filter(({ id, createdAt }) => createdAt !== from || !seen.has(id)).slice(0, WATCH_MAX);
    if (created.length === 0) return;
    const args = created.flatMap(({ id, createdAt }) => [createdAt, member(project, id)]);
    await redis.zadd(this.keys.watch, ...args);
    const last = created[created.length - 1]?.createdAt ?? from;
    const ids = [...(last === from ? seen : []), ...created.filter((n) => n.createdAt === last).map((n) => n.id)];
    // So many of one millisecond would make the cursor a list: step past that millisecond.
    await redis.set(cursorKey, ids.length >= WATCH_MAX ? String(last + 1) : [last, ...ids].join(' '));
  }

  /** Queues the end of every watched notification that has ended. */
  private async look(projects: ReadonlySet<string>): Promise<void> {
    const { redis, notifications } = this.opts;
    const watch = this.keys.watch;
    const watched = await redis.zrange(watch, 0, WATCH_MAX - 1, 'WITHSCORES');
    const [seconds, micros] = await redis.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    for (let i = 0; i + 1 < watched.length; i += 2) {
      const entry = watched[i] as string;
      const [project = '', id = ''] = entry.split('\t');
      const record = projects.has(project) && now - Number(watched[i + 1]) < WATCH_LIMIT_MS ? await notifications.read(id) : null;
      if (record === null || (await this.ended(project, record, now))) {
        await redis.zrem(watch, entry);
        this.completedSeen.delete(id);
      }
    }
  }

  /** Whether the notification has ended, its event queued. */
  private async ended(project: string, record: NotificationRecord, now: number): Promise<boolean> {
    const { notifications } = this.opts;
    const { id } = record.spec;
    // The counters span every partition: read only once the record says the end may have come.
    if (record.canceledAt === null && !record.fanned) return false;
    const counts = await notifications.counts(id);
    const data = { recipients: record.recipients, sent: counts.sent, failed: counts.failed, skipped: counts.skipped };
    if (record.canceledAt !== null) {
      await this.queue(endEvent(project, id, 'notification.canceled', record.canceledAt, { ...data, canceled_at: new Date(record.canceledAt).toISOString() }));
      return true;
    }
    if (!record.fanned || counts.done < counts.jobs) return false;
    const seen = this.completedSeen.get(id) ?? now;
    this.completedSeen.set(id, seen);
    if (now - seen < CATCH_UP_MAX_MS && !(await this.tapCaughtUp(seen))) return false;
    const at = counts.lastAt || seen;
    await this.queue(endEvent(project, id, 'notification.completed', at, { ...data, completed_at: new Date(at).toISOString() }));
    return true;
  }

  private async queue(e: ReturnType<typeof endEvent>): Promise<void> {
    const body = JSON.stringify(e.event);
    const items = this.opts.endpoints.takers(e.project, e.event.type).map((endpoint) => ({ endpoint: endpoint.id, body, key: e.notification }));
    await this.opts.registry.enqueue(items);
  }

  /** Whether the tap has queued the events of every outcome recorded before `at` (Redis time, ms), in every partition. */
  private async tapCaughtUp(at: number): Promise<boolean> {
    const { redis, topology } = this.opts;
    const partitions = Array.from({ length: topology.partitions }, (_, p) => topology.outcomes(p));
    const caught = await Promise.all(partitions.map((stream) => streamCaughtUp(redis, stream, at)));
    return caught.every(Boolean);
  }

  /**
   * The watcher's keys, named only here: its lease, the notifications it watches (sorted set of
   * `project id` by created_at) and per project how far its list was read.
   */
  private get keys(): { lease: string; watch: string; cursor: (project: string) => string } {
    const { topology } = this.opts;
    return { lease: topology.named('lease:webhooks:watcher'), watch: topology.named('webhooks:watch'), cursor: (project) => topology.named(`webhooks:watch:${project}`) };
  }
}

const msOf = (id: string): number => Number(id.split('-')[0]);

/**
 * A project's watch cursor: the creation time (ms) its list was read up to and the ids created
 * at that time already followed, stored as `<ms> <id> <id>…` (ids have no spaces). An earlier
 * release stored the time alone.
 */
function readCursor(stored: string | null): { at: number; ids: string[] } | undefined {
  if (stored === null) return undefined;
  const [at = '', ...ids] = stored.split(' ');
  const ms = Number(at);
  return Number.isFinite(ms) ? { at: ms, ids } : undefined;
}

/** Whether the webhooks group of `stream` has read and settled every entry before `at`. */
async function streamCaughtUp(redis: RedisClient, stream: string, at: number): Promise<boolean> {
  let groups: unknown;
  try {
    groups = await redis.xinfo('GROUPS', stream);
  } catch {
    return true; // no stream: nothing was recorded there
  }
  for (const raw of Array.isArray(groups) ? (groups as unknown[][]) : []) {
    const g = new Map<string, unknown>();
    for (let i = 0; i + 1 < raw.length; i += 2) g.set(String(raw[i]), raw[i + 1]);
    if (g.get('name') !== WEBHOOKS_GROUP) continue;
    const read = g.get('lag') === 0 || msOf(String(g.get('last-delivered-id'))) >= at;
    if (!read) return false;
    if (Number(g.get('pending')) === 0) return true;
    const summary = (await redis.xpending(stream, WEBHOOKS_GROUP)) as unknown[];
    return msOf(String(summary[1] ?? '0-0')) >= at;
  }
  return false;
}
