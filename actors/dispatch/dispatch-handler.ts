import { hash } from 'node:crypto';
import { isTimeZone, nextLocalTime } from '../../engine/infra/process/local-time.ts';
import type { Logger } from '../../engine/infra/process/log.ts';
import { settlementOf, type Notifications } from '../../engine/state/notifications/lifecycle.ts';
import type { RedisClient } from '../../engine/infra/redis/client.ts';
import { fieldOf, type StreamEntry } from '../../engine/infra/runner/types.ts';
import { scripts } from '../../engine/infra/scripts/registry.ts';
import type { JobRecord, RecipientKeys } from '../../engine/infra/scripts/dispatch.ts';
import { recordOf } from '../../engine/state/users/read-user.ts';
import { recipientOfRecord, type RecipientState } from '../../engine/state/users/user-record.ts';
import { decodeTag } from '../../engine/state/users/tag-codec.ts';
import type { Topology } from '../../engine/infra/redis/topology.ts';
import { ownCode, type DeliveryAnswer } from '../../schemas/delivery-codes.ts';
import type { IngestRetire } from '../../schemas/ingest.ts';
import type { DispatchJob, NotificationSpec, UsersJob } from '../../schemas/notifications.ts';
import { channelTypes, outcomeJson, type Channel, type OutcomeDraft } from '../../schemas/outcomes.ts';
import type { ProviderName } from '../../schemas/providers.ts';
import type { SubscriptionType } from '../../schemas/sdk.ts';
import type { StoredConsent, StoredSubscription } from '../../schemas/state.ts';
import type { ProjectClients } from './clients.ts';
import type { OpenedJob } from './dispatch-consumer.ts';
import { Gate } from './gate.ts';
import { RecipientBatch } from './recipient-batch.ts';
import type { RetryClock } from './retry-clock.ts';
import { RecordBatch } from '../../engine/state/notifications/attempts.ts';
import { frequencySends } from './redis-keys.ts';
import { providerFor, sendTo, type ProviderClients, type SendResult } from './providers/index.ts';
import { personalize, personalValues, render } from './render.ts';
import type { Specs } from './specs.ts';

/**
 * Sends in flight per project and provider in a process (one client each). Each is at most what
 * the client runs at once (32 HTTP/1.1 connections; HTTP/2 streams once the peer raised its limit: APNs allows 1 000
 * per connection, FCM about 100, over 4 connections), so a send never waits inside a client after
 * its consent and cancel checks. APNs gets the most: at 256 the sends in flight, not the CPU,
 * paced a broadcast (docs/performance.md, "Broadcast").
 */
const SENDS_IN_FLIGHT: Record<ProviderName, number> = { apns: 1024, fcm: 256, webpush: 32, twilio: 32, sendgrid: 32 };
/** Projects whose gates are kept before idle ones are dropped: as many as ProjectClients keeps clients of. */
const MAX_GATED_PROJECTS = 1000;

/** Attempts per subscription, the first included (docs/api.md#provider-behaviour). */
export const MAX_ATTEMPTS = 5;
const BACKOFF_BASE_MS = 1000;
const BACKOFF_MAX_MS = 5 * 60_000;
const HOUR_MS = 3_600_000;

const NO_FIELDS: readonly string[] = [];
/** Each subscription type as a set of one, for the consent a send reads again. */
const TYPE_SETS: Readonly<Record<SubscriptionType, ReadonlySet<string>>> = {
  IOS_PUSH: new Set(['IOS_PUSH']),
  ANDROID_PUSH: new Set(['ANDROID_PUSH']),
  WEB_PUSH: new Set(['WEB_PUSH']),
  SMS: new Set(['SMS']),
  EMAIL: new Set(['EMAIL']),
};
/** No subscription wanted: a read for consent alone builds none. */
const NO_SUBSCRIPTIONS: ReadonlySet<string> = new Set();
/** Each channel's subscription types, as a set once. */
const CHANNEL_TYPES: Readonly<Record<Channel, ReadonlySet<string>>> = { PUSH: new Set(channelTypes.PUSH), EMAIL: new Set(channelTypes.EMAIL), SMS: new Set(channelTypes.SMS) };

export interface DispatchDeps {
  redis: RedisClient;
  topology: Topology;
  notifications: Pick<Notifications, 'isCanceled' | 'cancelMark' | 'throttle'>;
  specs: Specs;
  clients: ProjectClients;
  /** Told of each retry queued, so it is released when due. */
  retries: Pick<RetryClock, 'queued'>;
  log: Logger;
}

/** The Redis keys of a job's user, all in the slot of the user's partition. */
interface UserKeys extends RecipientKeys {
  partition: number;
}

/** What stands in the way of a user's sends: the notification's cancel mark, the consent by type. */
interface SendCheck {
  canceled: boolean;
  consent: Partial<Record<SubscriptionType, StoredConsent>>;
}

/** A job's user, read from their record, and the notification's cancel mark in their partition. */
interface Recipient extends RecipientState, SendCheck {}

/**
 * When a local-time job is due: the first time at or after the notification's start that the
 * user's clock shows the minute; the project's zone for a user without a usable `timezone` tag.
 */
function localDue(spec: NotificationSpec, local: { minute: number; default_timezone: string }, tag: string | null): number {
  const own = tag === null ? null : String(decodeTag(tag));
  const zone = own !== null && isTimeZone(own) ? own : local.default_timezone;
  return nextLocalTime(spec.send_after ?? spec.created_at, zone, local.minute);
}

/** What one job came to: its outcomes, the dead tokens to retire, the retry that follows. */
interface JobResult {
  outcomes: OutcomeDraft[];
  retire: IngestRetire[];
  retry: { job: DispatchJob; at: number } | null;
}

/**
 * Runs the dispatch jobs of one partition (`dispatch:{pN}`). For each user, their live
 * subscriptions of the notification's channel, their language, the cancel mark and their consent
 * are loaded in one call shared by the jobs read together (actors/dispatch/recipient-batch.ts), a
 * retry's and a targeted job's too. A send whose provider slot is free when that
 * reply comes back goes out on that check; one that waited for its slot reads cancel and consent
 * again first, as the load does. Each subscription gets its localized message through
 * its provider's client, and one outcome per attempt is recorded with the job's acknowledgement
 * (engine/state/notifications/attempts.ts: one call for the jobs that end in the same turn). Jobs run
 * concurrently (actors/dispatch/dispatch-consumer.ts); each provider client bounds its own
 * requests in flight.
 */
export class DispatchHandler {
  /** One gate per project and provider, so a slow provider or project holds only its own slots. */
  private readonly gates = new Map<string, Partial<Record<ProviderName, Gate>>>();
  private readonly records: RecordBatch;
  private readonly recipients: RecipientBatch;

  constructor(private readonly deps: DispatchDeps) {
    this.records = new RecordBatch(deps.redis, deps.topology);
    this.recipients = new RecipientBatch(deps.redis);
  }

  /** Reads one job of partition `partition`'s stream: its users, each a DispatchJob of their own. */
  open(partition: number, entry: StreamEntry): OpenedJob {
    const jobs = userJobsOf(fieldOf(entry, 'd'));
    return { users: jobs?.length ?? 1, run: (stop) => this.run(partition, entry.id, jobs, stop) };
  }

  /**
   * Runs one job's users to one record; false, with nothing recorded, for a job that cannot run
   * (unreadable, or of no known notification). Rejects (the job stays pending) only when Redis
   * fails for every user; a user whose run failed while others ran is recorded as a retry of their
   * first attempt, so nothing sent goes unrecorded. A record Redis could not take is tried again
   * until `stop` aborts.
   */
  private async run(partition: number, entryId: string, jobs: readonly DispatchJob[] | null, stop: AbortSignal): Promise<boolean> {
    const { log } = this.deps;
    const first = jobs?.[0];
    const spec = first === undefined ? null : await this.deps.specs.get(first.n);
    if (jobs === null || first === undefined || spec === null) {
      log.warn('dispatch job dropped', { partition, entry: entryId, reason: first === undefined ? 'unreadable' : 'unknown notification' });
      return false;
    }
    const clients = await this.deps.clients.get(spec.project);
    const settled = await Promise.allSettled(jobs.map((job) => this.attempt(job, spec, clients)));
    if (settled.every((r) => r.status === 'rejected')) throw settled[0]?.reason;
    const outcomes: OutcomeDraft[] = [];
    const retire: string[] = [];
    const retries: { job: DispatchJob; at: number }[] = [];
    settled.forEach((result, i) => {
      const job = jobs[i] ?? first;
      if (result.status === 'rejected') {
        log.warn('dispatch of a user failed; retried', { partition, entry: entryId, external_id: job.external_id, err: result.reason });
        retries.push({ job, at: Date.now() + backoff(job.attempt) });
        return;
      }
      outcomes.push(...result.value.outcomes);
      for (const r of result.value.retire) retire.push(JSON.stringify(r));
      if (result.value.retry !== null) retries.push(result.value.retry);
    });
    const record: JobRecord = {
      entryId,
      ...settlementOf(outcomes, jobs.length - retries.length),
      retries: retries.map((r) => ({ job: JSON.stringify(r.job), at: r.at })),
      outcomes: outcomes.map(outcomeJson),
      retire,
    };
    await this.records.record(partition, first.n, record, stop);
    for (const r of retries) this.deps.retries.queued(partition, r.at);
    return true;
  }

  /**
   * Loads the user, puts a local-time job off to the user's local time, checks throttle, cancel
   * and consent, sends to each subscription.
   */
  private async attempt(job: DispatchJob, spec: NotificationSpec, clients: ProviderClients): Promise<JobResult> {
    const keys = userKeys(this.deps.topology, this.deps.notifications, job);
    let recipient: Recipient | null = null;
    if (spec.local_time !== undefined && job.due === undefined) {
      recipient = await this.load(keys, job, spec);
      // Put off through the retry set: durable in Redis, released by the dispatch role (docs/api.md#local-time).
      const due = localDue(spec, spec.local_time, recipient.timezone);
      if (due > Date.now()) return { outcomes: [], retire: [], retry: { job: { ...job, due }, at: due } };
    }
    if (spec.throttle_rate_per_minute > 0) {
      // A canceled notification takes no throttle token: its remaining jobs are skipped at once.
      const wait = (await this.deps.notifications.isCanceled(job.n)) ? 0 : await this.throttle(spec);
      if (wait > 0) return { outcomes: [], retire: [], retry: { job, at: Date.now() + wait } };
      recipient = null; // its cancel mark and consent were read before the wait
    }
    // Loaded last: from its reply to the sends whose slot is free nothing else is awaited.
    const loaded = recipient ?? (await this.load(keys, job, spec));
    const now = Date.now();
    const subs = liveSubscriptions(loaded.subs);
    const outcome = new Outcomes(job, spec);
    if (subs.length === 0) return { outcomes: [outcome.skip(null, ownCode('no_subscription'), now)], retire: [], retry: null };
    const locale = loaded.language === null ? null : String(decodeTag(loaded.language));
    const shared = render(spec, locale, now);
    const message = loaded.tags === null ? shared : personalize(shared, spec, personalValues(job.external_id, loaded.tags));
    const result: JobResult = { outcomes: [], retire: [], retry: null };
    const again: string[] = [];
    let retryAfter = 0;
    // One cap slot per job, taken by the first subscription that gets past consent; the others share it.
    let capSlot: Promise<'frequency_capped' | null> | undefined;
    const send = async (sub: StoredSubscription): Promise<void> => {
      const gate = this.gateOf(job.project, providerFor(sub.type));
      const free = gate.tryAcquire();
      const release = free ?? (await gate.acquire());
      try {
        // Checked with a slot in hand, right before the request goes out: on the load's reply when
        // the slot was free at once, else read again (docs/architecture.md#consent-first).
        const check = free !== null ? loaded : await this.check(keys, sub);
        const skip = blockedBy(check, sub) ?? (spec.frequency_cap === undefined ? null : await (capSlot ??= this.capped(job, spec)));
        if (skip !== null) {
          result.outcomes.push(outcome.skip(sub, ownCode(skip), Date.now()));
          return;
        }
        const sentAt = Date.now();
        const sent = await sendTo(clients, sub, message);
        const retrying = !sent.ok && (sent.action === 'RETRY' || sent.action === 'REAUTH') && job.attempt < MAX_ATTEMPTS && message.ttlSeconds > 0;
        result.outcomes.push(outcome.attempt(sub, sent, retrying, Date.now()));
        if (retrying) {
          again.push(subKey(sub));
          retryAfter = Math.max(retryAfter, sent.ok ? 0 : (sent.retryAfterMs ?? 0));
        }
        if (!sent.ok && sent.action === 'DROP') result.retire.push(retireEntry(job, sub, sent.invalidSinceMs ?? sentAt));
      } finally {
        release();
      }
    };
    // Most users have one subscription of a channel: their send needs no list of promises.
    if (subs.length === 1) await send(subs[0] as StoredSubscription);
    else await Promise.all(subs.map(send));
    if (again.length > 0) {
      const delay = Math.max(retryAfter, backoff(job.attempt));
      result.retry = { job: { ...job, attempt: job.attempt + 1, subs: again }, at: Date.now() + delay };
    }
    return result;
  }

  /**
   * Loads the job's user with the subscriptions it may send to: a retry's, else those the spec
   * targets, else all of the channel, with the users of the other jobs of the turn loaded at once.
   */
  private async load(keys: UserKeys, job: DispatchJob, spec: NotificationSpec): Promise<Recipient> {
    const only = job.subs ?? targetedOf(spec, job.external_id);
    const stored = await this.recipients.load(keys.partition, keys);
    const state = recipientOfRecord(stored.record, CHANNEL_TYPES[spec.channel], only === undefined ? null : new Set(only), spec.personal === true);
    return { ...state, canceled: stored.canceled };
  }

  /**
   * The cancel mark and the consent of `sub`'s type, read again for a send that waited for its
   * slot: as a load reads them, in one call with the other loads of the turn (slots come free
   * together, as a socket read brings several answers).
   */
  private async check(keys: UserKeys, sub: StoredSubscription): Promise<SendCheck> {
    const stored = await this.recipients.load(keys.partition, keys);
    return { canceled: stored.canceled, consent: recipientOfRecord(stored.record, TYPE_SETS[sub.type], NO_SUBSCRIPTIONS, false).consent };
  }

  /** 'frequency_capped' when the user's cap for the channel is reached; a slot is taken otherwise (docs/api.md#frequency-caps). */
  private async capped(job: DispatchJob, spec: NotificationSpec): Promise<'frequency_capped' | null> {
    const cap = spec.frequency_cap;
    if (cap === undefined) return null;
    const { taken } = await scripts.takeCapSlot(this.deps.redis, {
      keys: { sends: frequencySends(this.deps.topology, job.project, job.external_id, spec.channel) },
      args: { member: spec.id, max: cap.max, windowMs: cap.hours * HOUR_MS, now: Date.now() },
    });
    return taken ? null : 'frequency_capped';
  }

  /** A send's gate, found without building a key: a push looks it up once. */
  private gateOf(project: string, provider: ProviderName): Gate {
    let byProvider = this.gates.get(project);
    if (byProvider === undefined) {
      if (this.gates.size >= MAX_GATED_PROJECTS) for (const [p, gates] of this.gates) if (Object.values(gates).every((g) => g.idle)) this.gates.delete(p);
      byProvider = {};
      this.gates.set(project, byProvider);
    }
    return (byProvider[provider] ??= new Gate(SENDS_IN_FLIGHT[provider]));
  }

  /** 0 to send now, else ms to wait: a token of the notification's rate, shared by every dispatch worker. */
  private async throttle(spec: NotificationSpec): Promise<number> {
    if (spec.throttle_rate_per_minute <= 0) return 0;
    return this.deps.notifications.throttle(spec.id, spec.throttle_rate_per_minute);
  }
}

/** Builds the outcomes of one job (schemas/outcomes.ts, OutcomeDraft). */
class Outcomes {
  constructor(
    private readonly job: DispatchJob,
    private readonly spec: NotificationSpec,
  ) {}

  skip(sub: StoredSubscription | null, answer: DeliveryAnswer, at: number): OutcomeDraft {
    return this.entry(sub, 'skipped', answer.code, answer.hint, null, null, false, at);
  }

  attempt(sub: StoredSubscription, sent: SendResult, retrying: boolean, at: number): OutcomeDraft {
    if (sent.ok) return this.entry(sub, 'sent', null, null, sent.providerMessageId, Math.round(sent.latencyMs), false, at);
    if (sent.skipped) return this.entry(sub, 'skipped', sent.code, sent.hint, null, null, false, at);
    const latency = sent.latencyMs === null ? null : Math.round(sent.latencyMs);
    return this.entry(sub, 'failed', sent.code, sent.hint, null, latency, retrying, at);
  }

  // Positional, so an outcome is one object literal (no intermediate object spread into it).
  private entry(
    sub: StoredSubscription | null,
    status: OutcomeDraft['status'],
    errorCode: OutcomeDraft['error_code'],
    hint: OutcomeDraft['hint'],
    providerMessageId: OutcomeDraft['provider_message_id'],
    latencyMs: OutcomeDraft['latency_ms'],
    retrying: boolean,
    at: number,
  ): OutcomeDraft {
    const { job, spec } = this;
    const which = sub === null ? 'none' : subKey(sub);
    return {
      // The same attempt of the same subscription always has the same id (the recorder deduplicates by it).
      id: hash('sha256', `${job.n}\0${job.external_id}\0${which}\0${job.attempt}`, 'base64url').slice(0, 24),
      project: job.project,
      notification_id: job.n,
      external_id: job.external_id,
      channel: spec.channel,
      subscription_type: sub?.type ?? null,
      tail: sub === null ? null : sub.token.slice(-4),
      attempt: job.attempt,
      status,
      error_code: errorCode,
      hint,
      provider_message_id: providerMessageId,
      latency_ms: latencyMs,
      retrying,
      at,
    };
  }
}

/** Why a send to `sub` must not start: the notification was canceled or the user opted out. */
function blockedBy(check: SendCheck, sub: StoredSubscription): 'canceled' | 'opted_out' | null {
  if (check.canceled) return 'canceled';
  return check.consent[sub.type]?.opted_out === true ? 'opted_out' : null;
}

/** The live ones of the subscriptions loaded (the channel's; for a retry, those to retry), oldest registration first. */
function liveSubscriptions(stored: readonly StoredSubscription[]): StoredSubscription[] {
  return stored.filter((sub) => sub.state === 'live').sort((a, b) => a.registered_at - b.registered_at);
}

/** The keys of the job's user; the cancel mark is read in the user's partition, one slot with their consent. */
function userKeys(topology: Topology, notifications: Pick<Notifications, 'cancelMark'>, job: DispatchJob): UserKeys {
  const user = recordOf(topology, job.project, job.external_id);
  return { partition: user.partition, user: user.user, canceled: notifications.cancelMark(user.partition, job.n) };
}

/** The users' jobs of one stream entry: a fan-out's UsersJob, one for each user; a DispatchJob, itself; null when unreadable. */
function userJobsOf(json: string | undefined): DispatchJob[] | null {
  let job: Partial<DispatchJob & UsersJob> | null;
  try {
    job = JSON.parse(json ?? '') as Partial<DispatchJob & UsersJob> | null;
  } catch {
    return null;
  }
  if (typeof job !== 'object' || job === null) return null;
  const { n, project, attempt, users } = job;
  if (typeof n !== 'string' || typeof project !== 'string' || attempt === undefined || !Number.isInteger(attempt)) return null;
  if (Array.isArray(users)) return users.length > 0 && users.every((u) => typeof u === 'string') ? users.map((external_id) => ({ n, project, external_id, attempt })) : null;
  return typeof job.external_id === 'string' ? [job as DispatchJob] : null;
}

/** The subscriptions of the user a notification by subscription id targets; undefined for other notifications. */
function targetedOf(spec: NotificationSpec, externalId: string): readonly string[] | undefined {
  const targeted = spec.subscriptions;
  if (targeted === undefined) return undefined;
  // An own property only: an external_id may be named like a property of Object.prototype.
  return Object.hasOwn(targeted, externalId) ? (targeted[externalId] ?? NO_FIELDS) : NO_FIELDS;
}

/** The field of a subscription in the user's subs hash. */
function subKey(sub: StoredSubscription): string {
  return `${sub.type}:${sub.token}`;
}

function retireEntry(job: DispatchJob, sub: StoredSubscription, sentAt: number): IngestRetire {
  return { op: 'retire', project: job.project, external_id: job.external_id, at: Date.now(), type: sub.type, token: sub.token, sent_at: sentAt };
}

/** Exponential backoff with jitter: between half and all of 1 s, 2 s, 4 s ... after attempts 1, 2, 3; at most 5 min. */
function backoff(attempt: number): number {
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}
