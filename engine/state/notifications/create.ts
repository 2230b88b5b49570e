import { randomUUID } from 'node:crypto';
import type { ClickHouseStore } from '../../infra/clickhouse/store.ts';
import type { FrequencyCaps } from '../keys/keystore.ts';
import type { Redrive } from '../../../schemas/redrive.ts';
import type { RedisClient } from '../../infra/redis/client.ts';
import { TemplateStore } from '../templates/store.ts';
import type { Topology } from '../../infra/redis/topology.ts';
import { NotificationLimits, type NotificationCreated, type NotificationOptions, type NotificationSpec, type NotificationWarning } from '../../../schemas/notifications.ts';
import { resolveAudience } from './audience.ts';
import type { DraftBody } from './body.ts';
import { bodyHash, IdempotencyKeys } from './idempotency.ts';
import { acceptedState } from './lifecycle.ts';
import type { TokenTarget } from './onesignal.ts';
import { sendAfterTime } from './send-after.ts';
import { resolveContent } from './template.ts';

/** What creating, reading and cancelling notifications needs (the gateway's deps fit it). */
export interface NotificationDeps {
  redis: RedisClient;
  topology: Topology;
  clickhouse: Pick<ClickHouseStore, 'get'>;
  /**
   * Whether an error says ClickHouse cannot answer now (the gateway's classification): the
   * notification view then answers from Redis alone. Absent: every error propagates.
   */
  clickhouseUnavailable?: (err: unknown) => boolean;
}

/** What a body brings besides the engine's own fields (engine/state/notifications/onesignal.ts). */
export interface Extras {
  /** The template whose headings, contents and channel fill what the body leaves out (./template.ts). */
  template_id?: string | null;
  options: NotificationOptions;
  warnings: NotificationWarning[];
  /** Minute of each user's local day to send at, with the zone of users without one; null: at once. */
  localTime?: { minute: number; default_timezone: string } | null;
  /** OneSignal's token lists, the targeting mode when given (docs/api.md#moving-from-onesignal). */
  tokens?: TokenTarget | null;
  /** The project's frequency caps; the channel's applies unless the body ignores it. */
  frequencyCaps?: FrequencyCaps;
  /** A re-drive: its audience replaces the body's targeting (engine/state/notifications/redrive.ts). */
  redrive?: Redrive;
}

/**
 * Creates a notification from a body checked by checkNotificationBody (docs/api.md#notifications) and
 * answers the 201 body, in one pass, each step owned by one module: the content, with the
 * template's (./template.ts); a repeat of an idempotency_key answers as its first request
 * (./idempotency.ts); send_after (./send-after.ts); the audience, read and counted once
 * (./audience.ts); the spec and its state (./lifecycle.ts); then the write, claiming the key first
 * (./idempotency.ts, ./lifecycle.ts). Throws a CallerError for an unknown template or segments and
 * a send_after out of range (400) and a reused idempotency_key (409); Redis and ClickHouse failures
 * propagate (503 at the gateway).
 */
export async function createNotification(
  deps: NotificationDeps,
  project: string,
  draft: DraftBody,
  extras: Extras = { options: {}, warnings: [] },
  now = Date.now(),
): Promise<NotificationCreated> {
  const { options, warnings } = extras;
  const localTime = extras.localTime ?? null;
  const tokens = extras.tokens ?? null;
  const redrive = extras.redrive;
  const withOptions = Object.keys(options).length > 0;

  // 1. Content: the template fills what the body leaves out; the hash below covers the result.
  const { body, personal } = await resolveContent(new TemplateStore(deps.redis, deps.topology), project, draft, extras.template_id ?? null);

  // 2. A repeat of an idempotency_key answers before anything is read or counted again.
  const keys = new IdempotencyKeys(deps.redis, deps.topology);
  const key = body.idempotency_key;
  // Options and local time count in the hash; without them, the hash is the one of bodies older than them.
  const hash =
    key === undefined
      ? ''
      : bodyHash({
          ...body,
          ...(withOptions ? { options } : {}),
          ...(localTime === null ? {} : { local_time: localTime.minute }),
          ...(tokens === null ? {} : { tokens: tokens.refs }),
          ...(tokens === null || tokens.unreachable.length === 0 ? {} : { unreachable: tokens.unreachable }),
          ...(redrive === undefined ? {} : { redrive }),
        });
  if (key !== undefined) {
    const repeated = await keys.answered(project, key, hash);
    if (repeated !== null) return repeated;
  }

  // 3. send_after, checked before the audience is read (its 400 comes first).
  const sendAfter = body.send_after === undefined ? null : sendAfterTime(body.send_after);

  // 4. The audience: ids, subscriptions, segments (one read) or filters, counted once.
  const audience = await resolveAudience(deps, project, body, tokens, redrive, now);

  // 5. The spec as stored and the 201 answer, scheduled or queued.
  const id = randomUUID();
  const cap = body.ignore_frequency_cap === true ? undefined : extras.frequencyCaps?.[audience.channel];
  const spec: NotificationSpec = {
    id,
    project,
    channel: audience.channel,
    headings: body.headings ?? null,
    contents: body.contents,
    data: { ...body.data, svc_message_id: id },
    ttl: body.ttl ?? NotificationLimits.ttlDefault,
    priority: body.priority ?? 'high',
    collapse_id: body.collapse_id ?? null,
    throttle_rate_per_minute: body.throttle_rate_per_minute ?? 0,
    external_ids: audience.external_ids,
    ...(audience.subscriptions === undefined ? {} : { subscriptions: audience.subscriptions }),
    included_segments: audience.included_segments,
    excluded_segments: audience.excluded_segments,
    filters: audience.filters,
    created_at: now,
    send_after: sendAfter,
    ...(withOptions ? { options } : {}),
    ...(localTime === null ? {} : { local_time: localTime }),
    ...(personal ? { personal: true as const } : {}),
    ...(cap === undefined ? {} : { frequency_cap: cap }),
    ...(redrive === undefined ? {} : { redrive }),
  };
  const answer: NotificationCreated = {
    id,
    svc_message_id: id,
    recipients: audience.recipients,
    status: acceptedState(spec, now),
    errors: { invalid_external_user_ids: audience.invalid, ...(audience.invalidSubscriptions === undefined ? {} : { invalid_player_ids: audience.invalidSubscriptions }) },
    external_id: null,
    warnings,
    ...(redrive === undefined ? {} : { redrive_of: redrive.of }),
  };

  // 6. Persist: claim the key (if any), write the record, mark the claim written.
  return keys.acceptOnce(project, key, { id, hash, answer, spec, at: now });
}
