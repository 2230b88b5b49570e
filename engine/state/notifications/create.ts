import { randomUUID } from 'node:crypto';
import { errorItem } from '../../infra/validation/ajv-errors.ts';
import type { ClickHouseStore } from '../../infra/clickhouse/store.ts';
import { countAudience } from '../../infra/clickhouse/filters/stream.ts';
import { redriveAudience } from '../../infra/clickhouse/redrive.ts';
import type { FrequencyCaps } from '../keys/keystore.ts';
import type { Redrive } from '../../../schemas/redrive.ts';
import type { RedisClient } from '../../infra/redis/client.ts';
import { SegmentStore } from '../segments/store.ts';
import type { Topology } from '../../infra/redis/topology.ts';
import { CallerError } from '../../../schemas/errors.ts';
import type { Channel } from '../../../schemas/outcomes.ts';
import { NotificationLimits, type NotificationBody, type NotificationCreated, type NotificationOptions, type NotificationSpec, type NotificationWarning } from '../../../schemas/notifications.ts';
import { countTargeted, reachOfUsers, segmentFilters, union } from './audience.ts';
import { bodyHash, IdempotencyKeys, type Claim } from './idempotency.ts';
import { acceptedState, Notifications } from './lifecycle.ts';
import { isPersonal } from './personal.ts';
import type { TokenTarget } from './onesignal.ts';
import { reachOfIds, reachOfRefs, type SubscriptionsReach } from './subscriptions.ts';

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

/** True when a heading or content holds placeholders to fill per user. */
function hasPersonal(body: NotificationBody): boolean {
  return [...Object.values(body.headings ?? {}), ...Object.values(body.contents)].some(isPersonal);
}

/** What a body brings besides the engine's own fields (engine/state/notifications/onesignal.ts). */
export interface Extras {
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

/** Who is targeted, on which channel, and how many of them will get a delivery attempt. */
interface Targeting {
  channel: Channel;
  external_ids: string[] | null;
  /** By subscription id: each owner's subscriptions to send to. */
  subscriptions?: Record<string, string[]>;
  included_segments: string[] | null;
  excluded_segments: string[];
  filters: NotificationSpec['filters'];
  recipients: number;
  invalid: string[];
  /** By subscription id: the ids that name no live subscription of the channel. */
  invalidSubscriptions?: string[];
}

/**
 * Creates a notification from a body checked by checkNotificationBody (docs/api.md#notifications) and
 * answers the 201 body. Throws a CallerError for unknown segments (400) and a reused
 * idempotency_key (409); Redis and ClickHouse failures propagate (503 at the gateway).
 */
export async function createNotification(
  deps: NotificationDeps,
  project: string,
  body: NotificationBody,
  extras: Extras = { options: {}, warnings: [] },
  now = Date.now(),
): Promise<NotificationCreated> {
  const keys = new IdempotencyKeys(deps.redis, deps.topology);
  const key = body.idempotency_key;
  const { options, warnings } = extras;
  const localTime = extras.localTime ?? null;
  const withOptions = Object.keys(options).length > 0;
  // Options and local time count in the hash; without them, the hash is the one of bodies older than them.
  const tokens = extras.tokens ?? null;
  const redrive = extras.redrive;
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
    const prior = await keys.read(project, key);
    if (prior !== null) return keys.repeat(project, key, prior, hash);
  }

  const id = randomUUID();
  const sendAfter = body.send_after === undefined ? null : timeOf(body.send_after);
  const targeting = redrive === undefined ? await target(deps, project, body, tokens, now) : await redriveTarget(deps, project, body, redrive);
  const cap = body.ignore_frequency_cap === true ? undefined : extras.frequencyCaps?.[targeting.channel];
  const spec: NotificationSpec = {
    id,
    project,
    channel: targeting.channel,
    headings: body.headings ?? null,
    contents: body.contents,
    data: { ...body.data, svc_message_id: id },
    ttl: body.ttl ?? NotificationLimits.ttlDefault,
    priority: body.priority ?? 'high',
    collapse_id: body.collapse_id ?? null,
    throttle_rate_per_minute: body.throttle_rate_per_minute ?? 0,
    external_ids: targeting.external_ids,
    ...(targeting.subscriptions === undefined ? {} : { subscriptions: targeting.subscriptions }),
    included_segments: targeting.included_segments,
    excluded_segments: targeting.excluded_segments,
    filters: targeting.filters,
    created_at: now,
    send_after: sendAfter,
    ...(withOptions ? { options } : {}),
    ...(localTime === null ? {} : { local_time: localTime }),
    ...(hasPersonal(body) ? { personal: true as const } : {}),
    ...(cap === undefined ? {} : { frequency_cap: cap }),
    ...(redrive === undefined ? {} : { redrive }),
  };
  const state = acceptedState(spec, now);
  const answer: NotificationCreated = {
    id,
    svc_message_id: id,
    recipients: targeting.recipients,
    status: state,
    errors: { invalid_external_user_ids: targeting.invalid, ...(targeting.invalidSubscriptions === undefined ? {} : { invalid_player_ids: targeting.invalidSubscriptions }) },
    external_id: null,
    warnings,
    ...(redrive === undefined ? {} : { redrive_of: redrive.of }),
  };

  let claim: Claim | null = null;
  if (key !== undefined) {
    claim = await keys.claim(project, key, { id, hash, answer, spec, at: now });
    if (claim === null) {
      // A concurrent first request with this key won the claim: answer as its repeat.
      const winner = await keys.read(project, key);
      if (winner === null) throw new Error('idempotency claim lost, then not found');
      return keys.repeat(project, key, winner, hash);
    }
  }
  await new Notifications(deps.redis, deps.topology).accept(spec, targeting.recipients, now);
  if (key !== undefined && claim !== null) await keys.written(project, key, claim);
  return answer;
}

/** A re-drive's audience, counted now from the delivery records (docs/api.md#re-drive). */
async function redriveTarget(deps: NotificationDeps, project: string, body: NotificationBody, redrive: Redrive): Promise<Targeting> {
  const recipients = await countAudience(await deps.clickhouse.get(), redriveAudience(project, redrive));
  return { channel: body.channel ?? 'PUSH', external_ids: null, included_segments: null, excluded_segments: [], filters: null, recipients, invalid: [] };
}

async function target(deps: NotificationDeps, project: string, body: NotificationBody, tokens: TokenTarget | null, now: number): Promise<Targeting> {
  const channel = body.channel ?? 'PUSH';
  const none = { channel, external_ids: null, included_segments: null, excluded_segments: [], filters: null, invalid: [] };
  const bySubscription = (reach: SubscriptionsReach): Targeting => {
    const { owners, subscriptions, invalid } = reach;
    return { ...none, channel: reach.channel, external_ids: owners, subscriptions, recipients: owners.length, invalidSubscriptions: invalid };
  };
  if (body.include_subscription_ids !== undefined) {
    return bySubscription(await reachOfIds(deps.redis, deps.topology, project, body.channel, body.include_subscription_ids, '/include_subscription_ids'));
  }
  if (tokens !== null) {
    // Each (type, token) once, however often listed.
    const named = [
      ...new Map(tokens.refs.map((ref) => [`${ref.type}:${ref.token}`, { name: ref.token, ref }])).values(),
      ...tokens.unreachable.map((name) => ({ name, ref: null })),
    ];
    return bySubscription(await reachOfRefs(deps.redis, deps.topology, project, body.channel, named, `/${tokens.fields[0] ?? ''}`));
  }
  if (body.include_external_user_ids !== undefined) {
    const reach = await reachOfUsers(deps.redis, deps.topology, project, channel, body.include_external_user_ids);
    return { ...none, external_ids: reach.ids, recipients: reach.reachable, invalid: reach.invalid };
  }
  if (body.included_segments !== undefined) {
    const store = new SegmentStore(deps.redis, deps.topology);
    const includedNames = [...new Set(body.included_segments)];
    const excludedNames = [...new Set(body.excluded_segments ?? [])];
    const [included, excluded] = await Promise.all([
      segmentFilters(store, project, body.included_segments, '/included_segments', channel),
      segmentFilters(store, project, body.excluded_segments ?? [], '/excluded_segments', channel),
    ]);
    const errors = [...included.errors, ...excluded.errors];
    if (errors.length > 0) throw new CallerError('validation_failed', errors);
    const ch = await deps.clickhouse.get();
    const recipients = await countTargeted(ch, project, channel, union(included.lists), excluded.lists.length > 0 ? union(excluded.lists) : null, now);
    return { ...none, included_segments: includedNames, excluded_segments: excludedNames, recipients };
  }
  if (body.filters !== undefined) {
    const ch = await deps.clickhouse.get();
    const recipients = await countTargeted(ch, project, channel, body.filters, null, now);
    return { ...none, filters: body.filters, recipients };
  }
  // checkNotificationBody refuses a body without a targeting mode; kept for callers that did not check.
  throw new CallerError('validation_failed', [errorItem('', 'exactly one targeting mode is required')]);
}

/**
 * send_after in ms. A leap second (`:60`, valid RFC 3339 that JavaScript cannot place) is the
 * first instant of the next minute, as body timestamps of the SDK routes (gateway/ingest/entries.ts).
 */
function timeOf(text: string): number {
  let ms = Date.parse(text);
  if (!Number.isFinite(ms)) ms = Date.parse(text.replace(/(T\d{2}:\d{2}):60/i, '$1:59')) + 1000;
  // An offset can carry a date past the years an ISO 8601 answer can name (GET send_after).
  if (!(ms >= firstInstant && ms <= lastInstant)) {
    throw new CallerError('validation_failed', [errorItem('/send_after', 'must be within the years 0000 to 9999 in UTC')]);
  }
  return ms;
}

const firstInstant = Date.parse('0000-01-01T00:00:00.000Z');
const lastInstant = Date.parse('9999-12-31T23:59:59.999Z');
