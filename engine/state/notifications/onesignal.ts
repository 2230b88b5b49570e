import { errorItem } from '../../infra/validation/ajv-errors.ts';
import type { ErrorItem } from '../../../schemas/errors.ts';
import { NotificationBody, type NotificationOptions, type NotificationWarning } from '../../../schemas/notifications.ts';
import { OneSignalIgnored, OneSignalOptions, OneSignalTokens, OneSignalUnreachable } from '../../../schemas/onesignal.ts';
import { channelOf } from '../../../schemas/outcomes.ts';
import type { SubscriptionRef } from '../users/subscription-ids.ts';
import { minuteOfDay } from '../../infra/process/local-time.ts';
import { sendAfterText } from './send-after.ts';

/**
 * OneSignal's create-notification body translated into the engine's own
 * (docs/api.md#moving-from-onesignal). The input has passed the request schema, so each field
 * present has its documented type; what is left to say here is how fields combine.
 */
export interface Translated {
  /** The engine's body, still to be checked against its own schema. */
  body: Record<string, unknown>;
  /** What goes on to the providers; empty when nothing does. */
  options: NotificationOptions;
  /** `delayed_option: timezone`: minutes after midnight of each user's local clock; else null. */
  localMinute: number | null;
  app_id: string | null;
  template_id: string | null;
  /** OneSignal's token lists (include_ios_tokens, ...), a targeting mode of their own; null without. */
  tokens: TokenTarget | null;
  warnings: NotificationWarning[];
  errors: ErrorItem[];
}

/** Subscriptions named by type and token, and the fields that named them. */
export interface TokenTarget {
  fields: string[];
  refs: SubscriptionRef[];
  /** Tokens of platforms without a provider here: never reached, listed as invalid. */
  unreachable: string[];
}

const ownFields = new Set(Object.keys(NotificationBody.properties));

export function fromOneSignal(request: Record<string, unknown>): Translated {
  const body: Record<string, unknown> = {};
  const warnings: NotificationWarning[] = [];
  const errors: ErrorItem[] = [];
  const options: Record<string, unknown> = {};
  let tokens: TokenTarget | null = null;
  for (const [field, value] of Object.entries(request)) {
    const type = Object.hasOwn(OneSignalTokens, field) ? OneSignalTokens[field] : undefined;
    if (ownFields.has(field)) body[field] = value;
    else if (type !== undefined && Array.isArray(value)) {
      tokens ??= { fields: [], refs: [], unreachable: [] };
      tokens.fields.push(field);
      tokens.refs.push(...value.map((token: unknown) => ({ type, token: String(token) })));
    } else if (field in OneSignalOptions) options[spellings[field] ?? field] = value;
    else if (field in OneSignalUnreachable && Array.isArray(value)) {
      tokens ??= { fields: [], refs: [], unreachable: [] };
      tokens.fields.push(field);
      tokens.unreachable.push(...value.map(String));
      warnings.push({ field, message: 'accepted: no Amazon or Windows provider, so its tokens are listed in errors.invalid_player_ids' });
    }
    else if (field in OneSignalIgnored) warnings.push({ field, message: OneSignalIgnored[field]?.message ?? 'accepted and ignored' });
  }

  const { priority, throttle_rate_per_minute: throttle, send_after: sendAfter } = request;
  if (typeof priority === 'number') body['priority'] = priority >= 10 ? 'high' : 'normal';
  if (typeof throttle === 'string') body['throttle_rate_per_minute'] = Number(throttle);
  if (typeof sendAfter === 'string') body['send_after'] = sendAfterText(sendAfter);

  for (const field of ['included_segments', 'excluded_segments']) {
    const names = body[field];
    if (Array.isArray(names)) body[field] = names.map((n: unknown) => (typeof n === 'string' ? (BUILT_IN_SEGMENTS[n] ?? n) : n));
  }
  const capped = request['enable_frequency_cap'];
  if (typeof capped === 'boolean' && body['ignore_frequency_cap'] === undefined) body['ignore_frequency_cap'] = !capped;
  const aliases = request['include_aliases'] as { external_id: string[] } | undefined;
  if (aliases !== undefined) {
    if (body['include_external_user_ids'] !== undefined) errors.push(errorItem('/include_aliases', 'give include_aliases or include_external_user_ids, not both'));
    else body['include_external_user_ids'] = aliases.external_id;
  }
  const playerIds = request['include_player_ids'];
  if (playerIds !== undefined) {
    if (body['include_subscription_ids'] !== undefined) errors.push(errorItem('/include_player_ids', 'give include_player_ids or include_subscription_ids, not both'));
    else body['include_subscription_ids'] = playerIds;
  }
  const target = request['target_channel'];
  if (typeof target === 'string') {
    const channel = target.toUpperCase();
    if (body['channel'] !== undefined && body['channel'] !== channel) errors.push(errorItem('/target_channel', `disagrees with channel ${String(body['channel'])}`));
    body['channel'] = channel;
  }
  // Token lists of one channel give it, so email_subject and email_body of email tokens are taken.
  const tokenChannels = new Set(tokens?.refs.map((ref) => channelOf[ref.type]));
  const [tokenChannel] = tokenChannels;
  if (body['channel'] === undefined && tokenChannels.size === 1 && tokenChannel !== undefined) body['channel'] = tokenChannel;
  const oldKey = request['external_id'];
  if (typeof oldKey === 'string') {
    if (body['idempotency_key'] !== undefined && body['idempotency_key'] !== oldKey) errors.push(errorItem('/external_id', 'disagrees with idempotency_key'));
    body['idempotency_key'] = oldKey;
  }
  emailFields(request, body, options, warnings);
  const localMinute = localTime(request, warnings, errors);
  if (options['ios_badgeType'] === 'Increase') {
    warnings.push({ field: 'ios_badgeType', message: 'accepted and ignored: badge counts are not kept per device; use SetTo' });
    delete options['ios_badgeType'];
    delete options['ios_badgeCount'];
  }
  const appId = request['app_id'];
  const templateId = request['template_id'];
  return {
    body,
    options: options as NotificationOptions,
    localMinute,
    app_id: typeof appId === 'string' ? appId : null,
    template_id: typeof templateId === 'string' ? templateId : null,
    tokens,
    warnings,
    errors,
  };
}

/** `delayed_option` with `delivery_time_of_day` (docs/api.md#local-time): the minute of day, or null. */
function localTime(request: Record<string, unknown>, warnings: NotificationWarning[], errors: ErrorItem[]): number | null {
  const option = request['delayed_option'];
  const time = request['delivery_time_of_day'];
  if (option === 'last-active') warnings.push({ field: 'delayed_option', message: 'accepted and ignored: last-active is not supported; sent at send_after' });
  if (option !== 'timezone') {
    if (typeof time === 'string') warnings.push({ field: 'delivery_time_of_day', message: 'accepted and ignored: it goes with delayed_option timezone' });
    return null;
  }
  const minute = typeof time === 'string' ? minuteOfDay(time) : null;
  if (minute === null) errors.push(errorItem('/delivery_time_of_day', 'must be a time of day such as 9:00AM or 21:30 with delayed_option timezone'));
  return minute;
}

/** OneSignal's built-in segments of every subscribed user: the engine's `All`. */
const BUILT_IN_SEGMENTS: Record<string, string> = { 'Subscribed Users': 'All', 'Total Subscriptions': 'All' };

/** The official client's spellings of two options. */
const spellings: Record<string, string> = { ios_badge_type: 'ios_badgeType', ios_badge_count: 'ios_badgeCount' };

/** `email_subject` and `email_body` stand for `headings` and `contents` of an EMAIL notification. */
function emailFields(request: Record<string, unknown>, body: Record<string, unknown>, options: Record<string, unknown>, warnings: NotificationWarning[]): void {
  const pairs = [
    ['email_subject', 'headings'],
    ['email_body', 'contents'],
  ] as const;
  for (const [field, own] of pairs) {
    const text = request[field];
    if (typeof text !== 'string') continue;
    if (body['channel'] !== 'EMAIL') warnings.push({ field, message: 'accepted and ignored: the notification is not an email' });
    else if (body[own] !== undefined) warnings.push({ field, message: `accepted and ignored: ${own} is given` });
    else {
      body[own] = { en: text };
      // OneSignal's email_body is HTML; the engine's contents are text.
      if (field === 'email_body') options['email_html'] = true;
    }
  }
}
