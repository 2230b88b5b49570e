import { Cluster } from 'ioredis';
import type { NotificationSpec, NotificationStatus } from '../../../schemas/notifications.ts';
import type { OutcomeEntry } from '../../../schemas/outcomes.ts';
import type { RedisClient } from '../../infra/redis/client.ts';
import { scripts } from '../../infra/scripts/registry.ts';
import type { Topology } from '../../infra/redis/topology.ts';
import { NotificationKeys } from './redis-keys.ts';

/**
 * A notification's whole life in Redis. This module is the only code that reads or writes its
 * keys; every role (gateway, scheduler, fan-out, dispatch) goes through it.
 *
 * Keys (names from engine/infra/redis/topology.ts):
 * - `notif:{n:<id>}`, the record (hash): `project`, `spec` (NotificationSpec JSON, never changed
 *   after accept), `state`, `recipients`, `fanned`, `cursor`, `canceled_at`;
 * - `nlist:<project>`: the project's notifications by creation time (GET /api/notifications);
 * - `{notifications}:scheduled` (by send_after) and `{notifications}:log` (queued for fan-out);
 * - per partition N: `nfan:{pN}:<id>`, the users fan-out appended; `ncount:{pN}:<id>`, the counters
 *   (CountField); `ncancel:{pN}:<id>`, the cancel mark;
 * - `nrate:{n:<id>}`, the throttle bucket.
 *
 * Life: accept (`scheduled`, or `queued` with a log entry) → release at send_after (scheduled →
 * log) → start (`sending`) → appendJobs and saveProgress a chunk at a time → finishFanout
 * (`fanned`) → each job settles its counters (settlement) → completed once fanned and every job
 * appended is done. Cancel may come at any point before completion.
 *
 * Canceled is one fact: `canceled_at` on the record. Its copies, the marks, exist because the send
 * check reads cancel and consent in one script call in the user's partition slot
 * (engine/infra/scripts/lua/loadRecipients-n.lua); cancel writes every mark before `canceled_at`, so a record that says
 * canceled has all of them.
 */

/** A notification's state as stored; `completed` and `canceled` are derived (status). */
export type StoredState = 'scheduled' | 'queued' | 'sending';
export type AcceptedState = Exclude<StoredState, 'sending'>;

/** The counters of one notification in one partition: the field names the scripts are given. */
export const CountField = { jobs: 'jobs', done: 'done', sent: 'sent', failed: 'failed', skipped: 'skipped', lastAt: 'last_at' } as const;
const countFields = Object.values(CountField);

/**
 * Most users in one fan-out job (UsersJob, schemas/notifications.ts): one stream entry, one read
 * and one record for them all. A user is a job's share of dispatch's window (actors/dispatch/role.ts).
 */
export const USERS_PER_JOB = 8;

/** How long the per-partition keys (appended users, counters, cancel marks) outlive the ttl, s. */
const KEEP_MARGIN_S = 7 * 24 * 3600;

export interface NotificationRecord {
  spec: NotificationSpec;
  state: StoredState;
  /** Users targeted: the accept's count for ids, else its estimate until fan-out counted them. */
  recipients: number;
  fanned: boolean;
  /** Fan-out progress: the last external_id appended (audience order), '' at the start. */
  cursor: string;
  canceledAt: number | null;
}

/** Counters of one notification, summed over partitions. */
export interface DispatchCounts {
  /** Users appended to dispatch (each a first attempt, alone or in a job of several). */
  jobs: number;
  /** Users whose attempts are over: no retry follows. */
  done: number;
  sent: number;
  failed: number;
  skipped: number;
  /** Time of the last finished job (ms), 0 when none. */
  lastAt: number;
}

/** How one dispatch job moves its notification's counters in its partition (engine/infra/scripts/lua/recordAttempts-5.lua). */
export interface Settlement {
  /** Counter field to increment, as JSON. */
  counters: string;
  /** The field set to the job's end time, '' while a retry follows. */
  lastAtField: string;
}

/** A notification as accepted at `now`: scheduled while its send_after is ahead, else queued. */
export function acceptedState(spec: Pick<NotificationSpec, 'send_after'>, now: number): AcceptedState {
  return spec.send_after !== null && spec.send_after > now ? 'scheduled' : 'queued';
}

/** The status a caller sees, from the record and the counters. */
export function statusOf(record: NotificationRecord, counts: DispatchCounts): NotificationStatus {
  if (record.canceledAt !== null) return 'canceled';
  if (record.fanned && counts.done >= counts.jobs) return 'completed';
  return record.state;
}

/**
 * The counters one job's outcomes move: each outcome counts under its status, except a failure
 * whose retry follows (the retry's outcome will count); `done` users of the job are done, those
 * with no retry following.
 */
export function settlementOf(outcomes: readonly Pick<OutcomeEntry, 'status' | 'retrying'>[], done: number): Settlement {
  const counters: Record<string, number> = {};
  for (const o of outcomes) if (!o.retrying) counters[CountField[o.status]] = (counters[CountField[o.status]] ?? 0) + 1;
  if (done > 0) counters[CountField.done] = done;
  return { counters: JSON.stringify(counters), lastAtField: done > 0 ? CountField.lastAt : '' };
}

export class Notifications {
  constructor(
    private readonly redis: RedisClient,
    private readonly topology: Topology,
  ) {}

  /**
   * Writes a notification accepted at `now` (acceptedState): its record, its place in the project's list (idempotent, so
   * a repaired write lists it once) and its log entry, the scheduled set when it waits for
   * send_after. On one Redis all go in one MULTI, so no queued record is left without its entry.
   * On a Cluster they are in different slots: the record goes first, so nobody reads an id without
   * a record; a crash between them leaves a record nobody was told of (the caller got no answer),
   * which is never sent.
   */
  async accept(spec: NotificationSpec, recipients: number, now: number): Promise<void> {
    const { redis, topology } = this;
    const state = acceptedState(spec, now);
    const key = topology.own(NotificationKeys).notification(spec.id);
    const fields = { project: spec.project, spec: JSON.stringify(spec), state, recipients: String(recipients) };
    if (redis instanceof Cluster) {
      await redis.hset(key, fields);
      await redis.zadd(topology.own(NotificationKeys).notificationList(spec.project), spec.created_at, spec.id);
      if (state === 'scheduled') await redis.zadd(topology.own(NotificationKeys).scheduled(), spec.send_after ?? 0, spec.id);
      else await redis.xadd(topology.notifications(), '*', 'd', spec.id);
      return;
    }
    const tx = redis.multi().hset(key, fields).zadd(topology.own(NotificationKeys).notificationList(spec.project), spec.created_at, spec.id);
    if (state === 'scheduled') tx.zadd(topology.own(NotificationKeys).scheduled(), spec.send_after ?? 0, spec.id);
    else tx.xadd(topology.notifications(), '*', 'd', spec.id);
    const replies = await tx.exec();
    if (replies === null) throw new Error('notification write: transaction aborted');
    for (const [err] of replies) if (err) throw err;
  }

  /** Whether notification `id` has a record. */
  async exists(id: string): Promise<boolean> {
    return (await this.redis.exists(this.topology.own(NotificationKeys).notification(id))) === 1;
  }

  /** The record of notification `id`, or null when there is none. */
  async read(id: string): Promise<NotificationRecord | null> {
    const h = await this.redis.hgetall(this.topology.own(NotificationKeys).notification(id));
    if (h['spec'] === undefined) return null;
    return {
      spec: JSON.parse(h['spec']) as NotificationSpec,
      state: storedState(h['state']),
      recipients: Number(h['recipients'] ?? 0),
      fanned: h['fanned'] === '1',
      cursor: h['cursor'] ?? '',
      canceledAt: h['canceled_at'] === undefined ? null : Number(h['canceled_at']),
    };
  }

  /** The counters of notification `id`, summed over every partition (one pipeline). */
  async counts(id: string): Promise<DispatchCounts> {
    const { redis, topology } = this;
    const replies = await Promise.all(Array.from({ length: topology.partitions }, (_, p) => redis.hmget(topology.own(NotificationKeys).notificationCounts(p, id), ...countFields)));
    const total: DispatchCounts = { jobs: 0, done: 0, sent: 0, failed: 0, skipped: 0, lastAt: 0 };
    for (const [jobs, done, sent, failed, skipped, lastAt] of replies) {
      total.jobs += Number(jobs ?? 0);
      total.done += Number(done ?? 0);
      total.sent += Number(sent ?? 0);
      total.failed += Number(failed ?? 0);
      total.skipped += Number(skipped ?? 0);
      total.lastAt = Math.max(total.lastAt, Number(lastAt ?? 0));
    }
    return total;
  }

  /**
   * Ids of a page of `project`'s notifications, newest first, from the one after `after` (null: the
   * first page): a page starts at the current rank of `after`, so notifications created meanwhile
   * are not met again and none is skipped. `ids` holds one more than `limit` when more follow;
   * null when the list does not hold `after`.
   */
  async page(project: string, after: string | null, limit: number): Promise<string[] | null> {
    const key = this.topology.own(NotificationKeys).notificationList(project);
    let start = 0;
    if (after !== null) {
      const rank = await this.redis.zrevrank(key, after);
      if (rank === null) return null;
      start = rank + 1;
    }
    return this.redis.zrevrange(key, start, start + limit);
  }

  /** The project's notifications created at or after `from` (ms), oldest first, at most `limit`. */
  async createdSince(project: string, from: number, limit: number): Promise<{ id: string; createdAt: number }[]> {
    const flat = await this.redis.zrangebyscore(this.topology.own(NotificationKeys).notificationList(project), from, '+inf', 'WITHSCORES', 'LIMIT', 0, limit);
    const out: { id: string; createdAt: number }[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) out.push({ id: flat[i] as string, createdAt: Number(flat[i + 1]) });
    return out;
  }

  /** Moves at most `max` notifications whose send_after has come onto the log; answers how many. */
  async release(now: number, max: number): Promise<number> {
    const { moved } = await scripts.releaseDue(this.redis, {
      keys: { waiting: this.topology.own(NotificationKeys).scheduled(), stream: this.topology.notifications() },
      args: { now, max },
    });
    return moved;
  }

  /** Fan-out has taken the notification. */
  async start(id: string): Promise<void> {
    await this.redis.hset(this.topology.own(NotificationKeys).notification(id), 'state', 'sending');
  }

  /**
   * Appends one chunk's dispatch jobs for the users of partition `partition`, each user once per
   * notification (a resumed fan-out skips those appended before), up to USERS_PER_JOB users a job;
   * the jobs counter (users appended) moves in the same call. Answers how many users were appended.
   */
  async appendJobs(spec: Pick<NotificationSpec, 'id' | 'project' | 'ttl'>, partition: number, users: readonly string[]): Promise<number> {
    const { redis, topology } = this;
    const { appended } = await scripts.appendJobs(redis, {
      keys: { dispatch: topology.dispatch(partition), fanned: topology.own(NotificationKeys).notificationFanned(partition, spec.id), counts: topology.own(NotificationKeys).notificationCounts(partition, spec.id) },
      args: { notification: spec.id, project: spec.project, keepSeconds: spec.ttl + KEEP_MARGIN_S, jobsField: CountField.jobs, perJob: USERS_PER_JOB },
      users,
    });
    return appended;
  }

  /** Fan-out appended every user up to `cursor` (audience order). */
  async saveProgress(id: string, cursor: string): Promise<void> {
    await this.redis.hset(this.topology.own(NotificationKeys).notification(id), 'cursor', cursor);
  }

  /**
   * Fan-out appended the whole audience. Users named by id were counted at accept; an audience is
   * counted now, by the jobs counters, which move in the same call as the appends (a count kept
   * apart would miss users a crashed predecessor appended before it saved its progress). Once
   * `fanned`, no fan-out of it runs again, so the sets of appended users go now rather than with
   * the ttl (a crash before that leaves them to the ttl).
   */
  async finishFanout(spec: Pick<NotificationSpec, 'id' | 'external_ids'>): Promise<void> {
    const { redis, topology } = this;
    const key = topology.own(NotificationKeys).notification(spec.id);
    if (spec.external_ids === null) await redis.hset(key, 'recipients', (await this.counts(spec.id)).jobs, 'fanned', '1');
    else await redis.hset(key, 'fanned', '1');
    await Promise.all(Array.from({ length: topology.partitions }, (_, p) => redis.unlink(topology.own(NotificationKeys).notificationFanned(p, spec.id))));
  }

  /**
   * Cancels the notification of `record` and answers its cancel time: the marks of every partition
   * first, then `canceled_at`, then its scheduled entry goes (a scheduler racing the removal
   * releases a notification already canceled). Idempotent: a repeat keeps the first time and writes
   * any mark missing (after a crash between the two). Marks live as long as the counters.
   */
  async cancel(record: NotificationRecord, now: number): Promise<number> {
    const { redis, topology } = this;
    const { id, ttl } = record.spec;
    const at = record.canceledAt ?? now;
    const keepMs = (ttl + KEEP_MARGIN_S) * 1000;
    await Promise.all(Array.from({ length: topology.partitions }, (_, p) => redis.set(topology.own(NotificationKeys).notificationCanceled(p, id), String(at), 'PX', keepMs, 'NX')));
    if (record.canceledAt !== null) return record.canceledAt;
    const key = topology.own(NotificationKeys).notification(id);
    await redis.hsetnx(key, 'canceled_at', String(at));
    await redis.zrem(topology.own(NotificationKeys).scheduled(), id);
    return Number((await redis.hget(key, 'canceled_at')) ?? at);
  }

  /** Whether notification `id` is canceled. */
  async isCanceled(id: string): Promise<boolean> {
    return (await this.redis.hget(this.topology.own(NotificationKeys).notification(id), 'canceled_at')) !== null;
  }

  /** The cancel mark of notification `id` in partition `partition`, as the send check reads it. */
  cancelMark(partition: number, id: string): string {
    return this.topology.own(NotificationKeys).notificationCanceled(partition, id);
  }

  /**
   * 0 to send now, else ms to wait: a token of notification `id`'s rate from the bucket every
   * dispatch worker shares (engine/infra/scripts/lua/takeToken-1.lua).
   */
  async throttle(id: string, ratePerMinute: number): Promise<number> {
    const perSecond = ratePerMinute / 60;
    const { waitMs } = await scripts.takeToken(this.redis, {
      keys: { bucket: this.topology.own(NotificationKeys).notificationRate(id) },
      args: { perSecond, burst: Math.max(1, Math.floor(perSecond)) },
    });
    return waitMs;
  }
}

/** Records canceled by versions before 0.8 also stored state `canceled`; canceled_at says it now. */
function storedState(state: string | undefined): StoredState {
  return state === 'scheduled' || state === 'sending' ? state : 'queued';
}
